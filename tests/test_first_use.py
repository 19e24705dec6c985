"""What fails only at a framework's first compilation or first library use, after its import succeeded (issue 45,
p17): XLA's ptxas, nvlink and libdevice found in XLA's own order (the real nvidia-cuda-nvcc-cu12 12.6.85 wheel's
ptxas asked `--version` as XLA asks it; gcc-free fakes are sh scripts that answer as ptxas does), and NVRTC's
builtins as the loader gives them to the real nvidia-cuda-nvrtc-cu12 12.6.85 library, which compiles a kernel on
the CPU. A working setup says nothing; each broken one is a warning that names its cause and `--deep`."""

from __future__ import annotations

import ctypes
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.real_wheels import NVCC_CU12, NVRTC_CU12, real_cuda_wheel
from tests.test_frameworks import install_torch, python_env
from tests.test_process_env import bash, check_after, gpu_machine, plan_lines

pytestmark = pytest.mark.integration


def jax_cu12(machine: Machine, tmp_path: Path, nvcc: bool = True) -> Path:
    """JAX's CUDA 12 plugin (its metadata names the nvcc wheel in its with-cuda extra), the real nvcc wheel's
    nvidia/cuda_nvcc beside it where NVCC."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    info = site / "jax_cuda12_plugin-0.6.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda12-plugin\nVersion: 0.6.2\n"
                                   "Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.8; extra == \"with-cuda\"\n"
                                   "Requires-Dist: nvidia-cuda-nvcc-cu12>=12.6.85; extra == \"with-cuda\"\n")
    (site / "jax_plugins" / "xla_cuda12").mkdir(parents=True)
    if nvcc:
        (site / "nvidia").mkdir(exist_ok=True)
        (site / "nvidia" / "cuda_nvcc").symlink_to(real_cuda_wheel(NVCC_CU12) / "nvidia" / "cuda_nvcc")
    return site


def script_ptxas(folder: Path, version: str, interpreter: str = "/bin/sh", mode: int = 0o755) -> Path:
    """A ptxas that answers `--version` as NVIDIA's does, of VERSION (12.6.85)."""
    folder.mkdir(parents=True, exist_ok=True)
    major_minor = ".".join(version.split(".")[:2])
    script = folder / "ptxas"
    script.write_text(f"#!{interpreter}\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\n"
                      f"echo 'Cuda compilation tools, release {major_minor}, V{version}'\n")
    script.chmod(mode)
    return script


def xla_of(report: dict) -> dict:
    assert report["first_use"] and report["first_use"]["xla"], report.get("first_use")
    return report["first_use"]["xla"]


def of_kind(report: dict, kind: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] in ("CD206", "CD208", "CD203") and
            (f.get("values") or {}).get("kind") == kind]


def errors(report: dict) -> list[tuple[str, str]]:
    """The errors said, less CD301: these pretend machines hold no cuDNN, which is beside the point."""
    return [(f["code"], f["detail"][:300]) for f in report["findings"] if f["severity"] == "error" and
            f["code"] != "CD301"]


def first_use_findings(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["code"] in ("CD206", "CD208") or
            (f["code"] == "CD203" and "builtins" in f["detail"])]


# --- XLA's ptxas ---------------------------------------------------------------------------------------------------

