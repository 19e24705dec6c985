"""A CUDA library of another release under the right soname, whose symbols carry the right version node, but that
lacks symbols the framework's own libraries take from it (issue 45, round twelve): the loading child reads those
symbols from the framework's libraries' dynamic symbol tables (libtorch_cuda.so's cudaX@libcudart.so.13, its
unversioned ncclX) and asks the copy the program gets for each one (dlvsym), then the program's global scope, as the
loader binds them. Where none defines one, torch's import (RTLD_NOW) stops with the loader's "undefined symbol: X,
version libcudart.so.13": an error, seen; JAX's plugin binds lazily: a warning that --deep proves. Its working
neighbours stay silent: torch's own wheel copy mapped over an old one, a newer copy that exports everything, copies
only on LIBRARY_PATH/CPATH (link-time paths the loader never reads). gcc fakes with version scripts (as NVIDIA's
libraries define libcudart.so.13) under the real sonames."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_binder, fake_cuda_math
from tests.test_cuda_libraries import about, libraries_of, torch_cu13
from tests.test_fix import closed_loop

NODE = "libcudart.so.13"
LATER = "cudaAddedLater"  # what the wheel's release exports and libtorch_cuda.so takes, that an older one lacks
NCCL_LATER = "ncclCommInitRankScalable"


def cudart(minor: int, later: bool = True) -> Path:
    return fake_cuda_math("libcudart.so.13", "cudart", 13, minor, newer=LATER if later else None,
                          version_node=NODE)


def nccl(minor: int, later: bool = True) -> Path:
    return fake_cuda_math("libnccl.so.2", "nccl", 2, minor, 9, newer=NCCL_LATER if later else None)


def torch_binding(machine: Machine, tmp_path: Path, without: tuple[str, ...] = ()) -> Path:
    """torch 2.11+cu130 (tests/test_cuda_libraries.torch_cu13) whose wheels' CUDA runtime defines its symbols under
    libcudart.so.13 and whose libtorch_cuda.so was linked against it and the wheel's NCCL: it takes
    cudaGetDeviceCount and cudaAddedLater (version libcudart.so.13), ncclAllReduce and ncclCommInitRankScalable."""
    site = torch_cu13(machine, tmp_path, without)
    lib = site / "nvidia" / "cu13" / "lib"
    shutil.copyfile(cudart(0), lib / "libcudart.so.13")
    shutil.copyfile(nccl(28), site / "nvidia" / "nccl" / "lib" / "libnccl.so.2")
    binder = fake_binder("libtorch_cuda.so", ("cudaGetDeviceCount", LATER, "ncclAllReduce", NCCL_LATER),
                         (cudart(0), nccl(28)))
    shutil.copyfile(binder, site / "torch" / "lib" / "libtorch_cuda.so")
    return site


def copy_into(folder: Path, library: Path, soname: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(library, folder / soname)
    return folder / soname


@pytest.mark.integration
def test_an_older_cudart_preloaded_without_what_libtorch_cuda_binds_is_an_error(machine: Machine,
                                                                                tmp_path: Path) -> None:
    """An older libcudart.so.13 (its symbols under libcudart.so.13 too) in LD_PRELOAD, without cudaAddedLater: torch's
    own code maps its wheel's copy by full path, RTLD_LOCAL, so the loader binds libtorch_cuda.so's symbols from the
    preloaded copy (first in the scope, and the one its soname names) and finds cudaAddedLater@libcudart.so.13
    nowhere: the loading child asked (dlvsym), an error, seen, in the loader's words; the plan drops the preload and
    the check after is clean."""
    torch_binding(machine, tmp_path)
    old = copy_into(tmp_path / "old", cudart(0, later=False), "libcudart.so.13")
    machine.env["LD_PRELOAD"] = str(old)
    report = machine.check_json()
    seen = libraries_of(report, "torch")["libcudart.so.13"]
    assert seen["path"] == str(old) and seen["unbound"] == [f"{LATER}@{NODE}"] and seen["bound"] == 2, seen
    assert seen["binder"].endswith("torch/lib/libtorch_cuda.so"), seen
    [error] = [f for f in about(report, "libcudart") if f["severity"] == "error"]
    assert error["evidence"] == "seen" and error["subject"] == str(old), error
    assert f"undefined symbol: {LATER}, version {NODE}" in error["detail"], error["detail"]
    assert "RTLD_NOW" in error["detail"] and "dlvsym" in error["proof"], error
    before, plan = closed_loop(machine)
    assert "CD203" in codes(before) and "CD203" not in plan["after"]["codes"], plan["after"]


@pytest.mark.integration
def test_an_older_nccl_first_on_the_path_that_torch_takes_by_name(machine: Machine, tmp_path: Path) -> None:
    """torch's wheels without cuSPARSELt: its own preloading stops before NCCL, which libtorch_cuda.so then gets by
    name, from LD_LIBRARY_PATH first, where an older NCCL (unversioned, as NVIDIA's is) lacks
    ncclCommInitRankScalable: the child attributes it by DT_NEEDED and the API's prefix and finds it bound nowhere:
    an error, seen; the plan takes the folder out of LD_LIBRARY_PATH."""
    torch_binding(machine, tmp_path, without=("libcusparseLt.so.0",))
    folder = tmp_path / "nccl-2.18" / "lib"
    copy_into(folder, nccl(18, later=False), "libnccl.so.2")
    machine.add_library_path(folder)
    report = machine.check_json()
    seen = libraries_of(report, "torch")["libnccl.so.2"]
    assert seen["how"] == "LD_LIBRARY_PATH" and seen["unbound"] == [NCCL_LATER], seen
    [error] = [f for f in about(report, "libnccl") if f["severity"] == "error"]
    assert error["evidence"] == "seen" and f"undefined symbol: {NCCL_LATER}" in error["detail"], error
    lines = machine.run("fix", "--json")
    assert str(folder) in lines.stdout, lines.stdout[-2000:]


@pytest.mark.integration
def test_torchs_own_copy_preloaded_over_an_old_one_on_the_path_is_silent(machine: Machine, tmp_path: Path) -> None:
    """The old cudart first on LD_LIBRARY_PATH and torch's own wheel copy in LD_PRELOAD: the preloaded copy answers
    libcudart.so.13 and exports all libtorch_cuda.so binds (asked, none unbound): nothing is said of it for torch."""
    site = torch_binding(machine, tmp_path)
    copy_into(tmp_path / "old", cudart(0, later=False), "libcudart.so.13")
    machine.add_library_path(tmp_path / "old")
    machine.env["LD_PRELOAD"] = str(site / "nvidia" / "cu13" / "lib" / "libcudart.so.13")
    report = machine.check_json()
    seen = libraries_of(report, "torch")["libcudart.so.13"]
    assert seen["bound"] == 2 and not seen["unbound"], seen
    assert not [f for f in about(report, "libcudart") if f.get("framework") == "torch" or "PyTorch" in f["detail"]]
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_a_newer_copy_that_exports_everything_is_silent(machine: Machine, tmp_path: Path) -> None:
    """A later cudart (13.2) and a later NCCL, each exporting all that libtorch_cuda.so binds, preloaded: another
    release than torch pins, but the soname promises the older ABI and every symbol was bound: nothing is said."""
    torch_binding(machine, tmp_path)
    newer = copy_into(tmp_path / "newer", cudart(2), "libcudart.so.13")
    newer_nccl = copy_into(tmp_path / "newer", nccl(30), "libnccl.so.2")
    machine.env["LD_PRELOAD"] = f"{newer} {newer_nccl}"
    report = machine.check_json()
    seen = libraries_of(report, "torch")
    assert seen["libcudart.so.13"]["path"] == str(newer) and seen["libcudart.so.13"]["version"] == "13.2", seen
    assert not seen["libcudart.so.13"]["unbound"] and not seen["libnccl.so.2"]["unbound"], seen
    assert not about(report, "libcudart") and not about(report, "libnccl"), report["findings"]


@pytest.mark.integration
def test_copies_only_on_library_path_and_cpath_are_silent(machine: Machine, tmp_path: Path) -> None:
    """The old cudart and NCCL in a folder named only by LIBRARY_PATH and CPATH (the compiler's and linker's search
    paths, which the loader never reads): no loading child asks the CUDA libraries, nothing is said."""
    torch_binding(machine, tmp_path)
    folder = tmp_path / "old"
    copy_into(folder, cudart(0, later=False), "libcudart.so.13")
    copy_into(folder, nccl(18, later=False), "libnccl.so.2")
    machine.env["LIBRARY_PATH"] = str(folder)
    machine.env["CPATH"] = str(folder)
    report = machine.check_json()
    assert not any(load["libraries"] for load in report["process"]["loads"]), report["process"]["loads"]
    assert not about(report, "libcudart") and not about(report, "libnccl"), report["findings"]
    assert report["summary"]["exit_code"] == 0, report["findings"]


@pytest.mark.integration
def test_an_empty_ptx_jit_compiler_first_on_the_path_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    """A zero-length libnvidia-ptxjitcompiler.so.1 first on LD_LIBRARY_PATH: libcuda opens it by name only when it
    must compile PTX (compat [[driver_companion]]), and the loader stops at a file too short to be ELF: that work
    fails with CUDA_ERROR_JIT_COMPILER_NOT_FOUND, programs whose kernels carry SASS are not hit: a warning, read,
    that names --deep; no error, and the CUDA libraries' loading children are not started for it."""
    torch_binding(machine, tmp_path)
    folder = tmp_path / "driver-compat"
    folder.mkdir()
    (folder / "libnvidia-ptxjitcompiler.so.1").write_bytes(b"")
    machine.add_library_path(folder)
    report = machine.check_json()
    [warned] = about(report, "libnvidia-ptxjitcompiler.so.1")
    assert warned["severity"] == "warning" and warned["evidence"] == "read", warned
    assert "CUDA_ERROR_JIT_COMPILER_NOT_FOUND" in warned["detail"] and "--deep" in warned["detail"], warned
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]
    assert not any(load["libraries"] for load in report["process"]["loads"]), report["process"]["loads"]
    (folder / "libnvidia-ptxjitcompiler.so.1").unlink()  # without it: nothing said
    assert not about(machine.check_json(), "libnvidia-ptxjitcompiler")


