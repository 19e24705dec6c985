"""`fleet merge` and `fleet run --slurm`: many nodes' reports, what differs, on a real Slurm cluster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.slurm_cluster import missing_tools, slurm_cluster

CUDNN9_SUBLIBS = ("cudnn_graph", "cudnn_ops", "cudnn_cnn", "cudnn_adv", "cudnn_heuristic",
                  "cudnn_engines_precompiled", "cudnn_engines_runtime_compiled")


def _node(tmp_path: Path, name: str, cudnn_version: int, driver: str = "580.159.04") -> dict:
    """A pretend node: its own system root, a fake driver and one cuDNN on the loader's path."""
    machine = Machine(tmp_path / name)
    fake_cudnn(tmp_path / name / "cudnn", version=cudnn_version, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / name / "cudnn")
    machine.add_library_path(fake_nvml(tmp_path / name / "nvml", driver=driver).parent)
    report = machine.check_json()
    report["host"]["hostname"] = name  # the pretend nodes all run on this one host
    # each pretend node lives in its own folder; on a real fleet the paths are the same
    return json.loads(json.dumps(report).replace(str(tmp_path / name), "/node"))


@pytest.fixture(scope="module")
def fleet_reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("fleet")
    folder = tmp_path / "reports"
    folder.mkdir()
    nodes = {"gpu-01": 91900, "gpu-02": 91900, "gpu-03": 91400, "gpu-04": 91900}
    for name, version in nodes.items():
        report = _node(tmp_path, name, version, driver="570.86.15" if name == "gpu-04" else "580.159.04")
        (folder / f"{name}.json").write_text(json.dumps(report))
    return folder


def test_merge_names_the_odd_node_and_nothing_about_the_agreeing_ones(fleet_reports: Path, machine: Machine) -> None:
    result = machine.run("fleet", "merge", "--json", str(fleet_reports))
    assert result.exit_code == 1, result.stderr
    data = result.json
    assert data["schema"] == "cudnn-doctor/fleet/1" and data["nodes"] == 4 and data["failed"] == []
    drift = {entry["field"]: entry for entry in data["drift"]}
    copies = drift["cudnn.copies"]
    assert copies["majority"]["nodes"] == 3 and copies["majority"]["value"].startswith("9.19.0 at ")
    assert [o["node"] for o in copies["outliers"]] == ["gpu-03"]
    assert copies["outliers"][0]["value"].startswith("9.14.0 at ")
    assert [o["node"] for o in drift["cudnn.loaded_by.ld.so"]["outliers"]] == ["gpu-03"]
    assert drift["driver.version"]["majority"]["value"] == "580.159.04"
    assert drift["driver.version"]["outliers"] == [{"node": "gpu-04", "value": "570.86.15"}]
    assert "gpus" not in drift and "toolkits" not in drift  # every node agrees: not mentioned
    every_outlier = {o["node"] for entry in data["drift"] for o in entry["outliers"]}
    assert every_outlier <= {"gpu-03", "gpu-04"}

    text = machine.run("fleet", "merge", str(fleet_reports))
    assert text.exit_code == 1
    assert "cudnn.copies: 3 node(s) have 9.19.0" in text.stdout and "• gpu-03: 9.14.0" in text.stdout
    assert "gpu-01" not in text.stdout


def test_merge_writes_a_gpu_name_with_terminal_escapes_or_a_bidi_override_as_escapes(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    # a report is a file anyone on the cluster may write: its GPU name reaches the operator's terminal escaped
    good = machine.check_json()
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "a.json").write_text(json.dumps({**good, "gpus": [{"name": "\x1b]52;c;cm0=\x07H100\u202e"}]}))
    (reports / "b.json").write_text(json.dumps(good))
    text = machine.run("fleet", "merge", str(reports))
    assert "\u202e" not in text.stdout and "\x1b" not in text.stdout and "\\u202e" in text.stdout, text.stdout


def test_merge_of_agreeing_nodes_exits_0(fleet_reports: Path, machine: Machine, tmp_path: Path) -> None:
    same = tmp_path / "same"
    same.mkdir()
    for name in ("gpu-01", "gpu-02"):
        shutil.copy(fleet_reports / f"{name}.json", same / f"{name}.json")
    result = machine.run("fleet", "merge", "--json", str(same))
    assert result.exit_code == 0 and result.json["drift"] == [] and result.json["failed"] == []
    assert "every node that answered agrees" in machine.run("fleet", "merge", str(same)).stdout


