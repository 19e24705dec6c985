"""`explain` costs little on any input: every pattern it uses (catalog and reader) is bounded, crafted
inputs against each pattern finish quickly, and the CLI reads any file (50 MB, binary, NUL bytes,
invalid UTF-8, a 1 MB line, a FIFO with no writer) reading a bounded number of bytes, never a traceback
(how long that takes is benchmarks/explain_tail.py's figure)."""

from __future__ import annotations

import os
import random
import re
import sys
import time
from pathlib import Path

import pytest

from cudnn_doctor.commands import explain as command
from cudnn_doctor.commands.explain import explain_text
from cudnn_doctor.explain import catalog, reader
from tests.conftest import Machine

try:
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

CATALOG = [(entry["id"], pattern) for entry, pattern in catalog.compiled()]
READER = [(name, value) for name, value in vars(reader).items() if isinstance(value, re.Pattern)]
PATTERNS = CATALOG + READER + [("commands.explain.CODE", command.CODE)]
SEARCH_LIMIT_S = 0.25  # one search of the catalog's whole window, on a shared 2-core machine
READ_LIMIT_S = 2.5  # the whole of explain on 2 MB of crafted text


def _repeats(parsed: sre_parse.SubPattern) -> list[int]:
    """The upper bound of every repeat in a parsed pattern (MAXREPEAT for an unbounded one)."""
    bounds: list[int] = []
    for op, av in parsed:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)):
            bounds.append(av[1])
            bounds.extend(_repeats(av[2]))
        elif op == sre_constants.SUBPATTERN:
            bounds.extend(_repeats(av[-1]))
        elif op == sre_constants.BRANCH:
            for branch in av[1]:
                bounds.extend(_repeats(branch))
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            bounds.extend(_repeats(av[1]))
    return bounds


@pytest.mark.parametrize(("name", "pattern"), PATTERNS, ids=[p[0] for p in PATTERNS])
def test_no_pattern_can_repeat_without_bound(name: str, pattern: re.Pattern[str]) -> None:
    bounds = _repeats(sre_parse.parse(pattern.pattern, pattern.flags))
    assert sre_constants.MAXREPEAT not in bounds, f"{name}: an unbounded * or + ({pattern.pattern[:120]})"
    assert all(bound <= 600 for bound in bounds), f"{name}: a gap wider than 600 characters"
    assert sum(bound > 100 for bound in bounds) <= 2, f"{name}: more than two wide gaps"


