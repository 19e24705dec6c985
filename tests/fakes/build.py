"""Compile the fake vendor libraries with gcc, once per set of values (cached per session)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from cudnn_doctor.versions import decode_cudnn

HERE = Path(__file__).resolve().parent
BUILD_DIR = Path(os.environ.get("CUDNN_DOCTOR_FAKES_DIR", "/tmp/cudnn-doctor-fakes"))


def compile_library(source: str, output_name: str, defines: dict[str, object] | None = None,
                    soname: str | None = None, also: tuple[str, ...] = (), link: tuple[Path, ...] = (),
                    runpath: str | None = None, version_node: str | None = None,
                    link_search: tuple[Path, str] | None = None) -> Path:
    """gcc -shared SOURCE (and the sources ALSO) with DEFINES, linked against the libraries LINK (each then needed by
    its soname) with DT_RUNPATH RUNPATH, its exported symbols under the symbol-version node VERSION_NODE (as NVIDIA's
    libraries define libcudart.so.13: a version script), built once into a cache folder; returns the .so path."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise RuntimeError("gcc is needed to build the test fakes: apt-get install gcc")
    flags = [f"-D{key}={value}" if value is not True else f"-D{key}" for key, value in sorted((defines or {}).items())]
    if soname:
        flags.append(f"-Wl,-soname,{soname}")
    if runpath:
        flags.append(f"-Wl,--enable-new-dtags,-rpath,{runpath}")
    flags += ["-Wl,--no-as-needed", *(str(path) for path in link)] if link else []  # needed, whether called or not
    if link_search:  # (FOLDER, NAME): -LFOLDER -lNAME, as the linker finds a library by its name
        flags[:0] = [f"-L{link_search[0]}", f"-l{link_search[1]}"]
    if version_node:
        flags.append(f"-Wl,--version-script,{_version_script(version_node)}")
    key = hashlib.sha256(" ".join([source, *also, output_name, *flags]).encode()
                         + b"".join((HERE / name).read_bytes() for name in (source, *also))).hexdigest()[:16]
    out_dir = BUILD_DIR / key
    target = out_dir / output_name
    if not target.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        temporary = out_dir / (output_name + f".{os.getpid()}.tmp")
        subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-o", str(temporary), str(HERE / source),
                        *(str(HERE / name) for name in also), *flags], check=True, capture_output=True)
        os.replace(temporary, target)
    return target


def _version_script(node: str) -> Path:
    """A linker version script that puts every global symbol under NODE, written once."""
    script = BUILD_DIR / "version-scripts" / f"{node}.map"
    if not script.exists():
        script.parent.mkdir(parents=True, exist_ok=True)
        temporary = script.with_name(script.name + f".{os.getpid()}.tmp")
        temporary.write_text(f"{node} {{\n  global: *;\n}};\n")
        os.replace(temporary, script)
    return script


def fake_cudnn(folder: Path, version: int = 91900, cudart: int = 12040, major: int | None = None,
               sublibraries: list[str] | None = None, crash: bool = False, hang: bool = False,
               versioned_files: bool = True, daemon: int | None = None, takes: int = 0) -> Path:
    """Put a fake libcudnn.so.MAJOR (and sub-libraries) into FOLDER, laid out as NVIDIA ships it:
    libcudnn.so.9.1.0 real file, libcudnn.so.9 and libcudnn.so symlinks. Returns libcudnn.so.MAJOR. TAKES:
    hostile_constructor.c's HOSTILE_TAKES (what loading it takes from the program)."""
    full = decode_cudnn(version) or "0.0.0"
    if major is None:
        major = int(full.split(".")[0])
    else:
        full = ".".join([str(major), *full.split(".")[1:]])
    defines: dict[str, object] = {"FAKE_VERSION": version, "FAKE_CUDART": cudart}
    if crash:
        defines["FAKE_CRASH"] = True
    if hang:
        defines["FAKE_HANG"] = True
    if daemon is not None:
        defines["FAKE_DAEMON"] = daemon
    folder.mkdir(parents=True, exist_ok=True)
    built = compile_library("fake_cudnn.c", "libcudnn.so", defines, soname=f"libcudnn.so.{major}", **_takes(takes, defines))
    names = ["libcudnn"] + list(sublibraries or [])
    for name in names:
        soname = f"{name}.so.{major}"
        if versioned_files:
            real = folder / f"{name}.so.{full}"
            shutil.copyfile(built, real)
            _link(folder / soname, real.name)
            _link(folder / f"{name}.so", soname)
        else:
            shutil.copyfile(built, folder / soname)
    return folder / f"libcudnn.so.{major}"


def _takes(takes: int, defines: dict[str, object]) -> dict[str, tuple[str, ...]]:
    """hostile_constructor.c built in where TAKES says what its constructor takes from the program (DEFINES gains
    HOSTILE_TAKES): compile_library's `also`."""
    if not takes:
        return {}
    defines["HOSTILE_TAKES"] = takes
    return {"also": ("hostile_constructor.c",)}


