"""`check` on a hostile or unlucky machine: children that daemonise, hang or flood, files that are
FIFOs, huge, not UTF-8 or malformed, helper programs that hang. Nothing may hang, crash (exit 3) or
fool the doctor, and nothing it started may outlive it."""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import Machine, Result, codes
from tests.fakes.build import fake_cudnn
from tests.test_architecture import syntax_tree
from tests.test_frameworks import FAKE_TORCH, install_torch, python_env, real_python_sees


def marked(machine: Machine) -> str:
    """Put a unique variable into the doctor's environment: every process it starts inherits it."""
    mark = uuid.uuid4().hex
    machine.env["CUDNN_DOCTOR_TEST_MARK"] = mark
    return mark


def survivors(mark: str) -> list[int]:
    """Processes still running (not zombies) that carry MARK in their environment."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"CUDNN_DOCTOR_TEST_MARK={mark}".encode() in environ.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


def run_limited(machine: Machine, *args: str, open_files: int, timeout: float = 60) -> Result:
    """The CLI under `ulimit -n OPEN_FILES`."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    process = subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], capture_output=True, text=True,
                             env=machine.env, cwd=machine.cwd, timeout=timeout, stdin=subprocess.DEVNULL,
                             preexec_fn=limit)
    return Result(process.returncode, process.stdout, process.stderr)


# --- children -------------------------------------------------------------------------------------

@pytest.mark.parametrize("daemon", [1, 2], ids=["detached-new-session", "same-process-group"])
def test_a_library_that_daemonises_neither_hangs_check_nor_outlives_it(machine: Machine, tmp_path: Path,
                                                                       daemon: int) -> None:
    """Its load-time code forks a process that keeps stdout open (1: fork+setsid+fork, parent gone;
    2: a plain fork in the same group). The answer is read at once; the daemon is gone when check returns."""
    mark = marked(machine)
    fake_cudnn(tmp_path / "daemon", version=90100, daemon=daemon)
    machine.add_library_path(tmp_path / "daemon")
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "8"
    started = time.monotonic()
    report = machine.check_json()
    elapsed = time.monotonic() - started
    try:
        [install] = report["cudnn"]
        assert install["version"] == "9.1.0" and not install["timed_out"] and not install["crashed"]
        assert "ld.so" in install["loaded_by"]
        assert "CD309" not in codes(report)
        assert elapsed < 6, f"check took {elapsed:.1f} s: it waited for the daemon's end of file"
        assert survivors(mark) == []
    finally:
        for pid in survivors(mark):
            os.kill(pid, 9)


def test_a_daemon_under_an_environment_of_1_5_mb_does_not_outlive_check(machine: Machine, tmp_path: Path) -> None:
    """The batch's token goes first in a child's environment: kill_strays reads the first MiB of each one's, and
    with the token last a daemon started under a user's 1.5 MB environment (Linux takes up to a quarter of the
    stack limit) kept running after check."""
    mark = marked(machine)
    fake_cudnn(tmp_path / "daemon", version=90100, daemon=1)
    machine.add_library_path(tmp_path / "daemon")
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "8"
    machine.env.update({f"BIG_SETTING_{n}": "x" * 100_000 for n in range(15)})  # 128 KiB at most a string
    try:
        report = machine.check_json()
        assert [install["version"] for install in report["cudnn"]] == ["9.1.0"]
        assert survivors(mark) == []
    finally:
        for pid in survivors(mark):
            os.kill(pid, 9)


