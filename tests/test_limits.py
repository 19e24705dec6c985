"""Limits on the doctor itself (issue 43, class 5): under a low soft limit of open files (ulimit -n), address space
(ulimit -v) or stack (ulimit -s) the doctor ends in time, says which limit stopped it in one line (one JSON object with --json, never
two), exit 2; or it runs through. Never an internal error, never a hang."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.codes import CODES
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.test_check import CUDNN9_SUBLIBS

# a sample of the ranges the red team found broken (open files 10-16, address space 21-46 MB), and either side
CASES = [("-n", n) for n in (8, 10, 12, 14, 16, 20)] + [("-v", mb) for mb in (21, 30, 38, 46, 60)] + \
    [("-s", kib) for kib in (64, 128, 256, 511, 512)]


def _run_limited(machine: Machine, option: str, value: int, *args: str) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if option == "-n":
            resource.setrlimit(resource.RLIMIT_NOFILE, (value, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        elif option == "-s":  # KiB, soft and hard, as `ulimit -s VALUE` sets them
            resource.setrlimit(resource.RLIMIT_STACK, (value << 10, value << 10))
        else:
            resource.setrlimit(resource.RLIMIT_AS, (value << 20, resource.getrlimit(resource.RLIMIT_AS)[1]))

    # -P: below about 72 KiB of stack CPython 3.11 itself dies computing sys.path[0] before any code of the doctor runs
    # (README, "Limits"); with -P (PYTHONSAFEPATH) it starts, and the doctor's floor speaks
    python = [sys.executable, "-P"] if option == "-s" and sys.version_info >= (3, 11) else [sys.executable]
    return subprocess.run([*python, "-m", "cudnn_doctor", *args], env=machine.env, cwd=machine.cwd,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, preexec_fn=limit)


@pytest.mark.parametrize(("option", "value"), CASES)
def test_a_doctor_under_a_limit_says_which_one_stopped_it(machine: Machine, tmp_path: Path, option: str,
                                                        value: int) -> None:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(tmp_path / "driver")
    fake_cudnn(tmp_path / "cudnn", version=91900, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "cudnn")
    for args in (("check", "--json"), ("check",)):
        done = _run_limited(machine, option, value, *args)  # a hang is subprocess's TimeoutExpired
        assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-800:])
        if option == "-s":  # below its floor it says so before it starts; at it, it runs through
            assert (done.returncode == 2) == (value < 512), (done.returncode, done.stderr[-800:])
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-800:]
        assert "Too many open files" not in done.stdout, done.stdout[-800:]  # never a probe's failure instead
        if "--json" in args:
            data = json.loads(done.stdout)  # one object: a second would make this fail
            said = data["summary"]["exit_code"] if "summary" in data else data["exit_code"]  # a report, or an error
            assert said == done.returncode
            if "error" in data:  # the registry's class of the error, not null
                assert data["error"]["code"] == "CD010" and data["error"]["title"] == CODES["CD010"].title, data
        if done.returncode == 2:
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1, done.stderr[-1500:]
            [line] = lines
            assert f"ulimit {option} is" in line and (f"ulimit -S {option}" in line or  # as root, below the hard
                                                      f"ulimit {option} " in line and "ulimit -H" in line), line


def test_a_doctor_out_of_cpu_time_says_so_in_one_line(machine: Machine, tmp_path: Path) -> None:
    """`ulimit -S -t 1`: the kernel's SIGXCPU killed the doctor silently (exit 152); it is a limit like the others
    now: one line, one JSON object, exit 2. The work: an image layer of 200,000 members (seconds of CPU)."""
    import gzip
    import tarfile

    from tests.images import config_of, manifest_of
    from tests.test_image_hostile import index_of, write_layout

    header = tarfile.TarInfo("d/f").tobuf(tarfile.USTAR_FORMAT)
    blob = gzip.compress(header * 200_000 + bytes(1024), 1)
    config = config_of({"CUDA_VERSION": "12.8.1"})
    manifest = json.loads(manifest_of(config, [(blob, "application/vnd.oci.image.layer.v1.tar+gzip")]))
    folder = write_layout(tmp_path / "layout", config, manifest, index_of(json.dumps(manifest).encode()), [blob])

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (1, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "image", str(folder), "--json"], env=machine.env,
                          cwd=machine.cwd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=limit)
    assert done.returncode == 2, (done.returncode, done.stderr[-800:])
    assert json.loads(done.stdout)["error"]["title"] == "A limit of the process stopped it"
    assert json.loads(done.stdout)["error"]["code"] == "CD010"
    [line] = done.stderr.strip().splitlines()
    assert "ulimit -t is" in line and "ulimit -S -t" in line, line


def test_an_install_past_the_file_size_limit_names_it_and_rolls_back(machine: Machine, tmp_path: Path) -> None:
    """`ulimit -S -f 4`: a file of the archive cannot be written whole (EFBIG; Python ignores SIGXFSZ); the install
    is rolled back as for any failure, and the one line names the limit and the line that lifts it."""
    from tests.install_helpers import make_archive

    archive = make_archive("txz", tmp_path, version=91900)
    prefix = tmp_path / "cuda"
    (prefix / "lib64").mkdir(parents=True)
    (prefix / "lib64" / "mine.so").write_bytes(b"the user's")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 10, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "install", "--from", str(archive), "--prefix",
                           str(prefix), "--yes"], env=machine.env, cwd=machine.cwd, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, preexec_fn=limit)
    assert done.returncode == 1, done.stderr[-800:]
    [line] = done.stderr.strip().splitlines()
    assert "ulimit -f is 4 KiB" in line and "ulimit -S -f" in line, line
    assert sorted(p.name for p in prefix.rglob("*")) == ["lib64", "mine.so"]


def test_a_huge_stack_limit_does_not_make_the_doctors_threads_run_out_of_address_space(machine: Machine,
                                                                                          tmp_path: Path) -> None:
    """glibc gives each new thread the soft stack limit: under `ulimit -s 1048576` and `ulimit -v` of 3 GiB the
    doctor's own threads took 1 GiB each and it stopped, blaming -v. Its threads have their own 2 MiB now."""
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(tmp_path / "driver")
    fake_cudnn(tmp_path / "cudnn", version=91900, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "cudnn")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (1 << 30, resource.RLIM_INFINITY))
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=machine.env,
                          cwd=machine.cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          preexec_fn=limit)
    assert done.returncode in (0, 1), done.stderr[-800:]
    assert json.loads(done.stdout)["summary"]["exit_code"] == done.returncode


