"""One rule for every version a user types (issue 22, class 9): `check --require` and `--framework`,
`compat FRAMEWORK==VERSION`, `--cuda`, `--cudnn`, `--driver`, `--compute-capability`. A 5,000-digit
version, a Unicode digit (never read as a digit), a name that is no name: each a usage error, exit 2,
one line that names the option, and with --json the one error object."""

from __future__ import annotations

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn

# where a value goes: each option that takes a version, {} marks the place
PLACES = [
    ("check", "--require", "cudnn>={}"), ("check", "--require", "cuda=={}"), ("check", "--require", "driver>={}"),
    ("check", "--require", "torch>={}"), ("check", "--require", "compute-capability>={}"),
    ("check", "--framework", "torch=={}"), ("check", "--framework", "tensorflow=={}"),
    ("compat", "torch=={}"), ("compat", "cudnn=={}"),
    ("compat", "torch==2.5.1", "--cuda", "{}"), ("compat", "torch==2.5.1", "--cudnn", "{}"),
    ("compat", "torch==2.5.1", "--driver", "{}"), ("compat", "cudnn==9.1.0", "--compute-capability", "{}"),
    ("compat", "dl4j==1.0.0-beta7", "--artifact", "nd4j-cuda-{}"),
    ("install", "--version", "9.1.0", "--cuda", "{}", "--dry-run"), ("bench", "--repeats", "{}"),
    ("bench", "--device", "{}"), ("bench", "--workspace-limit", "{}"),
]
# numbers that are not versions: only the digit rule applies (a 5,000-digit --repeats is refused as well)
NUMBER_OPTIONS = ("--repeats", "--device", "--workspace-limit", "--cuda")
BAD_VALUES = {
    "5000-digits": "9" * 5000,
    "5000-digit-part": "9." + "1" * 5000,
    "12-digit-part": "9.123456789012",
    "arabic-indic": "\u0661\u0662.\u0664",  # ١٢.٤: int() reads it as 12 and 4
    "fullwidth": "\uff18.\uff16",  # ８.６
    "mixed": "12.\u0664",
    "devanagari": "\u0967\u0968",
    "superscript": "\u00b9\u00b2.4",
    "bengali-in-a-long-one": "9.1.\u09e7",
}


CASES = [pytest.param(place, bad, id=f"{' '.join(place)}-{name}") for place in PLACES for name, bad in BAD_VALUES.items()
         # a long fraction is a fine number of megabytes
         if not ("--workspace-limit" in place and name in ("5000-digit-part", "12-digit-part"))]


@pytest.mark.parametrize(("place", "bad"), CASES)
def test_a_bad_version_is_a_usage_error_everywhere(machine: Machine, tmp_path, place: tuple[str, ...], bad: str) -> None:
    fake_cudnn(tmp_path / "cudnn", version=90100)  # a copy to compare a --require with
    args = [arg.replace("{}", bad) for arg in place]
    result = machine.run(*args, "--search-path", str(tmp_path / "cudnn")) if place[0] == "check" else \
        machine.run(*args)
    assert result.exit_code == 2, (result.exit_code, result.stderr[-400:])
    option = next((arg for arg in reversed(place) if arg.startswith("--") and arg != "--dry-run"), "FRAMEWORK")
    [line] = result.stderr.strip().splitlines()  # the option parser's usage errors are one line too
    assert line.startswith("cudnn-doctor: error: ") and len(line) < 400, line
    assert option in line
    if place[0] not in ("bench",) and option not in NUMBER_OPTIONS and any(c.isnumeric() and not c.isascii()
                                                                           for c in bad):
        assert "not an ASCII digit" in line
    elif option != "--device" and any(c.isnumeric() and not c.isascii() for c in bad):
        assert "digits 0-9" in line, line
    json_result = machine.run(*args, "--json")
    assert json_result.exit_code == 2 and json_result.json["exit_code"] == 2


@pytest.mark.parametrize("spec", ["1..2", "..", "==2.5.1", "9.1", "torch==", "torch===2", "to rch==2.5.1"])
@pytest.mark.parametrize("where", ["check --framework", "compat"])
def test_a_framework_that_is_no_name_is_a_usage_error(machine: Machine, spec: str, where: str) -> None:
    args = ["check", "--framework", spec] if where == "check --framework" else ["compat", spec]
    result = machine.run(*args, "--json")
    assert result.exit_code == 2, result.stderr
    assert result.json["exit_code"] == 2 and "Traceback" not in result.stderr


def test_an_incompatible_combination_written_in_other_digits_does_not_pass_a_gate(machine: Machine) -> None:
    """torch 2.5.1 (CUDA 12.4 build) on a compute capability 3.7 GPU is incompatible (exit 1); written with
    Arabic-Indic digits it must not be read as some other, compatible value (exit 0)."""
    plain = machine.run("compat", "torch==2.5.1+cu124", "--compute-capability", "3.7")
    assert plain.exit_code == 1
    other = machine.run("compat", "torch==2.5.1+cu124", "--compute-capability", "\u0663.\u0667")
    assert other.exit_code == 2 and "ARABIC-INDIC DIGIT THREE" in other.stderr


def test_good_values_still_pass(machine: Machine, tmp_path) -> None:
    fake_cudnn(tmp_path / "cudnn", version=90100)
    report = machine.check_json("--search-path", str(tmp_path / "cudnn"), "--require", "cudnn>=9.1,<10",
                                "--require", "pcie>=4x16", "--framework", "torch==2.5.1")
    assert report["summary"]["exit_code"] == 1  # no GPU: the pcie requirement is not met
    assert machine.run("compat", "torch==2.5.1", "--cuda", "12.x", "--cudnn", "9", "--driver", "550.54.14",
                       "--compute-capability", "sm_90").exit_code == 0