def test_hostile_report_files_make_failed_nodes_not_a_crash(fleet_reports: Path, machine: Machine,
                                                            tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(fleet_reports / "gpu-01.json", folder / "gpu-01.json")
    os.mkfifo(folder / "fifo.json")  # must not block
    (folder / "latin1.json").write_bytes(b'{"schema": "cudnn-doctor/report/1", "host": {"hostname": "\xe9"}}')
    (folder / "empty.json").write_text("")
    (folder / "list.json").write_text("[1, 2]")
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "error.json").write_text(json.dumps({"schema": "cudnn-doctor/error/1", "exit_code": 2,
                                                   "error": {"message": "bad --require"}}))
    with open(folder / "huge.json", "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: no disk used
    result = machine.run("fleet", "merge", "--json", str(folder), timeout=30)
    assert "Traceback" not in result.stderr
    data = result.json
    assert data["nodes"] == 8 and result.exit_code == 1
    why = {node["node"]: node["why"] for node in data["failed"]}
    assert why["fifo"].startswith("not a regular file")
    assert why["latin1"] == "not UTF-8 text"
    assert why["empty"].startswith("empty")
    assert why["list"].startswith("not a cudnn-doctor report")
    assert why["deep"].startswith("not JSON")
    assert why["error"] == "check failed: bad --require"
    assert "larger than" in why["huge"]


def test_merge_usage_errors_are_one_line(machine: Machine, tmp_path: Path) -> None:
    missing = machine.run("fleet", "merge", str(tmp_path / "nowhere"))
    assert missing.exit_code == 2 and "nowhere" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    (tmp_path / "empty").mkdir()
    empty = machine.run("fleet", "merge", str(tmp_path / "empty"))
    assert empty.exit_code == 2 and "no *.json reports" in empty.stderr


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    missing = missing_tools()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have Slurm and munge (.ci/run installs them); missing: {missing}")
        pytest.skip(f"Slurm not installed here ({', '.join(missing)}): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("the test cluster's slurmd runs jobs as root")
    with slurm_cluster(tmp_path_factory.mktemp("slurm") / "cluster") as env:
        yield env


def test_fleet_run_through_a_real_slurm_cluster(slurm: dict[str, str], machine: Machine, tmp_path: Path) -> None:
    machine.env.update(slurm)
    keep = tmp_path / "kept"
    result = machine.run("fleet", "run", "--slurm", "--json", "--keep", str(keep), "--deadline", "60",
                         "--", "--nodes=1", timeout=90)
    assert "Traceback" not in result.stderr, result.stderr
    data = result.json
    assert data["nodes"] == 1 and data["failed"] == [] and data["drift"] == [], data
    reports = list(keep.glob("*.json"))
    assert len(reports) == 1
    report = json.loads(reports[0].read_text())
    assert report["schema"] == "cudnn-doctor/report/1"  # the node really ran check, under srun


def test_fleet_run_reports_a_node_whose_check_failed(slurm: dict[str, str], machine: Machine) -> None:
    machine.env.update(slurm)
    broken = f"{sys.executable} -I -c 'import sys; sys.stderr.write(\"no GPU stack here\\n\"); sys.exit(3)'"
    result = machine.run("fleet", "run", "--slurm", "--json", "--command", broken, "--deadline", "60", timeout=90)
    data = result.json
    assert result.exit_code == 1
    assert len(data["failed"]) == 1 and "no GPU stack here" in data["failed"][0]["why"]


def test_fleet_run_without_slurm_says_where_to_go(machine: Machine, tmp_path: Path) -> None:
    machine.env["PATH"] = str(tmp_path)  # no srun here
    result = machine.run("fleet", "run", "--slurm")
    assert result.exit_code == 2 and "srun not found" in result.stderr and "fleet merge" in result.stderr
    for deadline in ("nan", "inf", "-1", "0"):
        bad = machine.run("fleet", "run", "--slurm", "--deadline", deadline)
        assert bad.exit_code == 2 and "--deadline" in bad.stderr and "Traceback" not in bad.stderr
    engine = machine.run("fleet", "run", "--json")
    assert engine.exit_code == 2 and "name the engine" in engine.stdout + engine.stderr


def test_fleet_json_validates_against_its_shipped_schema(fleet_reports: Path, machine: Machine, tmp_path: Path) -> None:
    from tests.test_schemas import validate

    mixed = tmp_path / "mixed"
    shutil.copytree(fleet_reports, mixed)
    (mixed / "broken.json").write_text("{")
    data = machine.run("fleet", "merge", "--json", str(mixed)).json
    assert data["drift"] and data["failed"]
    validate(data)


def _report(hostname: str, driver: str = "580.159.04", **extra: object) -> dict:
    """A node's report as `check --json` writes it, reduced to what the merge reads."""
    return {"schema": "cudnn-doctor/report/1", "host": {"hostname": hostname},
            "driver": {"version": driver, "cuda_driver_version": "13.0"}, "gpus": [], "toolkits": [],
            "cudnn": [{"version": "9.19.0", "library": "/usr/lib/libcudnn.so.9", "loaded_by": ["ld.so"]}],
            "frameworks": [], "findings": [], "summary": {"status": "ok", "exit_code": 0}, **extra}


def test_values_nested_600_deep_make_that_node_failed_not_the_merge(machine: Machine, tmp_path: Path) -> None:
    folder = tmp_path / "deep"
    folder.mkdir()
    deep = json.loads("[" * 600 + '"580.159.04"' + "]" * 600)
    nested = {"a": deep}
    for name, report in {
        "gpu-01": _report("gpu-01"), "gpu-02": _report("gpu-02"),
        "list-driver": _report("list-driver", driver=deep),  # type: ignore[arg-type]
        "object-status": {**_report("object-status"), "summary": {"status": nested}},
        "deep-loader": {**_report("deep-loader"), "cudnn": [{"version": "9.19.0", "loaded_by": [deep]}]},
        "deep-framework": {**_report("deep-framework"), "frameworks": [{"name": deep, "version": "1"}]},
        "deep-unread": {**_report("deep-unread"), "timings_ms": nested},  # a field the merge does not read
    }.items():
        (folder / f"{name}.json").write_text(json.dumps(report))
    for args in (("--json",), ()):
        result = machine.run("fleet", "merge", *args, str(folder))
        assert result.exit_code == 1 and "Traceback" not in result.stderr and "internal" not in result.stderr
    data = machine.run("fleet", "merge", "--json", str(folder)).json
    why = {node["node"]: node["why"] for node in data["failed"]}
    assert set(why) == {"list-driver", "object-status", "deep-loader", "deep-framework"}
    assert "driver.version is a nested list or object" in why["list-driver"]
    assert "summary.status" in why["object-status"]
    assert data["nodes"] == 7 and data["drift"] == []  # the readable nodes, deep-unread with them, agree


def test_sections_of_another_type_make_that_node_failed_not_a_clean_one(machine: Machine, tmp_path: Path) -> None:
    """A node's report whose findings are strings, or whose sections are of other types (a later release's schema
    under the same name, a hand-made file): read as no findings it was a healthy node agreeing with the rest; it is
    a failed node, each with why."""
    folder = tmp_path / "types"
    folder.mkdir()
    changed = {key: ({"v": 1} if isinstance(value, list) else [value]) for key, value in _report("types").items()
               if key not in ("schema", "host")}
    for name, report in {
        "gpu-01": _report("gpu-01"), "gpu-02": _report("gpu-02"),
        "strings": {**_report("strings"), "findings": ["CD301", "CD302"]},
        "types": {**_report("types"), **changed, "tool": {"name": "cudnn-doctor", "version": "99.0.0"}},
        "summary-list": {**_report("summary-list"), "summary": ["ok"]},
    }.items():
        (folder / f"{name}.json").write_text(json.dumps(report))
    data = machine.run("fleet", "merge", "--json", str(folder)).json
    why = {node["node"]: node["why"] for node in data["failed"]}
    assert set(why) == {"strings", "types", "summary-list"}, data
    assert "findings are not a list of objects" in why["strings"] and "summary is not an object" in \
        why["summary-list"], why
    assert data["exit_code"] == 1 and data["drift"] == [], data


def test_one_hostname_in_two_folders_is_two_nodes_each_named_by_its_file(machine: Machine, tmp_path: Path) -> None:
    first, second = tmp_path / "rack-a", tmp_path / "rack-b"
    first.mkdir()
    second.mkdir()
    (first / "gpu-01.json").write_text(json.dumps(_report("gpu-01", driver="570.86.15")))
    (second / "gpu-01.json").write_text(json.dumps(_report("gpu-01")))  # a re-imaged node, or a cloned hostname
    (second / "gpu-02.json").write_text(json.dumps(_report("gpu-02")))
    result = machine.run("fleet", "merge", "--json", str(first), str(second), str(second / "gpu-02.json"))
    data = result.json
    assert data["nodes"] == 3 and data["failed"] == []  # gpu-02.json named twice is one node
    [drift] = data["drift"]
    assert drift["field"] == "driver.version"
    assert drift["majority"] == {"value": "580.159.04", "nodes": 2}
    assert drift["outliers"] == [{"node": f"gpu-01 ({first / 'gpu-01.json'})", "value": "570.86.15"}]
    text = machine.run("fleet", "merge", str(first), str(second)).stdout
    assert f"gpu-01 ({first / 'gpu-01.json'})" in text
    # a host name with a line break and terminal codes in it stays on its own line in the text
    (second / "odd.json").write_text(json.dumps(_report("gpu-03\n::error::forged\x1b[31m\u2028", driver="1")))
    text = machine.run("fleet", "merge", str(second)).stdout
    assert "• gpu-03\\n::error::forged\\x1b[31m\\u2028: 1" in text.splitlines()[-1]
    assert not any(line.startswith("::") for line in text.splitlines())


def test_big_reports_merge_one_at_a_time_in_bounded_memory(machine: Machine, tmp_path: Path) -> None:
    """The merge holds one parsed report at a time: four reports of 7 MB, each mostly 2.35 million tiny
    objects (about 150 MB once parsed), fit under a 512 MiB address-space limit, where holding them all
    does not (MemoryError before the merge streamed; measured: a Python under that limit holds two parsed, the
    third raises MemoryError; the merge itself still passes under 400 MiB, not under 340). Reports of 14 MB under
    1 GiB proved the same (a Python held three) at twice the parsing: 8.4 CPU s of merge, now 4.2."""
    import resource

    folder = tmp_path / "big"
    folder.mkdir()
    head = json.dumps(_report("node"))[:-1]
    (folder / "node-0.json").write_bytes(head.encode() + b', "notes": [' + b"{}," * 2_350_000 + b"{}]}")
    assert (folder / "node-0.json").stat().st_size > 7_000_000
    for i in range(1, 4):
        os.link(folder / "node-0.json", folder / f"node-{i}.json")  # the same bytes, four reports

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    completed = subprocess.run([sys.executable, "-m", "cudnn_doctor", "fleet", "merge", "--json", str(folder)],
                               env=machine.env, cwd=machine.cwd, capture_output=True, text=True, timeout=120,
                               preexec_fn=limit)
    assert completed.returncode == 0, completed.stderr[-2000:]
    data = json.loads(completed.stdout)
    assert data["nodes"] == 4 and data["failed"] == [] and data["drift"] == []


def test_fleet_run_usage_errors_are_exit_2_and_one_json_object(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    cases = (("--keep", str(tmp_path / "a-file")), ("--keep", str(tmp_path / "a-file" / "under")),
             ("--keep", "/proc/no-folder-can-be-made-here"), ("--command", "cudnn-doctor check --json 'unclosed"),
             ("--command", '"'))
    for option, value in cases:
        result = machine.run("fleet", "run", "--slurm", "--json", option, value, "--", "--nodes=1")
        assert result.exit_code == 2, (option, value, result.stderr)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        assert result.json["schema"] == "cudnn-doctor/error/1" and option in result.json["error"]["message"]
        assert len(result.stdout.strip().splitlines()) == len(json.dumps(result.json, indent=2).splitlines())
    assert (tmp_path / "a-file").read_text() == "not a folder"


def _srun_wrapper(tmp_path: Path, body: str) -> str:
    """A folder whose `srun` is a site's wrapper script around the real srun (BODY runs first)."""
    real = shutil.which("srun")
    assert real is not None
    folder = tmp_path / "wrapper-bin"
    folder.mkdir()
    wrapper = folder / "srun"
    wrapper.write_text(f"#!/bin/sh\n{body}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(folder)


def test_srun_that_leaves_its_stderr_held_and_floods_it(slurm: dict[str, str], machine: Machine, tmp_path: Path) -> None:
    """The wrapper writes 1.2 GB to srun's stderr without a newline, then leaves a process holding it after
    srun exits: the doctor reads it in bounded memory (1 GiB address space) and ends when srun does."""
    import resource

    machine.env.update(slurm)
    machine.env["PATH"] = _srun_wrapper(tmp_path, "head -c 1200000000 /dev/zero >&2\nsleep 600 >&2 &") + \
        ":" + machine.env["PATH"]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    completed = subprocess.run([sys.executable, "-m", "cudnn_doctor", "fleet", "run", "--slurm", "--json",
                                "--deadline", "120", "--", "--nodes=1"], env=machine.env, cwd=machine.cwd,
                               capture_output=True, text=True, timeout=200, preexec_fn=limit)
    assert completed.returncode == 0, completed.stderr[-2000:]
    data = json.loads(completed.stdout)
    assert data["nodes"] == 1 and data["failed"] == [] and "srun" not in data, data  # not "stopped after"


def test_fifos_where_srun_writes_or_in_keep_do_not_block(slurm: dict[str, str], machine: Machine, tmp_path: Path) -> None:
    import socket

    machine.env.update(slurm)
    keep = tmp_path / "kept %N %j 100%"  # srun reads % in its --output as a pattern
    keep.mkdir()
    node = socket.gethostname().split(".")[0]
    for name in (f"{node}.json", "other-node.json"):
        os.mkfifo(keep / name)
    (keep / f"{node}.err").mkdir()  # a folder where srun's stderr file would be kept: said, not fatal
    result = machine.run("fleet", "run", "--slurm", "--json", "--keep", str(keep), "--deadline", "60",
                         "--", "--nodes=1", timeout=120)
    data = result.json
    assert data["nodes"] == 1 and data["failed"] == [], data  # this run's node only
    assert data["srun"] == f"not kept in --keep: {node}.err (Is a directory)", data
    report = keep / f"{node}.json"
    assert report.is_file() and json.loads(report.read_text())["schema"] == "cudnn-doctor/report/1"
    assert [p.name for p in keep.iterdir() if p.name.startswith(".")] == []  # srun's own folder is gone


def test_ctrl_c_cancels_srun_and_its_step_then_cleans_up(slurm: dict[str, str], machine: Machine, tmp_path: Path) -> None:
    """Ctrl-C while the nodes' checks run: srun gets SIGINT twice (it cancels the job step), the task on the
    node ends, no job is left in the queue, and srun's folder goes only after srun is gone."""
    import signal
    import time

    machine.env.update(slurm)
    machine.env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    started = tmp_path / "task-pid"
    task = f"{sys.executable} -c 'import os, time; open(\"{started}\", \"w\").write(str(os.getpid())); time.sleep(600)'"
    doctor = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "fleet", "run", "--slurm", "--json", "--command",
                               task, "--deadline", "300", "--", "--nodes=1"], env=machine.env, cwd=machine.cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (started.exists() and started.read_text()):
            assert doctor.poll() is None and time.monotonic() < deadline, doctor.communicate()
            time.sleep(0.1)
        task_pid = int(started.read_text())
        doctor.send_signal(signal.SIGINT)  # what the terminal's Ctrl-C sends
        stdout, stderr = doctor.communicate(timeout=60)
    finally:
        if doctor.poll() is None:
            doctor.kill()
    assert doctor.returncode == 130, stderr
    assert json.loads(stdout)["error"]["title"] == "Interrupted"
    assert not Path(f"/proc/{task_pid}").exists() or \
        Path(f"/proc/{task_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    # the job's end is slurmctld's, after its step is cancelled: COMPLETING for a moment (seen under load), then gone
    queue_deadline = time.monotonic() + 30
    while True:
        queue = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], env={**os.environ, **slurm}, capture_output=True,
                               text=True, timeout=30)
        assert queue.returncode == 0, queue.stderr
        left = queue.stdout.split()
        if not left or time.monotonic() > queue_deadline or left[2:3] != ["COMPLETING"]:
            break
        time.sleep(0.2)
    assert queue.stdout.strip() == "", queue.stdout
    srun_left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid).startswith("srun")
                 and str(started) in _cmdline(pid)]
    assert srun_left == []
    assert list((tmp_path / "tmp").iterdir()) == []  # srun's folder, deleted once srun was gone


