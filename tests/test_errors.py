"""Every error the doctor raises goes through the registry with its code: a DoctorError is made either by
codes.doctor_error (a finding's code) or with the code of its class of user error (CD001-CD009), and that code is
in codes.py; the JSON of a failed command carries it with the registry's title."""

from __future__ import annotations

import ast
from pathlib import Path

from cudnn_doctor.codes import CODES
from tests.conftest import Machine
from tests.test_architecture import syntax_tree

PACKAGE = Path(__file__).resolve().parents[1] / "cudnn_doctor"


def test_every_doctor_error_carries_a_code_of_the_registry() -> None:
    without, unknown = [], []
    for path in PACKAGE.rglob("*.py"):
        tree = syntax_tree(path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name != "DoctorError":
                continue
            where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
            given = {k.arg: k.value for k in node.keywords}
            if "finding" in given:  # codes.doctor_error: the finding's own code
                continue
            code = given.get("code")
            if not isinstance(code, ast.Constant):
                without.append(where)
            elif code.value not in CODES:
                unknown.append(f"{where} {code.value}")
    assert without == [] and unknown == []


def test_a_users_error_is_one_line_and_its_json_names_the_code_and_its_title(machine: Machine) -> None:
    result = machine.run("check", "--json", "--project", str(machine.cwd / "missing"))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.json["error"]["code"] == "CD004" and result.json["error"]["title"] == CODES["CD004"].title
    explained = machine.run("explain", "CD004", "--offline-only")
    assert explained.exit_code == 0 and CODES["CD004"].title in explained.stdout
