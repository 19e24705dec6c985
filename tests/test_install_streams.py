"""Issue 43: an install archive's compressed stream is read to its end past the tar's end marker, so the
decompressor's own verdict is had (`xz -dc`'s exit, or the thread's reader): bytes after the stream that are not the
format are refused, as `tar -xJf` and `xz -t` refuse them, where the files were taken whole and the rest never read;
what xz(1) and gzip(1) read whole (zero padding, a second stream) installs."""

from __future__ import annotations

import lzma
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, make_archive, run_cli, snapshot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")

DECOMPRESSORS = ["the system's xz", "none on PATH (a thread decompresses)"]


def _env(tmp_path: Path, decompressor: str) -> dict[str, str]:
    env = clean_env(tmp_path)
    if decompressor.startswith("none"):
        (tmp_path / "no-programs").mkdir()
        env = {**env, "PATH": str(tmp_path / "no-programs")}
    return env


@pytest.mark.parametrize("decompressor", DECOMPRESSORS)
def test_an_archive_whose_xz_stream_is_followed_by_other_bytes_is_refused(tmp_path: Path, decompressor: str) -> None:
    good = make_archive("txz", tmp_path)
    good.write_bytes(good.read_bytes() + b"GARBAGE!")
    prefix = tmp_path / "cuda"
    prefix.mkdir()
    before = snapshot(prefix)
    result = run_cli(["install", "--from", str(good), "--prefix", str(prefix), "--yes"], _env(tmp_path, decompressor))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "CD502" in result.stderr and "truncated or corrupt" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(prefix) == before


@pytest.mark.parametrize("decompressor", DECOMPRESSORS)
@pytest.mark.parametrize("shape", ["padded", "two streams"])
def test_an_archive_xz_reads_whole_installs(tmp_path: Path, decompressor: str, shape: str) -> None:
    good = make_archive("txz", tmp_path)
    tar = lzma.decompress(good.read_bytes())
    if shape == "padded":
        good.write_bytes(good.read_bytes() + bytes(8))
    else:
        good.write_bytes(lzma.compress(tar[:4096]) + lzma.compress(tar[4096:]))
    prefix = tmp_path / "cuda"
    result = run_cli(["install", "--from", str(good), "--prefix", str(prefix), "--yes"], _env(tmp_path, decompressor))
    assert result.returncode == 0, result.stderr
    assert (prefix / "lib64" / "libcudnn.so.9.19.0").is_file()
