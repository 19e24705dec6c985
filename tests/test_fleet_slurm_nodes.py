"""`fleet run --slurm` on a real three-node Slurm cluster: slurmctld and three slurmd (Slurm's own multiple-slurmd
emulation, each node on its own port of 127.0.0.1), started and stopped by the test. One node's environment puts
another cuDNN first on the loader's path (a TaskProlog, as a node's own setup would); `fleet run` reaches all
three and the merge names that node, and only it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.slurm_cluster import missing_tools, slurm_cluster
from tests.test_fleet import CUDNN9_SUBLIBS

NODES = ["gpu-a", "gpu-b", "gpu-c"]
ODD = "gpu-c"


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the three-node Slurm test (.ci/run installs Slurm and runs as root): {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def three_nodes(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The cluster, and the two cuDNN folders: the one every node has, and the odd node's."""
    missing = missing_tools()
    if missing:
        _unavailable(f"Slurm not installed here ({', '.join(missing)}): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        _unavailable("the test cluster's slurmd runs jobs as root")
    folder = tmp_path_factory.mktemp("three-nodes")
    usual = folder / "cudnn-9.19"
    other = folder / "cudnn-9.14"
    fake_cudnn(usual, version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    fake_cudnn(other, version=91400, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    nvml = fake_nvml(folder / "driver", driver="580.159.04").parent
    # the odd node's own environment: its tasks find another cuDNN first
    prolog = f'if [ "$SLURMD_NODENAME" = {ODD} ]; then echo "export LD_LIBRARY_PATH={other}:{nvml}"; fi\n'
    with slurm_cluster(folder / "cluster", nodes=NODES, task_prolog=prolog) as env:
        yield env, usual, nvml


def test_fleet_run_reaches_three_nodes_and_names_the_odd_one(three_nodes, machine: Machine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    slurm, usual, nvml = three_nodes
    machine.env.update(slurm)
    machine.add_library_path(nvml)
    machine.add_library_path(usual)  # what every node's tasks get from the submitting shell
    keep = tmp_path / "kept"
    result = machine.run("fleet", "run", "--slurm", "--json", "--keep", str(keep), "--deadline", "120",
                         "--", "--nodes=3", timeout=180)
    assert "Traceback" not in result.stderr, result.stderr
    data = result.json
    assert data["nodes"] == 3 and data["failed"] == [], data
    assert sorted(path.stem for path in keep.glob("*.json")) == NODES
    for name in NODES:
        report = json.loads((keep / f"{name}.json").read_text())
        assert report["schema"] == "cudnn-doctor/report/1"  # each node really ran check under its slurmd
    drift = {entry["field"]: entry for entry in data["drift"]}
    copies = drift["cudnn.copies"]
    assert copies["majority"]["nodes"] == 2 and copies["majority"]["value"].startswith("9.19.0 at ")
    assert [(o["node"], o["value"].split(" at ")[0]) for o in copies["outliers"]] == [(ODD, "9.14.0")]
    assert {o["node"] for entry in data["drift"] for o in entry["outliers"]} == {ODD}
    assert result.exit_code == 1

    text = machine.run("fleet", "run", "--slurm", "--deadline", "120", "--", "--nodes=3", timeout=180)
    assert "3 node(s): 3 report(s) read, 0 failed" in text.stdout
    assert f"• {ODD}: 9.14.0 at " in text.stdout and "gpu-a" not in text.stdout and "gpu-b" not in text.stdout


def test_each_nodes_check_runs_in_the_folder_fleet_run_was_started_from(three_nodes, machine: Machine,  # type: ignore[no-untyped-def]
                                                                       tmp_path: Path) -> None:
    """srun's tasks start in srun's own working folder, and the child runner starts srun from "/": each node's check
    ran in "/", not in the folder the user's jobs start in (its modules, a relative path in its variables). The
    judge: a preloaded library writes each process's working folder (tests/fakes/parity_report.c)."""
    import shutil

    from tests.fakes.build import compile_library

    slurm, usual, nvml = three_nodes
    machine.env.update(slurm)
    machine.add_library_path(nvml)
    machine.add_library_path(usual)
    project = tmp_path / "project"
    project.mkdir()
    judge = tmp_path / "libparity.so"
    shutil.copy(compile_library("parity_report.c", "libparity.so"), judge)
    report = tmp_path / "report.jsonl"
    machine.env.update({"LD_PRELOAD": str(judge), "PARITY_REPORT": str(report)})
    machine.cwd = project
    result = machine.run("fleet", "run", "--slurm", "--json", "--deadline", "120", "--", "--nodes=3", timeout=180)
    assert result.json["nodes"] == 3, result.stdout[-2000:]
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    # each node's task (/bin/sh saying its name, then the check it becomes), as slurmd started it
    nodes = [line for line in lines if line["argv"][:1] == ["/bin/sh"] and "cudnn-doctor-node" in line["argv"]]
    assert len(nodes) == 3, [line["argv"][:4] for line in lines]
    assert {line["cwd"] for line in nodes} == {str(project)}, [line["cwd"] for line in nodes]
