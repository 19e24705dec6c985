"""The doctor's own process under the user's LD_LIBRARY_PATH: a library Python's own extension modules link (zlib's
libz.so.1) cut short first on the path ends any process that loads it (SIGBUS). `check` must not load it in its own
process (shutil's import brings zlib, bz2 and lzma; operating_system.which finds programs without it), so it still
answers, in one JSON document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine

SYSTEM_LIBZ = "/lib/x86_64-linux-gnu/libz.so.1"


@pytest.mark.skipif(not os.path.exists(SYSTEM_LIBZ), reason="the system's libz.so.1 is the model of the cut copy")
def test_check_answers_with_a_cut_short_libz_first_on_the_library_path(machine: Machine, tmp_path: Path) -> None:
    cut = tmp_path / "broken"
    cut.mkdir()
    (cut / "libz.so.1").write_bytes(Path(SYSTEM_LIBZ).read_bytes()[:4096])
    machine.add_library_path(cut)
    judged = subprocess.run([sys.executable, "-c", "import zlib"], env=machine.env, capture_output=True, timeout=60)
    assert judged.returncode != 0  # what it does to any Python that imports zlib
    done = machine.run("check", "--json")
    report = json.loads(done.stdout)
    assert done.exit_code in (0, 1) and report["schema"] == "cudnn-doctor/report/1", done.stderr[-800:]
    from cudnn_doctor.operating_system import which

    assert which("sh", "/nowhere:/bin") == "/bin/sh" and which("sh", "") is None and which("/bin/sh", None) == "/bin/sh"
