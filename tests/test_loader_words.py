"""The loader's own words for each sub-library a framework's cuDNN loads lazily (issue 45, round eight): a copy of the
real cuDNN 9.19 wheel's libcudnn_graph.so.9 first on LD_LIBRARY_PATH that the loader refuses (a dependency no machine
has, a C library newer than this one's) makes cuDNN's front library abort ("Invalid handle. Cannot load symbol
cudnnGetVersion"); the loading child asks the loader for that file before, and the error quotes the loader, names
the file, and fix takes its folder out of LD_LIBRARY_PATH (the line sourced in bash, check again clean)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.real_wheels import real_cudnn
from tests.test_loading import torch_with_real_cudnn
from tests.test_process_env import check_after, finding, gpu_machine, plan_lines


def bent_graph(tmp_path: Path, old: bytes, new: bytes, name: str = "libcudnn_graph.so.9") -> Path:
    """A folder holding a copy of the real NAME (libcudnn_graph.so.9) with the string OLD of its dynamic string table
    (a DT_NEEDED name, a symbol version it needs of libc) renamed NEW, at the same length: the loader refuses it."""
    assert len(old) == len(new)
    folder = tmp_path / "bent"
    folder.mkdir()
    data = (real_cudnn("9.19.0") / "lib" / name).read_bytes()
    assert data.count(b"\0" + old + b"\0") == 1, old
    (folder / name).write_bytes(data.replace(b"\0" + old + b"\0", b"\0" + new + b"\0"))
    return folder


def newest_glibc_need(data: bytes) -> bytes:
    names = set(re.findall(rb"\0(GLIBC_2\.[0-9][0-9.]*)\0", data))
    return max(names, key=lambda n: tuple(int(x) for x in n[len(b"GLIBC_"):].split(b".")))


@pytest.mark.integration
@pytest.mark.parametrize("case", ["missing dependency", "newer glibc"])
def test_a_graph_library_the_loader_refuses_is_named_in_its_words(machine: Machine, tmp_path: Path,
                                                                  case: str) -> None:
    torch_with_real_cudnn(machine, tmp_path)
    if case == "missing dependency":
        folder, words = bent_graph(tmp_path, b"libdl.so.2", b"liqdl.so.2"), "liqdl.so.2: cannot open shared object"
    else:
        data = (real_cudnn("9.19.0") / "lib" / "libcudnn_graph.so.9").read_bytes()
        need = newest_glibc_need(data)
        newer = need.replace(b"GLIBC_2.", b"GLIBC_9.", 1)
        folder, words = bent_graph(tmp_path, need, newer), f"version `{newer.decode()}' not found"
    machine.add_library_path(folder)
    report = machine.check_json()
    refused = finding(report, "CD307")
    assert refused["severity"] == "error" and refused["evidence"] == "seen", refused
    assert words in refused["proof"] and str(folder / "libcudnn_graph.so.9") in refused["detail"], refused
    # the loader's words are the cause: not a broken file, not a crash of cuDNN's own
    assert not codes(report) & {"CD304", "CD308", "CD309"}, report["findings"]
    assert all(f["evidence"] in ("seen", "rule") for f in report["findings"] if f["severity"] == "error")
    lines = plan_lines(machine)
    assert any("LD_LIBRARY_PATH" in line for line in lines), lines
    after = check_after(machine, lines)
    assert not codes(after) & {"CD304", "CD307", "CD308", "CD309"}, after["findings"]


@pytest.mark.integration
def test_a_graph_library_of_another_machine_is_skipped_as_the_loader_skips_it(machine: Machine,
                                                                                tmp_path: Path) -> None:
    """An aarch64 libcudnn_graph.so.9 first on the path: the loader skips it searching (by its path it says 'No such
    file'), takes the one beside torch's front library, and cuDNN loads: asked, nothing refused, no error."""
    torch_with_real_cudnn(machine, tmp_path)
    folder = tmp_path / "arm"
    folder.mkdir()
    shutil.copyfile(real_cudnn("9.19.0", "aarch64") / "lib" / "libcudnn_graph.so.9", folder / "libcudnn_graph.so.9")
    machine.add_library_path(folder)
    report = machine.check_json()
    [seen] = [load for load in report["process"]["loads"] if load["user"] == "torch"]
    assert all(step["ok"] for step in seen["steps"]), seen["steps"]
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_an_engine_library_whose_dependency_is_missing_is_refused_not_missing(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    """libcudnn_heuristic.so.9, opened by cuDNN's graph library by name when work runs, first on LD_LIBRARY_PATH with
    a dependency no machine has: the loader refuses that file (it is there): its words, not 'sub-library missing'.
    cuDNN's graph library goes on without its heuristics library where the loader refuses it (compat/process_env.toml
    [[sublibrary]] libcudnn_heuristic, falls_back; round nineteen's s19-heuristic-ident-padding ran on an H100): a
    warning, seen, no longer the error CD307 (k26)."""
    torch_with_real_cudnn(machine, tmp_path)
    folder = bent_graph(tmp_path, b"libdl.so.2", b"liqdl.so.2", name="libcudnn_heuristic.so.9")
    machine.add_library_path(folder)
    report = machine.check_json()
    refused = finding(report, "CD319")
    assert refused["evidence"] == "seen" and "liqdl.so.2" in refused["proof"], refused
    assert refused["severity"] == "warning", refused
    assert not codes(report) & {"CD304", "CD307"}, report["findings"]
    lines = plan_lines(machine)
    assert not codes(check_after(machine, lines)) & {"CD304", "CD307", "CD319"}


def cuda_library(tmp_path: Path, soname: str, old: bytes, new: bytes) -> Path:
    """A folder holding a gcc-built CUDA library saved as SONAME (one XLA opens by name, lazily), the string OLD of
    its dynamic string table renamed NEW at the same length (the C library version it needs, a library it needs)."""
    from tests.fakes.build import compile_library

    data = compile_library("fake_cuda_library.c", "libnvJitLink.so", soname=soname).read_bytes()
    if old == b"GLIBC":
        old = newest_glibc_need(data)
        new = old.replace(b"GLIBC_2.", b"GLIBC_9.", 1)
    assert len(old) == len(new) and b"\0" + old + b"\0" in data
    folder = tmp_path / "copied"
    folder.mkdir()
    (folder / soname).write_bytes(data.replace(b"\0" + old + b"\0", b"\0" + new + b"\0"))
    return folder


@pytest.mark.parametrize(("old", "new", "words"), [
    (b"GLIBC", b"", "not found (required by"),
    (b"libc.so.6", b"libq.so.6", "libq.so.6: cannot open shared object file"),
])
def test_a_cuda_library_the_loader_refuses_is_asked_of_it_by_name(machine: Machine, tmp_path: Path, old: bytes,
                                                                  new: bytes, words: str) -> None:
    """libnvJitLink.so.13 first on LD_LIBRARY_PATH built for a newer glibc than this machine's (or needing a library
    no machine has): its headers say so (read), so a child opens it by name as XLA does and the loader's refusal is
    the error, seen; fix takes the folder out (sourced in bash, check again clean). Where nothing is suspect no
    child runs: the files of every CUDA library on the path are only read."""
    gpu_machine(machine, tmp_path, gpus=1)
    folder = cuda_library(tmp_path, "libnvJitLink.so.13", old, new)
    machine.add_library_path(folder)
    report = machine.check_json()
    refused = finding(report, "CD203")
    assert refused["severity"] == "error" and refused["evidence"] == "seen", refused
    assert words in refused["proof"] and "libnvJitLink.so.13" in refused["detail"], refused
    lines = plan_lines(machine)
    assert any("LD_LIBRARY_PATH" in line for line in lines), lines
    assert "CD203" not in codes(check_after(machine, lines))


def test_a_cuda_library_the_loader_takes_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    """The same copy unbent (its needs all met here): nothing suspect, nothing said."""
    gpu_machine(machine, tmp_path, gpus=1)
    machine.add_library_path(cuda_library(tmp_path, "libnvJitLink.so.13", b"libc.so.6", b"libc.so.6"))
    assert "CD203" not in codes(machine.check_json())


@pytest.mark.integration
def test_a_fifo_where_the_graph_library_is_named_never_opened(machine: Machine, tmp_path: Path) -> None:
    """A FIFO named libcudnn_graph.so.9 first on LD_LIBRARY_PATH: the loader would open it and wait for a writer for
    ever, in every program whose cuDNN loads it. The child never opens it: said at once, not at the deadline."""
    import os
    import time

    torch_with_real_cudnn(machine, tmp_path)
    folder = tmp_path / "fifo"
    folder.mkdir()
    os.mkfifo(folder / "libcudnn_graph.so.9")
    machine.add_library_path(folder)
    started = time.monotonic()
    report = machine.check_json()
    assert time.monotonic() - started < 20
    refused = finding(report, "CD307")
    assert "waits" in refused["detail"] and str(folder / "libcudnn_graph.so.9") in refused["detail"], refused
    lines = plan_lines(machine)
    assert not codes(check_after(machine, lines)) & {"CD304", "CD307", "CD308", "CD309"}



@pytest.mark.integration
def test_a_device_where_the_graph_library_is_named_is_no_library(machine: Machine, tmp_path: Path) -> None:
    """/dev/zero linked as libcudnn_graph.so.9 first on LD_LIBRARY_PATH (round seventeen's published GPU set): the
    loader opens it, reads zeros where the ELF header goes ('invalid ELF header') and stops; nothing waits. The child
    never opens a device (opening some acts), and says so in words the rules read as a file that is no library: CD308,
    not a FIFO's wait (CD307 'waits', as before)."""
    import os

    torch_with_real_cudnn(machine, tmp_path)
    folder = tmp_path / "device"
    folder.mkdir()
    os.symlink("/dev/zero", folder / "libcudnn_graph.so.9")
    machine.add_library_path(folder)
    report = machine.check_json()
    broken = finding(report, "CD308")
    assert "device file" in broken["detail"] and "waits" not in broken["detail"], broken
    assert str(folder / "libcudnn_graph.so.9") in broken["detail"], broken
    assert "CD307" not in codes(report)
    lines = plan_lines(machine)
    assert not codes(check_after(machine, lines)) & {"CD304", "CD307", "CD308", "CD309"}

def test_a_refused_cuda_library_a_framework_holds_its_own_copy_of_is_a_warning(machine: Machine,
                                                                               tmp_path: Path) -> None:
    """The same refused libnvJitLink.so.13 first on LD_LIBRARY_PATH, where torch's wheels hold a libnvJitLink.so.13
    of their own (its loading code may load that one by full path first): seen, a warning that says --deep proves
    whether torch is hit."""
    from tests.test_frameworks import install_torch, python_env

    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    own = site / "nvidia" / "cu13" / "lib"
    own.mkdir(parents=True)
    (own / "libnvJitLink.so.13").write_bytes(b"\x7fELF")
    machine.add_library_path(cuda_library(tmp_path, "libnvJitLink.so.13", b"GLIBC", b""))
    said = finding(machine.check_json(), "CD203")
    assert said["severity"] == "warning" and said["evidence"] == "seen" and "--deep" in said["detail"], said


@pytest.mark.integration
def test_an_ops_library_whose_dependency_is_missing_is_named_after_its_check_fails(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    """libcudnn_ops.so.9 first on LD_LIBRARY_PATH with a dependency no machine has: cuDNN's check answers
    SUBLIBRARY_UNAVAILABLE (it does not say why); the loader, asked then, does."""
    torch_with_real_cudnn(machine, tmp_path)
    machine.add_library_path(bent_graph(tmp_path, b"libdl.so.2", b"liqdl.so.2", name="libcudnn_ops.so.9"))
    report = machine.check_json()
    refused = finding(report, "CD307")
    assert refused["evidence"] == "seen" and "liqdl.so.2" in refused["proof"], refused
    assert "CD304" not in codes(report), report["findings"]
    assert not codes(check_after(machine, plan_lines(machine))) & {"CD304", "CD307"}
