"""Settings whose grammar is in a file (issue 45, round eight): TORCH_LOGS as the installed torch registers its names
(torch/_logging/_registrations.py: torch raises ValueError at import for any other that is no module), and a file a
setting names that its reader parses (the cuDNN frontend's errata file, CUDNN_ERRATA_JSON_FILE: strict JSON, or it
throws). Errors by the rule the data's source states; fix unsets the variable (sourced in bash, check again clean)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.test_frameworks import install_torch, python_env
from tests.test_process_env import check_after, finding, gpu_machine, plan_lines

REGISTRATIONS = '''# as torch 2.11's torch/_logging/_registrations.py registers them (a few of its names; our own file)
from ._internal import register_artifact, register_log

register_log("dynamo", ["torch._dynamo"])
register_log("inductor", ["torch._inductor"])
register_artifact("graph_code", "the graph's code", visible=True)
register_artifact(
    "recompiles", "why a function was compiled again", visible=True
)
'''


def torch_here(machine: Machine, tmp_path: Path) -> Path:
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "_logging").mkdir(parents=True, exist_ok=True)
    (site / "torch" / "_logging" / "_registrations.py").write_text(REGISTRATIONS)
    (site / "torch" / "_dynamo").mkdir(exist_ok=True)
    return site


@pytest.mark.parametrize(("value", "words"), [
    ("INFO", "'INFO' is not a log"),  # a level, where torch wants names
    ("+dynamo,recompile", "'recompile' is not"),
    ("dynamo\r", "carriage return"),  # a CRLF env file: its regex refuses the whole value
    ("help", "'help'"),
])
def test_torch_logs_the_installed_torch_refuses(machine: Machine, tmp_path: Path, value: str, words: str) -> None:
    torch_here(machine, tmp_path)
    machine.env["TORCH_LOGS"] = value
    refused = finding(machine.check_json(), "CD411")
    assert refused["severity"] == "error" and refused["evidence"] == "rule", refused
    assert words in refused["detail"] and "_registrations.py" in refused["detail"], refused["detail"]
    lines = plan_lines(machine)
    assert "unset TORCH_LOGS" in lines
    assert "CD411" not in codes(check_after(machine, lines))


@pytest.mark.parametrize("value", ["+dynamo,graph_code", "all", "-inductor, recompiles", "torch._dynamo", "logging",
                                   ""])
def test_torch_logs_the_installed_torch_takes(machine: Machine, tmp_path: Path, value: str) -> None:
    torch_here(machine, tmp_path)
    machine.env["TORCH_LOGS"] = value
    assert not {"CD411", "CD414"} & codes(machine.check_json())


@pytest.mark.parametrize(("text", "words"), [
    ('// our errata\n{"version": 1, "rules": []}\n', "not JSON"),
    ('{"version": 1, "rules": [{"rule_id": "x"},]}\n', "not JSON"),
    ("", "not JSON"),
])
def test_an_errata_file_the_cudnn_frontend_cannot_parse(machine: Machine, tmp_path: Path, text: str,
                                                        words: str) -> None:
    torch_here(machine, tmp_path)
    errata = tmp_path / "errata.json"
    errata.write_text(text)
    machine.env["CUDNN_ERRATA_JSON_FILE"] = str(errata)
    refused = finding(machine.check_json(), "CD411")
    assert refused["severity"] == "error" and refused["evidence"] == "rule", refused
    assert words in refused["detail"] and "cudnn_frontend_Errata.h" in (refused["proof"] or ""), refused
    lines = plan_lines(machine)
    assert "unset CUDNN_ERRATA_JSON_FILE" in lines
    assert "CD411" not in codes(check_after(machine, lines))


def _sweep(operation: str) -> list[dict[str, object]]:
    return [{"rule_id": f"{operation}_eng{n}", "operation": operation, "engine": n, "knob": [],
             "cudnn_version_start": 8000, "cudnn_version_end": -1} for n in range(512)]


@pytest.mark.parametrize(("rules", "words"), [
    ([{"rule_id": "ConvFwd_eng12", "operation": "ConvFwd", "engine": "12", "knob": []}],
     "type must be number, but is string"),
    ([{"rule_id": "ConvFwd_eng12", "engine": 12}], "\"operation\" is missing"),
    ([{"rule_id": "x", "operation": "ConvFwd", "engine": 3, "cudnn_version_end": "9.1"}], "cudnn_version_end"),
    (_sweep("ConvFwd"), "unable to find an engine"),
])
def test_an_errata_file_the_frontend_reads_and_then_fails_every_convolution(machine: Machine, tmp_path: Path,
                                                                            rules: list[object], words: str) -> None:
    """Round eighteen's published GPU set (not blind): an errata rule whose engine is the string "12" (torch 2.11 and
    JAX 0.11: '[json.exception.type_error.302] type must be number, but is string'), and a sheet blocking engines
    0-511 of ConvFwd (both: no engine for the convolution) -- JSON the frontend parses, and then fails on while
    checking every plan (cudnn_frontend_Errata.h check_rule). An error on that rule; the plan unsets it."""
    import json

    torch_here(machine, tmp_path)
    errata = tmp_path / "errata.json"
    errata.write_text(json.dumps({"version": 1, "rules": rules}))
    machine.env["CUDNN_ERRATA_JSON_FILE"] = str(errata)
    refused = finding(machine.check_json(), "CD411")
    assert refused["severity"] == "error" and words in refused["detail"], refused
    lines = plan_lines(machine)
    assert "unset CUDNN_ERRATA_JSON_FILE" in lines
    assert "CD411" not in codes(check_after(machine, lines))


def test_an_errata_file_blocking_only_the_gradients_engines_is_no_error(machine: Machine, tmp_path: Path) -> None:
    import json

    torch_here(machine, tmp_path)
    errata = tmp_path / "errata.json"
    errata.write_text(json.dumps({"version": 1, "rules": _sweep("ConvBwdFilter")}))
    machine.env["CUDNN_ERRATA_JSON_FILE"] = str(errata)
    assert "CD411" not in codes(machine.check_json())

def test_an_errata_fifo_is_named_and_never_opened(machine: Machine, tmp_path: Path) -> None:
    import os

    torch_here(machine, tmp_path)
    fifo = tmp_path / "errata.json"
    os.mkfifo(fifo)
    machine.env["CUDNN_ERRATA_JSON_FILE"] = str(fifo)
    refused = finding(machine.check_json(), "CD411")
    assert "FIFO" in refused["detail"], refused["detail"]


@pytest.mark.parametrize("kind", ["valid", "missing", "byte-order mark", "text after the value"])
def test_an_errata_file_the_frontend_takes_or_skips_is_no_error(machine: Machine, tmp_path: Path, kind: str) -> None:
    """Valid JSON is read; a file the frontend cannot open is skipped (load_from_config returns false): a warning
    about the path at most."""
    torch_here(machine, tmp_path)
    errata = tmp_path / "errata.json"
    valid = '{"version": 1, "rules": [{"rule_id": "x", "operation": "ConvFwd", "engine": 999}]}'
    if kind == "valid":
        errata.write_text(valid)
    elif kind == "byte-order mark":  # nlohmann::json skips it
        errata.write_bytes(b"\xef\xbb\xbf" + valid.encode())
    elif kind == "text after the value":  # operator>> reads one value and leaves the rest
        errata.write_text(valid + "\n# added by hand\n")
    machine.env["CUDNN_ERRATA_JSON_FILE"] = str(errata)
    report = machine.check_json()
    assert not [f for f in report["findings"] if f["severity"] == "error" and f["subject"] == "CUDNN_ERRATA_JSON_FILE"]


@pytest.mark.parametrize(("variable", "value", "words"), [
    ("TORCH_LOGS_OUT", "/nonexistent-folder/torch.log", "does not exist"),
    ("TORCH_LOGS_FORMAT", "{levelname}: {message}", "logging.Formatter refuses it"),  # braces: not %-style
])
def test_torch_log_settings_torch_opens_or_parses_at_import(machine: Machine, tmp_path: Path, variable: str,
                                                            value: str, words: str) -> None:
    """torch's _init_logs, run by import torch, opens TORCH_LOGS_OUT with logging.FileHandler and makes its
    formatter with logging.Formatter(TORCH_LOGS_FORMAT): a file it cannot write, a format Python's logging refuses
    (asked of Python's own logging module) make import torch raise."""
    torch_here(machine, tmp_path)
    machine.env[variable] = value
    refused = finding(machine.check_json(), "CD411")
    assert refused["severity"] == "error" and words in refused["detail"], refused
    lines = plan_lines(machine)
    assert f"unset {variable}" in lines
    assert "CD411" not in codes(check_after(machine, lines))


@pytest.mark.parametrize(("variable", "value"), [("TORCH_LOGS_FORMAT", "short"),
                                                  ("TORCH_LOGS_FORMAT", "%(levelname)s: %(message)s")])
def test_torch_log_formats_python_takes_are_no_finding(machine: Machine, tmp_path: Path, variable: str,
                                                       value: str) -> None:
    torch_here(machine, tmp_path)
    machine.env[variable] = value
    assert not {"CD411", "CD414"} & codes(machine.check_json())


def test_torch_logs_with_a_registry_this_cannot_read_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    """A torch whose _registrations.py registers its names otherwise (another release): nothing is said rather than
    every name refused."""
    site = torch_here(machine, tmp_path)
    (site / "torch" / "_logging" / "_registrations.py").write_text("NAMES = load_names()\n")
    machine.env["TORCH_LOGS"] = "+dynamo"
    assert not {"CD411", "CD414"} & codes(machine.check_json())
