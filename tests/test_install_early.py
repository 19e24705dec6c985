"""`install --from FILE` starts decompressing at the command's first instant (install/early.py): before typer
and the install's modules are imported, the same program on the same file the staging would have started,
taken over by the staging and never started twice; a file replaced in between is read anew; a stream
nobody takes, and one a signal interrupts, leaves no process behind.

The order is read from Python's audit events in the doctor's process (tests/test_check_early.py's runner)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, make_archive
from tests.test_check_early import AUDITED

pytestmark = pytest.mark.skipif(shutil.which("xz") is None, reason="the system's xz decompresses .tar.xz")


def audited(env: dict[str, str], tmp_path: Path, *args: str, script: str = AUDITED) -> tuple[
        subprocess.CompletedProcess[str], list[str]]:
    log = tmp_path / "events.log"
    process = subprocess.run([sys.executable, "-c", script, str(log), *args], capture_output=True, text=True,
                             env=env, cwd=str(tmp_path), stdin=subprocess.DEVNULL, timeout=120)
    return process, log.read_text().splitlines()


def decompressors(events: list[str]) -> list[int]:
    return [index for index, event in enumerate(events) if event.startswith("popen ") and event.endswith(" -dc")]


def holders(path: Path) -> list[int]:
    """The processes that have PATH open (a decompressor reading it)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd")):
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_the_decompression_starts_before_typer_and_the_staging_takes_it(tmp_path: Path) -> None:
    archive = make_archive("txz", tmp_path, version=91900)
    process, events = audited(clean_env(tmp_path), tmp_path, "install", "--from", str(archive), "--prefix",
                              str(tmp_path / "cuda"), "--yes", "--json")
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout)["result"]["installed"]["version"] == "9.19.0"
    started = decompressors(events)
    assert len(started) == 1, events  # the early one, taken over: not started a second time
    assert started[0] < events.index("import typer")
    assert not holders(archive)


REPLACING = AUDITED.replace('sys.addaudithook(hook)', '''
def replace_at_typer(event, args):
    if event == "import" and args[0] == "typer" and os.environ.get("REPLACEMENT"):
        os.replace(os.environ.pop("REPLACEMENT"), sys.argv[sys.argv.index("--from") + 1])
sys.addaudithook(hook)
sys.addaudithook(replace_at_typer)''')


def test_an_archive_replaced_after_the_start_is_read_anew(tmp_path: Path) -> None:
    """The file at the path changes between the early start and the staging: the early stream (the old
    file's bytes) is stopped unread, and the install is the new file's."""
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    archive = make_archive("txz", tmp_path / "old", version=91900)
    replacement = make_archive("txz", tmp_path / "new", version=91801)
    env = {**clean_env(tmp_path), "REPLACEMENT": str(replacement)}
    process, events = audited(env, tmp_path, "install", "--from", str(archive), "--prefix", str(tmp_path / "cuda"),
                              "--yes", "--json", script=REPLACING)
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout)["result"]["installed"]["version"] == "9.18.1"
    assert len(decompressors(events)) == 2, events
    assert not holders(archive)


def test_a_stream_nobody_takes_is_stopped_at_exit(tmp_path: Path) -> None:
    archive = make_archive("txz", tmp_path)
    process, events = audited(clean_env(tmp_path), tmp_path, "install", "--from", str(archive), "--prefix",
                              str(tmp_path / "cuda"), "--yes", "--json", "--sha256", "0" * 64)
    assert process.returncode == 2 and "checksum" in process.stderr.lower()  # refused before the staging
    assert len(decompressors(events)) == 1
    assert not holders(archive)
    assert not (tmp_path / "cuda").exists()


def test_sigterm_while_the_modules_load_ends_the_install_and_its_decompressor(tmp_path: Path) -> None:
    archive = make_archive("txz", tmp_path)
    # 200 MB of zeros: 0.4 s of `xz -dc`, and more than the 64 MiB read ahead, so the decompressor is
    # still running (or waiting on its full pipe) when the signal comes
    big = tmp_path / "big" / archive.name
    big.parent.mkdir()
    subprocess.run(f"head -c 200000000 /dev/zero | xz -1 -T1 > '{big}'", shell=True, check=True)
    script = AUDITED.replace('if pid_file and args[0] == signal_at:', 'if args[0] == "typer":\n'
                             '            os.kill(os.getpid(), signal.SIGTERM)\n'
                             '        if False:')
    started = time.monotonic()
    process, events = audited(clean_env(tmp_path), tmp_path, "install", "--from", str(big), "--prefix",
                              str(tmp_path / "cuda"), "--yes", script=script)
    assert process.returncode == 143, process.stderr
    assert "Traceback" not in process.stderr
    assert time.monotonic() - started < 30
    assert decompressors(events) and not holders(big)


def test_no_early_start_where_there_is_nothing_to_decompress_early(tmp_path: Path) -> None:
    wheel = make_archive("wheel", tmp_path)
    fifo = tmp_path / "archive.tar.xz"
    os.mkfifo(fifo)
    for args in (("install", "--from", str(wheel), "--prefix", str(tmp_path / "a"), "--dry-run"),
                 ("install", "--from", str(fifo), "--prefix", str(tmp_path / "b"), "--dry-run"),
                 ("install", "--help"), ("compat", "cudnn==9.19.0")):
        process, events = audited(clean_env(tmp_path), tmp_path, *args)
        assert process.returncode in (0, 2), (args, process.stderr)
        assert not decompressors(events), args


def test_what_is_read_ahead_is_bounded(tmp_path: Path) -> None:
    """A huge archive (here 200 MB of zeros, decompressed in 0.4 s) is read ahead AHEAD bytes at most while
    nobody takes it: the decompressor then waits on its full pipe, and stopping it ends it."""
    from cudnn_doctor.install import early

    big = tmp_path / "big.tar.xz"
    subprocess.run(f"head -c 200000000 /dev/zero | xz -1 -T1 > '{big}'", shell=True, check=True)
    early.start(["install", "--from", str(big)])
    [stream] = early._started
    try:
        time.sleep(1.5)
        read = sum(len(chunk) for chunk in stream.chunks)
        assert early.AHEAD <= read < early.AHEAD + early.CHUNK
        assert stream.process.poll() is None  # waiting on its pipe, not done
    finally:
        early._stop_unused()
    assert stream.process.returncode is not None and not holders(big)
