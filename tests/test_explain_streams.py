"""`explain` on a stream that never ends, and on a log that quotes the doctor's own skip line.

A pipe whose writer keeps it open, and a FIFO whose writer never writes, are read until a silence of
CUDNN_DOCTOR_READ_TIMEOUT seconds: what came is explained (a line on standard error says why reading stopped),
nothing at all is a usage error (exit 2, one line). A short log holding a "[cudnn-doctor: N bytes skipped ...]"
line is not taken for a long one the doctor cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, Machine

MESSAGE = b"Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file\n"


def _explain(machine: Machine, args: list[str], stdin: int | None) -> tuple[subprocess.Popen[bytes], float]:
    env = {**machine.env, "CUDNN_DOCTOR_READ_TIMEOUT": "0.5"}
    started = time.monotonic()
    return subprocess.Popen([sys.executable, "-m", "cudnn_doctor", "explain", *args, "--offline-only"], env=env,
                            cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE), started


def test_a_pipe_whose_writer_never_closes_is_read_until_a_silence(machine: Machine) -> None:
    for sent, code in ((b"", 2), (MESSAGE, 0)):
        read, write = os.pipe()
        try:
            os.write(write, sent)
            process, started = _explain(machine, ["-"], read)
            out, err = process.communicate(timeout=30)  # the write end stays open all along
        finally:
            os.close(read)
            os.close(write)
        assert process.returncode == code, err
        assert time.monotonic() - started < 20
        if code == 2:
            [line] = err.decode().splitlines()
            assert "nothing arrived on standard input in 0.5 s" in line and "fix:" in line
        else:
            assert "CD304" in out.decode() and "stopped reading standard input" in err.decode()


def test_a_fifo_whose_writer_never_writes_is_a_usage_error(machine: Machine, tmp_path: Path) -> None:
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer that is there and says nothing
    try:
        process, started = _explain(machine, ["--from-file", str(fifo)], subprocess.DEVNULL)
        out, err = process.communicate(timeout=30)
    finally:
        os.close(writer)
    assert process.returncode == 2 and "nothing arrived on --from-file" in err.decode(), err
    assert time.monotonic() - started < 20


def test_a_short_log_quoting_the_skip_line_is_not_a_long_one(machine: Machine, tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"start\n[cudnn-doctor: 1999999 bytes skipped, from byte 6 to byte 2000005]\n" + MESSAGE)
    for args in (["--from-file", str(log)], [log.read_text()]):
        data = json.loads(machine.run("explain", *args, "--json", "--offline-only").stdout)
        assert data["input"] == {"skipped": None, "note": None}
        assert data["matches"] and data["matches"][0]["code"] == "CD304"
