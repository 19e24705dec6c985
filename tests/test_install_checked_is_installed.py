"""`install --from FILE --sha256 HEX`: what was checked is what is installed. The archive is rewritten in place
(same size, its modification time put back) after the doctor started decompressing it early and before it checks
the hash; the header installed must be the one of the bytes that hashed to HEX."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.install_helpers import CLI, REPO, clean_env, make_archive

pytestmark = pytest.mark.skipif(shutil.which("gzip") is None, reason="the system's gzip decompresses early")


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "T"


def test_an_archive_rewritten_after_the_early_start_installs_what_was_checked(tmp_path: Path) -> None:
    tar = lzma.decompress(make_archive("txz", tmp_path).read_bytes())
    first = gzip.compress(tar, compresslevel=0, mtime=0)
    second = gzip.compress(tar.replace(b"fake cuDNN header", b"EVIL cuDNN header", 1), compresslevel=0, mtime=0)
    assert len(first) == len(second) and first != second
    archive = tmp_path / "cudnn-linux-x86_64-9.19.0.7_cuda12-archive.tar.gz"
    archive.write_bytes(first)
    stamp = archive.stat().st_mtime_ns
    prefix = tmp_path / "prefix"
    env = clean_env(tmp_path, CUDNN_DOCTOR_TEST_KILL_AT="fetch.verify:1:STOP")  # stops itself before the check
    process = subprocess.Popen([sys.executable, "-c", CLI, "install", "--from", str(archive), "--prefix", str(prefix),
                                "--sha256", hashlib.sha256(second).hexdigest(), "--yes", "--json"], env=env,
                               cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _stopped(process.pid):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.02)
        with open(archive, "r+b") as handle:  # in place: same inode, same size
            handle.write(second)
        os.utime(archive, ns=(stamp, stamp))
        process.send_signal(signal.SIGCONT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert (prefix / "include" / "cudnn.h").read_bytes() == b'#include "cudnn_version.h"\n/* EVIL cuDNN header */\n'
    assert not list((tmp_path / "cache").rglob(".verified-*"))  # the checked copy is not left behind
