"""NCCL's interface lists judged on nodes a red-team would build (issue 43, round twenty-one's class ncclsys, its
names and one-line reasons only): an interface or adapter named across two lines never starts a line of the JUnit
report (a CI log would take `::error::` there for a command), and on a node of thousands of interfaces the one
NCCL_SOCKET_IFNAME names is found, not called missing (CD175) because it sorted past the first names listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _check(prefix: Path, *args: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "CUDNN_DOCTOR_"))}
    environment.update(CUDNN_DOCTOR_SYSTEM_PREFIX=str(prefix), PYTHONPATH=str(ROOT),
                       CUDNN_DOCTOR_CACHE_DIR=str(prefix / "cache"), **env)
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", *args], capture_output=True, text=True,
                          env=environment, cwd=prefix, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def node_of_two_thousand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    prefix = tmp_path_factory.mktemp("node")
    net = prefix / "sys" / "class" / "net"
    for index in range(2000):
        (net / f"veth{index}").mkdir(parents=True)
    (net / "zz-ib0").mkdir()
    return prefix


def _codes(output: str) -> list[str]:
    return [f["code"] for f in json.loads(output)["findings"] if f["code"] in ("CD175", "CD176")]


def test_the_interface_named_is_found_past_the_first_names(node_of_two_thousand: Path) -> None:
    assert _codes(_check(node_of_two_thousand, "--json", NCCL_SOCKET_IFNAME="zz-ib")) == []
    assert _codes(_check(node_of_two_thousand, "--json", NCCL_SOCKET_IFNAME="=zz-ib0")) == []


def test_a_name_no_interface_has_is_still_said(node_of_two_thousand: Path) -> None:
    output = _check(node_of_two_thousand, "--json", NCCL_SOCKET_IFNAME="nomatch")
    assert _codes(output) == ["CD175"]
    assert len(json.loads(output)["multi_gpu"]["interfaces"]) == 256  # what the report lists stays bounded


def test_names_across_two_lines_never_start_a_junit_line(tmp_path: Path) -> None:
    (tmp_path / "sys" / "class" / "net" / "eth0\n::error::injected").mkdir(parents=True)
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5\n::warning::injected" / "ports" / "1").mkdir(parents=True)
    output = _check(tmp_path, "--format", "junit", NCCL_SOCKET_IFNAME="ib", NCCL_IB_HCA="mlx4")
    assert "injected" in output  # the findings are there, the names escaped in them
    assert not [line for line in output.splitlines() if line.lstrip().startswith("::")], output