def _link(link: Path, target: str) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def fake_cudart(folder: Path, runtime: int = 12040, major: int | None = None) -> Path:
    major = major or runtime // 1000
    folder.mkdir(parents=True, exist_ok=True)
    built = compile_library("fake_cudart.c", "libcudart.so", {"FAKE_RUNTIME": runtime}, soname=f"libcudart.so.{major}")
    target = folder / f"libcudart.so.{major}"
    shutil.copyfile(built, target)
    return target


def fake_libcuda(folder: Path, driver_cuda: int = 12040, devices: int = 0, name: str = "NVIDIA GPU",
                 compute_capability: str = "8.9", status: int = 0, file_name: str = "libcuda.so.1",
                 reversed_order: bool = False, misbehave: int = 0, no_peer: bool = False, takes: int = 0,
                 fixed_reserve: bool = False, opens: int = 0, uuid_exact: bool = False, context_status: int = 0) -> Path:
    """DEVICES > 0: cuInit succeeds for the GPUs CUDA_VISIBLE_DEVICES leaves of that many (the fake NVML's UUIDs);
    0: CUDA_ERROR_NO_DEVICE. STATUS: cuInit fails with it (34 the link stub, 803 another release than the kernel
    module's). FILE_NAME: the real file's name (libcuda.so.535.261.03), with libcuda.so.1 a link to it. NO_PEER:
    cuDeviceCanAccessPeer answers 0 for every pair. TAKES: hostile_constructor.c's HOSTILE_TAKES. FIXED_RESERVE: cuInit
    needs the driver's fixed address range (0x200000000-0xd00000000) and answers CUDA_ERROR_OUT_OF_MEMORY where a
    PROT_NONE mapping of the process holds it (AddressSanitizer's protected shadow gap). OPENS: cuInit opens that many
    descriptors and answers CUDA_ERROR_UNKNOWN where it cannot (the real driver with 8 free). UUID_EXACT: a GPU- entry
    of CUDA_VISIBLE_DEVICES matches a UUID only in its letter case. CONTEXT_STATUS: every first context refused with it
    (2: CUDA_ERROR_OUT_OF_MEMORY, a GPU another process filled)."""
    folder.mkdir(parents=True, exist_ok=True)
    cc_major, cc_minor = compute_capability.split(".")
    defines: dict[str, object] = {"FAKE_DRIVER_CUDA": driver_cuda, "FAKE_CUDA_DEVICES": devices,
                                  "FAKE_CUDA_NAME": f'"{name}"', "FAKE_CC_MAJOR": cc_major, "FAKE_CC_MINOR": cc_minor,
                                  "FAKE_CUDA_STATUS": status, "FAKE_CUDA_REVERSED": int(reversed_order),
                                  "FAKE_CUDA_MISBEHAVE": misbehave}
    if no_peer:
        defines["FAKE_CUDA_NO_PEER"] = True
    if fixed_reserve:
        defines["FAKE_CUDA_FIXED_RESERVE"] = True
    if opens:
        defines["FAKE_CUDA_OPENS"] = opens
    if uuid_exact:
        defines["FAKE_CUDA_UUID_EXACT"] = True
    if context_status:  # cuDevicePrimaryCtxRetain answers it whatever the environment
        defines["FAKE_CONTEXT_STATUS"] = context_status
    built = compile_library("fake_libcuda.c", "libcuda.so.1", defines, soname="libcuda.so.1", **_takes(takes, defines))
    if file_name != "libcuda.so.1":
        shutil.copyfile(built, folder / file_name)
        link = folder / "libcuda.so.1"
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(file_name)
        return link
    target = folder / "libcuda.so.1"
    shutil.copyfile(built, target)
    return target


