"""The CUDA libraries other than cuDNN as each framework gets them, seen in its loading child (issue 45, "what a
program gets, beyond cuDNN"): torch's and JAX's own preloading code run from their installed files (written here
after the real ones: torch 2.13's _load_global_deps and _preload_cuda_deps, JAX's _load_nvidia_libraries), then each
library opened as their libraries open it. gcc-built fakes under the real sonames (tests/fakes/fake_cuda_math.c):
another release first on LD_LIBRARY_PATH or preloaded, an empty file, a copy without a function the frameworks call,
the toolkit's link stub, a foreign file where a dependency should be."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import compile_library, fake_cuda_math
from tests.real_wheels import real_cudnn, real_nccl
from tests.test_frameworks import install_torch, python_env, real_python_sees
from tests.test_process_env import check_after, gpu_machine, plan_lines

# torch 2.13's torch/__init__.py, its CUDA preloading (the same names, order and logic; our own text). The module's
# own top never runs in the loading child: importing it whole (as `from torch.version import cuda` would, were the
# child not to make torch.version from its file) fails loudly
TORCH_INIT = '''
import ctypes
import glob
import os
import platform
import sys


def _get_cuda_dep_paths(path, lib_folder, lib_name):
    from torch.version import cuda as cuda_version

    nvidia_lib_paths = glob.glob(os.path.join(path, "nvidia", lib_folder, "lib", lib_name))
    if cuda_version is not None:
        maj_cuda_version = cuda_version.split(".")[0]
        nvidia_lib_paths += glob.glob(os.path.join(path, "nvidia", f"cu{maj_cuda_version}", "lib", lib_name))
    lib_paths = glob.glob(os.path.join(path, lib_folder, "lib", lib_name))
    return nvidia_lib_paths + lib_paths


def _preload_cuda_lib(lib_folder, lib_name, required=True):
    if platform.system() != "Linux":
        raise AssertionError("Linux only")
    lib_path = None
    for path in sys.path:
        candidates = _get_cuda_dep_paths(path, lib_folder, lib_name)
        if candidates:
            lib_path = candidates[0]
            break
    if not lib_path and required:
        raise ValueError(f"{lib_name} not found in the system path {sys.path}")
    if lib_path:
        ctypes.CDLL(lib_path)


def _preload_cuda_deps(err=None):
    cuda_libs = [
        ("cublas", "libcublasLt.so.*[0-9]"), ("cublas", "libcublas.so.*[0-9]"), ("cudnn", "libcudnn.so.*[0-9]"),
        ("cuda_nvrtc", "libnvrtc.so.*[0-9]"), ("cuda_runtime", "libcudart.so.*[0-9]"),
        ("cufft", "libcufft.so.*[0-9]"), ("nvjitlink", "libnvJitLink.so.*[0-9]"),
        ("cusparse", "libcusparse.so.*[0-9]"), ("cusparselt", "libcusparseLt.so.*[0-9]"),
        ("nccl", "libnccl.so.*[0-9]"),
    ]
    if err is not None and not [lib for _, lib in cuda_libs if lib.split(".", 1)[0] in err.args[0]]:
        raise err
    for lib_folder, lib_name in cuda_libs:
        _preload_cuda_lib(lib_folder, lib_name)


def _load_global_deps():
    if platform.system() == "Windows":
        return
    here = os.path.abspath(__file__)
    global_deps_lib_path = os.path.join(os.path.dirname(here), "lib", "libtorch_global_deps.so")
    try:
        ctypes.CDLL(global_deps_lib_path, mode=ctypes.RTLD_GLOBAL)
        try:
            with open("/proc/self/maps") as f:
                _maps = f.read()
            if "libcudart.so" not in _maps:
                return
            _preload_cuda_deps()
        except Exception:
            pass
    except OSError as err:
        _preload_cuda_deps(err)
        ctypes.CDLL(global_deps_lib_path, mode=ctypes.RTLD_GLOBAL)


raise ImportError("the whole of torch was imported: the loading child must not run it")
'''

# what torch 2.11+cu130's METADATA asks of NVIDIA's wheels: the cuda-toolkit metapackage (whose own METADATA pins
# each library wheel, by extra), NCCL directly
PINS = ("cuda-toolkit[cublas,cudart,cufft,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc]==13.0.2",
        "nvidia-nccl-cu13==2.28.9")
TOOLKIT_PINS = ("nvidia-cublas==13.1.0.3.*; extra == \"cublas\"", "nvidia-cuda-runtime==13.0.96.*; extra == \"cudart\"",
                "nvidia-nvjitlink==13.0.88.*; extra == \"nvjitlink\"", "nvidia-cusparse==12.6.3.3.*; extra == \"cusparse\"")


def cu13_wheels(site: Path, without: tuple[str, ...] = ()) -> Path:
    """site/nvidia/cu13/lib as NVIDIA's CUDA 13 wheels lay it out, fakes of the releases torch pins (each listed in
    its wheel's RECORD), nccl in nvidia/nccl/lib; WITHOUT: sonames left out (a wheel not installed)."""
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    lt = fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0)
    jit = fake_cuda_math("libnvJitLink.so.13", "nvJitLink", 13, 0, 88)
    built = {
        "libcudart.so.13": fake_cuda_math("libcudart.so.13", "cudart", 13, 0),
        "libcublasLt.so.13": lt, "libcublas.so.13": fake_cuda_math("libcublas.so.13", "cublas", 13, 1, 0, link=(lt,)),
        "libnvrtc.so.13": fake_cuda_math("libnvrtc.so.13", "nvrtc", 13, 0),
        "libcufft.so.12": fake_cuda_math("libcufft.so.12", "cufft", 12, 0, 0),
        "libnvJitLink.so.13": jit,
        "libcusparse.so.12": fake_cuda_math("libcusparse.so.12", "cusparse", 12, 6, 3, link=(jit,), runpath="$ORIGIN"),
        "libcusparseLt.so.0": fake_cuda_math("libcusparseLt.so.0"),
    }
    record = []
    for soname, path in built.items():
        if soname not in without:
            shutil.copyfile(path, lib / soname)
            record.append(f"nvidia/cu13/lib/{soname},,")
    for distribution in ("nvidia_cublas-13.1.0.3", "nvidia_cuda_runtime-13.0.96", "nvidia_nvjitlink-13.0.88"):
        info = site / f"{distribution}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "RECORD").write_text("\n".join(record) + "\n")
    if "libnccl.so.2" not in without:
        (site / "nvidia" / "nccl" / "lib").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fake_cuda_math("libnccl.so.2", "nccl", 2, 28, 9), site / "nvidia" / "nccl" / "lib" / "libnccl.so.2")
        (site / "nvidia_nccl_cu13-2.28.9.dist-info").mkdir(exist_ok=True)
        (site / "nvidia_nccl_cu13-2.28.9.dist-info" / "RECORD").write_text("nvidia/nccl/lib/libnccl.so.2,,\n")
    return lib


