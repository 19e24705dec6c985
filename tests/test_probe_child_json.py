"""The probe child writes its answer without the json module (whose import, with re and enum, costs more
than the rest of the child): what it writes must read back as the same values, bytes-safe paths included,
and the child must not import json at all."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from cudnn_doctor._probe_jobs import to_json
from cudnn_doctor.child import JOB_CHILD as CHILD

PATH_NOT_UTF8 = os.fsdecode(b"/opt/caf\xe9/lib/libcudnn.so.9")  # a folder name in Latin-1: a lone surrogate


def test_what_the_child_writes_reads_back_as_the_same_values() -> None:
    answers = [
        {"loaded": True, "values": {"cudnnGetVersion": 91900, "child_ms": 2.5, "loaded_path": PATH_NOT_UTF8}},
        {"loaded": False, "error": 'libcudnn.so.9: cannot open "x"\n\ttab \\ back\x01\x7f é 漢 \U0001f600'},
        {"values": {"processes": [{"pid": 1, "used_memory_mib": None}], "ok": False, "ratio": -0.1, "big": 2 ** 70,
                    "tuple": (1, "a"), "empty": {}, "none": []}},
    ]
    for answer in answers:
        text = to_json(answer)
        assert text.isascii()
        read = json.loads(text)
        assert read == json.loads(json.dumps(answer)), text
    assert math.isnan(json.loads(to_json(float("nan"))))
    assert json.loads(to_json([float("inf"), float("-inf")])) == [float("inf"), float("-inf")]
    assert json.loads(to_json({"path": PATH_NOT_UTF8}))["path"].encode("utf-8", "surrogateescape") == \
        b"/opt/caf\xe9/lib/libcudnn.so.9"


def test_the_child_answers_without_importing_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", CHILD, "_probe_jobs", "cudnn",
                             str(tmp_path / "none.so")],
                            capture_output=True, text=True, timeout=60)
    imported = {line.split("|")[2].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert not {"json", "re", "enum"} & imported, sorted(imported)
    answer = json.loads(result.stdout)
    assert answer["loaded"] is False and "none.so" in answer["error"]


def test_nvml_child_imports_pynvml_without_ctypes_util(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # pynvml takes find_library from ctypes.util and never calls it on Linux; ctypes.util imports shutil and
    # subprocess (14 ms of the NVML child's 80 on an H100). A call of it still gets the real one.
    import pynvml

    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); import _probe_jobs as c; "
            "m = c._import_pynvml(); print(sorted({'ctypes.util', 'shutil', 'subprocess'} & set(sys.modules))); "
            "print(m.find_library('c') is not None, 'ctypes.util' in sys.modules)")
    result = subprocess.run([sys.executable, "-I", "-S", "-c", code, os.path.dirname(pynvml.__file__),
                             os.path.dirname(CHILD)], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines() == ["[]", "True True"], result.stderr


def test_nvml_child_imports_pynvml_without_string_or_re(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """pynvml imports string for capwords alone (its error classes' names), and string imports re and enum: 3 ms of
    the NVML child's 25. Its error classes are named as with the real string module, and anything else pynvml asks of
    string later is the real module's."""
    import string

    import pynvml

    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); import _probe_jobs as c; "
            "m = c._import_pynvml(); print(sorted({'string', 're', 'enum'} & set(sys.modules)))\n"
            "print(sorted(n for n in dir(m) if n.startswith('NVMLError_')))\n"
            "print(m.string.ascii_letters, m.string.capwords('a_b_c', '_'), 'string' in sys.modules)")
    result = subprocess.run([sys.executable, "-I", "-S", "-c", code, os.path.dirname(pynvml.__file__),
                             os.path.dirname(CHILD)], capture_output=True, text=True, timeout=60)
    lines = result.stdout.splitlines()
    assert lines[0] == "[]", result.stderr
    assert lines[1] == str(sorted(n for n in dir(pynvml) if n.startswith("NVMLError_"))) and "NVMLError_NotSupported" \
        in lines[1]
    assert lines[2] == f"{string.ascii_letters} A_B_C True"


CHILDREN = {  # each module of jobs of the one job child: a question it answers without any library present
    "_probe_jobs": ["cudnn", "none.so"],
    "_load_jobs": ["ld.so", "-", "-", "-", "-", "libcudnn_none.so.9", "cudnnOpsVersionCheck",
                   "libcudnn_heuristic.so.9", "[]", "libcudnn_ops.so.9", "-"],
}


def _child_copy(folder, jobs: str = "_probe_jobs") -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """The job child's files for JOBS in FOLDER (a package folder of its own, no bytecode yet): (its script's path,
    JOBS)."""
    import shutil

    for name in ("_job_child.py", jobs + ".py", "_child_stdio.py", "_proc_maps.py"):
        shutil.copy2(os.path.join(os.path.dirname(CHILD), name), folder / name)
    return str(folder / "_job_child.py"), jobs


