"""The CLI called inside another Python program ends as Python code does: SystemExit with the command's
status, the caller's streams and files intact (issue 31: no os._exit, no private atexit call)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.conftest import Machine

CALLER = textwrap.dedent("""
    import sys
    from cudnn_doctor.cli import main

    log = open(sys.argv[1], "w")  # buffered: a lost process would lose this line
    log.write("before\\n")
    try:
        main(sys.argv[2:])
    except SystemExit as end:
        log.write(f"after {end.code}\\n")
    log.close()
    print("caller still here", file=sys.stderr)
""")


def _call(machine: Machine, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    log = machine.cwd / "caller.log"
    process = subprocess.run([sys.executable, "-c", CALLER, str(log), *args], capture_output=True, text=True,
                             env=machine.env, cwd=machine.cwd, timeout=60, stdin=subprocess.DEVNULL)
    return process, log.read_text()


def test_a_check_called_in_process_returns_to_its_caller_with_the_status(machine: Machine) -> None:
    process, log = _call(machine, "check", "--json")
    report = json.loads(process.stdout)
    assert log == f"before\nafter {report['summary']['exit_code']}\n"
    assert process.returncode == 0 and "caller still here" in process.stderr


def test_a_usage_error_in_process_is_its_status_and_one_json_object(machine: Machine) -> None:
    process, log = _call(machine, "check", "--json", "--no-such-option")
    assert log == "before\nafter 2\n"
    assert json.loads(process.stdout)["exit_code"] == 2
    assert process.returncode == 0 and "caller still here" in process.stderr