def torch_cu13(machine: Machine, tmp_path: Path, without: tuple[str, ...] = ()) -> Path:
    """torch 2.11+cu130 whose __init__.py preloads its wheels as torch 2.13's does, its libtorch_global_deps.so
    needing libcudart.so.13 (DT_RUNPATH the cu13 wheel's lib), its METADATA pinning NVIDIA's wheels."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    metadata = site / "torch-2.11.0+cu130.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text() + "".join(f"Requires-Dist: {pin}; platform_system == \"Linux\"\n"
                                                       for pin in PINS))
    cudnn = site / "nvidia" / "cudnn" / "lib"  # the real cuDNN 9.19 wheel's (the loading child runs its checks)
    shutil.rmtree(cudnn)
    cudnn.mkdir()
    for library in (real_cudnn("9.19.0") / "lib").iterdir():
        (cudnn / library.name).symlink_to(library)
    toolkit = site / "cuda_toolkit-13.0.2.dist-info"
    toolkit.mkdir()
    (toolkit / "METADATA").write_text("Metadata-Version: 2.1\nName: cuda-toolkit\nVersion: 13.0.2\n" + "".join(
        f"Requires-Dist: {pin}\n" for pin in TOOLKIT_PINS))
    lib = cu13_wheels(site, without)
    deps = compile_library("fake_cuda_math.c", "libtorch_global_deps.so", {}, link=(lib / "libcudart.so.13",),
                           runpath="$ORIGIN/../../nvidia/cu13/lib")
    shutil.copyfile(deps, site / "torch" / "lib" / "libtorch_global_deps.so")
    (site / "torch" / "__init__.py").write_text(TORCH_INIT)
    real_python_sees(site, tmp_path)
    return site


def libraries_of(report: dict, user: str) -> dict[str, dict]:
    [seen] = [load for load in report["process"]["loads"] if load["user"] == user]
    return {library["soname"]: library for library in seen["libraries"]}


def about(report: dict, text: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == "CD203" and text in (f.get("subject") or "") + f["detail"]]


@pytest.mark.integration
def test_another_release_first_on_the_path_is_not_what_torch_maps(machine: Machine, tmp_path: Path) -> None:
    """cuBLASLt 13.0 first on LD_LIBRARY_PATH, torch pinning 13.1: torch's own code maps its wheel's copy by full
    path (seen), so nothing is said of torch; a program that opens it by name gets the 13.0 (seen, and it loads)."""
    site = torch_cu13(machine, tmp_path)
    other = tmp_path / "cuda-13.0" / "lib64"
    other.mkdir(parents=True)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2), other / "libcublasLt.so.13")
    machine.add_library_path(other)
    report = machine.check_json()
    torch = libraries_of(report, "torch")["libcublasLt.so.13"]
    assert torch["how"] == "mapped" and torch["path"] == str(site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13")
    assert torch["version"] == "13.1.0" and torch["pinned"] == "nvidia-cublas==13.1.0.3", torch
    [load] = [load for load in report["process"]["loads"] if load["user"] == "torch"]  # its cuDNN too, through the
    assert load["steps"][0]["step"] == "recipe" and load["steps"][0]["ok"], load["steps"]  # same code, torch unrun
    assert load["library_recipe"].endswith("_load_global_deps: ok") and load["version"] == "9.19.0", load
    by_name = libraries_of(report, "ld.so")["libcublasLt.so.13"]
    assert by_name["path"] == str(other / "libcublasLt.so.13") and by_name["version"] == "13.0.2", by_name
    assert not about(report, "libcublasLt"), report["findings"]
    assert report["summary"]["exit_code"] == 0


@pytest.mark.integration
def test_another_release_preloaded_is_what_torch_gets_a_warning(machine: Machine, tmp_path: Path) -> None:
    """The same 13.0 copy in LD_PRELOAD: every program's scope has it first, and torch's libraries get it for
    libcublasLt.so.13 (seen mapped); that its work fails is inferred from the pin: a warning that says --deep."""
    torch_cu13(machine, tmp_path)
    other = tmp_path / "preload"
    other.mkdir()
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2), other / "libcublasLt.so.13")
    machine.env["LD_PRELOAD"] = str(other / "libcublasLt.so.13")
    report = machine.check_json()
    torch = libraries_of(report, "torch")["libcublasLt.so.13"]
    assert torch["path"] == str(other / "libcublasLt.so.13") and torch["version"] == "13.0.2", torch
    [warned] = about(report, "libcublasLt")
    assert warned["severity"] == "warning" and warned["evidence"] == "read", warned
    assert "nvidia-cublas==13.1.0.3" in warned["detail"] and "--deep" in warned["detail"], warned
    assert warned["subject"] == str(other / "libcublasLt.so.13")
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_an_empty_file_torch_takes_by_name_is_an_error_seen(machine: Machine, tmp_path: Path) -> None:
    """torch's wheels without cuSPARSELt: its own preloading stops there (ValueError, which torch swallows), so it
    gets libnccl.so.2 by name, through LD_LIBRARY_PATH first, where an empty file stands: the loader refuses it in
    torch's own loading child (seen), an error; with every wheel there torch maps its own NCCL and is not hit."""
    torch_cu13(machine, tmp_path, without=("libcusparseLt.so.0",))
    empty = tmp_path / "sync"
    empty.mkdir()
    (empty / "libnccl.so.2").write_bytes(b"")
    machine.add_library_path(empty)
    report = machine.check_json()
    nccl = libraries_of(report, "torch")["libnccl.so.2"]
    assert nccl["how"] == "LD_LIBRARY_PATH" and nccl["path"] == str(empty / "libnccl.so.2"), nccl
    [load] = [load for load in report["process"]["loads"] if load["user"] == "torch"]  # where its own code stopped
    assert "_preload_cuda_lib raised ValueError: libcusparseLt" in load["library_recipe"], load["library_recipe"]
    assert "too short" in nccl["said"] or "ELF" in nccl["said"], nccl
    [error] = [f for f in about(report, "libnccl") if f["severity"] == "error"]
    assert error["evidence"] == "seen" and "PyTorch" in error["proof"] and "libnccl.so.2" in error["proof"], error
    lines = machine.run("fix", "--json")
    assert str(empty) in lines.stdout, lines.stdout[-2000:]