def test_the_wheels_ptxas_and_libdevice_are_what_xla_takes_and_nothing_is_said(machine: Machine,
                                                                               tmp_path: Path) -> None:
    site = jax_cu12(machine, tmp_path)
    report = machine.check_json()
    xla = xla_of(report)
    assert xla["data_dir_from"] == "nvidia.cuda_nvcc" and xla["data_dir"] == str(site / "nvidia" / "cuda_nvcc")
    assert xla["ptxas_used"] == str(site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas"), xla
    assert xla["ptxas_version"] == "12.6.85" and xla["ptxas"][0]["verdict"] == "used", xla
    assert xla["libdevice"] == str(site / "nvidia" / "cuda_nvcc" / "nvvm" / "libdevice" / "libdevice.10.bc")
    assert not first_use_findings(report), report["findings"]
    assert not errors(report), errors(report)


def test_an_old_ptxas_first_on_path_beside_the_wheel_is_not_what_xla_takes(machine: Machine, tmp_path: Path) -> None:
    """XLA looks in JAX's CUDA data folder (the nvcc wheel) before PATH: a CUDA 11.8 ptxas first on PATH is never
    run by it, so no error is said of it (the PATH-only model called this a failure of every JAX program)."""
    site = jax_cu12(machine, tmp_path)
    old = script_ptxas(tmp_path / "cuda-11.8" / "bin", "11.8.89")
    machine.env["PATH"] = f"{old.parent}:{machine.env['PATH']}"
    report = machine.check_json()
    xla = xla_of(report)
    assert xla["ptxas_used"] == str(site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas") and not xla["path_ptxas_used"]
    assert report["process"]["ptxas"] == str(old)  # the first on PATH, still asked
    assert not [f for f in report["findings"] if f["code"] == "CD206"], report["findings"]
    assert not errors(report), errors(report)


def test_no_ptxas_xla_takes_is_a_warning_that_names_each_one_passed_over(machine: Machine, tmp_path: Path) -> None:
    """No nvcc wheel; on PATH: a ptxas that is not executable, a script whose interpreter is missing, the release
    XLA excludes (12.3.103) and one older than its minimum (11.7): XLA passes over each, as its FindCudaExecutable
    does, and its first compilation fails. A warning (read), the wheel JAX's metadata names as the fix; a fifth, good
    ptxas later on PATH is the one XLA takes, and nothing is said."""
    jax_cu12(machine, tmp_path, nvcc=False)
    folders = [script_ptxas(tmp_path / "a", "12.6.85", mode=0o644).parent,
               script_ptxas(tmp_path / "b", "12.6.85", interpreter="/nowhere/sh").parent,
               script_ptxas(tmp_path / "c", "12.3.103").parent, script_ptxas(tmp_path / "d", "11.7.64").parent]
    machine.env["PATH"] = ":".join([*map(str, folders), machine.env["PATH"]])
    report = machine.check_json()
    xla = xla_of(report)
    assert xla["ptxas_used"] is None and [c["verdict"] for c in xla["ptxas"]] == [
        "not executable", "did not run", "excluded", "too old"], xla["ptxas"]
    [said] = of_kind(report, "ptxas")
    assert said["code"] == "CD208" and said["severity"] == "warning" and said["evidence"] == "read", said
    for words in ("not executable", "excluded", "too old", "did not run", "No PTX compilation provider", "--deep"):
        assert words in said["detail"], (words, said["detail"])
    assert not errors(report), errors(report)
    plan = json.loads(machine.run("fix", "--json").stdout)
    [step] = [a for a in plan["actions"] if "CD208" in a["resolves"]]
    # pip through JAX's own Python where it has one (this pretend one is no program): the wheel its metadata names
    assert "nvidia-cuda-nvcc-cu12>=12.6.85" in (step.get("argv") or [step["text"]])[-1], step
    assert step["verified"].startswith("not verified here"), step
    good = tmp_path / "e"
    good.mkdir()
    (good / "ptxas").symlink_to(real_cuda_wheel(NVCC_CU12) / "nvidia" / "cuda_nvcc" / "bin" / "ptxas")
    machine.env["PATH"] = f"{machine.env['PATH']}:{good}"
    report = machine.check_json()
    assert xla_of(report)["ptxas_used"] == str(good / "ptxas") and xla_of(report)["ptxas_version"] == "12.6.85"
    assert not of_kind(report, "ptxas"), report["findings"]


def test_a_ptxas_of_another_machine_is_passed_over(machine: Machine, tmp_path: Path) -> None:
    """An aarch64 ptxas (a home shared with ARM nodes) first on PATH: not a program this machine runs."""
    jax_cu12(machine, tmp_path, nvcc=False)
    folder = tmp_path / "arm" / "bin"
    folder.mkdir(parents=True)
    header = bytearray(64)
    header[:4], header[4], header[5], header[18] = b"\x7fELF", 2, 1, 183  # 64-bit, little-endian, aarch64
    (folder / "ptxas").write_bytes(bytes(header))
    (folder / "ptxas").chmod(0o755)
    machine.env["PATH"] = f"{folder}:{machine.env['PATH']}"
    report = machine.check_json()
    [candidate] = xla_of(report)["ptxas"]
    assert candidate["verdict"] == "did not run" and "aarch64" in candidate["said"], candidate
    assert of_kind(report, "ptxas")[0]["severity"] == "warning"


def test_a_ptxas_the_driver_may_stand_in_for_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    jax_cu12(machine, tmp_path, nvcc=False)
    machine.env["XLA_FLAGS"] = "--xla_gpu_unsafe_fallback_to_driver_on_ptxas_not_found"
    report = machine.check_json()
    assert xla_of(report)["driver_fallback"] and not of_kind(report, "ptxas"), report["findings"]
    assert of_kind(report, "libdevice"), report["findings"]  # the driver compiles PTX; libdevice is still linked


def test_xla_flags_data_dir_without_ptxas_is_named_and_outranked_by_the_wheel(machine: Machine,
                                                                              tmp_path: Path) -> None:
    """--xla_gpu_cuda_data_dir in XLA_FLAGS naming a folder without bin/ptxas or nvvm/libdevice: XLA's first place,
    so the warning names it; with the nvcc wheel installed JAX sets its own folder for every compilation, which
    outranks the flag, and nothing is said."""
    jax_cu12(machine, tmp_path, nvcc=False)
    empty = tmp_path / "cuda-empty"
    empty.mkdir()
    machine.env["XLA_FLAGS"] = f"--xla_gpu_cuda_data_dir={empty}"
    report = machine.check_json()
    xla = xla_of(report)
    assert xla["data_dir_from"] == "XLA_FLAGS" and xla["data_dir"] == str(empty), xla
    [said] = of_kind(report, "ptxas")
    assert str(empty) in said["detail"] and "XLA_FLAGS" in said["detail"], said["detail"]
    assert of_kind(report, "libdevice"), report["findings"]
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "nvidia").mkdir(exist_ok=True)
    (site / "nvidia" / "cuda_nvcc").symlink_to(real_cuda_wheel(NVCC_CU12) / "nvidia" / "cuda_nvcc")
    report = machine.check_json()
    xla = xla_of(report)
    assert xla["data_dir_from"] == "nvidia.cuda_nvcc" and xla["flag_data_dir"] == str(empty), xla
    assert not first_use_findings(report), report["findings"]


def test_cuda_root_naming_a_partial_toolkit_is_unset_by_the_plan(machine: Machine, tmp_path: Path) -> None:
    """CUDA_ROOT outranks the wheel in JAX's own search: a partial toolkit there (nvvm/libdevice without its file)
    is the first root XLA takes libdevice from: the warning, and the plan's line unsets it, after which JAX's data
    folder is the wheel's (checked again). A CUDA_ROOT without ptxas alone is no finding: XLA then finds the wheel's
    ptxas among its own CUDA roots (../../nvidia/cuda_nvcc beside its library)."""
    jax_cu12(machine, tmp_path)
    partial = tmp_path / "cuda-partial"
    (partial / "nvvm" / "libdevice").mkdir(parents=True)
    machine.env["CUDA_ROOT"] = str(partial)
    report = machine.check_json()
    assert xla_of(report)["data_dir_from"] == "CUDA_ROOT" and xla_of(report)["ptxas"][-1]["how"] == "CUDA root"
    assert not of_kind(report, "ptxas") and of_kind(report, "libdevice"), report["findings"]
    lines = plan_lines(machine)
    assert "unset CUDA_ROOT" in lines, lines
    assert not first_use_findings(check_after(machine, lines))


# --- libdevice and nvlink ------------------------------------------------------------------------------------------

def test_a_libdevice_folder_without_its_file_is_the_one_xla_takes(machine: Machine, tmp_path: Path) -> None:
    """The data folder's nvvm/libdevice exists but holds no libdevice.10.bc (a sync that stopped): XLA takes the first
    root holding that folder, so the plugin's own copy later in its roots is not used: a warning. With the empty
    folder gone, XLA reaches the plugin's copy (jax_plugins/xla_cuda12/cuda/nvvm/libdevice) and nothing is said."""
    site = jax_cu12(machine, tmp_path, nvcc=False)
    real = real_cuda_wheel(NVCC_CU12) / "nvidia" / "cuda_nvcc"
    mine = site / "nvidia" / "cuda_nvcc"
    (mine / "bin").mkdir(parents=True)
    (mine / "__init__.py").write_text("")
    (mine / "bin" / "ptxas").symlink_to(real / "bin" / "ptxas")
    (mine / "nvvm" / "libdevice").mkdir(parents=True)
    own = site / "jax_plugins" / "xla_cuda12" / "cuda" / "nvvm" / "libdevice"
    own.mkdir(parents=True)
    (own / "libdevice.10.bc").symlink_to(real / "nvvm" / "libdevice" / "libdevice.10.bc")
    report = machine.check_json()
    [said] = of_kind(report, "libdevice")
    # proven on a GPU (compat/first_use.toml's `proven`): JAX failed 'libdevice not found at ...' in this very case
    assert said["code"] == "CD208" and said["severity"] == "error" and said["evidence"] == "rule", said
    assert "proven against JAX" in said["proof"] and "H100" in said["proof"], said["proof"]
    assert str(mine / "nvvm" / "libdevice") in said["detail"] and "libdevice.10.bc" in said["detail"], said["detail"]
    (mine / "nvvm" / "libdevice").rmdir()
    report = machine.check_json()
    assert xla_of(report)["libdevice"] == str(own / "libdevice.10.bc"), xla_of(report)
    assert not first_use_findings(report), report["findings"]


def test_parallel_compilation_without_nvlink_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    """The 12.6 nvcc wheel ships ptxas but no nvlink: XLA_FLAGS asking for parallel compilation then has no
    provider (assemble_compilation_provider.cc); the driver fallback flag is one."""
    jax_cu12(machine, tmp_path)
    machine.env["XLA_FLAGS"] = "--xla_gpu_enable_llvm_module_compilation_parallelism=true"
    report = machine.check_json()
    assert xla_of(report)["parallel"] and xla_of(report)["nvlink"] is None
    [said] = of_kind(report, "nvlink")
    assert said["code"] == "CD208" and said["severity"] == "warning" and "nvlink" in said["detail"], said
    machine.env["XLA_FLAGS"] += " --xla_gpu_unsafe_fallback_to_driver_on_ptxas_not_found"
    assert not first_use_findings(machine.check_json())


def test_parallel_compilation_asks_each_nvlink_its_version_as_xla_does(machine: Machine, tmp_path: Path) -> None:
    """With parallel compilation asked, XLA finds nvlink as it finds ptxas and runs its `--version`, reading the answer
    to its end (nvptx_compiler.cc UseNvlink / GetNvLinkVersion): the doctor asks each nvlink in that order, as it
    asks ptxas. One that answers is the one taken (nothing said); one that prints no version is passed over, as XLA
    passes it (the warning names it); one whose `--version` never ends is where JAX's first parallel compilation
    would wait (a warning naming it), and check itself still ends. Before, nvlink was only looked at (a file that is
    executable), never asked: a hanging one was 'the nvlink XLA would find'. Without the flag none is run."""
    jax_cu12(machine, tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    nvlink = tools / "nvlink"
    marker = tmp_path / "asked"
    machine.env["PATH"] = f"{tools}{os.pathsep}{machine.env.get('PATH', '/usr/bin:/bin')}"
    nvlink.write_text(f"#!/bin/sh\necho x >> {marker}\necho 'nvlink: NVIDIA (R) Cuda linker'\n"
                      "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n")
    nvlink.chmod(0o755)
    report = machine.check_json()
    assert not marker.exists() and xla_of(report)["nvlink_candidates"] == [], xla_of(report)  # not asked: no flag
    machine.env["XLA_FLAGS"] = "--xla_gpu_enable_llvm_module_compilation_parallelism=true"
    report = machine.check_json()
    assert marker.exists() and xla_of(report)["nvlink"] == str(nvlink), xla_of(report)
    assert [c["verdict"] for c in xla_of(report)["nvlink_candidates"]] == ["used"]
    assert not of_kind(report, "nvlink")
    nvlink.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 11.7, V11.7.64'\n")  # below XLA's 11.8.0
    report = machine.check_json()
    assert xla_of(report)["nvlink"] is None and xla_of(report)["nvlink_candidates"][0]["verdict"] == "too old"
    nvlink.write_text("#!/bin/sh\necho 'no version here'\n")
    report = machine.check_json()
    assert xla_of(report)["nvlink"] is None and xla_of(report)["nvlink_candidates"][0]["verdict"] == "no version"
    [said] = of_kind(report, "nvlink")
    assert said["severity"] == "warning" and str(nvlink) in said["proof"], said
    nvlink.write_text("#!/bin/sh\nexec sleep 60\n")
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "1"
    report = machine.check_json()
    assert xla_of(report)["nvlink_candidates"][-1]["verdict"] == "hangs", xla_of(report)
    [said] = of_kind(report, "nvlink")
    assert said["severity"] == "warning" and said["subject"] == str(nvlink) and "hang" in said["detail"], said


def test_a_ptxas_too_old_for_the_gpu_in_the_wheel_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    """The ptxas XLA takes from JAX's data folder knows no PTX ISA of this GPU's target (a CUDA 11.8 one, sm_90a
    needs PTX 8.0): read, a warning (the PATH case, seen on an H100, stays rules/process_env's error)."""
    site = jax_cu12(machine, tmp_path, nvcc=False)
    script_ptxas(site / "nvidia" / "cuda_nvcc" / "bin", "11.8.89")
    (site / "nvidia" / "cuda_nvcc" / "__init__.py").write_text("")
    report = machine.check_json()
    assert xla_of(report)["ptxas_version"] == "11.8.89"
    [said] = [f for f in report["findings"] if f["code"] == "CD206"]
    assert said["severity"] == "warning" and "sm_90a" in said["detail"], said


# --- NVRTC's builtins ----------------------------------------------------------------------------------------------

def _nvrtc_wheel(site: Path, builtins: bool = True) -> Path:
    """The real NVRTC wheel's lib/ in SITE, copied (its RUNPATH is $ORIGIN): its builtins beside it where BUILTINS."""
    real = real_cuda_wheel(NVRTC_CU12) / "nvidia" / "cuda_nvrtc" / "lib"
    lib = site / "nvidia" / "cuda_nvrtc" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(real / "libnvrtc.so.12", lib / "libnvrtc.so.12")
    if builtins:
        shutil.copyfile(real / "libnvrtc-builtins.so.12.6", lib / "libnvrtc-builtins.so.12.6")
    info = site / "nvidia_cuda_nvrtc_cu12-12.6.85.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("nvidia/cuda_nvrtc/lib/libnvrtc.so.12,,\n"
                                 "nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.6,,\n")  # as pip writes it
    return lib


def _compiles(nvrtc: Path, env: dict[str, str]) -> str:
    """What the real NVRTC says compiling a kernel on this CPU (the proof the data's source names)."""
    from cudnn_doctor.child import with_stdio
    from cudnn_doctor.probes.first_use import NVRTC_CHILD

    done = subprocess.run([sys.executable, "-I", "-c", with_stdio(NVRTC_CHILD), str(nvrtc)], capture_output=True, text=True,
                          env=env, timeout=60)
    return done.stdout.strip()


def test_the_real_nvrtc_compiles_beside_its_builtins_and_not_without(tmp_path: Path) -> None:
    """The rule's proof, on the CPU: nvrtcCompileProgram succeeds with libnvrtc-builtins.so.12.6 beside
    libnvrtc.so.12 and answers NVRTC_ERROR_BUILTIN_OPERATION_FAILURE without it, naming the file."""
    whole = _nvrtc_wheel(tmp_path / "whole")
    alone = _nvrtc_wheel(tmp_path / "alone", builtins=False)
    env = {"PATH": "/usr/bin:/bin"}
    assert _compiles(whole / "libnvrtc.so.12", env).startswith("NVRTC_SUCCESS")
    said = _compiles(alone / "libnvrtc.so.12", env)
    assert said.startswith("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE") and "libnvrtc-builtins.so.12.6" in said, said
    assert ctypes  # the child loads it with ctypes, as the frameworks' own code does


def test_jax_with_its_nvrtc_whole_says_nothing_and_without_builtins_a_seen_warning(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    site = jax_cu12(machine, tmp_path)
    lib = _nvrtc_wheel(site)
    report = machine.check_json()
    [seen] = report["first_use"]["nvrtc"]
    assert seen["framework"] == "jax" and seen["found"] == str(lib / "libnvrtc-builtins.so.12.6"), seen
    assert seen["how"] == "RUNPATH" and not seen["problem"], seen
    assert not first_use_findings(report), report["findings"]
    (lib / "libnvrtc-builtins.so.12.6").unlink()
    report = machine.check_json()
    [said] = of_kind(report, "nvrtc-builtins")
    assert said["code"] == "CD203" and said["severity"] == "warning" and said["evidence"] == "seen", said
    assert "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE" in said["detail"] and "--deep" in said["detail"], said["detail"]
    assert not errors(report), errors(report)


def test_a_foreign_builtins_first_on_the_library_path_breaks_jaxs_nvrtc_not_torchs(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    """Another library saved as libnvrtc-builtins.so.12.6 in a folder first on LD_LIBRARY_PATH: JAX's NVRTC opens it
    by name there (before its RUNPATH) and NVRTC calls it corrupted (seen in a child); torch preloads its wheel's
    own builtins by full path, so nothing is said of torch. The plan takes the folder out of LD_LIBRARY_PATH."""
    libz = next(iter(sorted(glob.glob("/usr/lib/*/libz.so.1") + glob.glob("/lib/*/libz.so.1"))), None)
    if libz is None:
        pytest.skip("no libz.so.1 to stand in for another library")
    site = jax_cu12(machine, tmp_path)
    _nvrtc_wheel(site)
    install_torch(site, version="2.6.0+cu126", cuda="12.6", cudnn=90501, pin="nvidia-cudnn-cu12==9.5.1.17")
    other = tmp_path / "sync" / "lib"
    other.mkdir(parents=True)
    shutil.copyfile(libz, other / "libnvrtc-builtins.so.12.6")
    machine.add_library_path(other)
    report = machine.check_json()
    by_framework = {seen["framework"]: seen for seen in report["first_use"]["nvrtc"]}
    assert by_framework["torch"]["how"] == "preloaded" and not by_framework["torch"]["problem"], by_framework
    assert by_framework["jax"]["found"] == str(other / "libnvrtc-builtins.so.12.6"), by_framework["jax"]
    [said] = of_kind(report, "nvrtc-builtins")
    assert "JAX" in said["detail"] and "corrupted" in said["detail"] and said["evidence"] == "seen", said
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(other) not in line for line in lines), lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["code"] == "CD203" and "builtins" in
                f["detail"]]
    assert bash(machine, "true").returncode == 0 and os.path.isdir(other)


# --- a CUDA library older than the framework's metadata asks, its own wheel not installed ----------------------------

def test_an_older_cublas_where_torchs_wheel_is_missing_is_a_warning_by_its_pin(machine: Machine,
                                                                               tmp_path: Path) -> None:
    """torch 2.11+cu130 without its nvidia-cublas wheel (its metadata still asks nvidia-cublas==13.1.0.3): its own
    preloading stops there and its libraries get libcublas.so.13 by name, a CUDA 13.0 toolkit's 13.0.2 first on
    LD_LIBRARY_PATH. It loads (seen in torch's loading child) and its release is older than torch was built
    against: a warning that names the pin and --deep; the same copy of 13.1 says nothing."""
    from tests.fakes.build import fake_cuda_math
    from tests.test_cuda_libraries import libraries_of, torch_cu13

    torch_cu13(machine, tmp_path, without=("libcublasLt.so.13", "libcublas.so.13"))
    toolkit = tmp_path / "cuda-13.0" / "lib64"
    toolkit.mkdir(parents=True)
    lt = fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2)
    shutil.copyfile(lt, toolkit / "libcublasLt.so.13")
    shutil.copyfile(fake_cuda_math("libcublas.so.13", "cublas", 13, 0, 2, link=(lt,)), toolkit / "libcublas.so.13")
    machine.add_library_path(toolkit)
    report = machine.check_json()
    seen = libraries_of(report, "torch")["libcublas.so.13"]
    assert seen["path"] == str(toolkit / "libcublas.so.13") and seen["own"] is None, seen
    assert seen["version"] == "13.0.2" and seen["pinned"] == "nvidia-cublas==13.1.0.3", seen
    # one finding a folder where the findings name it as the entry that brought them (cuBLAS and cuBLASLt both)
    said = [f for f in report["findings"] if f["code"] == "CD203" and "libcublas" in f["detail"]
            and "13.1.0.3" in f["detail"]]
    assert said and all(f["severity"] == "warning" and "--deep" in f["detail"] for f in said), report["findings"]
    assert not errors(report), errors(report)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0), toolkit / "libcublasLt.so.13")
    shutil.copyfile(fake_cuda_math("libcublas.so.13", "cublas", 13, 1, 0, link=(lt,)), toolkit / "libcublas.so.13")
    report = machine.check_json()
    assert not [f for f in report["findings"] if f["code"] == "CD203" and "libcublas" in f["detail"]
                and "13.1.0.3" in f["detail"]], report["findings"]


