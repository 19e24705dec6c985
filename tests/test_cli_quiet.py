"""-q and -v on every command (declared once in options.py): a command without a quiet of its own prints nothing
when it succeeds and its whole output when it fails; -V prints the version."""

from __future__ import annotations

import re

import pytest

from cudnn_doctor import options
from tests.conftest import Machine


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    return machine_in_process


def test_every_command_takes_q_and_v() -> None:
    tables = [options.CHECK, options.FIX, options.COMPAT, options.EXPLAIN, options.IMAGE, options.FLEET_MERGE,
              options.FLEET_RUN, options.BENCH, options.INSTALL, options.UNINSTALL]
    for table in tables:
        words = options.option_words(table)
        assert {"-q", "--quiet", "-v", "--verbose"} <= set(words), table


def test_quiet_prints_nothing_on_success_and_everything_on_failure(machine: Machine) -> None:
    fine = machine.run("compat", "tensorflow==2.15.0", "--cuda", "12.2", "-q")
    assert fine.exit_code == 0 and fine.stdout == "" and fine.stderr == ""
    loud = machine.run("compat", "tensorflow==2.15.0", "--cuda", "12.2")
    assert loud.exit_code == 0 and "tensorflow 2.15.0" in loud.stdout
    failed = machine.run("compat", "tensorflow==2.15.0", "--cuda", "11.0", "-q")
    assert failed.exit_code == 1 and "INCOMPATIBLE with cuda 11.0" in failed.stdout
    with_json = machine.run("compat", "tensorflow==2.15.0", "--cuda", "12.2", "-q", "--json")
    assert with_json.exit_code == 0 and with_json.json["verdict"] == "compatible"  # JSON is never held back


def test_dash_capital_v_is_the_version(machine: Machine) -> None:
    result = machine.run("-V")
    assert result.exit_code == 0 and re.fullmatch(r"cudnn-doctor \d+\.\d+\.\d+\n", result.stdout)