def _cmdline(pid: str) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return os.path.basename(raw.split(b"\0")[0].decode(errors="replace")) + " " + raw.decode(errors="replace")


def test_at_the_deadline_a_waiting_job_is_cancelled_not_left_queued(slurm: dict[str, str], machine: Machine) -> None:
    machine.env.update(slurm)
    result = machine.run("fleet", "run", "--slurm", "--json", "--deadline", "3", "--", "--nodes=1",
                         "--begin=now+1hour", timeout=60)
    assert result.exit_code == 2 and "stopped after 3 s" in result.json["error"]["message"], result.stderr
    queue = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], env={**os.environ, **slurm}, capture_output=True,
                           text=True, timeout=30)
    assert queue.returncode == 0 and queue.stdout.strip() == "", queue.stdout


def _queue(slurm: dict[str, str]) -> str:
    """squeue's jobs, once a cancelled one has left COMPLETING (slurmctld's, a moment)."""
    import time

    end = time.monotonic() + 30
    while True:
        queue = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], env={**os.environ, **slurm}, capture_output=True,
                               text=True, timeout=30)
        assert queue.returncode == 0, queue.stderr
        if "COMPLETING" not in queue.stdout or time.monotonic() > end:
            return queue.stdout.strip()
        time.sleep(0.2)