def test_fifos_where_ptxas_and_nvrtcs_builtins_are_are_never_opened(machine: Machine, tmp_path: Path) -> None:
    """A FIFO named ptxas first on PATH and one named libnvrtc-builtins.so.12.6 first on LD_LIBRARY_PATH: neither is
    opened (XLA's exec of the one would fail, NVRTC's open of the other would wait for a writer for ever); check
    ends, the ptxas is passed over as XLA passes it, and no NVRTC child is started on the FIFO."""
    site = jax_cu12(machine, tmp_path)
    _nvrtc_wheel(site)
    fifos = tmp_path / "fifos"
    fifos.mkdir()
    os.mkfifo(fifos / "ptxas")
    os.mkfifo(fifos / "libnvrtc-builtins.so.12.6")
    machine.env["PATH"] = f"{fifos}:{machine.env['PATH']}"
    machine.add_library_path(fifos)
    report = machine.check_json()
    xla = xla_of(report)
    assert xla["ptxas_used"] == str(site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas"), xla
    [seen] = report["first_use"]["nvrtc"]
    assert seen["found"] == str(fifos / "libnvrtc-builtins.so.12.6") and "not a file" in seen["problem"], seen
    assert seen["said"] == "", seen
    assert not errors(report), errors(report)


def test_jax_running_its_kernel_under_deep_outweighs_what_was_read() -> None:
    """Under --deep JAX compiled and ran a kernel that calls exp (ptxas and libdevice, _deep_child.ask_jax's
    kernel_ran): XLA found both here, whatever the files suggested, so neither warning stands; without that run it
    does. The rule itself, on the report the probes would make."""
    from cudnn_doctor.model import FirstUse, Framework, Gpu, Host, Report, Tool, XlaCompiler
    from cudnn_doctor.rules import evaluate

    xla = XlaCompiler("jax", "/x/cuda_sdk_lib", "XLA's default", places=5, roots=("/x/cuda_sdk_lib",))
    gpu = Gpu(0, "NVIDIA H100 80GB HBM3", None, "9.0", 81559, "580.159.04")

    def made(deep: dict) -> set[str]:
        jax = Framework(name="jax", version="0.6.2", cuda_built_for="12", cudnn_expected=None, cudnn_used=None,
                        found_via="dist-info", location="/x", details={"deep": deep} if deep else {})
        report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "h"), gpus=[gpu],
                        frameworks=[jax], first_use=FirstUse(xla=xla))
        return {str(f.values.get("kind")) for f in evaluate(report) if f.code == "CD208"}

    assert made({}) == {"ptxas", "libdevice"}
    assert made({"conv_ran": True, "kernel_ran": True}) == set()
    assert made({"conv_ran": True}) == {"ptxas", "libdevice"}  # the convolution alone assembles nothing


