"""Every `--json` output validates against its JSON Schema shipped in cudnn_doctor/schemas/
(issue 16, item 3): real outputs of each command, run on the pretend machines the other tests use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from cudnn_doctor.schemas import NAMES, load_schema, schema_path
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.install_helpers import make_archive
from tests.test_bench_cli import fakes
from tests.test_check import CUDNN9_SUBLIBS, make_toolkit, write_header


def validate(data: dict) -> None:
    name = data["schema"].split("/")[1]
    schema = load_schema(name)
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:10])


def run_json(machine: Machine, *args: str) -> dict:
    result = machine.run(*args, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    data = json.loads(result.stdout)
    said = data.get("exit_code", data.get("summary", {}).get("exit_code"))
    assert said in (None, result.exit_code)  # compat --list has none
    return data


@pytest.mark.parametrize("name", NAMES)
def test_schemas_are_valid_and_shipped(name: str) -> None:
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema"] == {"const": f"cudnn-doctor/{name}/1"}
    listed = subprocess.run([sys.executable, "-m", "cudnn_doctor.schemas", name], capture_output=True, text=True,
                            check=True)
    assert json.loads(listed.stdout) == schema
    assert schema_path(name).parent.name == "schemas" and schema_path(name).parent.parent.name == "cudnn_doctor"


def test_check_outputs_validate(machine: Machine, tmp_path: Path) -> None:
    validate(run_json(machine, "check", "--json"))  # nothing found at all
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040, gpus=2, name="NVIDIA A100-SXM4-80GB",
              compute_capability="8.0")
    machine.add_library_path(tmp_path / "driver")
    toolkit = make_toolkit(machine.root, "12.4.1", 12040)
    fake_cudnn(toolkit / "lib64", version=90100, cudart=12040, sublibraries=CUDNN9_SUBLIBS[:-1])
    write_header(toolkit / "include", "9.1.0")
    report = run_json(machine, "check", "--json", "--require", "cudnn>=9.2", "--framework", "tensorflow==2.15.0")
    assert report["gpus"] and report["toolkits"] and report["cudnn"] and report["frameworks"]
    assert {"CD318", "CD320"} <= {f["code"] for f in report["findings"]}  # an incomplete copy nothing loads: a warning
    validate(report)


def test_compat_outputs_validate(machine: Machine) -> None:
    answer = run_json(machine, "compat", "tensorflow==2.15.0", "--cuda", "12.2", "--cudnn", "8.6.0", "--driver",
                      "535.54.03", "--json")
    assert answer["verdict"] == "incompatible"
    validate(answer)
    validate(run_json(machine, "compat", "torch==2.5.1", "--json"))
    for table in ("tensorflow", "pytorch", "theano", "dl4j", "cudnn", "cuda"):
        validate(run_json(machine, "compat", "--list", table, "--json"))


def test_explain_outputs_validate(machine: Machine) -> None:
    validate(run_json(machine, "explain", "CD301", "--json"))
    message = "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file"
    validate(run_json(machine, "explain", message, "--json"))  # with what this machine's probes say
    validate(run_json(machine, "explain", "--offline-only", "--json", "nothing anyone ever printed"))


def test_install_outputs_validate(machine: Machine, tmp_path: Path) -> None:
    archive = make_archive("txz", tmp_path)
    prefix = tmp_path / "prefix"
    planned = run_json(machine, "install", "--json", "--from", str(archive), "--prefix", str(prefix), "--dry-run")
    assert planned["result"]["status"] == "planned"
    installed = run_json(machine, "install", "--json", "--from", str(archive), "--prefix", str(prefix), "--yes")
    assert installed["result"]["status"] == "installed"
    removed = run_json(machine, "uninstall", "--json", "--prefix", str(prefix), "--yes")
    failed = run_json(machine, "install", "--json", "--from", str(tmp_path / "missing.tar.xz"), "--prefix",
                      str(prefix), "--dry-run")
    for data in (planned, installed, removed, failed):
        validate(data)


def test_bench_outputs_validate(machine: Machine) -> None:
    validate(run_json(machine, "bench", "--json"))  # no GPU: CD601
    ran = run_json(machine, "bench", "--json", "--size", "tiny", "--repeats", "2", "--no-cpu", *fakes())
    assert {r["workload"] for r in ran["results"]} == {"conv-fwd", "conv-bwd-data", "conv-bwd-filter", "lstm-fwd"}
    validate(ran)


@pytest.mark.parametrize("args", [["check", "--json", "--require", "cudnn>>9"], ["compat", "--json"],
                                  ["check", "--json", "--no-such-option"], ["bench", "--json", "--size", "huge"]])
def test_error_outputs_validate(machine: Machine, args: list[str]) -> None:
    data = run_json(machine, *args)
    assert data["schema"] == "cudnn-doctor/error/1"
    validate(data)


def test_fix_outputs_validate(machine: Machine, tmp_path: Path) -> None:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(tmp_path / "driver")
    toolkit = make_toolkit(machine.root, "13.0.2", 13000)
    fake_cudnn(toolkit / "lib64", version=91900, cudart=12090, sublibraries=CUDNN9_SUBLIBS)
    fake_cudnn(tmp_path / "other", version=91400, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "other")
    plan = run_json(machine, "fix", "--json", "--framework", "tensorflow==2.15.0", "--require", "cudnn>=9.1")
    assert {a["kind"] for a in plan["actions"]} >= {"install", "env", "manual"}
    validate(plan)
    applied = run_json(machine, "fix", "--json", "--yes", "--search-path", str(tmp_path / "nothing-here"))
    assert "after" in applied and all("outcome" in a for a in applied["actions"])
    validate(applied)
