"""cuDNN's sub-libraries say their release in an exported 32-bit symbol (cudnn_graph_version = major << 16 |
minor << 8 | patch); elf.read_exported_u32 reads it without loading the library, through the library's GNU hash
table as ld.so looks a symbol up, and by reading every entry where there is none (an old --hash-style=sysv
build) or where the table cannot be trusted. gcc-built libraries and the real cuDNN 9.19 wheel."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor import elf
from cudnn_doctor.probes.process_env import VERSION_SYMBOLS
from tests.conftest import ROOT
from tests.fakes.build import fake_cudnn
from tests.real_wheels import real_cudnn
from tests.test_check import CUDNN9_SUBLIBS

SOURCE = """
const unsigned cudnn_graph_version = 0x091300;
const unsigned cudnn_ops_infer_version = 0x090e01;
const unsigned char too_small_version = 7;
int filler_%d(void) { return %d; }
"""


def _library(tmp_path: Path, hash_style: str, name: str = "libsyms.so") -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is needed")
    source = tmp_path / "syms.c"
    # many exported symbols, so that buckets hold chains and the lookup must walk them
    source.write_text(SOURCE.replace("int filler_%d(void) { return %d; }",
                                     "\n".join(f"int filler_{i}(void) {{ return {i}; }}" for i in range(600))))
    target = tmp_path / f"{hash_style}-{name}"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", f"-Wl,--hash-style={hash_style}", "-o", str(target), str(source)],
                   check=True, capture_output=True)
    return target


def _sections(path: Path) -> list[tuple[int, ...]]:
    data = path.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]


WANTED = ("cudnn_graph_version", "cudnn_ops_infer_version", "too_small_version", "cudnn_not_there_version")
EXPECTED = {"cudnn_graph_version": 0x091300, "cudnn_ops_infer_version": 0x090E01}


@pytest.mark.parametrize("hash_style", ["gnu", "sysv", "both"])
def test_release_symbols_read_with_and_without_a_gnu_hash_table(tmp_path: Path, hash_style: str) -> None:
    library = _library(tmp_path, hash_style)
    assert any(s[1] == elf.SHT_GNU_HASH for s in _sections(library)) == (hash_style != "sysv")
    assert elf.read_exported_u32(str(library), WANTED) == EXPECTED


def _patched(library: Path, tmp_path: Path, at: int, value: int) -> Path:
    data = bytearray(library.read_bytes())
    struct.pack_into("<I", data, at, value)
    copy = tmp_path / f"patched-{len(list(tmp_path.glob('patched-*')))}.so"
    copy.write_bytes(bytes(data))
    return copy


def test_a_hash_table_that_cannot_be_trusted_is_passed_over(tmp_path: Path) -> None:
    library = _library(tmp_path, "gnu")
    [table] = [s for s in _sections(library) if s[1] == elf.SHT_GNU_HASH]
    offset = table[4]
    buckets, symbol_offset, bloom, _shift = struct.unpack_from("<IIII", library.read_bytes(), offset)
    hostile = [
        _patched(library, tmp_path, offset, 0xFFFFFFFF),  # buckets past the section's end
        _patched(library, tmp_path, offset, 0),  # no buckets
        _patched(library, tmp_path, offset + 4, 0xFFFFFF),  # the first hashed symbol past the table
    ]
    for index in range(buckets):  # every bucket pointing below the hashed symbols
        hostile.append(_patched(hostile[-1] if index else library, tmp_path, offset + 16 + 8 * bloom + 4 * index, 1))
    for copy in hostile:
        assert elf.read_exported_u32(str(copy), WANTED) == EXPECTED, copy


def test_a_chain_that_never_ends_stops_at_the_last_symbol(tmp_path: Path) -> None:
    library = _library(tmp_path, "gnu")
    [table] = [s for s in _sections(library) if s[1] == elf.SHT_GNU_HASH]
    data = bytearray(library.read_bytes())
    buckets, symbol_offset, bloom, _shift = struct.unpack_from("<IIII", data, table[4])
    chain = table[4] + 16 + 8 * bloom + 4 * buckets
    for at in range(chain, table[4] + table[5], 4):  # no entry marked last, no hash matching
        struct.pack_into("<I", data, at, 2)
    copy = tmp_path / "endless.so"
    copy.write_bytes(bytes(data))
    assert elf.read_exported_u32(str(copy), WANTED) == {}


def test_the_real_cudnn_graph_library_says_its_release() -> None:
    graph = real_cudnn("9.19.0") / "lib" / "libcudnn_graph.so.9"
    assert any(s[1] == elf.SHT_GNU_HASH for s in _sections(graph))
    [(name, value)] = elf.read_exported_u32(str(graph), VERSION_SYMBOLS).items()
    assert name == "cudnn_graph_version" and value == 9 << 16 | 19 << 8 | 0


# what a check's probe of the cuDNN a framework loads makes of one sub-library, and how often it opened its file
ONE_OPENING = r"""
import json, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(args[0]) if event == "open" and "libcudnn_ops" in str(args[0]) else None)
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.process_env import _sublibrary
found = _sublibrary("libcudnn_ops", 9, sys.argv[1], "9.19.0", {}, SearchContext.from_environment(), {})
print(json.dumps([found.path, found.version, found.problem, len(opened)]))
"""


def test_a_sub_library_is_read_for_its_headers_and_its_release_from_one_opening(tmp_path: Path) -> None:
    """Its ELF headers (is it whole?) and its exported release are read from one mapping of the file: each of a
    copy's sub-libraries was opened and mapped twice. What it says is what the two readers say apart."""
    library = fake_cudnn(tmp_path / "copy", version=91900, sublibraries=CUDNN9_SUBLIBS)
    ops = library.parent / "libcudnn_ops.so.9"
    assert elf.read_elf(str(ops)).soname and elf.read_elf_and_exported_u32(str(ops), VERSION_SYMBOLS)[1] == \
        elf.read_exported_u32(str(ops), VERSION_SYMBOLS)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", ONE_OPENING, str(library)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    path, release, problem, opened = json.loads(done.stdout or "null") or (None, None, None, done.stderr[-2000:])
    assert os.path.realpath(str(path)) == os.path.realpath(ops) and release == "9.19.0" and problem is None
    assert opened == 1
