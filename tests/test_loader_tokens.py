"""ld.so's dynamic string tokens in LD_LIBRARY_PATH ($ORIGIN, $LIB, $PLATFORM, or ${...}): the folders the doctor
reads are the ones the real loader searches, asked of the loader itself (a child that loads a library by name
through a token and names the file it mapped), and a cuDNN reached only through a token is found by check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cudnn_doctor.probes.hwcaps import loader_platform, parse_platform
from cudnn_doctor.variables import expand_loader_tokens, loader_folders, loader_lib_token
from tests.conftest import Machine
from tests.fakes.build import compile_library, fake_cudnn
from tests.test_check import CUDNN9_SUBLIBS


def test_tokens_are_replaced_as_ld_so_reads_them() -> None:
    value = "$ORIGIN/../lib:/opt/$LIB:/x/${PLATFORM}/y:$FOO:/a/$LIBRARY:;rel"
    assert loader_folders(value, expanded=True, origin="/usr/bin") == [
        "/usr/bin/../lib", f"/opt/{loader_lib_token()}", f"/x/{os.uname().machine}/y", "$FOO", "/a/$LIBRARY", "",
        "rel"]
    assert loader_folders(value)[0] == "$ORIGIN/../lib"  # as written: what a line that edits the variable names
    assert expand_loader_tokens("${ORIGIN}/lib", "/p") == "/p/lib"


def test_the_expansion_is_the_loaders_own(tmp_path: Path) -> None:
    # the library is put where the doctor says $LIB and $PLATFORM lead; the loader, given only the tokens, maps it
    built = compile_library("fake_nccl.c", "libnccl.so.2", {"FAKE_NCCL_VERSION": 22705}, soname="libnccl.so.2")
    for token in ("$LIB", "${PLATFORM}", "$PLATFORM"):
        folder = Path(expand_loader_tokens(str(tmp_path / token), platform=loader_platform(os.environ)) or "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "libtokens.so").write_bytes(built.read_bytes())
        code = ("import ctypes, sys; ctypes.CDLL('libtokens.so'); "
                "print(next(l.split()[-1] for l in open('/proc/self/maps') if 'libtokens' in l))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "LD_LIBRARY_PATH": str(tmp_path / token)})
        assert done.stdout.strip() == str(folder / "libtokens.so"), (token, done.stderr)
        (folder / "libtokens.so").unlink()


def test_ld_sos_own_platform_is_read_from_its_diagnostics() -> None:
    """glibc before 2.37 puts the CPU's class for $PLATFORM on x86-64 ("haswell" with AVX2): the name is ld.so's
    answer, not the machine's (the CI's failure on an Intel CPU: the folder named x86_64 was not the one searched)."""
    assert parse_platform('dl_pagesize=0x1000\ndl_platform="haswell"\ndl_string_platform=0x32\n') == "haswell"
    assert parse_platform('dl_platform="x86_64"') == "x86_64"
    assert parse_platform('dl_platform="a/../b"') is None and parse_platform("Usage: ld.so") is None


def test_check_finds_a_cudnn_reached_only_through_a_token(machine: Machine, tmp_path: Path) -> None:
    folder = Path(expand_loader_tokens(str(tmp_path / "opt" / "$LIB")) or "")
    fake_cudnn(folder, version=90100, sublibraries=CUDNN9_SUBLIBS)
    machine.env["LD_LIBRARY_PATH"] = str(tmp_path / "opt" / "$LIB")
    report = machine.check_json()
    assert [os.path.dirname(c["library"]) for c in report["cudnn"] if c["source"] == "env"] == [str(folder)]


def test_check_finds_a_cudnn_reached_only_through_platform(machine: Machine, tmp_path: Path) -> None:
    """Where the loader puts its own $PLATFORM, check looks: the real loader maps the copy there (asserted first)."""
    folder = Path(expand_loader_tokens(str(tmp_path / "$PLATFORM"), platform=loader_platform(os.environ)) or "")
    fake_cudnn(folder, version=90100, sublibraries=CUDNN9_SUBLIBS)
    machine.env["LD_LIBRARY_PATH"] = str(tmp_path / "$PLATFORM")
    code = "import ctypes; ctypes.CDLL('libcudnn.so.9'); print('ok')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LD_LIBRARY_PATH": str(tmp_path / "$PLATFORM")}).stdout.strip() == "ok"
    report = machine.check_json()
    assert [os.path.dirname(c["library"]) for c in report["cudnn"] if c["source"] == "env"] == [str(folder)]


def test_preloaded_entries_are_read_where_the_tokens_lead() -> None:
    from cudnn_doctor.variables import preload_entries

    assert preload_entries({"LD_PRELOAD": "/opt/$LIB/libcublas.so.13 ${ORIGIN}/x.so:libm.so.6"})[0] == \
        f"/opt/{loader_lib_token()}/libcublas.so.13"
