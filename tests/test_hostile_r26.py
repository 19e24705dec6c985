"""Round twenty-one's reliability classes (issue 43; found by benchmarks/redteam_r26.py over the surfaces this round
added: explain's new readers, the loading child started for a copy of another release than built, the shared record
methods, the new compat patterns), each a test that failed before its fix, and a sample of that red-team in CI."""

from __future__ import annotations

import dataclasses
import re
import sys

import pytest

from cudnn_doctor.records import record
from tests import redteam_sample

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the loader of Linux, FIFOs")


def _redteam():  # type: ignore[no-untyped-def]
    return redteam_sample.load("redteam_r26")


# --- records: the classes dataclass refuses, refused ------------------------------------------------------------------

@pytest.mark.parametrize("make", [dataclasses.dataclass, record], ids=["dataclass", "record"])
def test_a_frozen_record_made_from_a_plain_one_is_refused_as_dataclass_refuses_it(make) -> None:  # type: ignore[no-untyped-def]
    """A frozen record whose base is a plain record: dataclass(frozen=True) refuses the class ('cannot inherit frozen
    dataclass from a non-frozen one'). Before (main after s25's shared __setattr__, which makes each frozen record as a
    plain dataclass and marks it frozen after): the class was made, a frozen record over a plain one's fields."""
    @make
    class Plain:
        x: int

    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):
        @make(frozen=True)
        class Frozen(Plain):
            y: int

    @make(frozen=True)
    class Root:
        x: int

    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        @make
        class Loose(Root):
            y: int

    @make(frozen=True)
    class Child(Root):  # frozen from frozen: made, and frozen
        y: int

    with pytest.raises(dataclasses.FrozenInstanceError):
        Child(1, 2).y = 3  # type: ignore[misc]


@pytest.mark.parametrize("make", [dataclasses.dataclass, record], ids=["dataclass", "record"])
def test_a_keyword_only_field_and_an_init_var_are_taken_as_dataclass_takes_them(make) -> None:  # type: ignore[no-untyped-def]
    """A field after KW_ONLY (or field(kw_only=True)) given by position is refused; an InitVar is handed to
    __post_init__, not kept as a field. Before (main): the shared __init__ took the keyword-only field by position and
    refused the InitVar's argument ('takes 2 positional arguments but 3 were given')."""
    @make
    class Keyword:
        x: int
        _: dataclasses.KW_ONLY
        y: int = 0

    with pytest.raises(TypeError, match="positional arguments"):
        Keyword(1, 2)  # type: ignore[misc]
    assert Keyword(1, y=2).y == 2

    @make(frozen=True)
    class Handed:
        x: int
        z: dataclasses.InitVar[int] = 5

        def __post_init__(self, z: int) -> None:
            object.__setattr__(self, "w", z)

    made = Handed(1, 9)  # type: ignore[call-arg]
    assert made.w == 9 and [f.name for f in dataclasses.fields(made)] == ["x"]  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.x = 2  # type: ignore[misc]


def test_every_record_pickles_copies_and_replaces_as_a_dataclass_and_stays_frozen() -> None:
    """Every record of the package pickled (protocols 0 and 5), copied, deep-copied and replaced: equal to itself, of
    its class, a frozen one still frozen; and the classes dataclass refuses refused (the red-team's records case)."""
    redteam_sample.run_one(_redteam(), "every record pickled, copied, replaced; refused classes refused")


# --- explain's new readers: numbers and versions in the digits 0-9 only --------------------------------------------------

@pytest.mark.parametrize("message, unread", [
    ("CUDNN error: cudnn_status: \u0663 in cudnnConvolutionForward", "CUDNN_STATUS_BAD_PARAM"),
    ("cublasLtMatmul: cublas_status: \uff11\uff15", "CUBLAS_STATUS_NOT_SUPPORTED"),
], ids=["arabic-indic", "fullwidth"])
def test_a_status_number_in_another_scripts_digits_is_not_read(message: str, unread: str) -> None:
    """[[library_spelling]]'s number after a library's 'status' in Arabic-Indic or fullwidth digits: Python's '\\d'
    took them and int() read '\u0663' as 3, so 'cudnn_status: \u0663' answered CUDNN_STATUS_BAD_PARAM (CD316), a
    status no program printed. The same words in ASCII digits are read."""
    from cudnn_doctor.explain.read_statuses import statuses

    assert unread not in [s.name for s in statuses(0, message, message.lower())]
    ascii_message = message.replace("\u0663", "3").replace("\uff11\uff15", "15")
    assert unread in [s.name for s in statuses(0, ascii_message, ascii_message.lower())]


@pytest.mark.parametrize("message", ["xformers 0.1 is not compatible with torch \u0662.\u0666",
                                     "Torch = \uff12.6.0 too new!"], ids=["arabic-indic", "fullwidth"])
def test_a_version_gate_in_another_scripts_digits_is_not_read(message: str) -> None:
    """[version_gate]'s version in Arabic-Indic or fullwidth digits: read before ('refuses its release \u0662', CD410)
    though no package prints its version so. The same words in ASCII digits are read."""
    from cudnn_doctor.explain.read_events import version_gates

    assert version_gates(0, message, message.lower()) == []
    ascii_message = message.replace("\u0662.\u0666", "2.6").replace("\uff12", "2")
    [event] = version_gates(0, ascii_message, ascii_message.lower())
    assert event.code == "CD410" and dict(event.values)["version"] in ("2.6", "2.6.0")


# --- compat patterns: no empty match, no nested repeat whose turns overlap ---------------------------------------------

def test_no_compat_pattern_matches_the_empty_string_or_nests_repeats_that_can_overlap() -> None:
    """Every regular expression of compat/*.toml as its reader compiles it: none matches the empty string; none nests
    an unbounded repeat in an unbounded one unless each turn of the outer begins with a character the inner cannot
    take (the steps a search takes then grow with the line, not with its square). Counted on the pattern's structure,
    nothing timed."""
    redteam_sample.run_one(_redteam(), "every compat pattern: no empty match, no overlapping nested repeat")


def test_the_structural_check_catches_what_it_is_for() -> None:
    """The check of the test above finds the classic catastrophic shapes and passes the delimited ones compat uses."""
    module = _redteam()
    code = module.PATTERNS.split("bad, count = [], 0")[0]
    scope: dict = {}
    exec(compile(code, "patterns", "exec"), scope)  # noqa: S102 - the red-team's own code, its checks alone
    parse = scope["parser"].parse
    assert list(scope["nested"](parse("(a+)+b"))) and list(scope["nested"](parse("(,[a-z,]+)*")))
    assert not list(scope["nested"](parse("(:[0-9]+:[0-9]+)+"))) and not list(scope["nested"](parse("a+(,b+)*")))
    assert re.compile("x?").fullmatch("") is not None  # what the empty-match check looks for


# --- a sample of the red-team in CI -------------------------------------------------------------------------------------

SAMPLED = ("explain readers", "records", "compat patterns", "first-preload chain")  # a second or two each
SLOW = ("10 MB", "100 KB", "10^5")


def quick(name: str, case: tuple) -> bool:  # type: ignore[type-arg]
    return case[0] in SAMPLED and not any(word in name for word in SLOW)


@linux_only
@pytest.mark.integration
def test_a_seeded_sample_of_the_red_team_holds() -> None:
    """Three cases of benchmarks/redteam_r26.py (the classes of a second or two each), a seed of their own each day."""
    redteam_sample.assert_holds("redteam_r26", quick, 3)
