"""Issue 43: a `docker save` compressed as a whole is read as gzip(1) and xz(1) read it (image/sources._Streams):
several streams, zero bytes between and after them (xz's stream padding, a gzip file padded to a block) give the
same verdict as the plain archive, where Python's readers refused xz padding and a padded gzip as damaged; bytes
that are not the format after a stream, and a stream cut short, are one line and exit 2 in either format (xz's
trailing bytes were ignored, gzip's refused)."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.images import config_of, docker_archive
from tests.test_image import ENV, cuda_image_layers


def _plain(tmp_path: Path) -> bytes:
    return docker_archive(tmp_path / "app.tar", config_of(ENV), cuda_image_layers()).read_bytes()


def _verdict(machine: Machine, path: Path) -> tuple[int, list[tuple[str, str]]]:
    result = machine.run("image", str(path), "--json")
    data = json.loads(result.stdout)
    return result.exit_code, sorted((f["code"], f["severity"]) for f in data.get("findings", []))


def _xz(data: bytes) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_XZ)


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


WHOLE = {
    "xz, padded after its stream": lambda t: _xz(t) + bytes(8),
    "xz, two streams with padding between": lambda t: _xz(t[:5000]) + bytes(4) + _xz(t[5000:]) + bytes(4),
    "gzip, padded to a 64 KiB block": lambda t: _gz(t) + bytes(-len(_gz(t)) % 65536 or 65536),
    "gzip, two members with zeros between": lambda t: _gz(t[:5000]) + bytes(512) + _gz(t[5000:]),
}


@pytest.mark.parametrize("shape", sorted(WHOLE))
def test_an_archive_compressed_whole_as_the_tools_write_it_gets_the_plain_archives_verdict(
        machine_in_process: Machine, tmp_path: Path, shape: str) -> None:
    plain = _plain(tmp_path)
    expected = _verdict(machine_in_process, tmp_path / "app.tar")
    assert expected[0] in (0, 1) and expected[1], expected
    path = tmp_path / "app.tar.compressed"
    path.write_bytes(WHOLE[shape](plain))
    assert _verdict(machine_in_process, path) == expected


BROKEN = {
    "xz followed by bytes that are not xz": (lambda t: _xz(t) + b"GARBAGE!", "not xz"),
    "gzip followed by bytes that are not gzip": (lambda t: _gz(t) + b"GARBAGE!", "not gzip"),
    "xz cut short": (lambda t: _xz(t)[:-40], "xz"),
    "gzip cut short": (lambda t: _gz(t)[:-40], "gzip"),
}


@pytest.mark.parametrize("shape", sorted(BROKEN))
def test_an_archive_compressed_whole_and_damaged_is_one_line_and_exit_2(machine_in_process: Machine, tmp_path: Path,
                                                                        shape: str) -> None:
    make, words = BROKEN[shape]
    path = tmp_path / "app.tar.compressed"
    path.write_bytes(make(_plain(tmp_path)))
    result = machine_in_process.run("image", str(path), "--json")
    assert result.exit_code == 2, result.stdout[-2000:]
    error = json.loads(result.stdout)["error"]
    assert words in error["message"] and "\n" not in error["message"], error