def test_the_wheels_ptxas_without_the_execute_bit_is_named_with_chmod(machine: Machine, tmp_path: Path) -> None:
    """The nvcc wheel's ptxas that this user may not run (a venv installed by another user: the wheel's ptxas is
    0744): XLA passes over it, finds none elsewhere, and installing the wheel again would change nothing: the plan
    says chmod."""
    site = jax_cu12(machine, tmp_path, nvcc=False)
    mine = site / "nvidia" / "cuda_nvcc" / "bin"
    mine.mkdir(parents=True)
    (mine.parent / "__init__.py").write_text("")
    script_ptxas(mine, "12.6.85", mode=0o644)
    report = machine.check_json()
    assert xla_of(report)["ptxas"][0]["verdict"] == "not executable", xla_of(report)
    plan = json.loads(machine.run("fix", "--json").stdout)
    [step] = [a for a in plan["actions"] if "CD208" in a["resolves"] and "chmod" in (a.get("text") or "")]
    assert f"chmod a+x {mine / 'ptxas'}" in step["text"], step


def test_torch_without_its_wheels_builtins_gets_none_and_nvrtc_says_so(machine: Machine, tmp_path: Path) -> None:
    """torch loads its wheel's builtins first; where the wheel lacks them its preloading stops there and NVRTC looks
    for them by name, finds none, and says so when it compiles (seen): a warning naming PyTorch."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.6.0+cu126", cuda="12.6", cudnn=90501, pin="nvidia-cudnn-cu12==9.5.1.17")
    _nvrtc_wheel(site, builtins=False)
    report = machine.check_json()
    [seen] = report["first_use"]["nvrtc"]
    assert seen["framework"] == "torch" and seen["how"] == "nowhere" and seen["found"] is None, seen
    [said] = of_kind(report, "nvrtc-builtins")
    assert "PyTorch" in said["detail"] and said["evidence"] == "seen", said
    assert not errors(report), errors(report)


def test_a_mismatched_nvrtc_pair_first_on_the_path_breaks_programs_by_name_not_jax(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """A folder first on LD_LIBRARY_PATH holding NVRTC 12.6's libnvrtc.so.12 beside an older release's builtins
    (libnvrtc-builtins.so.12.5, left from before): a program that opens libnvrtc.so.12 by name gets the 12.6 one,
    which asks for libnvrtc-builtins.so.12.6 and finds none (NVRTC says so, compiling here): a warning for such
    programs; JAX loads its own wheel's NVRTC by full path, whole, and is not named. The plan takes the folder out."""
    site = jax_cu12(machine, tmp_path)
    _nvrtc_wheel(site)
    real = real_cuda_wheel(NVRTC_CU12) / "nvidia" / "cuda_nvrtc" / "lib"
    pair = tmp_path / "old-cuda" / "lib64"
    pair.mkdir(parents=True)
    shutil.copyfile(real / "libnvrtc.so.12", pair / "libnvrtc.so.12")
    shutil.copyfile(real / "libnvrtc-builtins.so.12.6", pair / "libnvrtc-builtins.so.12.5")  # another name: 12.5's
    machine.add_library_path(pair)
    report = machine.check_json()
    by_user = {seen["framework"]: seen for seen in report["first_use"]["nvrtc"]}
    assert not by_user["jax"]["problem"], by_user["jax"]
    assert by_user["ld.so"]["nvrtc"] == str(pair / "libnvrtc.so.12") and by_user["ld.so"]["found"] is None, by_user
    [said] = of_kind(report, "nvrtc-builtins")
    assert "by name" in said["detail"] and "JAX" not in said["detail"] and said["evidence"] == "seen", said
    assert "libnvrtc-builtins.so.12.6" in said["detail"], said["detail"]
    assert not errors(report), errors(report)
    assert by_user["ld.so"]["nvrtc_via"] == "LD_LIBRARY_PATH", by_user["ld.so"]
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(pair) not in line for line in lines), lines


