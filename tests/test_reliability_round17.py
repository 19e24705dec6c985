"""Round seventeen's reliability classes (issue 43; found by benchmarks/redteam_r21.py, each a test that failed
before its fix)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, cudnn7_archive, cudnn7_prefix, run_json, snapshot_content
from tests.test_install_interrupted import install_args, killed, link_tree, steps_of

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")


@linux_only
@pytest.mark.parametrize("command", ["uninstall", "install"])
def test_an_install_after_a_killed_run_of_the_same_archive_is_undone_by_one_uninstall(tmp_path: Path,
                                                                                      command: str) -> None:
    """An uninstall killed at any step (or an install killed once its manifest is written), then install of that very
    archive: the interrupted run is recovered and, where that leaves the archive installed as it was, nothing is
    installed again. One uninstall then gives the prefix back as it was before the first install. (An install taken
    again after the recovery stacked a second record over the first: the uninstall after it undid that one alone
    and left cuDNN 7.6.5 in the prefix, its first record and backup behind.)"""
    archive = cudnn7_archive(tmp_path / "archive")
    prefix = cudnn7_prefix(tmp_path / "list" / "cuda")
    env = clean_env(tmp_path / "list")
    pristine = snapshot_content(prefix)
    uninstall = ["uninstall", "--prefix", str(prefix), "--yes"]
    if command == "uninstall":
        code, _data, err = run_json(install_args(archive, prefix), env)
        assert code == 0, err
        installed = tmp_path / "installed"
        link_tree(prefix, installed)
        points = steps_of(uninstall, env, tmp_path / "steps.log")
    else:
        points = steps_of(install_args(archive, prefix), env, tmp_path / "steps.log")
        points = points[next(i for i, p in enumerate(points) if p.startswith("commit.manifest")):]
    assert len(points) >= 3, points
    for index, point in enumerate(points[::max(1, len(points) // 5)]):  # five across the run: each failed before
        prefix = tmp_path / f"k{index}" / "cuda"
        if command == "uninstall":
            link_tree(installed, prefix)
        else:
            cudnn7_prefix(prefix)
        env = clean_env(prefix.parent)
        killed([command, *(install_args(archive, prefix)[1:] if command == "install" else uninstall[1:2] +
                           [str(prefix), "--yes"])], env, point)
        code, data, err = run_json(install_args(archive, prefix), env)
        assert code == 0 and data["result"]["status"] in ("installed", "nothing-to-do"), (point, err)
        code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert code == 0, (point, err)
        now = snapshot_content(prefix)
        assert {k: v for k, v in now.items() if not k.startswith(".cudnn-doctor")} == \
            {k: v for k, v in pristine.items() if not k.startswith(".cudnn-doctor")}, point
        code, data, err = run_json(["uninstall", "--prefix", str(prefix), "--yes"], env)
        assert data["result"]["status"] == "nothing-to-do", (point, data["result"])


def test_a_node_that_floods_its_standard_error_is_merged_in_bounded_memory(machine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """fleet run --slurm through a real Slurm cluster, the node's check writing 1.2 GB to its standard error (a
    library's warnings in a loop) before its report: srun keeps it in the node's .err file, which the doctor read
    whole to find the node's name (a 1 GiB address space: stopped, "out of memory"; a FIFO there: a hang). Its first
    MiB is read; the node is merged, and the .err kept as srun wrote it."""
    import json
    import resource
    import shlex
    import subprocess

    from tests.slurm_cluster import missing_tools, slurm_cluster

    if missing_tools() or os.geteuid() != 0:
        pytest.skip("a Slurm cluster of our own needs slurm-wlm, munge and root")
    report = tmp_path / "report.json"
    report.write_text(machine.run("check", "--json").stdout)
    keep = tmp_path / "keep"
    node_command = f"sh -c {shlex.quote(f'head -c 1200000000 /dev/zero >&2; cat {report}')}"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with slurm_cluster(tmp_path / "cluster") as slurm:
        machine.env.update(slurm)
        done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "fleet", "run", "--slurm", "--json", "--keep",
                               str(keep), "--command", node_command, "--deadline", "120", "--", "--nodes=1"],
                              env=machine.env, cwd=machine.cwd, capture_output=True, text=True, timeout=200,
                              preexec_fn=limit)
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["nodes"] == 1 and data["failed"] == [], (data, done.stderr[-800:])
    [kept] = list(keep.glob("*.err"))
    assert kept.stat().st_size > 1_200_000_000 and kept.name != "0.err", kept


@linux_only
@pytest.mark.parametrize("damage", ["a FIFO", "cut short", "not ELF", "a folder"])
def test_a_damaged_library_in_the_cpu_kernels_cache_is_built_again(tmp_path: Path, damage: str) -> None:
    """The compiled CPU baseline's library in the cache, found damaged (a FIFO: the load waited for a writer for ever;
    a copy cut short: mapped, it ended the process with SIGBUS; not ELF, a folder: NumPy's baseline, every run after):
    built again over it, and the compiled baseline runs."""
    import os
    import subprocess

    from tests.test_bench_compiled import PROBE, ROOT, SUMS

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "CUDNN_DOCTOR_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    first = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120)
    assert first.stdout.startswith("compiled with "), first.stderr[-800:]
    [library] = list((tmp_path / "cache" / "cpu-kernels").iterdir())
    data = library.read_bytes()
    library.unlink()
    if damage == "a FIFO":
        os.mkfifo(library)
    elif damage == "cut short":
        library.write_bytes(data[:len(data) // 3])
    elif damage == "not ELF":
        library.write_bytes(b"<html>a proxy's page</html>\n" * 100)
    else:
        library.mkdir()
    again = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=30)
    assert again.returncode == 0 and again.stdout == first.stdout, (again.returncode, again.stdout, again.stderr[-800:])
    assert again.stdout.splitlines()[1] == SUMS
    if damage != "a folder":  # a folder of our file's name is left alone: that run's copy was its own
        assert library.is_file() and library.read_bytes() == data


@linux_only
def test_the_cpu_kernels_library_copied_over_in_place_while_bench_loads_it(tmp_path: Path) -> None:
    """Another program writing the cached library in place while bench starts (`cp` over it truncates, then writes):
    bench loads its own copy of bytes read at one instant, never the file under a mapping that then shrinks
    (SIGBUS: the process died without a word)."""
    import os
    import subprocess
    import threading

    from tests.test_bench_compiled import PROBE, ROOT

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "CUDNN_DOCTOR_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    first = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120,
                           cwd=tmp_path)
    [library] = list((tmp_path / "cache" / "cpu-kernels").iterdir())
    data = library.read_bytes()
    stop = threading.Event()

    def copy_over() -> None:
        while not stop.is_set():
            for part in (data[:len(data) // 3], data):
                with open(library, "r+b") as stream:  # in place, as cp writes over an existing file
                    stream.truncate(0)
                    stream.write(part)

    writer = threading.Thread(target=copy_over, daemon=True)
    writer.start()
    try:
        for _ in range(3):
            again = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                                   timeout=120, cwd=tmp_path)
            assert again.returncode == 0 and again.stdout == first.stdout, (again.returncode, again.stderr[-500:])
    finally:
        stop.set()
        writer.join()