def _crafted(example: str) -> dict[str, str]:
    """Inputs built from an entry's own example that make a backtracking pattern slow: the example
    repeated, the example cut before its end (a near miss), its words spread by long whitespace runs,
    and its opening repeated."""
    cut = example[: max(8, len(example) * 2 // 3)]
    spread = re.sub(r"\s{1,8}", " " * 8, cut)
    size = catalog.WINDOW
    return {"repeated": (example + " ") * (size // (len(example) + 1) + 1),
            "near-miss": (cut + " ") * (size // (len(cut) + 1) + 1),
            "spread": (spread + "\n") * (size // (len(spread) + 1) + 1),
            "opening": example[:40] * (size // 40 + 1),
            "one line": (cut.replace("\n", " ") + " ") * (size // (len(cut) + 1) + 1)}


@pytest.mark.parametrize(("entry_id", "pattern"), CATALOG, ids=[c[0] for c in CATALOG])
def test_crafted_inputs_against_every_catalog_pattern(entry_id: str, pattern: re.Pattern[str]) -> None:
    example = next(e["example"] for e, _ in catalog.compiled() if e["id"] == entry_id)
    for kind, text in _crafted(example).items():
        text = text[-catalog.WINDOW:]
        start = time.process_time()  # this process's CPU: the pattern's own cost, not a busy machine's
        pattern.search(text)
        elapsed = time.process_time() - start
        assert elapsed < SEARCH_LIMIT_S, f"{entry_id} on {kind}: {elapsed:.2f} s"


READER_INPUTS = {
    "library tokens": ("libcudnn_cnn_infer.so.8 " * 40 + "cannot open shared object file\n") * 3000,
    "long tokens": ("x" * 299 + ".so.1 ") * 7000,
    "dll suffixes": ("cudnn_ops_infer" + "_1" * 60 + ".dll ") * 12000,
    "status names": ("CUDNN_STATUS_" + "A" * 58 + " ") * 30000,
    "status numbers": "cudnn error status failure code (" * 60000,
    "error numbers": "cuda Error 35: Error 35: " * 80000,
    "versions": ("cuDNN compiled (8, 1, 2) found (8, 2, 3) 8.1.2 8600 " * 60 + "\n") * 600,
    "near-miss versions": "cudnn version (8, 1, " * 100000,
    "architectures": "sm_86 not supported compute_90 capability 8.6 " * 45000,
    "near-miss arch": "capability (((((" * 120000,
    "phrases": "falling back to cpu gpu " * 80000,
    "java": ("no jnicudnn in java.library.path " * 100 + "\n") * 600,
    "one 2 MB line": "cu" * 1_000_000,
    "product names": ("cuDNN cuBLAS cuSPARSE cuFFT NVRTC cudart nvml " * 12 + "library was not found\n") * 5000,
    "product near-misses": ("could not find " * 40 + "nvidia-cudnn-cu12 libcudnn cudnn_ops cudnn.h\n") * 3000,
    "resolver conflicts": ("torch 2.1.0+cu121 depends on nvidia-cudnn-cu12==8.9.2.26 which is incompatible, "
                           "conflicting dependencies ResolutionImpossible\n") * 15000,
    "resolver near-misses": ("ResolutionImpossible requires " + "x+cu nvidia " * 300 + "\n") * 500,
    "status texts": "the provided ptx was compiled with an unsupported toolchain CUFFT_INTERNAL_ERROR " * 25000,
    "cpu builds": ("not not compiled compiled with with " * 40 + "cuda gpu cpu only version\n") * 6000,
    "cpu build near-misses": ("compile with " * 60 + "please built without " * 20 + "\n") * 4000,
    "compilers": ("nvcc fatal ptxas fatal nvrtc: error Value 'sm_120' is not defined for option 'gpu-name' triton "
                  * 10 + "\n") * 6000,
    "installers": ("No matching distribution found for " + "mxnet-cu112==1.9+cu118 " * 30 + "\n"
                   "PackagesNotFoundError:\n" + "  - cudatoolkit=11.7 cudnn=8 cupy-cuda12x[all]\n" * 8) * 1500,
    "installer near-misses": ("could not find a version that satisfies the requirement " + "a-b.c_d+e" * 200
                              + "\n") * 1000,
    "check pairs": ("Check failed: status == CUDNN_STATUS_SUCCESS " + "(" * 30 + " (3 vs. 0) vs vs\n") * 15000,
    "wrapper spellings": ("cudnnStatusArchMismatch cudnnStatus" + "Aa" * 60 + " arch mismatch cudnn\n") * 8000,
    "random bytes": random.Random(7).randbytes(2_000_000),
    "NUL bytes": b"\x00" * 2_000_000,
    "invalid UTF-8": b"\xff\xfe libcudnn.so.8: cannot open \xc3\x28\n" * 60000,
}


@pytest.mark.parametrize("kind", sorted(READER_INPUTS))
def test_crafted_inputs_against_the_reader(kind: str) -> None:
    start = time.process_time()  # this process's CPU: the reader's own cost, not a busy machine's
    data = explain_text(READER_INPUTS[kind], None)
    elapsed = time.process_time() - start
    assert elapsed < READ_LIMIT_S, f"{kind}: {elapsed:.2f} s"
    assert data["schema"] == "cudnn-doctor/explain/1" and isinstance(data["matches"], list)


def test_a_long_log_is_read_from_its_end_its_bytes_bounded(machine: Machine, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A log of any length costs its head and its tail: one seek past the middle, at most MAX_BYTES (and one
    read's worth) read, counted at os.read itself. The log is 8 GiB, sparse (a hole costs no disk): a reader that
    walked it would read 8 GiB. Its time is benchmarks/explain_tail.py's figure, not a test's."""
    log = tmp_path / "train.log"
    error = b"OSError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory\n"
    size = 8 << 30
    with log.open("wb") as handle:
        handle.write(b"2025-01-01 12:00:00 INFO epoch 1 step 100 loss 0.25 cuda:0\n" * 100)
        handle.truncate(size - len(error))
        handle.seek(size - len(error))
        handle.write(error)
    counted = {"read": 0, "seeks": []}
    real_read, real_lseek = os.read, os.lseek

    def read(fd: int, n: int) -> bytes:
        chunk = real_read(fd, n)
        counted["read"] += len(chunk)
        return chunk

    def lseek(fd: int, position: int, how: int) -> int:
        counted["seeks"].append((position, how))
        return real_lseek(fd, position, how)

    with monkeypatch.context() as patch:
        patch.setattr(os, "read", read)
        patch.setattr(os, "lseek", lseek)
        data = command.read_message(None, str(log), sys.stdin)
    assert counted["seeks"] == [(size - reader.TAIL_BYTES, os.SEEK_SET)]
    assert counted["read"] <= reader.MAX_BYTES, counted["read"]
    assert data.endswith(error) and data.startswith(b"2025-01-01") and b"skipped" in data
    result = machine.run("explain", "--from-file", str(log), "--offline-only", "--json")
    assert result.exit_code == 0 and result.json["matches"][0]["code"] == "CD304"


@pytest.mark.parametrize("content", [
    random.Random(3).randbytes(300_000),
    b"\x00" * 300_000,
    b"\xc3\x28\xa0\xa1 libcudnn.so.9: cannot open shared object file \xff\n" * 1000,
    b"A" * 1_000_000 + b" CUDNN_STATUS_NOT_INITIALIZED",
], ids=["binary", "nul", "invalid-utf8", "1mb-line"])
def test_any_bytes_are_an_answer_not_a_traceback(machine: Machine, tmp_path: Path, content: bytes) -> None:
    log = tmp_path / "any.log"
    log.write_bytes(content)
    result = machine.run("explain", "--from-file", str(log), "--offline-only", "--json")
    assert result.exit_code in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "\\ud8" not in result.stdout


def test_a_fifo_without_a_writer_does_not_hang(machine: Machine, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    result = machine.run("explain", "--from-file", str(fifo), "--offline-only", timeout=30)
    assert result.exit_code == 2 and "is empty" in result.stderr


def test_standard_input_is_read_from_its_end(machine: Machine) -> None:
    body = b"noise line\n" * 400_000 + b"CUDA failure 100: no CUDA-capable device is detected ; GPU=0\n"
    process = machine.run("explain", "-", "--offline-only", "--json", input=body)
    assert process.exit_code == 0, process.stderr
    assert '"CD102"' in process.stdout


def test_an_endless_device_is_read_to_a_bound(machine: Machine) -> None:
    start = time.perf_counter()
    result = machine.run("explain", "--from-file", "/dev/zero", "--offline-only", "--json", timeout=60)
    assert result.exit_code == 1 and result.json["matches"] == []
    assert time.perf_counter() - start < 20
    assert machine.run("explain", "--from-file", "/dev/null", "--offline-only").exit_code == 2


def test_a_long_text_keeps_the_same_lines_with_the_fewer_triggers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past LONG_TEXT the lines are kept by the triggers that hold no other (a line holding 'cudnn' holds 'cu'):
    half the searches of a 2 MB text, the same lines kept. Proven for every text by what the fewer are: each of
    them is a trigger, and every trigger holds one of them (so a line that holds a trigger holds one of the fewer,
    which the whole text then holds too); then shown on every catalog example and on the first 256 KiB of every
    crafted input (64 times MAX_LINE: long lines cut in pieces, thousands of lines; their whole 2-9 MB took 20 CPU
    s, and test_crafted_inputs_against_the_reader reads each whole)."""
    from cudnn_doctor.explain import message_text

    fewer, every = message_text._line_triggers(), message_text._triggers()
    assert set(fewer) <= set(every)
    assert [trigger for trigger in every if not any(kept in trigger for kept in fewer)] == []
    texts = [(value if isinstance(value, str) else value.decode("utf-8", "replace"))[:256 << 10]
             for value in READER_INPUTS.values()]
    texts.append("\n".join(entry["example"] for entry, _ in catalog.compiled()))
    assert len(message_text._line_triggers()) < len(message_text._triggers()) * 2 // 3
    for text in texts:
        monkeypatch.setattr(message_text, "LONG_TEXT", 0)
        fewer = message_text._candidates(text)
        monkeypatch.setattr(message_text, "LONG_TEXT", 1 << 40)
        assert message_text._candidates(text) == fewer