def _verbose_run(child: tuple[str, str], *flags: str) -> tuple[object, str]:
    """The answer of CHILD (_child_copy's: the probe jobs' JSON, the loading jobs' lines) and its -v words on
    stderr."""
    script, jobs = child
    question = [jobs, *CHILDREN[jobs]]
    result = subprocess.run([sys.executable, "-I", "-S", "-v", *flags, script, *question], capture_output=True,
                            text=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"})
    try:
        return json.loads(result.stdout), result.stderr
    except ValueError:
        return result.stdout.splitlines(), result.stderr


@pytest.mark.parametrize("jobs", sorted(CHILDREN))
def test_the_child_runs_its_code_from_bytecode_checked_against_the_source(tmp_path, jobs) -> None:  # type: ignore[no-untyped-def]
    """A script is compiled from source at every start (7 of the probe child's 20 ms of CPU, five or more children a
    check; 9 of the loading child's 35); the child's code is imported instead, from the bytecode Python's import keeps
    beside it and checks against the source (its size and modification time): a changed file is read again, never a
    stale copy."""
    path = _child_copy(tmp_path, jobs)
    first, _said = _verbose_run(path)
    assert first and "open" in str(first), first  # the library asked for is not there: the child says so
    cached = sorted(p.name.split(".")[0] for p in (tmp_path / "__pycache__").iterdir())
    assert cached == sorted(["_child_stdio", "_proc_maps", jobs]), cached
    again, said = _verbose_run(path)
    assert again == first
    for name in ("_child_stdio", "_proc_maps", jobs):
        assert f"code object from '{tmp_path / '__pycache__' / name}" in said, said[-3000:]
    source = tmp_path / f"{jobs}.py"
    source.write_text(source.read_text() + "\ndef main(argv):\n    print('changed', argv[0])\n    return 0\n")
    changed, said = _verbose_run(path)
    assert "changed" in str(changed) and f"code object from '{tmp_path / '__pycache__' / jobs}" not in said, changed


def test_the_probe_child_writes_no_bytecode_where_the_doctor_writes_none(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """PYTHONDONTWRITEBYTECODE (or -B) of the doctor's own process goes to its children as -B (-I drops the variable):
    no __pycache__ is made where the user asked for none; the child still answers."""
    from cudnn_doctor.child import python_argv

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    copied = _child_copy(tmp_path)
    argv = python_argv(copied[0], "_probe_jobs", "cudnn", "none.so")
    assert "-B" in argv[1:argv.index(str(tmp_path / "_job_child.py"))]
    answer, _said = _verbose_run(copied, "-B")
    assert answer["loaded"] is False and not (tmp_path / "__pycache__").exists()  # type: ignore[index]
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert "-B" not in python_argv(argv[-3], "cudnn", "none.so")


@pytest.mark.parametrize("damage", ["cut short", "bad marshal data"])
@pytest.mark.parametrize("jobs", sorted(CHILDREN))
def test_a_damaged_bytecode_of_a_child_is_compiled_from_source_and_written_again(tmp_path, damage, jobs) -> None:  # type: ignore[no-untyped-def]
    """A .pyc cut short (written under `ulimit -f`: Python keeps what its short write left) or damaged would stop
    every such child at its import, every check after: the module is compiled from its source, the .pyc removed
    (the run after writes it whole), and the child answers."""
    path = _child_copy(tmp_path, jobs)
    first, _said = _verbose_run(path)
    for cached in (tmp_path / "__pycache__").iterdir():
        data = cached.read_bytes()
        cached.write_bytes(data[:len(data) // 2] if damage == "cut short" else data[:16] + b"\xff" * 64)
    damaged, _said = _verbose_run(path)
    assert damaged == first
    assert list((tmp_path / "__pycache__").iterdir()) == []  # removed
    for _ in range(2):  # the first run after writes them whole, the second reads them
        again, said = _verbose_run(path)
        assert again == first
    for name in ("_child_stdio", jobs):
        assert f"code object from '{tmp_path / '__pycache__' / name}" in said, said[-3000:]


@pytest.mark.parametrize("jobs", sorted(CHILDREN))
def test_the_child_does_not_collect_garbage(tmp_path, jobs) -> None:  # type: ignore[no-untyped-def]
    """A child collects cyclic garbage every 100,000 new objects, as the command's own process does: none in its short
    life (pynvml's import alone ran Python's collector 15 times in NVML's child, 1.5 ms)."""
    import pynvml

    copied = _child_copy(tmp_path, jobs)
    _verbose_run(copied)  # its bytecode written
    path = copied[0]
    question = [jobs, *(["nvml", "-", os.path.dirname(pynvml.__file__)] if jobs == "_probe_jobs" else CHILDREN[jobs])]
    # each collection once the child's own code runs (its first import on), up to the interpreter's own at its end
    code = ("import gc, os, runpy, sys\n"
            "gc.callbacks.append(lambda phase, info: os.write(2, b'COLLECTED\\n')\n"
            "                    if phase == 'start' and '_child_stdio' in sys.modules and not sys.is_finalizing() else None)\n"
            "sys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n")
    result = subprocess.run([sys.executable, "-I", "-S", "-c", code, path, *question], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "LD_LIBRARY_PATH": str(tmp_path)})  # no NVML here
    assert "COLLECTED" not in result.stderr, result.stderr[-2000:]
    assert "NVML" in result.stdout or "open" in result.stdout, result.stdout
