"""The probe child writes its answer without the json module (whose import, with re and enum, costs more
than the rest of the child): what it writes must read back as the same values, bytes-safe paths included,
and the child must not import json at all."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

from cudnn_doctor._probe_child import to_json
from cudnn_doctor.probes.library_jobs import CHILD

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
    result = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", CHILD, "cudnn", str(tmp_path / "none.so")],
                            capture_output=True, text=True, timeout=60)
    imported = {line.split("|")[2].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert not {"json", "re", "enum"} & imported, sorted(imported)
    answer = json.loads(result.stdout)
    assert answer["loaded"] is False and "none.so" in answer["error"]


def test_nvml_child_imports_pynvml_without_ctypes_util(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # pynvml takes find_library from ctypes.util and never calls it on Linux; ctypes.util imports shutil and
    # subprocess (14 ms of the NVML child's 80 on an H100). A call of it still gets the real one.
    import pynvml

    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); import _probe_child as c; "
            "m = c._import_pynvml(); print(sorted({'ctypes.util', 'shutil', 'subprocess'} & set(sys.modules))); "
            "print(m.find_library('c') is not None, 'ctypes.util' in sys.modules)")
    result = subprocess.run([sys.executable, "-I", "-S", "-c", code, os.path.dirname(pynvml.__file__),
                             os.path.dirname(CHILD)], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines() == ["[]", "True True"], result.stderr