def test_one_ptxas_reached_by_two_places_is_asked_once(machine: Machine, tmp_path: Path) -> None:
    """/usr/local/cuda/bin and /usr/local/cuda-13.0/bin (a link and its folder) both on PATH: one file, run once,
    its answer given for both places in XLA's order."""
    jax_cu12(machine, tmp_path, nvcc=False)
    real = tmp_path / "cuda-11.7" / "bin"
    script = script_ptxas(real, "11.7.64")
    count = tmp_path / "runs"
    script.write_text(script.read_text() + f"echo run >> {count}\n")
    (tmp_path / "cuda").symlink_to(tmp_path / "cuda-11.7")
    machine.env["PATH"] = f"{tmp_path / 'cuda' / 'bin'}:{real}:{machine.env['PATH']}"
    report = machine.check_json()
    assert [(c["path"], c["verdict"]) for c in xla_of(report)["ptxas"]] == [
        (str(tmp_path / "cuda" / "bin" / "ptxas"), "too old"), (str(real / "ptxas"), "too old")]
    assert count.read_text().count("run") == 1  # XLA's search asks it; probes/ptxas.py (the first on PATH) takes
    # that answer (r19: it ran the file again)


def test_another_frameworks_failure_of_the_same_class_does_not_make_torchs_nvrtc_warning_an_error() -> None:
    """Under --deep JAX failed with words of CD203's class (a library its loader refused): that explains findings
    about JAX or about no framework in particular, not torch's NVRTC builtins warning, which stays a warning; JAX's
    own would become the error its words prove."""
    from cudnn_doctor.model import FirstUse, Framework, Gpu, Host, NvrtcBuiltins, Report, Tool
    from cudnn_doctor.rules import evaluate

    def nvrtc(user: str) -> NvrtcBuiltins:
        return NvrtcBuiltins(user, f"/{user}/libnvrtc.so.12", "12.6", "libnvrtc-builtins.so.12.6", None, "nowhere",
                             "no libnvrtc-builtins.so.12.6 where the loader looks for it from this NVRTC",
                             "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: nvrtc: error: failed to open "
                             "libnvrtc-builtins.so.12.6.")

    def framework(name: str, deep: dict) -> Framework:
        return Framework(name=name, version="1", cuda_built_for="12.6", cudnn_expected=None, cudnn_used=None,
                         found_via="dist-info", location=f"/{name}", details={"deep": deep})

    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "h"),
                    gpus=[Gpu(0, "NVIDIA H100 80GB HBM3", None, "9.0", 81559, "580.159.04")],
                    frameworks=[framework("torch", {"conv_ran": True}),
                                framework("jax", {"error": "RuntimeError: Unable to load cuSPARSE. Is it installed?"})],
                    first_use=FirstUse(nvrtc=(nvrtc("torch"), nvrtc("jax"))))
    said = {f.values.get("framework"): f for f in evaluate(report, named={"jax": ("CD203",)})
            if f.code == "CD203" and f.values.get("kind") == "nvrtc-builtins"}
    assert said["torch"].severity == "warning", said["torch"]
    assert said["jax"].severity == "error" and said["jax"].evidence == "seen", said["jax"]