@pytest.mark.integration
def test_the_same_empty_file_beside_torchs_whole_wheels_is_no_error(machine: Machine, tmp_path: Path) -> None:
    torch_cu13(machine, tmp_path)
    empty = tmp_path / "sync"
    empty.mkdir()
    (empty / "libnccl.so.2").write_bytes(b"")
    machine.add_library_path(empty)
    report = machine.check_json()
    nccl = libraries_of(report, "torch")["libnccl.so.2"]
    assert nccl["how"] == "mapped" and nccl["said"] == "ok" and "nvidia/nccl/lib" in nccl["path"], nccl
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]
    assert "CD180" not in codes(report)  # the NCCL torch gets is its own, seen: not the one a model of the path names


@pytest.mark.integration
def test_a_preloaded_copy_without_a_function_torch_calls(machine: Machine, tmp_path: Path) -> None:
    """A cuBLASLt without cublasLtMatmul in LD_PRELOAD: torch gets it (seen), and the child asked it for the
    function (dlsym): a warning that names the function."""
    torch_cu13(machine, tmp_path)
    cut = tmp_path / "cut"
    cut.mkdir()
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0, without_second=True),
                    cut / "libcublasLt.so.13")
    machine.env["LD_PRELOAD"] = str(cut / "libcublasLt.so.13")
    report = machine.check_json()
    assert libraries_of(report, "torch")["libcublasLt.so.13"]["missing"] == ["cublasLtMatmul"]
    [warned] = about(report, "libcublasLt")
    assert warned["severity"] == "warning" and "cublasLtMatmul" in warned["detail"], warned