@pytest.mark.integration
@pytest.mark.parametrize(("soname", "library", "major", "calls"), [
    ("libcublasLt.so.13", "cublasLt", 13, ("cublasLtMatmul", "cublasLtAddedLater")),
    ("libcufft.so.12", "cufft", 12, ("cufftExecC2C", "cufftAddedLater")),
])
def test_an_older_math_library_preloaded_without_what_torch_binds(machine: Machine, tmp_path: Path, soname: str,
                                                                  library: str, major: int,
                                                                  calls: tuple[str, str]) -> None:
    """cuBLASLt and cuFFT as the CUDA runtime above: the wheel's copy defines its symbols under its soname's node
    and libtorch_cuda.so takes a later function from it; an older copy under the same soname and node, preloaded,
    lacks it: an error, seen, naming the symbol and its version node."""
    site = torch_cu13(machine, tmp_path)
    own = fake_cuda_math(soname, library, major, 1, newer=calls[1], version_node=soname)
    shutil.copyfile(own, site / "nvidia" / "cu13" / "lib" / soname)
    shutil.copyfile(fake_binder("libtorch_cuda.so", calls, (own,)), site / "torch" / "lib" / "libtorch_cuda.so")
    old = copy_into(tmp_path / "old", fake_cuda_math(soname, library, major, 0, version_node=soname), soname)
    machine.env["LD_PRELOAD"] = str(old)
    report = machine.check_json()
    seen = libraries_of(report, "torch")[soname]
    assert seen["path"] == str(old) and seen["unbound"] == [f"{calls[1]}@{soname}"] and seen["bound"] == 2, seen
    [error] = [f for f in about(report, library) if f["severity"] == "error"]
    assert error["evidence"] == "seen" and f"undefined symbol: {calls[1]}, version {soname}" in error["detail"], error