@pytest.mark.parametrize("deadline", [2])
def test_the_deadline_covers_the_stopping_too(slurm: dict[str, str], machine: Machine, deadline: int) -> None:
    """Issue 43, class 7: `--deadline 2` ends in about 2 s (srun is asked to stop within it), the queued job
    cancelled by its own name, none left in the queue."""
    import time

    machine.env.update(slurm)
    started = time.monotonic()
    result = machine.run("fleet", "run", "--slurm", "--json", "--deadline", str(deadline), "--", "--nodes=1",
                         "--begin=now+1hour", timeout=60)
    took = time.monotonic() - started
    assert result.exit_code == 2 and f"stopped after {deadline} s" in result.json["error"]["message"], result.stderr
    assert took < deadline + 1.5, took  # the doctor's own start and merge included
    assert _queue(slurm) == ""


def test_ctrl_c_while_the_job_waits_in_the_queue_cancels_it(slurm: dict[str, str], machine: Machine,
                                                            tmp_path: Path) -> None:
    """Ctrl-C while srun still waits for its allocation: srun and its queued job are gone, not left waiting."""
    import signal
    import time

    machine.env.update(slurm)
    doctor = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "fleet", "run", "--slurm", "--json",
                               "--deadline", "300", "--", "--nodes=1", "--begin=now+1hour"], env=machine.env,
                              cwd=machine.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while not _queue(slurm):  # srun has asked for its allocation: the job waits, --begin an hour away
            assert doctor.poll() is None and time.monotonic() < end, doctor.communicate()
            time.sleep(0.1)
        doctor.send_signal(signal.SIGINT)
        _stdout, stderr = doctor.communicate(timeout=30)
    finally:
        if doctor.poll() is None:
            doctor.kill()
    assert doctor.returncode == 130, stderr
    assert _queue(slurm) == ""


def test_an_srun_that_does_not_stop_is_killed_within_the_deadline_and_its_job_cancelled(
        slurm: dict[str, str], machine: Machine, tmp_path: Path) -> None:
    """An srun that never gets to cancel its job (here a wrapper that ignores SIGINT holds it, as a stuck srun
    would): it is killed within --deadline, and the job it left queued is cancelled by its name."""
    import time

    wrapper = tmp_path / "bin" / "srun"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\ntrap '' INT\n{shutil.which('srun', path=slurm.get('PATH'))} \"$@\" &\nwait $!\n")
    wrapper.chmod(0o755)
    machine.env.update(slurm)
    machine.env["PATH"] = f"{wrapper.parent}:{machine.env['PATH']}"
    started = time.monotonic()
    result = machine.run("fleet", "run", "--slurm", "--json", "--deadline", "3", "--", "--nodes=1",
                         "--begin=now+1hour", timeout=60)
    took = time.monotonic() - started
    assert result.exit_code == 2 and "stopped after 3 s" in result.json["error"]["message"], result.stderr
    assert took < 4.5, took
    assert _queue(slurm) == ""