@pytest.mark.integration
def test_the_toolkits_link_stub_preloaded_is_named_a_stub(machine: Machine, tmp_path: Path) -> None:
    """The toolkit's stubs/libcublas.so, preloaded under its soname: torch gets the stub (seen mapped), whose
    functions do no work: a warning, read."""
    torch_cu13(machine, tmp_path)
    stubs = tmp_path / "cuda" / "lib64" / "stubs"
    stubs.mkdir(parents=True)
    lt = tmp_path / "site-lt"
    shutil.copyfile(fake_cuda_math("libcublas.so.13", "cublas", 13, 1, 0), stubs / "libcublas.so")
    lt.mkdir()
    (lt / "libcublas.so.13").symlink_to(stubs / "libcublas.so")
    machine.env["LD_PRELOAD"] = str(lt / "libcublas.so.13")
    report = machine.check_json()
    seen = libraries_of(report, "torch")["libcublas.so.13"]
    assert seen["stub"] == str(stubs / "libcublas.so"), seen
    [warned] = [f for f in about(report, "libcublas.so.13") if "stub" in f["detail"]]
    assert warned["severity"] == "warning", warned


@pytest.mark.integration
def test_a_cublaslt_link_stub_preloaded_is_an_error_proven_on_a_gpu(machine: Machine, tmp_path: Path) -> None:
    """The toolkit's stubs/libcublasLt.so preloaded under its soname: torch gets it (seen mapped), and a cuBLASLt stub
    in torch's process was proven on an H100 to fail its first work (compat/process_env.toml's stub_proven): an
    error, evidence rule, the proof named. A stub of a library not proven so (cuBLAS above) stays a warning."""
    torch_cu13(machine, tmp_path)
    stubs = tmp_path / "cuda" / "lib64" / "stubs"
    stubs.mkdir(parents=True)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0), stubs / "libcublasLt.so")
    lt = tmp_path / "site-lt"
    lt.mkdir()
    (lt / "libcublasLt.so.13").symlink_to(stubs / "libcublasLt.so")
    machine.env["LD_PRELOAD"] = str(lt / "libcublasLt.so.13")
    report = machine.check_json()
    assert libraries_of(report, "torch")["libcublasLt.so.13"]["stub"] == str(stubs / "libcublasLt.so")
    [said] = [f for f in about(report, "libcublasLt.so.13") if "stub" in f["detail"]]
    assert said["severity"] == "error" and said["evidence"] == "rule", said
    assert "proven against" in said["proof"] and "H100" in said["proof"], said["proof"]
    assert report["summary"]["exit_code"] == 1, report["summary"]


