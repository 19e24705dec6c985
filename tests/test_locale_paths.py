"""Under a C locale with Python's UTF-8 mode off, this process names files in ASCII (bytes past 127 as surrogates),
while a child answers in UTF-8: a path with 'è' a child reported must name the same file here, not fail every os call
("ascii codec can't encode"). Found by round seven's red-team."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.build import fake_cudnn
from tests.test_check import CUDNN9_SUBLIBS

pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [("check",), ("check", "--json"), ("fix", "--shell", "bash")])
def test_a_non_ascii_library_folder_under_an_ascii_locale(tmp_path: Path, args: tuple[str, ...]) -> None:
    folder = tmp_path / "biblioth\u00e8que\udcff \u56f3\u66f8\u9928" / "lib"
    fake_cudnn(folder, version=90100, cudart=12040, sublibraries=CUDNN9_SUBLIBS)
    env = {key: value for key, value in os.environ.items() if not key.startswith("LC_") and key != "LANG"}
    env.update({"PYTHONIOENCODING": "ascii:strict", "PYTHONUTF8": "0", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0",
                "LD_LIBRARY_PATH": str(folder), "PYTHONPATH": str(ROOT)})
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], env=env, capture_output=True, cwd=tmp_path,
                          timeout=120)
    assert done.returncode in (0, 1), done.stderr[-800:]
    assert b"UnicodeEncodeError" not in done.stderr and done.stdout.strip()
    assert b"CD902" not in done.stdout and b"bug in cudnn-doctor" not in done.stdout, done.stdout[-1500:]
    if "--json" in args:
        assert b"\\\\xc3\\\\xa8" in done.stdout or b"\\\\u00e8" in done.stdout or b"biblioth" in done.stdout


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "cp037"])
def test_output_is_ascii_compatible_whatever_pythonioencoding_names(machine, encoding: str) -> None:  # type: ignore[no-untyped-def]
    """PYTHONIOENCODING=utf-16 (or utf-32, or the EBCDIC cp037) wrote `--json` as a document no JSON reader takes
    (jq: "parse error") and every error line and CI command in bytes no terminal or runner reads: the doctor's output
    is UTF-8 where the encoding named does not write ASCII as ASCII (an encoding that does, latin-1, stays)."""
    machine.env["PYTHONIOENCODING"] = encoding
    report = machine.run("check", "--json")
    assert report.exit_code in (0, 1) and report.json["schema"] == "cudnn-doctor/report/1", report.stdout[:200]
    assert "\0" not in report.stdout and report.stdout.startswith("{"), report.stdout[:40]
    usage = machine.run("check", "--strict-frobnicate", "--json")
    assert usage.exit_code == 2 and usage.json["exit_code"] == 2, usage.stdout[:200]
    assert usage.stderr.startswith("cudnn-doctor: error: "), usage.stderr[:80]
    github = machine.run("check", "--format", "github")
    assert github.exit_code in (0, 1) and "\0" not in github.stdout
    assert any(line.startswith(("::", "[")) for line in github.stdout.splitlines()), github.stdout[:200]


@pytest.mark.parametrize("encoding", ["cp1252", "ascii:backslashreplace", "cp437 under C"])
@pytest.mark.parametrize("output_format", ["junit", "prometheus", "github", "markdown"])
def test_formats_read_by_programs_are_utf8_whatever_the_locale(tmp_path: Path, encoding: str,
                                                               output_format: str) -> None:
    """JUnit XML declares UTF-8, Prometheus' text format and GitHub's runner read UTF-8: under
    PYTHONIOENCODING=cp1252 a folder's U+00EB was the one byte 0xEB (the XML did not parse, the metrics file was
    refused), under ascii:backslashreplace a label held \\u00eb (an escape Prometheus does not have). Round nine's
    red-team, encoding.io[cp1252-junit]: the bytes on standard output are now those --output writes."""
    import re
    import xml.etree.ElementTree as ElementTree

    odd = "Zo\u00eb\u2014\u5e93 \U0001f600"
    folder = tmp_path / odd
    fake_cudnn(folder, version=90100, cudart=12040, sublibraries=CUDNN9_SUBLIBS[:2])
    env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
           "CUDNN_DOCTOR_SYSTEM_PREFIX": str(tmp_path / "root"), "CUDNN_DOCTOR_CACHE_DIR": str(tmp_path / "cache")}
    if encoding.endswith(" under C"):  # file names decoded as ASCII, their other bytes surrogates, written as UTF-8
        env = {key: value for key, value in env.items() if not key.startswith("LC_") and key != "LANG"}
        env.update({"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
                    "PYTHONIOENCODING": encoding.split()[0]})
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--format", output_format, "--search-path",
                           str(folder)], env=env, capture_output=True, cwd=tmp_path, timeout=120)
    assert done.returncode in (0, 1), done.stderr[-800:]
    text = done.stdout.decode("utf-8")  # strict: a byte that is not UTF-8 fails here
    assert odd in text or "C" in encoding, text[-1500:]
    if output_format == "junit":
        ElementTree.fromstring(done.stdout)
    if output_format == "prometheus":
        # a sample line of the text format: label values escape only \\, \" and \n
        sample = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*",?)*\})? \S+')
        lines = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert lines and [line for line in lines if not sample.fullmatch(line)] == [], text[-1500:]
        assert "C" in encoding or [line for line in lines if odd in line]