def test_a_stray_in_the_middle_of_its_exec_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between execve's closing of the close-on-exec descriptors (where the starter's Popen returns) and its placing
    of the new image's environment, /proc/PID/environ reads empty: the killer took such a stray for one without the
    token (the CI's failure under load). The first read here is made to meet that window; the stray is found."""
    from cudnn_doctor import child
    from cudnn_doctor.child import TOKEN_VARIABLE, kill_strays, last_pid

    since = last_pid()
    token = os.urandom(8).hex()
    stray = subprocess.Popen(["sleep", "60"], env={**os.environ, TOKEN_VARIABLE: token}, start_new_session=True)
    real_open, first = open, {stray.pid}

    def opening(path: object, *args: object, **kwargs: object) -> object:
        if path == f"/proc/{stray.pid}/environ" and stray.pid in first:
            first.discard(stray.pid)
            return io.BytesIO(b"")  # as in the exec's window
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(child, "open", opening, raising=False)
    try:
        assert kill_strays(token, since) == 1 and not first
        assert stray.wait(timeout=10) == -9
    finally:
        stray.kill()


def test_a_daemon_that_clears_its_environment_does_not_outlive_check(machine_process: Machine, tmp_path: Path) -> None:
    """Its load-time code detaches a process (fork, setsid, fork) that execs with no environment at all: no token
    marks it, its parent is gone. The doctor's command is the subreaper of what it starts: the orphan is its own
    child, killed when the batch ends (a program that calls the doctor in-process keeps its own settings)."""
    machine = machine_process
    name = f"cudnn-doctor-test-daemon-{uuid.uuid4().hex}"
    fake_cudnn(tmp_path / "daemon", version=90100, daemon=3)
    machine.add_library_path(tmp_path / "daemon")
    machine.env["FAKE_DAEMON_NAME"] = name

    def left() -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes().startswith(name.encode()):
                    found.append(int(entry))
            except OSError:
                continue
        return found

    try:
        report = machine.check_json()
        [install] = report["cudnn"]
        assert install["version"] == "9.1.0" and not install["timed_out"], install
        assert left() == []
    finally:
        for pid in left():
            os.kill(pid, 9)


def test_a_hanging_library_is_killed_with_everything_it_started(machine: Machine, tmp_path: Path) -> None:
    mark = marked(machine)
    fake_cudnn(tmp_path / "hang", version=8907, hang=True)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "1"
    report = machine.check_json("--search-path", str(tmp_path / "hang"))
    [install] = report["cudnn"]
    assert install["timed_out"] and "CD309" in codes(report)
    assert survivors(mark) == []


def test_many_copies_under_a_low_open_file_limit_give_no_false_findings(machine: Machine, tmp_path: Path) -> None:
    """More copies than the open-file limit allows children at once (600 copies with `ulimit -n 1024` in
    the issue; 80 with 64 here, the same arithmetic, 7x faster): every copy is read, none fails
    with 'Too many open files'."""
    first = fake_cudnn(tmp_path / "copies" / "0", version=90100, versioned_files=False)
    for index in range(1, 80):
        folder = tmp_path / "copies" / str(index)
        folder.mkdir()
        shutil.copyfile(first, folder / "libcudnn.so.9")
        machine.add_library_path(folder)
    machine.add_library_path(first.parent)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "60"
    result = run_limited(machine, "check", "--json", open_files=64, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    report = result.json
    assert len(report["cudnn"]) == 80
    assert [i for i in report["cudnn"] if i["version"] != "9.1.0"] == []
    assert "open files" not in result.stdout


def test_deep_imports_what_python_c_imports_where_the_user_stands(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (tmp_path / "venv" / "bin" / "python3").write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    (tmp_path / "venv" / "bin" / "python3").chmod(0o755)
    impostor = machine.cwd / "torch"
    impostor.mkdir()
    (impostor / "__init__.py").write_text("__version__ = 'impostor'\nraise SystemExit('the impostor ran')\n")
    # as `python -c` started there imports it (issue 45: the working folder holds a module torch's import reaches, so
    # its child starts there; programs kept there get the impostor), and with PYTHONSAFEPATH=1 the installed one
    report = machine.check_json("--deep")
    [torch] = report["frameworks"]
    assert torch["details"]["deep"]["error"] == "SystemExit: the impostor ran", torch["details"]["deep"]
    machine.env["PYTHONSAFEPATH"] = "1"
    report = machine.check_json("--deep")
    [torch] = report["frameworks"]
    assert torch["details"]["deep"]["version"] == "2.5.1+cu124", torch["details"]["deep"]


@pytest.mark.subprocess  # the command's own process is the point: it is the subreaper of what its children leave
def test_a_deep_import_that_hangs_after_starting_a_daemon_is_cut_off_with_it(machine: Machine, tmp_path: Path) -> None:
    """`--deep` imports the framework through the same runner: one deadline, and what the import started
    (here a detached process holding stdout) is gone when check returns."""
    mark = marked(machine)
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\ntime.sleep(60)\n")
    (tmp_path / "venv" / "bin" / "python3").write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    (tmp_path / "venv" / "bin" / "python3").chmod(0o755)
    machine.env["CUDNN_DOCTOR_DEEP_TIMEOUT"] = "1"
    try:
        report = check_quickly(machine, "--deep", limit=30)  # far below the 60 s the import and its daemon sleep
        [torch] = report["frameworks"]
        assert "did not finish within 1 s" in torch["details"]["deep"]["error"]
        assert survivors(mark) == []
    finally:
        for pid in survivors(mark):
            os.kill(pid, 9)


# --- hostile files --------------------------------------------------------------------------------

def make_toolkit(root: Path, version_json: str | None = None, name: str = "cuda-12.4") -> Path:
    """A toolkit folder (include/cuda_runtime.h marks it) whose version files the test writes."""
    toolkit = root / "usr" / "local" / name
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
    if version_json is not None:
        (toolkit / "version.json").write_text(version_json)
    return toolkit


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def check_quickly(machine: Machine, *args: str, limit: float = 8) -> dict:
    """check --json that must neither hang (opening a FIFO waits for a writer forever) nor crash."""
    started = time.monotonic()
    result = machine.run("check", "--json", *args, timeout=30)
    elapsed = time.monotonic() - started
    assert result.exit_code in (0, 1), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert elapsed < limit, f"check took {elapsed:.1f} s"
    report = result.json
    assert report["summary"]["exit_code"] == result.exit_code
    return report


def test_fifos_among_the_users_files_do_not_block_check(machine: Machine, tmp_path: Path) -> None:
    """Opening a FIFO for reading waits for a writer forever: every file check reads is opened without
    blocking (or not at all). One machine with a FIFO in each place a user's file is read."""
    fifo(tmp_path / "search" / "libcudnn.so.9")
    fifo(tmp_path / "ld" / "libcudnn.so.8")
    machine.add_library_path(tmp_path / "ld")
    fifo(make_toolkit(machine.root, name="cuda-12.4") / "version.json")
    fifo(make_toolkit(machine.root, name="cuda-12.5") / "version.txt")
    fake_cudnn(tmp_path / "cudnn" / "lib", version=90100)
    fifo(tmp_path / "cudnn" / "include" / "cudnn_version.h")
    fifo(machine.home / ".theanorc")
    fifo(machine.root / "etc" / "ld.so.cache")  # ldconfig -C would wait on it
    site = python_env(machine, tmp_path)
    (site / "torch").mkdir()
    fifo(site / "torch-2.5.1.dist-info" / "METADATA")
    fifo(site / "torch" / "version.py")
    (site / "tensorflow-2.15.0.dist-info").mkdir()
    fifo(site / "tensorflow" / "python" / "platform" / "build_info.py")
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "20"  # a blocked child would show as a slow check
    report = check_quickly(machine, "--search-path", str(tmp_path / "search"), "--search-path", str(tmp_path / "cudnn"))
    broken = {Path(f["subject"]).name: f["detail"] for f in report["findings"] if f["code"] == "CD308"}
    assert "not a regular file" in broken["libcudnn.so.9"] and "not a regular file" in broken["libcudnn.so.8"]
    [unread] = [f for f in report["findings"] if f["code"] == "CD440"]
    assert "not a regular file" in unread["detail"]
    [good] = [i for i in report["cudnn"] if i["version"]]
    assert good["version"] == "9.1.0" and good["header_version"] is None
    assert sorted(f["name"] for f in report["frameworks"]) == ["tensorflow", "torch"]
    assert len(report["toolkits"]) == 2


NOT_UTF8 = os.fsdecode(b"caf\xe9-\xff")  # a folder name whose bytes are not UTF-8, as Python holds it


def test_a_good_cudnn_in_a_folder_whose_name_is_not_utf8(machine: Machine, tmp_path: Path) -> None:
    """Found on LD_LIBRARY_PATH, loaded, picked by the loader (read back from the child's /proc/self/maps):
    no false CD307; JSON and text print the name escaped, never a lone surrogate or a traceback."""
    folder = tmp_path / NOT_UTF8
    fake_cudnn(folder, version=90100)
    machine.add_library_path(folder)
    result = machine.run("check", "--json")
    assert result.exit_code in (0, 1) and "Traceback" not in result.stderr, result.stderr
    assert "\\ud" not in result.stdout  # no lone surrogate in JSON
    report = result.json
    [install] = report["cudnn"]
    assert install["library"] == str(tmp_path) + "/caf\\xe9-\\xff/libcudnn.so.9"
    assert install["version"] == "9.1.0" and install["loaded_by"] == ["ld.so"]
    assert not codes(report) & {"CD307", "CD308", "CD309"}
    text = machine.run("check", "-v")
    assert "Traceback" not in text.stderr and "caf\\xe9-\\xff" in text.stdout


@pytest.mark.skipif(shutil.which("ldconfig") is None, reason="needs ldconfig")
def test_a_folder_in_the_ldconfig_cache_whose_name_is_not_utf8(machine: Machine, tmp_path: Path) -> None:
    folder = tmp_path / NOT_UTF8
    fake_cudnn(folder, version=90100)
    (machine.root / "etc" / "ld.so.conf").write_bytes(os.fsencode(str(folder)) + b"\n")
    subprocess.run([shutil.which("ldconfig"), "-X", "-C", str(machine.root / "etc" / "ld.so.cache"),
                    "-f", str(machine.root / "etc" / "ld.so.conf")], check=True, capture_output=True)
    report = check_quickly(machine)
    [install] = [i for i in report["cudnn"] if "caf" in i["library"]]
    assert install["version"] == "9.1.0" and install["source"] == "system"


def test_version_files_and_nvcc_output_that_are_not_utf8(machine: Machine, tmp_path: Path) -> None:
    text_toolkit = make_toolkit(machine.root)
    (text_toolkit / "version.txt").write_bytes(b"CUDA Version 12.4.1 \xff\xfe built by caf\xe9\n")
    nvcc_toolkit = tmp_path / "cuda-nvcc"
    (nvcc_toolkit / "include").mkdir(parents=True)
    (nvcc_toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
    (nvcc_toolkit / "bin").mkdir()
    (nvcc_toolkit / "bin" / "nvcc").write_bytes(
        b"#!/bin/sh\nprintf 'nvcc: NVIDIA (R) Cuda compiler driver \\377\\376\\nCuda compilation tools, "
        b"release 12.6, V12.6.85\\n'\n")
    (nvcc_toolkit / "bin" / "nvcc").chmod(0o755)
    machine.env["CUDA_HOME"] = str(nvcc_toolkit)
    report = check_quickly(machine)
    versions = {t["path"]: (t["version"], t["version_from"]) for t in report["toolkits"]}
    assert versions[str(text_toolkit)] == ("12.4.1", "version.txt")
    assert versions[str(nvcc_toolkit)] == ("12.6.85", "nvcc")


HUGE = "1" * 5000

BAD_VERSION_JSON = {
    "a number": "5",
    "a list": "[1, 2, 3]",
    "cuda is a number": '{"cuda": 12}',
    "version is a number": '{"cuda": {"version": 12.4}}',
    "deep nesting": "[" * 100_000 + "]" * 100_000,
    "deep objects": '{"cuda": ' * 50_000 + "1" + "}" * 50_000,
    "a 5,000-digit version": f'{{"cuda": {{"version": "{HUGE}"}}}}',
    "not UTF-8": '{"cuda": {"version": "12.4.1\xff"}}',
}


def test_malformed_version_json_is_passed_over(machine: Machine) -> None:
    """One toolkit per kind of bad version.json; each falls back to its version.txt."""
    toolkits = {}
    for index, (kind, content) in enumerate(BAD_VERSION_JSON.items()):
        toolkits[kind] = make_toolkit(machine.root, content, name=f"cuda-12.{index}")
        (toolkits[kind] / "version.txt").write_text(f"CUDA Version 12.{index}.1\n")
    huge = make_toolkit(machine.root, None, name="cuda-13.0")
    with open(huge / "version.json", "wb") as handle:  # 2 GB, sparse: read, it would take the memory
        handle.truncate(2 << 30)
    (huge / "version.txt").write_text("CUDA Version 13.0.1\n")
    toolkits["huge"] = huge
    report = check_quickly(machine)
    found = {t["path"]: (t["version"], t["version_from"]) for t in report["toolkits"]}
    for kind, toolkit in toolkits.items():
        assert found[str(toolkit)] == (toolkit.name.split("-")[1] + ".1", "version.txt"), kind


BAD_BUILD_INFO = {
    "integers": "build_info = {'cuda_version': 12, 'cudnn_version': 8, 'is_cuda_build': 1}\n",
    "a deep expression": "build_info = {'cuda_version': " + "(" * 50_000 + "'12.2'" + ")" * 50_000 + "}\n",
    "a deep list": "build_info = {'cuda_version': " + "[" * 50_000 + "]" * 50_000 + "}\n",
    "a 5,000-digit version": f"build_info = {{'cuda_version': '{HUGE}', 'cudnn_version': '{HUGE}'}}\n",
    "not UTF-8": "build_info = {'cuda_version': '12.2\udcff'}\n",
}


def test_malformed_tensorflow_build_info_is_ignored(machine: Machine) -> None:
    """One conda environment per kind of bad build_info.py; TensorFlow is still found in each."""
    for index, content in enumerate(BAD_BUILD_INFO.values()):
        site = machine.home / "miniconda3" / "envs" / f"env{index}" / "lib" / "python3.12" / "site-packages"
        (site / "tensorflow-2.15.0.dist-info").mkdir(parents=True)
        path = site / "tensorflow" / "python" / "platform" / "build_info.py"
        path.parent.mkdir(parents=True)
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    report = check_quickly(machine)
    assert len(report["frameworks"]) == len(BAD_BUILD_INFO)
    assert {f["cuda_built_for"] for f in report["frameworks"]} <= {None, "12.2"}


def test_a_5000_digit_version_elsewhere(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    info = site / "torch-2.5.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Name: torch\nVersion: 2.5.1\nRequires-Dist: nvidia-cudnn-cu12=={HUGE}\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(f"__version__ = '2.5.1'\ncuda = '{HUGE}'\n")
    include = tmp_path / "cudnn" / "include"
    fake_cudnn(tmp_path / "cudnn" / "lib", version=90100)
    include.mkdir()
    (include / "cudnn_version.h").write_text(f"#define CUDNN_MAJOR {HUGE}\n#define CUDNN_MINOR 1\n")
    check_quickly(machine, "--search-path", str(tmp_path / "cudnn" / "lib"))
    for spec in (f"cudnn>={HUGE}", f"cuda=={HUGE}.1", f"driver>={HUGE}"):
        result = machine.run("check", "--require", spec)
        assert result.exit_code in (1, 2) and "Traceback" not in result.stderr, (spec, result.stderr)


def test_an_elf_with_too_small_program_header_entries_is_a_finding(machine: Machine, tmp_path: Path) -> None:
    """e_phentsize smaller than a program header: entries would be read past the end of the file."""
    good = Path(os.path.realpath(fake_cudnn(tmp_path / "small", version=90100)))
    header = bytearray(good.read_bytes()[:64])
    header[32:40] = (60).to_bytes(8, "little")  # e_phoff: the last bytes of the file
    header[54:56] = (4).to_bytes(2, "little")  # e_phentsize: 4 bytes, a 64-bit entry needs 56
    header[56:58] = (1).to_bytes(2, "little")  # e_phnum
    good.write_bytes(bytes(header))
    big = Path(os.path.realpath(fake_cudnn(tmp_path / "zero", version=90100)))
    blob = bytearray(big.read_bytes())
    blob[54:56] = (0).to_bytes(2, "little")
    big.write_bytes(bytes(blob))
    report = check_quickly(machine, "--search-path", str(tmp_path / "small"), "--search-path", str(tmp_path / "zero"))
    broken = {Path(f["subject"]).parent.name: f["detail"] for f in report["findings"] if f["code"] == "CD308"}
    assert "malformed" in broken["small"] and "malformed" in broken["zero"]


THEANORC = {
    "Theano's %(USER)s interpolation": ("[global]\ndevice = cuda\n[dnn]\nlibrary_path = {cudnn}/%(USER)s\n", None),
    "an unknown %(NAME)s, taken raw as Theano does": ("[global]\nbase_compiledir = /tmp/%(NOPE)s\n", None),
    "a lone %": ("[global]\ncompiledir_format = 100%\n", None),
    "binary": (None, "not a text file"),
    "huge (sparse, 2 GB)": ("", "larger than"),
    "no section header": ("device = cuda\n", "no section headers"),
    "a duplicate section": ("[global]\ndevice = cuda\n[global]\ndevice = cpu\n", "already exists"),
}


@pytest.mark.parametrize("case", list(THEANORC))
def test_theanorc_read_as_theano_reads_it(machine: Machine, tmp_path: Path, case: str) -> None:
    text, problem = THEANORC[case]
    machine.env["USER"] = "alice"
    fake_cudnn(tmp_path / "cudnn" / "alice", version=8907, cudart=11080)
    rc = machine.home / ".theanorc"
    if text is None:
        rc.write_bytes(bytes(range(256)) * 4)
    elif not text:
        with open(rc, "wb") as handle:
            handle.truncate(2 << 30)
    else:
        rc.write_text(text.format(cudnn=tmp_path / "cudnn"))
    report = check_quickly(machine)
    unread = [f for f in report["findings"] if f["code"] == "CD440"]
    if problem is None:
        assert unread == []
    else:
        assert len(unread) == 1 and problem in unread[0]["detail"], unread
    if case.startswith("Theano's"):  # dnn.library_path with %(USER)s expanded: that cuDNN is found
        assert [i["version"] for i in report["cudnn"]] == ["8.9.7"]
    if case not in ("binary", "Theano's %(USER)s interpolation"):
        return
    explained = machine.run("explain", "Could not load dynamic library 'libcudnn.so.8'")
    assert explained.exit_code in (0, 1) and "Traceback" not in explained.stderr, explained.stderr


# --- helper programs ------------------------------------------------------------------------------

def test_hanging_helper_programs_share_one_budget_and_do_not_outlive_check(machine: Machine, tmp_path: Path) -> None:
    """`ldconfig` (where the system has none of its own, the one on PATH) and two toolkits' `nvcc` hang (each a shell
    whose own child holds the output pipe): they run side by side under one budget, and they and their children are
    gone when check returns."""
    mark = marked(machine)
    hanging = "#!/bin/sh\nsleep 60\necho never\n"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ldconfig").write_text(hanging)
    (bin_dir / "ldconfig").chmod(0o755)
    (machine.root / "etc" / "ld.so.cache").write_bytes(b"")
    machine.env["PATH"] = f"{bin_dir}:{machine.env['PATH']}"
    for name in ("cuda-a", "cuda-b"):
        toolkit = tmp_path / name
        (toolkit / "include").mkdir(parents=True)
        (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
        (toolkit / "bin").mkdir()
        (toolkit / "bin" / "nvcc").write_text(hanging)
        (toolkit / "bin" / "nvcc").chmod(0o755)
    machine.env["CUDA_HOME"] = str(tmp_path / "cuda-a")
    machine.env["CUDA_PATH"] = str(tmp_path / "cuda-b")
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "2"
    try:
        report = check_quickly(machine, limit=6)  # three helpers of 2 s each, one after another: > 6 s
        assert [t["version"] for t in report["toolkits"]] == [None, None]
        assert survivors(mark) == []
    finally:
        for pid in survivors(mark):
            os.kill(pid, 9)


@pytest.mark.skipif(not any(os.path.exists(f"{d}/ldconfig") for d in ("/sbin", "/usr/sbin")),
                    reason="needs the system's own ldconfig")
def test_an_ldconfig_on_path_is_not_asked_where_the_system_has_its_own(machine: Machine, tmp_path: Path) -> None:
    # ld.so reads the cache the system's ldconfig writes; a stale or foreign one first on PATH says nothing of it
    stale = fake_cudnn(tmp_path / "stale" / "lib", version=90100)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ldconfig").write_text("#!/bin/sh\necho '1 libs found in cache'\n"
                                      f"echo '\tlibcudnn.so.9 (libc6,x86-64) => {stale}'\n")
    (bin_dir / "ldconfig").chmod(0o755)
    machine.env["PATH"] = f"{bin_dir}:{machine.env['PATH']}"
    (machine.root / "etc" / "ld.so.cache").write_bytes(b"")  # a cache there: ldconfig is asked to read it
    report = machine.check_json()
    assert str(tmp_path / "stale") not in json.dumps(report), [c["library"] for c in report["cudnn"]]


# --- rules are pure -------------------------------------------------------------------------------

def test_rules_import_nothing_from_probes_and_touch_no_files() -> None:
    """Probes record what they saw (resolved paths included); rules only read the report."""
    import ast

    io_calls = {"realpath", "exists", "isdir", "isfile", "islink", "lexists", "stat", "lstat", "listdir", "scandir",
                "open", "read_text", "read_bytes", "glob", "access", "readlink", "run", "Popen"}
    offences = []
    for path in sorted((Path(__file__).resolve().parents[1] / "cudnn_doctor" / "rules").glob("*.py")):
        tree = syntax_tree(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cudnn_doctor.probes"):
                offences.append(f"{path.name}: imports {node.module}")
            if isinstance(node, ast.Import) and any(a.name.startswith("cudnn_doctor.probes") for a in node.names):
                offences.append(f"{path.name}: imports cudnn_doctor.probes")
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in io_calls:
                    offences.append(f"{path.name}:{node.lineno}: calls {name}")
    assert offences == []


def test_hundreds_of_copies_are_probed_in_batches_each_in_its_own_process(machine: Machine, tmp_path: Path) -> None:
    """Issue 22, class 10: hundreds of copies (more than children may run at once) cost a Python start per
    batch, not per copy, and still each copy is loaded in a process of its own that holds only its own
    descriptors, so copies of one soname with different versions are told apart, and a copy that hangs or
    crashes is that copy's finding only. Under `ulimit -n 128`. (benchmarks/many_copies.py times 600.)"""
    copies = 200
    good = [fake_cudnn(tmp_path / "good" / version, version=number, versioned_files=False)
            for version, number in (("9.1.0", 90100), ("9.19.0", 91900))]
    root = tmp_path / "copies"
    for index in range(copies):
        folder = root / f"{index:03d}"
        folder.mkdir(parents=True)
        shutil.copyfile(good[index % 2], folder / "libcudnn.so.9")
        machine.add_library_path(folder)
    hang = fake_cudnn(tmp_path / "hang", version=90100, hang=True)
    crash = fake_cudnn(tmp_path / "crash", version=90100, crash=True)
    machine.add_library_path(hang.parent)
    machine.add_library_path(crash.parent)
    log = tmp_path / "loads.log"
    machine.env["FAKE_CUDNN_LOG"] = str(log)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=machine.env,
                               cwd=machine.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    out, err = process.communicate(timeout=300)
    assert "Traceback" not in err, err
    report = json.loads(out)
    by_folder = {os.path.basename(i["path"]): i for i in report["cudnn"]}
    assert len(report["cudnn"]) == copies + 2
    for index in range(copies):
        install = by_folder[f"{index:03d}"]
        assert install["version"] == ("9.1.0" if index % 2 == 0 else "9.19.0"), install
        assert not install["timed_out"] and not install["crashed"]
    hung, crashed = by_folder["hang"], by_folder["crash"]
    assert hung["timed_out"] and not crashed["timed_out"] and crashed["crashed"] and "SIGSEGV" in crashed["load_error"]
    assert "CD309" in codes(report)

    loads = [tuple(int(n) for n in line.split()) for line in log.read_text().splitlines()]
    assert len({pid for pid, _, _ in loads}) == len(loads)  # one process per copy: never two copies in one
    # stdin, stdout, stderr, its own answer channel and the pipe end its ProcessWatch holds (what a library that
    # closes descriptors took is seen by it): nothing of the doctor's or a sibling's
    assert max(fds for _, _, fds in loads) <= 5
    # the Pythons started to load them: a batch child is the parent of what it forked
    interpreters = {parent if parent != process.pid else pid for pid, parent, _ in loads}
    assert len(interpreters) <= -(-(copies + 2) // 8) + 2, len(interpreters)


def test_a_few_copies_are_loaded_each_in_a_process_of_its_own_forked_from_one_python(machine: Machine,
                                                                                     tmp_path: Path) -> None:
    """Two copies of cuDNN and the loader's pick (fewer than children may run at once): one Python starts for the
    three (each start was ~10 ms of CPU), which forks a process per library, all at once; each copy is still read
    in a process of its own, versions told apart, and one that crashes is that copy's finding only."""
    old = fake_cudnn(tmp_path / "old", version=90100, versioned_files=False)
    new = fake_cudnn(tmp_path / "new", version=91900, versioned_files=False)
    crash = fake_cudnn(tmp_path / "crash", version=90100, crash=True)
    for library in (old, new, crash):
        machine.add_library_path(library.parent)
    log = tmp_path / "loads.log"
    machine.env["FAKE_CUDNN_LOG"] = str(log)
    process = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "check", "--json"], env=machine.env,
                               cwd=machine.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, err = process.communicate(timeout=120)
    report = json.loads(out)
    by_folder = {os.path.basename(i["path"]): i for i in report["cudnn"]}
    assert by_folder["old"]["version"] == "9.1.0" and by_folder["new"]["version"] == "9.19.0", report["cudnn"]
    assert by_folder["crash"]["crashed"] and "SIGSEGV" in by_folder["crash"]["load_error"]
    assert not by_folder["old"]["crashed"] and not by_folder["new"]["crashed"]
    loads = [tuple(int(n) for n in line.split()) for line in log.read_text().splitlines()]
    # the three copies and the loader's pick, forked by one Python (the doctor itself starts only the child that
    # loads cuDNN as the frameworks' own code does, a cuDNN being on LD_LIBRARY_PATH)
    forked = [load for load in loads if load[1] != process.pid]
    assert len(forked) == 4 and len({pid for pid, _, _ in forked}) == 4, loads
    assert len({parent for _, parent, _ in forked}) == 1, loads


def test_each_toolkits_libcudart_and_the_cudnn_copies_are_asked_by_one_python(machine: Machine, tmp_path: Path) -> None:
    """The toolkit's libcudart and the cuDNN copies go in one batch child (a Python start each was ~10 ms of CPU),
    each library still in a forked process of its own, each asked its own question: the toolkit's runtime is its
    libcudart's answer, each copy's version its own."""
    from tests.test_check import make_toolkit

    make_toolkit(machine.root, "13.0.88", 12080)
    for name, number in (("old", 90100), ("new", 91900)):
        machine.add_library_path(fake_cudnn(tmp_path / name, version=number, versioned_files=False).parent)
    code = ("import atexit, json, sys; started = []\n"
            "sys.addaudithook(lambda e, a: started.append([str(x) for x in a[1]]) if e == 'subprocess.Popen' else None)\n"
            "atexit.register(lambda: sys.stderr.write('STARTED ' + json.dumps(started) + '\\n'))\n"
            "sys.argv = ['cudnn-doctor', 'check', '--json']\nfrom cudnn_doctor.entry import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code], env=machine.env, cwd=machine.cwd, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    report = json.loads(done.stdout)
    assert [(t["version"], t["runtime_version"]) for t in report["toolkits"]] == [("13.0.88", "12.8")], report["toolkits"]
    by_folder = {os.path.basename(i["path"]): i["version"] for i in report["cudnn"]}
    assert by_folder == {"old": "9.1.0", "new": "9.19.0"}, report["cudnn"]
    started = json.loads(next(line for line in done.stderr.splitlines() if line.startswith("STARTED "))[8:])
    asked = [argv[next(i for i, a in enumerate(argv) if a.endswith("_job_child.py")) + 2:] for argv in started
             if any(a.endswith("_job_child.py") for a in argv) and "_probe_jobs" in argv]
    libraries = [words for words in asked if words[0] in ("batch", "cudart", "cudnn")]
    assert len(libraries) == 1 and libraries[0][0] == "batch", asked
    assert sorted(libraries[0][1].split(",")) == ["cudart", "cudnn", "cudnn", "cudnn"], asked  # the loader's pick too


def test_strays_are_looked_for_among_the_processes_started_since_the_batch_began() -> None:
    """kill_strays reads the environment only of processes whose id was given out after the batch began
    (child.last_pid()), the wrap of the ids at pid_max included; what started before is not looked at.

    Each stray carries a token of its own, as every batch's does: with one written into the test ("aaaa..."),
    two runs of the suite on one machine (several people, CI beside a developer) found and killed each
    other's strays, and the window that wraps at pid_max, which covers every process, counted both."""
    from cudnn_doctor.child import TOKEN_VARIABLE, kill_strays, last_pid

    def stray(token: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["sleep", "60"], env={**os.environ, TOKEN_VARIABLE: token}, start_new_session=True)

    since = last_pid()
    assert since is not None
    mine = os.urandom(8).hex()
    started = stray(mine)
    try:
        assert kill_strays(mine, since) == 1
        assert started.wait(timeout=10) == -9
    finally:
        started.kill()
    before = os.urandom(8).hex()
    older = stray(before)
    try:
        assert kill_strays(before, last_pid()) == 0  # started before: not the batch's, not looked at
        assert older.poll() is None
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        assert kill_strays(before, pid_max - 1) == 1  # since > the last id: the ids wrapped, all after it count
        assert older.wait(timeout=10) == -9
    finally:
        older.kill()


# A stray that forks the instant the killer has listed /proc (the test's hook on os.listdir asks it to, and waits
# until it has): "tree" keeps running and forks a child that stays; "moving" forks a child in a session of its own and
# exits, as a daemon's first fork does, so the stray listed is gone when its environment is read and its child was
# never listed. Each child it forks writes its process id on the answer pipe and sleeps.
FORKING_STRAY = """
import os, sys, time
trigger, answer, moving = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "moving"
while os.read(trigger, 1):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.write(answer, b"%d\\n" % os.getpid())
        os.close(trigger)
        os.close(answer)
        time.sleep(120)
        os._exit(0)
    if moving:
        os._exit(0)
"""


def _dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.parametrize("how", ["tree", "moving"])
def test_a_stray_that_forks_while_the_killer_scans_does_not_escape(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """kill_strays lists /proc, then reads each listed process's environment: what a stray forks between the two was
    not listed. It scans again until a pass finds nothing it had not seen (a process killed cannot fork any more; one
    that left or died had its children reparented before), and kills a found stray's whole process group at once
    where the group is not the doctor's (the kernel aborts a fork that a group's signal meets)."""
    import select

    from cudnn_doctor import child

    token = os.urandom(8).hex()
    trigger_read, trigger_write = os.pipe()
    answer_read, answer_write = os.pipe()
    since = child.last_pid()
    stray = subprocess.Popen([sys.executable, "-c", FORKING_STRAY, str(trigger_read), str(answer_write), how],
                             env={**os.environ, child.TOKEN_VARIABLE: token}, start_new_session=True,
                             pass_fds=(trigger_read, answer_write))
    os.close(trigger_read)
    os.close(answer_write)
    forked: list[int] = []
    real_listdir = os.listdir

    def listdir(path: str) -> list[str]:
        entries = real_listdir(path)
        if path == "/proc" and stray.poll() is None and not _dead(stray.pid):
            try:
                os.write(trigger_write, b"f")
            except OSError:
                return entries
            if select.select([answer_read], [], [], 20)[0]:
                forked.extend(int(line) for line in os.read(answer_read, 64).split())
            if how == "moving":  # the stray listed has gone before its environment is read
                deadline = time.monotonic() + 20
                while not _dead(stray.pid) and time.monotonic() < deadline:
                    time.sleep(0.005)
        return entries

    try:
        with monkeypatch.context() as patch:
            patch.setattr(os, "listdir", listdir)
            found = child.kill_strays(token, since)
        assert forked, "the stray forked while the killer scanned"
        deadline = time.monotonic() + 10
        while [pid for pid in forked if not _dead(pid)] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [pid for pid in forked if not _dead(pid)] == [], f"escaped the killer (it found {found})"
        assert stray.wait(timeout=10) in (-9, 0)
    finally:
        stray.kill()
        stray.wait()
        for pid in forked:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        os.close(trigger_write)
        os.close(answer_read)


def test_a_doctor_killed_with_sigkill_leaves_no_deep_child_running(machine_process: Machine, tmp_path: Path) -> None:
    """SIGKILL can clean nothing: the children of the doctor's own scripts die with it (PR_SET_PDEATHSIG), where a
    framework import that hangs ran on for ever."""
    import signal

    machine = machine_process
    mark = marked(machine)
    site = python_env(machine, tmp_path)
    install_torch(site)
    started = tmp_path / "importing"
    (site / "torch" / "__init__.py").write_text(f"open({str(started)!r}, 'w').close()\nimport time\ntime.sleep(600)\n")
    real_python_sees(site, tmp_path)
    doctor = subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "check", "--deep", "--json"], env=machine.env,
                              cwd=machine.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists() and survivors(mark)
        doctor.send_signal(signal.SIGKILL)
        doctor.wait(timeout=10)
        deadline = time.monotonic() + 10
        while survivors(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert survivors(mark) == []
    finally:
        doctor.kill()
        for pid in survivors(mark):
            os.kill(pid, 9)