# JAX's CUDA plugin, its preloading (jax-ml/jax jax_plugins/cuda/__init__.py: the same names and logic; our text)
JAX_PLUGIN = '''
import ctypes
import importlib
import pathlib


def _load(module, libraries):
  try:
    m = importlib.import_module(f"nvidia.{module}")
  except ImportError:
    m = None
  for lib in libraries:
    if m is not None:
      path = pathlib.Path(m.__path__[0]) / "lib" / lib
      try:
        ctypes.cdll.LoadLibrary(path)
        continue
      except OSError:
        pass


def _load_nvidia_libraries():
  _load("cu13", ["libcudart.so.13"])
  _load("cu13", ["libcublas.so.13", "libcublasLt.so.13"])
  _load("nccl", ["libnccl.so.2"])
  _load("cu13", ["libcusparse.so.12"])
  _load("cudnn", ["libcudnn.so.9"])
'''


def jax_cu13(machine: Machine, tmp_path: Path) -> Path:
    """JAX's CUDA 13 plugin whose __init__.py preloads its wheels as the real one does, the wheels beside it."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    info = site / "jax_cuda13_plugin-0.11.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda13-plugin\nVersion: 0.11.2\n"
                                   "Requires-Dist: nvidia-cudnn-cu13<10.0,>=9.8\n"
                                   "Requires-Dist: nvidia-nvjitlink>=13.0; extra == \"with-cuda\"\n")
    (site / "jax_plugins" / "xla_cuda13").mkdir(parents=True)
    (site / "jax_plugins" / "xla_cuda13" / "__init__.py").write_text(JAX_PLUGIN)
    cu13_wheels(site)
    (site / "nvidia" / "cu13" / "__init__.py").write_text("")
    (site / "nvidia" / "nccl" / "__init__.py").write_text("")
    real_python_sees(site, tmp_path)
    return site


@pytest.mark.integration
def test_another_release_first_is_what_jaxs_cublas_takes(machine: Machine, tmp_path: Path) -> None:
    """cuBLASLt 13.0 first on LD_LIBRARY_PATH: JAX's plugin loads its wheel's cuBLAS by full path before its
    cuBLASLt (jax_plugins/cuda/__init__.py: _load('cu13', ['libcublas.so.13', 'libcublasLt.so.13'])), and cuBLAS
    needs cuBLASLt by soname, which the loader takes from LD_LIBRARY_PATH first; the wheel's cuBLASLt loaded by path
    after is a second copy that nothing asks for. Seen in JAX's own loading child (torch preloads cuBLASLt first for
    this very reason): a warning, as the copy loads and JAX's metadata asks only a floor, naming its own wheel's
    release."""
    site = jax_cu13(machine, tmp_path)
    other = tmp_path / "cuda-13.0" / "lib64"
    other.mkdir(parents=True)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2), other / "libcublasLt.so.13")
    machine.add_library_path(other)
    report = machine.check_json()
    seen = libraries_of(report, "jax")["libcublasLt.so.13"]
    assert seen["how"] == "mapped" and seen["path"] == str(other / "libcublasLt.so.13"), seen
    assert seen["own"] == str(site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13"), seen
    [warned] = about(report, "libcublasLt")
    assert warned["severity"] == "warning" and "13.1.0.3" in warned["detail"] and "JAX" in warned["detail"], warned
    assert not [f for f in report["findings"] if f["code"] == "CD203" and f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_a_cublaslt_link_stub_first_on_the_path_is_what_jax_maps_and_an_error(machine: Machine,
                                                                              tmp_path: Path) -> None:
    """The toolkit's stubs/libcublasLt.so as libcublasLt.so.13 first on LD_LIBRARY_PATH: JAX's plugin loads its
    wheel's cuBLAS first, which takes cuBLASLt by soname from the path: the stub, seen mapped in JAX's loading child.
    On an H100 JAX's own version check then refused it and fell back to the CPU (stub_proven): an error with rule
    evidence; the plan takes the folder out of LD_LIBRARY_PATH and the finding is gone after."""
    jax_cu13(machine, tmp_path)
    stubs = tmp_path / "cuda" / "lib64" / "stubs"
    stubs.mkdir(parents=True)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0), stubs / "libcublasLt.so")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "libcublasLt.so.13").symlink_to(stubs / "libcublasLt.so")
    machine.add_library_path(linked)
    report = machine.check_json()
    seen = libraries_of(report, "jax")["libcublasLt.so.13"]
    assert seen["stub"] == str(stubs / "libcublasLt.so"), seen
    errors = [f for f in about(report, "libcublasLt") if f["severity"] == "error"]
    assert errors and all(f["evidence"] == "rule" and "proven against" in f["proof"] for f in errors), errors
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(linked) not in line for line in lines), lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["code"] == "CD203" and
                f["severity"] == "error"]


@pytest.mark.integration
def test_a_copy_lacking_a_function_xla_looks_up_by_name_is_said_for_jax(machine: Machine, tmp_path: Path) -> None:
    """cuBLASLt without one function first on LD_LIBRARY_PATH: JAX's wheel's cuBLAS takes it by soname, and XLA
    binds nothing of it at load (its plugin's undefined symbols name none): it looks each function up with dlsym on
    that copy's handle when first called, from the names its stub table holds as strings (xla/tsl/cuda/
    cublasLt_stub.cc). Those names, read from the plugin library's .rodata, are asked of the copy JAX got: the one it
    lacks is named, a warning (the work that calls it fails, as JAX did on an H100: 'Could not load symbol ...').
    Of JAX's own wheel's copy nothing is asked (the plugin is not read for it)."""
    from tests.fakes.build import compile_library

    site = jax_cu13(machine, tmp_path)
    names = ["cublasLtCreate", "cublasLtMatmul", "cublasLtMatmulDescDestroy"]
    plugin = compile_library("fake_xla_stub_table.c", "xla_cuda_plugin.so",
                             {"NAMES": ",".join(f'"{name}"' for name in names)})
    shutil.copy(plugin, site / "jax_plugins" / "xla_cuda13" / "xla_cuda_plugin.so")
    report = machine.check_json()
    assert not about(report, "libcublasLt"), report["findings"]  # its own copy: nothing read, nothing said
    other = tmp_path / "cuda-13.1" / "lib64"
    other.mkdir(parents=True)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0), other / "libcublasLt.so.13")
    machine.add_library_path(other)
    report = machine.check_json()
    seen = libraries_of(report, "jax")["libcublasLt.so.13"]
    assert seen["path"] == str(other / "libcublasLt.so.13") and seen["unbound"] == ["cublasLtMatmulDescDestroy"], seen
    [said] = [f for f in about(report, "libcublasLt") if "cublasLtMatmulDescDestroy" in f["detail"]]
    assert said["severity"] == "warning" and said["evidence"] == "seen", said
    assert "Could not load symbol cublasLtMatmulDescDestroy" in said["detail"], said["detail"]


@pytest.mark.integration
def test_a_foreign_file_where_cusparses_nvjitlink_is_stops_jax(machine: Machine, tmp_path: Path) -> None:
    """An unrelated library saved as libnvJitLink.so.13 first on LD_LIBRARY_PATH: JAX's own code loads its wheel's
    cuSPARSE, which needs nvJitLink by soname; the loader takes the foreign file and refuses cuSPARSE (undefined
    symbol), which JAX swallows; opened again as XLA opens it, the refusal is seen: an error for JAX, which asks
    cuSPARSE at start."""
    jax_cu13(machine, tmp_path)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    shutil.copyfile(fake_cuda_math("libz.so.1"), foreign / "libnvJitLink.so.13")
    machine.add_library_path(foreign)
    report = machine.check_json()
    seen = libraries_of(report, "jax")
    assert seen["libcublasLt.so.13"]["how"] == "mapped", seen  # its own code mapped the wheel's
    cusparse = seen["libcusparse.so.12"]
    assert cusparse["said"] != "ok" and "nvJitLinkCreate" in cusparse["said"], cusparse
    errors = [f for f in report["findings"] if f["severity"] == "error" and f["code"] == "CD203"]
    assert errors and all(f["evidence"] == "seen" for f in errors), report["findings"]
    assert any("JAX" in f["proof"] and "libcusparse.so.12" in f["proof"] for f in errors), errors


@pytest.mark.integration
def test_the_real_nccl_answers_its_release_and_a_cut_copy_first_is_refused(machine: Machine, tmp_path: Path) -> None:
    """The real NCCL (nvidia-nccl-cu13 2.32.3) as torch's wheel: torch's own code maps it, and it answers its release
    itself (ncclGetVersion: 2.32.3). Then torch's wheels without cuSPARSELt (its preloading stops before NCCL) and
    the first 8 MiB of the real file as libnccl.so.2 first on LD_LIBRARY_PATH (a copy that stopped): the loader
    refuses it, or the copy that opens it dies, in torch's own loading child: an error, seen."""
    site = torch_cu13(machine, tmp_path)
    shutil.copyfile(real_nccl(), site / "nvidia" / "nccl" / "lib" / "libnccl.so.2")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "libcublasLt.so.13").symlink_to(site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13")
    machine.add_library_path(tmp_path / "empty")  # a CUDA library on the path: the loading children run
    report = machine.check_json()
    nccl = libraries_of(report, "torch")["libnccl.so.2"]
    assert nccl["how"] == "mapped" and nccl["version"] == "2.32.3", nccl
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]

    (site / "nvidia" / "cu13" / "lib" / "libcusparseLt.so.0").unlink()
    cut = tmp_path / "cut"
    cut.mkdir()
    with open(real_nccl(), "rb") as whole:
        (cut / "libnccl.so.2").write_bytes(whole.read(8 << 20))
    machine.add_library_path(cut)
    report = machine.check_json()
    nccl = libraries_of(report, "torch")["libnccl.so.2"]
    assert nccl["said"] != "ok" and nccl["path"] == str(cut / "libnccl.so.2"), nccl
    [error] = [f for f in about(report, "libnccl") if f["severity"] == "error"]
    assert error["evidence"] == "seen" and "PyTorch" in error["proof"], error