def _check_under(machine: Machine, limits: dict[int, int]) -> dict:  # type: ignore[type-arg]
    def limit() -> None:
        for number, soft in limits.items():
            resource.setrlimit(number, (soft, resource.getrlimit(number)[1]))

    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=machine.env, cwd=machine.cwd,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, preexec_fn=limit)
    return json.loads(done.stdout)


def test_a_low_cpu_time_or_data_limit_is_a_warning_that_deep_proves(machine: Machine) -> None:
    # every program started here inherits them: a CPU-time limit ends a training run (SIGXCPU), a data limit bounds
    # its host memory; read, so a warning (compat/process_env.toml [[limit]] rows, setrlimit(2))
    report = _check_under(machine, {resource.RLIMIT_CPU: 600, resource.RLIMIT_DATA: 8 << 30})
    found = {f["subject"]: f for f in report["findings"] if f["code"] == "CD116"}
    assert set(found) >= {"RLIMIT_CPU", "RLIMIT_DATA"}, report["findings"]
    assert found["RLIMIT_CPU"]["severity"] == "warning" and found["RLIMIT_CPU"]["evidence"] == "read"
    assert "ulimit -S -t is 600 s" in json.dumps(found["RLIMIT_CPU"]) and "--deep" in found["RLIMIT_CPU"]["proof"]
    assert "8.0 GiB" in json.dumps(found["RLIMIT_DATA"])


def test_no_warning_for_limits_that_leave_room_or_that_the_kernel_does_not_enforce(machine: Machine) -> None:
    import os

    report = _check_under(machine, {resource.RLIMIT_CPU: 200000, resource.RLIMIT_NPROC: 64})
    subjects = {f["subject"] for f in report["findings"] if f["code"] == "CD116"}
    assert "RLIMIT_CPU" not in subjects
    assert ("RLIMIT_NPROC" in subjects) == (os.geteuid() != 0)  # not enforced for root (setrlimit(2))