# JAX's CUDA plugin: loaded by XLA, its CUDA functions bound when first called (compat [[library_loading]] binding)
@pytest.mark.integration
def test_jaxs_plugin_binds_lazily_so_an_older_cudart_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    """JAX's xla_cuda_plugin.so linked against its wheel's CUDA runtime, taking cudaAddedLater from it; an older copy
    preloaded: the child sees it bound nowhere (seen), and as XLA binds the plugin's functions when first called,
    the work that calls it fails, not the start: a warning that names --deep."""
    from tests.test_cuda_libraries import jax_cu13

    site = jax_cu13(machine, tmp_path)
    shutil.copyfile(cudart(0), site / "nvidia" / "cu13" / "lib" / "libcudart.so.13")
    plugin = fake_binder("xla_cuda_plugin.so", ("cudaGetDeviceCount", LATER), (cudart(0),))
    shutil.copyfile(plugin, site / "jax_plugins" / "xla_cuda13" / "xla_cuda_plugin.so")
    old = copy_into(tmp_path / "old", cudart(0, later=False), "libcudart.so.13")
    machine.env["LD_PRELOAD"] = str(old)
    report = machine.check_json()
    seen = libraries_of(report, "jax")["libcudart.so.13"]
    assert seen["unbound"] == [f"{LATER}@{NODE}"], seen
    [warned] = [f for f in about(report, "libcudart") if "undefined symbol" in f["detail"]]
    assert warned["severity"] == "warning" and warned["evidence"] == "seen" and "--deep" in warned["detail"], warned
    assert not [f for f in about(report, "libcudart") if f["severity"] == "error"], report["findings"]  # (the JAX
    # site has no cuDNN: CD301 is not this test's)


def test_the_symbol_reader_never_waits_nor_fails_on_hostile_files(tmp_path: Path) -> None:
    """The loading child's reader of a framework library's undefined symbols: a FIFO under its name is not waited
    on, and an empty, a cut-short or a non-ELF file give nothing, never an exception."""
    import os
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cudnn_doctor"))
    import _load_jobs as _load_child  # type: ignore[import-not-found]

    fifo = tmp_path / "libtorch_cuda.so"
    os.mkfifo(fifo)
    binder = fake_binder("libtorch_cuda.so", ("cudaGetDeviceCount", LATER), (cudart(0),))
    whole = binder.read_bytes()
    files = [fifo, tmp_path / "empty.so", tmp_path / "cut.so", tmp_path / "text.so"]
    files[1].write_bytes(b"")
    files[2].write_bytes(whole[: len(whole) // 3])
    files[3].write_text("version https://git-lfs.github.com/spec/v1\n")
    assert _load_child.bound_needs([str(path) for path in files], {NODE: []}) in ({}, {NODE: []})
    assert sorted(symbol for _, symbol, _ in _load_child.bound_needs([str(binder)], {NODE: []})[NODE]) == \
        [LATER, "cudaGetDeviceCount"]
