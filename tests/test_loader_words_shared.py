"""The loader's words read once (knowledge/loader_words.py) for explain and check's rules alike."""

from __future__ import annotations

import pytest

from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.knowledge.loader_words import NOT_A_LIBRARY, failure_kind


@pytest.mark.parametrize(("words", "kind"), [
    ("/tmp/x/libcudnn_adv.so.9: invalid ELF header", "broken"),
    ("/tmp/x/libcudnn_ops.so.9: file too short", "broken"),
    ("libcudnn.so.9: wrong ELF class: ELFCLASS32", "wrong-arch"),
    ("libcudnn_graph.so.9: cannot open shared object file: No such file or directory", "missing"),
    ("libcudnn.so.9: undefined symbol: cudnnGetVersion_v2", "symbol"),
    ("the kernel ran", None),
])
def test_the_first_failure_text_names_the_kind(words: str, kind: str | None) -> None:
    assert failure_kind(words) == kind


def test_a_file_that_is_no_library_is_cd308_in_explain_as_in_check() -> None:
    """rules/process_env.py names a sub-library the loader refused with these words CD308 (not CD307, whose fix is the
    search); explain answers the same words the same way."""
    assert {"broken", "wrong-arch"} == set(NOT_A_LIBRARY)
    codes = [m["code"] for m in explain_text("OSError: /tmp/p/lib/libcudnn_adv.so.9: invalid ELF header", None)["matches"]]
    assert "CD308" in codes, codes