def fake_nvml(folder: Path, driver: str = "580.159.04", cuda: int = 13000, gpus: int = 1,
              name: str = "NVIDIA H100 80GB HBM3", compute_capability: str = "9.0",
              init_error: int | None = None, health: dict[str, int] | None = None,
              pid_file: Path | None = None, init_sleep_ms: int | None = None, stub: bool = False,
              takes: int = 0, v2_crashes_on_lookup: bool = False) -> Path:
    """HEALTH: fake_nvml.c's FAKE_* health values by name, e.g. {"ECC_VOLATILE": 3, "SICK_GPU": 1};
    PID_FILE: each nvmlInit appends its process's pid there; INIT_SLEEP_MS: nvmlInit takes that long; TAKES:
    hostile_constructor.c's HOSTILE_TAKES."""
    cc_major, cc_minor = compute_capability.split(".")
    defines: dict[str, object] = {
        "FAKE_DRIVER": f'"{driver}"', "FAKE_CUDA": cuda, "FAKE_GPUS": gpus, "FAKE_GPU_NAME": f'"{name}"',
        "FAKE_CC_MAJOR": cc_major, "FAKE_CC_MINOR": cc_minor,
    }
    if init_error is not None:
        defines["FAKE_NVML_INIT_ERROR"] = init_error
    if stub:  # the toolkit's link stub: nvmlInit answers 9, NVIDIA's notice inside
        defines["FAKE_NVML_STUB"] = True
    if pid_file is not None:
        defines["FAKE_NVML_PID_FILE"] = json.dumps(str(pid_file))  # a C string literal: JSON's escapes are C's
    if init_sleep_ms is not None:
        defines["FAKE_NVML_INIT_SLEEP_MS"] = int(init_sleep_ms)
    if v2_crashes_on_lookup:  # nvmlInit_v2's lookup ends the program (the name every C program's nvmlInit is)
        defines["FAKE_NVML_V2_CRASHES_ON_LOOKUP"] = True
    defines.update({f"FAKE_{key}": value for key, value in (health or {}).items()})
    folder.mkdir(parents=True, exist_ok=True)
    built = compile_library("fake_nvml.c", "libnvidia-ml.so.1", defines, soname="libnvidia-ml.so.1",
                            **_takes(takes, defines))
    target = folder / "libnvidia-ml.so.1"
    shutil.copyfile(built, target)
    return target


def fake_nccl(folder: Path, version: int = 22705, fail: int | None = None) -> Path:
    """FOLDER/libnccl.so.2 whose ncclGetVersion answers VERSION (NCCL's encoding: 22705 is 2.27.5); FAIL: it
    returns that ncclResult_t instead."""
    defines: dict[str, object] = {"FAKE_NCCL_VERSION": version}
    if fail is not None:
        defines["FAKE_NCCL_FAIL"] = fail
    folder.mkdir(parents=True, exist_ok=True)
    built = compile_library("fake_nccl.c", "libnccl.so.2", defines, soname="libnccl.so.2")
    target = folder / "libnccl.so.2"
    shutil.copyfile(built, target)
    return target


def fake_framework_library(target: Path, cudnn_folder: Path, runpath: str, cudnn_major: int = 9) -> Path:
    """A shared library that NEEDs libcudnn.so.MAJOR with DT_RUNPATH RUNPATH (e.g. $ORIGIN/../../nvidia/cudnn/lib),
    copied to TARGET. CUDNN_FOLDER is not read: the library is linked against a stub built into the cache. Built
    once per (MAJOR, RUNPATH) into the cache, as every other fake (it was a gcc run per call: install_torch, in some
    300 tests); the copy is the same bytes a build at TARGET gave (no soname, no path of the output in the file)."""
    # the stub is built as libcudnn.so in a folder of its own (its cache key's): linked from there, not from a
    # copy another pytest-xdist worker could be rewriting
    stub = compile_library("fake_cudnn.c", "libcudnn.so", {}, soname=f"libcudnn.so.{cudnn_major}")
    built = compile_library("fake_framework_lib.c", "libframework.so", link_search=(stub.parent, "cudnn"),
                            runpath=runpath)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, target)
    return target


def fake_cuda_math(soname: str, library: str = "", major: int = 13, minor: int = 0, patch: int = 0,
                   without_second: bool = False, link: tuple[Path, ...] = (), runpath: str | None = None,
                   newer: str | None = None, version_node: str | None = None) -> Path:
    """A fake CUDA library other than cuDNN (fake_cuda_math.c) under SONAME: LIBRARY (cublasLt, cublas, cudart,
    nvJitLink, cusparse, nccl; "" a bare one) answering release MAJOR.MINOR.PATCH; NEWER: one more function of that
    name (what a later release added); VERSION_NODE: its symbols under that version node; built once."""
    defines: dict[str, object] = {"FAKE_MAJOR": major, "FAKE_MINOR": minor, "FAKE_PATCH": patch}
    if newer:
        defines["FAKE_NEWER"] = newer
    if library:
        defines[f"LIB_{library.upper()}"] = True
    if without_second:
        defines["FAKE_WITHOUT_SECOND"] = True
    return compile_library("fake_cuda_math.c", soname, defines, soname=soname, link=link, runpath=runpath,
                           version_node=version_node)


def fake_binder(name: str, calls: tuple[str, ...], link: tuple[Path, ...], runpath: str | None = None) -> Path:
    """A framework's own library NAME (libtorch_cuda.so) that calls the functions CALLS of the libraries LINK, as
    the real one takes cudaGetDeviceCount@libcudart.so.13 from the CUDA runtime (fake_framework_binder.c)."""
    defines: dict[str, object] = {f"CALL{index}": call for index, call in enumerate(calls[:4], 1)}
    return compile_library("fake_framework_binder.c", name, defines, soname=name, link=link, runpath=runpath)
