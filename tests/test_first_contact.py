"""Issue 44, the smaller points a new user met: `compat torch --cuda 12.4` answers which builds are for that CUDA,
and `compat --list pytorch --cuda 12.4` filters by it; compat's sources are cut to a terminal's width (whole under -v,
when piped and in JSON); `explain` on a TensorFlow log names the real fault first."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import Machine


def test_which_torch_builds_are_for_my_cuda(machine: Machine) -> None:
    asked = machine.run("compat", "torch", "--cuda", "12.4", "--json")
    assert asked.exit_code == 0, asked.stderr
    rows = asked.json["rows"]
    assert rows and {row["cuda"] for row in rows} == {"12.4"} and "2.5.1" in {row["version"] for row in rows}
    listed = machine.run("compat", "--list", "pytorch", "--cuda", "12.4", "--json").json
    assert listed["rows"] == rows
    every = machine.run("compat", "--list", "pytorch", "--json").json["rows"]
    assert len(every) > len(rows)
    text = machine.run("compat", "torch", "--cuda", "12.4").stdout
    assert "2.5.1" in text and "builds for CUDA 12.4" in text
    assert machine.run("compat", "torch", "--cuda", "twelve").exit_code == 2


def on_a_terminal(machine: Machine, *args: str, columns: int = 100) -> str:
    import pty

    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", *args], stdin=subprocess.DEVNULL, stdout=child,
                               stderr=subprocess.DEVNULL, env={**machine.env, "COLUMNS": str(columns),
                                                               "TERM": "xterm", "NO_COLOR": "1"}, cwd=machine.cwd)
    os.close(child)
    seen = bytearray()
    try:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    import re

    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode("utf-8", "replace").replace("\r\n", "\n"))


@pytest.mark.skipif(sys.platform != "linux", reason="a pseudo-terminal")
def test_compat_sources_fit_a_terminal_and_stay_whole_elsewhere(machine: Machine) -> None:
    args = ("compat", "torch==2.5.1", "--cuda", "12.4")
    screen = on_a_terminal(machine, *args)
    sources = [line for line in screen.splitlines() if "source:" in line]
    assert sources and all(len(line) <= 100 for line in sources), sources
    assert any(line.endswith("... (-v: whole)") for line in sources)
    whole = on_a_terminal(machine, *args, "-v")  # wrapped to the terminal, whole: its last words are there
    assert "(-v: whole)" not in whole and "get_wheel_install_command" in whole.replace("\n", ""), whole
    piped = machine.run(*args).stdout
    assert max(len(line) for line in piped.splitlines() if "source:" in line) > 100
    reasons = machine.run(*args, "--json").json["reasons"]
    assert max(len(reason["source"]) for reason in reasons) > 100


def test_explain_on_a_tensorflow_log_names_the_fault_first(machine: Machine) -> None:
    """A TensorFlow 2.15 start-up log (its oneDNN, plugin-registration, CPU, TF-TRT and NUMA lines, each set aside as
    harmless) ending in the real fault: the fault comes first, the harmless lines after it."""
    from tests.conftest import ROOT

    log = (ROOT / "tests" / "fixtures" / "tensorflow-start-up.log").read_text()
    process = machine.run("explain", "--offline-only", "-", input=log)
    assert process.exit_code == 0, process.stderr
    lines = process.stdout.splitlines()
    assert lines[0].startswith("tensorflow: CD321"), lines[:3]  # the cuDNN loaded is older than the one it was built with
    assert any(line.startswith("A harmless line") for line in lines[1:])
