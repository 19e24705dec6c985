"""`check --python PATH` (issue 22, class 6): the named interpreter is asked for its paths isolated, so
none of its site code (.pth files, sitecustomize) runs, and what it answers is read as hostile: deep
nesting, a NUL in a path, absurd sizes are a usage error (exit 2), never exit 3."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.test_frameworks import install_torch


def real_venv(where: Path, marker: Path, system_site: bool = False) -> tuple[Path, Path]:
    """A venv made by `python -m venv`, whose site-packages holds a .pth file and a sitecustomize that
    would each write MARKER if Python's site code ran them."""
    args = [sys.executable, "-m", "venv", "--without-pip", str(where)]
    subprocess.run(args + (["--system-site-packages"] if system_site else []), check=True, timeout=120)
    python = where / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_marker.pth").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('pth ran')\n")
    (site / "sitecustomize.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('site ran')\n")
    assert not marker.exists()
    return python, site


@pytest.mark.parametrize("system_site", [False, True], ids=["venv", "venv-with-system-site-packages"])
def test_the_interpreters_site_code_does_not_run_and_its_packages_are_found(machine: Machine, tmp_path: Path,
                                                                            system_site: bool) -> None:
    marker = tmp_path / "marker"
    python, site = real_venv(tmp_path / "env", marker, system_site)
    install_torch(site)  # torch 2.5.1+cu124 with its nvidia-cudnn-cu12 wheel, in that venv only
    # the .pth file does run when that Python starts the ordinary way: the marker is a real tripwire
    subprocess.run([str(python), "-c", "pass"], check=True)
    assert marker.read_text() == "site ran" or marker.read_text() == "pth ran"
    marker.unlink()

    result = machine.run("check", "--json", "--python", str(python))
    assert not marker.exists(), "cudnn-doctor ran the interpreter's site code"
    report = result.json
    [torch] = [f for f in report["frameworks"] if f["name"] == "torch"]
    assert torch["version"] == "2.5.1+cu124" and torch["details"]["site_packages"] == str(site.resolve())
    assert [i["source"] for i in report["cudnn"]] == ["pip:nvidia-cudnn-cu12"]


HOSTILE_ANSWERS: dict[str, str | bytes] = {
    "deep-nesting": "[" * 100_000 + "]" * 100_000,
    "nul-in-a-path": json.dumps(["/usr/lib/python3/dist-packages", "/opt/x\u0000y/site-packages"]),
    "a-huge-path": json.dumps(["/" + "a" * 100_000]),
    "a-million-paths": json.dumps(["/tmp"] * 1_000_000),
    "an-object": json.dumps({"path": ["/tmp"]}),
    "numbers": json.dumps([1, 2, 3]),
    "nothing": "",
    "not-utf8": b"\xff\xfe[]",
}


@pytest.mark.parametrize("answer", HOSTILE_ANSWERS.values(), ids=HOSTILE_ANSWERS.keys())
def test_a_hostile_answer_is_a_usage_error(machine: Machine, tmp_path: Path, answer: str | bytes) -> None:
    (tmp_path / "answer").write_bytes(answer if isinstance(answer, bytes) else answer.encode())
    liar = tmp_path / "python"
    liar.write_text(f"#!/bin/sh\ncat {tmp_path / 'answer'}\n")
    liar.chmod(0o755)
    result = machine.run("check", "--json", "--python", str(liar))
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr[-500:]
    assert result.exit_code == 2, result.stderr[-500:]
    assert result.json["exit_code"] == 2 and result.json["error"]["message"].startswith(f"--python {liar}: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_venv_of_a_distribution_python_is_read_where_its_site_puts_it(machine: Machine, tmp_path: Path) -> None:
    """Debian's site.py names dist-packages for a prefix (site.getsitepackages is patched), and under -S a
    venv's sys.prefix is still the base: the venv's own lib/pythonX.Y/site-packages must be named directly.
    Seen on the GPU machine: `--python` of a venv made from Debian's python 3.12 found no framework."""
    import shutil
    import subprocess

    system = shutil.which("python3", path="/usr/bin")
    if system is None:
        pytest.skip("no distribution python3 in /usr/bin")
    patched = subprocess.run([system, "-c", "import site; print(site.getsitepackages(['/x']))"],
                             capture_output=True, text=True).stdout
    if "dist-packages" not in patched:
        pytest.skip("/usr/bin/python3's site.py is not a distribution's patched one")
    venv = tmp_path / "venv"
    subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    [site_folder] = list((venv / "lib").glob("python3*/site-packages"))
    info = site_folder / "torch-2.11.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n")
    report = machine.check_json("--python", str(venv / "bin" / "python"))
    assert [f["name"] for f in report["frameworks"]] == ["torch"]