@pytest.mark.parametrize("hard", [30, 500])
def test_the_fix_for_a_limit_is_one_the_hard_limit_allows(machine: Machine, hard: int) -> None:
    """`ulimit -S -n 1024` fails under a hard limit of 500 ("cannot modify limit"): the line says the most it allows.
    Where even the hard limit is below what the doctor needs, the line raises both where this process may (it holds
    CAP_SYS_RESOURCE), and says who may where it may not (a container's root often does not): never a line that
    fails."""
    from cudnn_doctor.limits import _may_raise_hard_limits

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, hard))

    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check"], env=machine.env, cwd=machine.cwd,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, preexec_fn=limit)
    assert done.returncode == 2, done.stderr
    fix = done.stderr.rstrip().split("(fix: ", 1)[1]
    if hard == 500:
        assert fix == "ulimit -S -n 500, then run it again)", fix
    elif _may_raise_hard_limits():
        assert fix.startswith("ulimit -n 1024, then run it again (the hard limit, ulimit -H -n, is 30 too"), fix
    else:
        assert fix.startswith("the hard limit (ulimit -H -n) is 30 too, which only a process with CAP_SYS_RESOURCE")
        assert "ulimit -S -n 1024" not in fix and "ulimit -n 1024" not in fix, fix
        return
    shell = subprocess.run(["bash", "-c", f"ulimit -S -n 20; ulimit -H -n {hard}; {fix.split(', then')[0]} && "
                                          "ulimit -S -n"], capture_output=True, text=True, timeout=30)
    assert shell.returncode == 0 and int(shell.stdout) >= 32, shell.stderr  # the line runs, and lifts the limit


def test_a_run_under_a_file_size_limit_leaves_no_pyc_cut_short(machine: Machine, tmp_path: Path) -> None:
    """Python cuts each .pyc it writes at `ulimit -f` (its writer does not check a short write) and keeps it: every
    later run of the doctor died importing it ("marshal data too short"). Under such a limit it writes none: a copy of
    the package never run before is run under 4 KiB, then without the limit, and works both times; and one cut short
    all the same is read from its source."""
    import shutil

    package = tmp_path / "tree" / "cudnn_doctor"
    shutil.copytree(Path(__file__).resolve().parents[1] / "cudnn_doctor", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    # its knowledge beside it, as in a source checkout (a package without its compat/ is damaged: CD012)
    shutil.copytree(Path(__file__).resolve().parents[1] / "compat", package.parent / "compat")
    env = {**machine.env, "PYTHONPATH": str(package.parent)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 10, resource.RLIM_INFINITY))

    for preexec in (limit, None):
        done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=env, cwd=machine.cwd,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                              preexec_fn=preexec)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-1500:]
        assert json.loads(done.stdout)["summary"]["exit_code"] == done.returncode
    assert not [p for p in package.rglob("*.pyc") if p.stat().st_size == 4 << 10]
    # one cut short all the same (an older release's run wrote it): the module is compiled from its source, the
    # .pyc removed, and the run goes on
    cut = [p for p in package.rglob("*.pyc") if p.name.startswith(("entry.", "cli.", "runner."))]
    assert len(cut) == 3, cut
    for pyc in cut:
        pyc.write_bytes(pyc.read_bytes()[:100])
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=env, cwd=machine.cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert not [pyc for pyc in cut if pyc.exists() and pyc.stat().st_size == 100]


def test_the_plan_line_for_a_low_cpu_time_limit_leaves_check_clean_of_it(machine: Machine, tmp_path: Path) -> None:
    """Closed loop: under ulimit -S -t 600 (hard unlimited) fix's line, sourced in bash, lifts the limit, and check run
    after it in that shell has no CD116 for it."""
    lines = subprocess.run(["bash", "-c", f"ulimit -S -t 600; exec {sys.executable} -m cudnn_doctor fix --json"],
                           env=machine.env, cwd=machine.cwd, capture_output=True, text=True, timeout=60)
    plan = json.loads(lines.stdout)
    sourced = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"] if "ulimit" in line]
    assert sourced == ["ulimit -S -t unlimited"], plan["actions"]
    after = subprocess.run(["bash", "-c", f"ulimit -S -t 600; {sourced[0]} && "
                                          f"exec {sys.executable} -m cudnn_doctor check --json"],
                           env=machine.env, cwd=machine.cwd, capture_output=True, text=True, timeout=60)
    assert not [f for f in json.loads(after.stdout)["findings"] if f["subject"] == "RLIMIT_CPU"]