@pytest.mark.integration
def test_a_copy_for_another_cuda_major_is_silent(machine: Machine, tmp_path: Path) -> None:
    """CUDA 12's libcublasLt.so.12 first on LD_LIBRARY_PATH beside a torch built for CUDA 13: nothing of torch asks
    for that soname (its child asks the .so.13 it needs, and maps its own); a program that opens .so.12 by name gets
    a whole library. Nothing is said."""
    torch_cu13(machine, tmp_path)
    other = tmp_path / "cuda-12.8" / "lib64"
    other.mkdir(parents=True)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.12", "cublasLt", 12, 8, 4), other / "libcublasLt.so.12")
    machine.add_library_path(other)
    report = machine.check_json()
    torch = libraries_of(report, "torch")
    assert "libcublasLt.so.12" not in torch and torch["libcublasLt.so.13"]["how"] == "mapped", torch
    assert libraries_of(report, "ld.so")["libcublasLt.so.12"]["version"] == "12.8.4"
    assert not about(report, "libcublasLt"), report["findings"]


@pytest.mark.integration
def test_a_fifo_under_a_soname_is_never_opened(machine: Machine, tmp_path: Path) -> None:
    """A FIFO named libnvJitLink.so.13 first on LD_LIBRARY_PATH: the loader would open it and wait for a writer for
    ever. torch maps its own copy (asked of the loader by soname: the FIFO is never reached); the program that opens
    it by name is told it would wait, and check ends at once."""
    import os
    import time

    torch_cu13(machine, tmp_path)
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "libnvJitLink.so.13")
    machine.add_library_path(fifo)
    started = time.monotonic()
    report = machine.check_json()
    assert time.monotonic() - started < 30
    assert libraries_of(report, "torch")["libnvJitLink.so.13"]["how"] == "mapped"
    by_name = libraries_of(report, "ld.so")["libnvJitLink.so.13"]
    assert "waits" in by_name["said"] and by_name["path"] == str(fifo / "libnvJitLink.so.13"), by_name
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_torchs_own_wheels_whole_with_a_cuda_library_on_the_path_say_nothing(machine: Machine, tmp_path: Path) -> None:
    """The wheels' own copies, each linked again into a folder first on LD_LIBRARY_PATH (what a user's
    `export LD_LIBRARY_PATH=.../nvidia/cu13/lib` does): the children run, torch maps its own, every function and
    release as its metadata asks: no CD203 at all."""
    site = torch_cu13(machine, tmp_path)
    machine.add_library_path(site / "nvidia" / "cu13" / "lib")
    report = machine.check_json()
    seen = libraries_of(report, "torch")
    assert seen and all(library["said"] == "ok" or library["path"] is None for library in seen.values()), seen
    assert "CD203" not in codes(report), [f for f in report["findings"] if f["code"] == "CD203"]


@pytest.mark.integration
def test_a_library_torchs_own_libraries_need_refused_is_an_error_by_their_needs(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """torch without its NVRTC wheel (its preloading stops there), its libtorch_cuda.so needing libnvrtc.so.13
    (DT_NEEDED, read from its headers), and an empty libnvrtc.so.13 first on LD_LIBRARY_PATH: the loader refuses the
    copy torch's libraries get (seen), and their own headers say they need it: an error, though NVRTC is not among
    what the data says torch needs at start."""
    site = torch_cu13(machine, tmp_path, without=("libnvrtc.so.13",))
    shutil.copyfile(compile_library("fake_cuda_math.c", "libtorch_cuda.so", {},
                                    link=(fake_cuda_math("libnvrtc.so.13", "nvrtc", 13, 0),),
                                    runpath="$ORIGIN/../../nvidia/cu13/lib"), site / "torch" / "lib" / "libtorch_cuda.so")
    empty = tmp_path / "sync"
    empty.mkdir()
    (empty / "libnvrtc.so.13").write_bytes(b"")
    machine.add_library_path(empty)
    report = machine.check_json()
    [load] = [load for load in report["process"]["loads"] if load["user"] == "torch"]
    assert "libnvrtc.so.13" in load["needed"], load["needed"]
    [error] = [f for f in about(report, "libnvrtc") if f["severity"] == "error"]
    assert error["evidence"] == "seen" and "DT_NEEDED" in error["detail"], error
