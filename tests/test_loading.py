"""cuDNN as each framework's own loading code loads it, seen in a child (issue 45): the real cuDNN 9.19 wheel, a
torch whose __init__.py loads its wheel's cuDNN by full path from sys.path as torch 2.6-2.11 does (its
_preload_cuda_lib, written here after the real one), and copies of the wheel bent as users bend them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.real_wheels import real_cudnn
from tests.test_frameworks import install_torch, python_env, real_python_sees
from tests.test_process_env import check_after, env_lines, finding, gpu_machine

# what torch 2.11's torch/__init__.py does for its nvidia-* wheels (the same names and arguments; our own code)
TORCH_INIT = '''
import ctypes
import glob
import os
import platform
import sys


def _get_cuda_dep_paths(path, lib_folder, lib_name):
    return glob.glob(os.path.join(path, "nvidia", lib_folder, "lib", lib_name))


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
'''


def torch_with_real_cudnn(machine: Machine, tmp_path: Path) -> Path:
    """torch 2.11 whose nvidia/cudnn/lib is the real 9.19.0 wheel's (links to it), its __init__.py loading it."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    lib = site / "nvidia" / "cudnn" / "lib"
    shutil.rmtree(lib)
    lib.mkdir()
    for library in (real_cudnn("9.19.0") / "lib").iterdir():  # the front library copied: the maps name it here
        if library.name == "libcudnn.so.9":
            shutil.copyfile(library, lib / library.name)
        else:
            (lib / library.name).symlink_to(library)
    (site / "torch" / "__init__.py").write_text(TORCH_INIT)
    real_python_sees(site, tmp_path)
    return site


def copy_head(source: Path, target: Path, length: int) -> None:
    """TARGET made of SOURCE's first LENGTH bytes, copied by the kernel (copy_file_range): the bytes of
    `source.read_bytes()[:length]`, without reading hundreds of MB of a real cuDNN into Python twice."""
    with source.open("rb") as reader, target.open("wb") as writer:
        while length > 0:
            copied = os.copy_file_range(reader.fileno(), writer.fileno(), length)
            if copied == 0:
                break
            length -= copied


def bent_copy(tmp_path: Path, name: str, drop: tuple[str, ...] = (), cut: tuple[str, ...] = (),
              text: tuple[str, ...] = ()) -> Path:
    """A copy of the real wheel's lib folder: DROP left out, CUT cut in half, TEXT a Git LFS pointer (text)."""
    folder = tmp_path / name
    folder.mkdir()
    for library in (real_cudnn("9.19.0") / "lib").iterdir():
        base = library.name
        if base in drop:
            continue
        if base in cut:
            copy_head(library, folder / base, library.stat().st_size // 2)
        elif base in text:
            (folder / base).write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 133120\n")
        else:
            (folder / base).symlink_to(library)
    return folder


@pytest.mark.integration
def test_torch_maps_its_own_cudnn_whatever_comes_first_on_the_path(machine: Machine, tmp_path: Path) -> None:
    """A copy without libcudnn_ops first on LD_LIBRARY_PATH (a model of the loader calls torch's cuDNN broken): torch's
    own code loads its wheel's front library by full path; its sub-libraries come from the copy where it has them
    (LD_LIBRARY_PATH first) and from the front library's own folder (its RUNPATH is $ORIGIN) where it has not:
    cuDNN's own version checks all pass, and no error is said."""
    torch_with_real_cudnn(machine, tmp_path)
    copy = bent_copy(tmp_path, "copy", drop=("libcudnn_ops.so.9",))
    machine.add_library_path(copy)
    report = machine.check_json()
    [seen] = [load for load in report["process"]["loads"] if load["user"] == "torch"]
    assert seen["front"].startswith(str(tmp_path / "venv")) and seen["version"] == "9.19.0"
    assert all(step["ok"] for step in seen["steps"]), seen["steps"]
    ops = next(step for step in seen["steps"] if step["library"] == "libcudnn_ops.so.9")
    assert ops["mapped"] and ops["mapped"][0].startswith(str(tmp_path / "venv")) is False  # the real file, by link
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_a_text_file_where_the_front_library_is_breaks_only_programs_asking_by_name(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """A Git LFS pointer as libcudnn.so.9 first on LD_LIBRARY_PATH: ld.so stops at it (invalid ELF header) for a
    program that opens libcudnn.so.9 by name, seen; torch loads its own front library by full path and works: a
    warning that names who is hit, never an error."""
    torch_with_real_cudnn(machine, tmp_path)
    copy = bent_copy(tmp_path, "lfs", text=("libcudnn.so.9",))
    machine.add_library_path(copy)
    report = machine.check_json()
    # the loader's words (invalid ELF header): the file is no library, CD308 as explain reads those words
    [refused] = [f for f in report["findings"] if f["code"] == "CD308" and f["evidence"] == "seen"]
    assert refused["severity"] == "warning"
    assert "ELF" in refused["proof"] and "PyTorch" in refused["detail"]
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_a_truncated_sublibrary_in_the_copy_torch_loads_is_seen(machine: Machine, tmp_path: Path) -> None:
    """torch's front library, then its sub-libraries from a copy first on LD_LIBRARY_PATH whose libcudnn_ops is cut
    short: the child dies loading it, and the error quotes that."""
    torch_with_real_cudnn(machine, tmp_path)
    machine.add_library_path(bent_copy(tmp_path, "cut", cut=("libcudnn_ops.so.9",)))
    report = machine.check_json()
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all(f["evidence"] in ("seen", "rule") for f in errors), errors
    assert any("libcudnn_ops.so.9" in (f.get("proof") or "") for f in errors), errors
    assert report["summary"]["exit_code"] == 1


@pytest.mark.integration
def test_torchs_own_copy_whole_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    """Nothing in the environment can change which copy torch loads and its files are whole: no loading child runs
    (each costs seconds on a GPU machine, where cuDNN registers its kernels as it loads)."""
    torch_with_real_cudnn(machine, tmp_path)
    report = machine.check_json()
    assert report["process"]["loads"] == []
    assert not codes(report) & {"CD304", "CD305", "CD307", "CD308", "CD309", "CD409"}


# --- the NVML a program loads ---------------------------------------------------------------------------------------

def test_the_toolkits_nvml_stub_first_on_the_path_stops_jax(machine: Machine, tmp_path: Path) -> None:
    """The CUDA toolkit's link stub copied as libnvidia-ml.so.1 into a folder first on LD_LIBRARY_PATH (seen on an
    H100: nvmlInit 'Driver Not Loaded', JAX finds no GPU, torch warns): an error quoting nvmlInit, and the plan
    takes the folder out of the way; the check after is clean of it."""
    from tests.fakes.build import fake_nvml
    from tests.test_process_env import check_after, jax_install, plan_lines

    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    stub = tmp_path / "stub"
    fake_nvml(stub, stub=True)
    machine.env["LD_LIBRARY_PATH"] = f"{stub}:{machine.env['LD_LIBRARY_PATH']}"
    report = machine.check_json()
    wrong = finding(report, "CD118")
    assert wrong["severity"] == "error" and wrong["evidence"] == "seen"
    assert "Driver Not Loaded" in wrong["proof"] and str(stub) in wrong["detail"]
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(stub) not in line for line in lines), lines
    assert "CD118" not in codes(check_after(machine, lines))


def test_a_library_that_is_no_nvml_first_on_the_path_is_one_too(machine: Machine, tmp_path: Path) -> None:
    """libz saved as libnvidia-ml.so.1 first on LD_LIBRARY_PATH (seen on an H100: JAX 'No visible GPU devices'):
    nvmlInit is not in it (pynvml: 'Function Not Found'), so it is no NVML, whatever its name: CD118, seen."""
    import glob

    from tests.test_process_env import jax_install

    libz = next(iter(sorted(glob.glob("/usr/lib/*/libz.so.1") + glob.glob("/lib/*/libz.so.1"))), None)
    if libz is None:
        pytest.skip("no libz.so.1 on this machine")
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    folder = tmp_path / "foreign"
    folder.mkdir()
    shutil.copyfile(libz, folder / "libnvidia-ml.so.1")
    machine.env["LD_LIBRARY_PATH"] = f"{folder}:{machine.env['LD_LIBRARY_PATH']}"
    report = machine.check_json()
    wrong = finding(report, "CD118")
    assert wrong["severity"] == "error" and wrong["evidence"] == "seen" and "Function Not Found" in wrong["proof"]


def test_an_nvml_the_loader_refuses_in_a_folder_not_utf8_is_named(machine: Machine, tmp_path: Path) -> None:
    """A file that is no ELF saved as libnvidia-ml.so.1 in a folder whose name is not UTF-8, first on
    LD_LIBRARY_PATH: the loader refuses it in words that hold the name, which ctypes cannot decode (a
    UnicodeDecodeError, not pynvml's NVMLError). It was 'Driver found without NVML' (info); it is CD118, seen,
    in the loader's words, the folder named (round thirteen's red-team, after its figures)."""
    from tests.test_process_env import jax_install

    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/nv\xff"))
    folder.mkdir()
    (folder / "libnvidia-ml.so.1").write_bytes(b"not an ELF file, only text" * 4)
    machine.env["LD_LIBRARY_PATH"] = f"{folder}:{machine.env['LD_LIBRARY_PATH']}"
    report = machine.check_json()
    wrong = finding(report, "CD118")
    assert wrong["severity"] == "error" and wrong["evidence"] == "seen", wrong
    assert "the loader refused" in wrong["proof"] and "invalid ELF header" in wrong["proof"], wrong


def test_an_nvml_whose_v2_lookup_ends_the_program_is_named(machine: Machine, tmp_path: Path) -> None:
    """An NVML first on LD_LIBRARY_PATH where looking up nvmlInit_v2 (what nvml.h makes every C program's nvmlInit)
    ends the program, while pynvml's nvmlInitWithFlags answers: the doctor's child looks up what programs look up,
    so it ends there too, and CD118 names the file (round thirteen's red-team, after its figures: a symbol table
    whose entry lies; here an IFUNC whose resolver crashes)."""
    from tests.fakes.build import fake_nvml
    from tests.test_process_env import jax_install

    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    folder = tmp_path / "first"
    fake_nvml(folder, v2_crashes_on_lookup=True)
    machine.env["LD_LIBRARY_PATH"] = f"{folder}:{machine.env['LD_LIBRARY_PATH']}"
    code = "import ctypes; ctypes.CDLL('libnvidia-ml.so.1').nvmlInit_v2"  # the judge: a program that looks it up
    assert subprocess.run([sys.executable, "-c", code], env=machine.env, capture_output=True).returncode < 0
    report = machine.check_json()
    wrong = finding(report, "CD118")
    assert wrong["severity"] == "error" and wrong["evidence"] == "seen", wrong
    assert str(folder / "libnvidia-ml.so.1") == wrong["subject"], wrong


def test_the_drivers_own_nvml_refusing_is_not_a_loader_problem(machine: Machine, tmp_path: Path) -> None:
    from tests.fakes.build import fake_nvml

    driver = gpu_machine(machine, tmp_path, gpus=1)
    fake_nvml(driver, init_error=18)  # the driver's own NVML: a version mismatch after an upgrade
    report = machine.check_json()
    assert "CD118" not in codes(report)


# --- settings CUDA and XLA read, judged by what the installed binaries say ------------------------------------------

@pytest.mark.parametrize(("variable", "words"), [("CUDA_FORCE_PTX_JIT", "no kernel image"),
                                                 ("CUDA_FORCE_JIT", "cudaErrorNoKernelImageForDevice")])
def test_forcing_every_kernel_through_the_ptx_jit_is_an_error_the_plan_unsets(machine: Machine, tmp_path: Path,
                                                                            variable: str, words: str) -> None:
    """Both names NVIDIA documents (CUDA_FORCE_PTX_JIT and CUDA_FORCE_JIT) broke torch 2.11's and JAX 0.11's first
    convolution on an H100: an error by that proven rule, its line unsets it."""
    from tests.test_process_env import check_after, plan_lines

    gpu_machine(machine, tmp_path, gpus=1)
    machine.env[variable] = "1"
    report = machine.check_json()
    forced = finding(report, "CD416")
    assert forced["severity"] == "error" and forced["evidence"] == "rule" and words in forced["proof"]
    lines = plan_lines(machine)
    assert f"unset {variable}" in lines
    assert "CD416" not in codes(check_after(machine, lines))
    machine.env[variable] = "0"
    assert "CD416" not in codes(machine.check_json())


def jaxlib_defining(site: Path, *names: str) -> None:
    """jaxlib's library that defines XLA's flags: their names among its bytes, as the real one has them."""
    (site / "jaxlib").mkdir(exist_ok=True)
    (site / "jaxlib" / "libjax_common.so").write_bytes(b"\x7fELF" + b"".join(b"\0" + n.encode() + b"\0" for n in names))


@pytest.mark.parametrize(("flags", "unknown"), [
    ("--xla_gpu_autotune_level=0", None),
    ("--xla_gpu_no_such_flag=true", "--xla_gpu_no_such_flag"),
    ("--xla_gpu_autotune_level=0  --xla_gpu_autotune_level_typo=1", "--xla_gpu_autotune_level_typo"),
])
def test_xla_flags_the_installed_jaxlib_does_not_define(machine: Machine, tmp_path: Path, flags: str,
                                                        unknown: str | None) -> None:
    from tests.test_process_env import check_after, jax_install, plan_lines

    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    jax_install(site)
    jaxlib_defining(site, "xla_gpu_autotune_level", "xla_dump_to")
    machine.env["XLA_FLAGS"] = flags
    report = machine.check_json()
    if unknown is None:
        assert "CD411" not in codes(report)
        return
    refused = finding(report, "CD411")
    assert refused["severity"] == "error" and refused["evidence"] == "rule" and unknown in refused["detail"]
    lines = plan_lines(machine)
    assert "CD411" not in codes(check_after(machine, lines)), lines
    assert not any(unknown in line for line in lines)


def test_xla_flag_names_are_found_as_whole_words_at_a_plain_searchs_pace(tmp_path: Path) -> None:
    """jaxlib's files asked for XLA_FLAGS' names: a name counts where no letter, digit or underscore touches it (a
    longer flag holding it, a symbol around it, do not); each name one plain search of each file."""
    from cudnn_doctor.probes.file_words import names_in as _names_in

    library = tmp_path / "libjax_common.so"
    library.write_bytes(b"\x7fELF\0xla_gpu_a\0--xla_gpu_ab_c\0zxla_q\0xla_q_\0_ZN3xla_r5\0 xla_end")
    names = ["xla_gpu_a", "xla_gpu_ab", "xla_q", "xla_end", "xla_gpu_ab_c", "xla_r", "xla_gpu_a"]
    assert _names_in([str(library)], names) == {"xla_gpu_a", "xla_end", "xla_gpu_ab_c"}


def test_xla_flag_files_past_the_bounds_say_nothing(tmp_path: Path) -> None:
    """A sparse file far larger than any jaxlib library, a FIFO named like one, or more distinct names than a user's
    XLA_FLAGS holds: the files say nothing (None), at once; the child that runs JAX with XLA_FLAGS still answers."""
    import os

    from cudnn_doctor.probes import file_words as process_env

    huge = tmp_path / "xla_extension.so"
    with open(huge, "wb") as handle:
        handle.truncate(process_env.MAX_FLAG_FILE_BYTES + 1)
    assert process_env.names_in([str(huge)], ["xla_dump_to"]) is None
    fifo = tmp_path / "libjax_common.so"
    os.mkfifo(fifo)
    assert process_env.names_in([str(fifo)], ["xla_dump_to"]) is None
    small = tmp_path / "small.so"
    small.write_bytes(b"\0xla_dump_to\0")
    many = [f"xla_flag_{n}" for n in range(process_env.MAX_FLAG_NAMES + 1)]
    assert process_env.names_in([str(small)], many) is None
    assert process_env.names_in([str(small)], ["xla_dump_to"] * (process_env.MAX_FLAG_NAMES + 1)) == {"xla_dump_to"}
    scanned = tmp_path / "scanned.so"  # sparse: each name a search of all of it, past the bound together
    with open(scanned, "wb") as handle:
        handle.truncate(process_env.MAX_FLAG_SCAN_BYTES // 4 + 1)
    assert process_env.names_in([str(scanned)], ["xla_a", "xla_b", "xla_c", "xla_d"]) is None


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "missing", "sparse", "dev_null", "small"])
def test_xla_flags_naming_a_file_jax_would_hang_on_is_said_and_never_tried(machine: Machine, tmp_path: Path,
                                                                           kind: str) -> None:
    """XLA reads an XLA_FLAGS that does not start with '-' as the name of a file of flags, to its end (its
    parse_flags_from_env.cc): a FIFO hangs every JAX program, /dev/zero fills its memory, a missing file ends it. Said
    (CD411, by XLA's rule) and unset by fix; no child of the doctor runs JAX with it (one would hang or fill the
    machine's memory). /dev/null and a small file of flags are files XLA reads as it should."""
    import os

    from tests.test_process_env import check_after, jax_install, plan_lines

    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    jax_install(site)
    path = tmp_path / "flags"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "sparse":
        with open(path, "wb") as handle:
            handle.truncate(1 << 30)
    elif kind == "small":
        path.write_text("--xla_gpu_autotune_level=0\n")
    value = {"dev_zero": "/dev/zero", "dev_null": "/dev/null"}.get(kind, str(path))
    machine.env["XLA_FLAGS"] = value
    report = machine.check_json("--deep")
    said = [f for f in report["findings"] if f["code"] == "CD411" and "file of flags" in f["detail"]]
    if kind in ("dev_null", "small"):
        assert not said, said
        return
    [found] = said
    assert found["severity"] == "error" and found["evidence"] == "rule" and value in found["detail"], found
    [jax] = [f for f in report["frameworks"] if f["name"] == "jax"]
    assert jax["details"]["deep"]["error"].startswith("importing jax was not tried"), jax["details"]
    if kind == "fifo":  # the closed loop once: the plan's line sourced, check again clean of it
        lines = plan_lines(machine)
        assert "unset XLA_FLAGS" in lines, lines
        assert not [f for f in check_after(machine, lines)["findings"] if f["code"] == "CD411"]


# --- fix verifies its steps before it prints them -------------------------------------------------------------------

# a torch whose import does what the real one does with its cuDNN (loads its wheel's front library by full path) and
# whose first convolution asks cuDNN's own version checks, raising cuDNN's status name as torch does
LOADING_TORCH = TORCH_INIT + '''
__version__ = "2.11.0+cu130"
class version:
    cuda = "13.0"
_preload_cuda_lib("cudnn", "libcudnn.so.*[0-9]")
_lib = ctypes.CDLL("libcudnn.so.9")
_lib.cudnnGetErrorString.restype = ctypes.c_char_p
def _first_steps(*args, **kwargs):
    for name in ("cudnnGraphVersionCheck", "cudnnOpsVersionCheck", "cudnnCnnVersionCheck", "cudnnAdvVersionCheck"):
        status = getattr(_lib, name)()
        if status:
            raise RuntimeError("cuDNN error: " + _lib.cudnnGetErrorString(status).decode())
class backends:
    class cudnn:
        @staticmethod
        def version():
            return _lib.cudnnGetVersion()
class cuda:
    is_available = staticmethod(lambda: True)
    device_count = staticmethod(lambda: 1)
    synchronize = staticmethod(lambda: None)
def randn(*shape, device=None):
    return None
class nn:
    class functional:
        conv2d = staticmethod(_first_steps)
    class LSTM:
        def __init__(self, *args, **kwargs):
            pass
        def cuda(self):
            return self
        __call__ = _first_steps
'''


@pytest.mark.integration
def test_fix_tries_its_lines_on_the_failing_framework_before_printing_them(machine: Machine, tmp_path: Path) -> None:
    """A Git LFS pointer where libcudnn_ops.so.9 should be, in a folder first on LD_LIBRARY_PATH: the loader stops at
    it, cuDNN's version check answers SUBLIBRARY_UNAVAILABLE, torch's first convolution fails. fix's line (the folder
    out of LD_LIBRARY_PATH) is run with torch's work in a child before it is printed: verified here."""
    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(LOADING_TORCH)
    copy = bent_copy(tmp_path, "lfs-ops", text=("libcudnn_ops.so.9",))
    machine.add_library_path(copy)
    report = machine.check_json()
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all(f["evidence"] == "seen" for f in errors), errors
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["verified"].startswith("verified here") and "PyTorch" in step["verified"], step
    assert str(copy) not in " ".join(step["env"]["bash"])
    assert "tried" not in plan


@pytest.mark.integration
def test_fix_says_when_its_lines_do_not_cure_what_fails(machine: Machine, tmp_path: Path) -> None:
    """torch fails for a cause no line of the plan touches (its own front library cut short): the plan's lines are
    tried and said not to cure it, with torch's words."""
    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(LOADING_TORCH)
    lib = site / "nvidia" / "cudnn" / "lib"
    (lib / "libcudnn_ops.so.9").unlink()
    (lib / "libcudnn_ops.so.9").write_text("version https://git-lfs.github.com/spec/v1\n")
    machine.env["CUDA_FORCE_PTX_JIT"] = "1"  # a line the plan does change, which does not touch torch's failure
    plan = machine.run("fix", "--json").json
    assert "PyTorch still fails" in plan.get("tried", ""), plan
    assert all(not a.get("verified", "").startswith("verified here") for a in plan["actions"]), plan["actions"]


@pytest.mark.integration
def test_another_release_first_on_the_path_is_not_what_torch_maps(machine: Machine, tmp_path: Path) -> None:
    """A libcudnn.so.9 of another release (9.1.0, a fake) first on LD_LIBRARY_PATH, beside links to the real 9.19
    sub-libraries: a model of the loader says torch loads 9.1 and refuses it (CD408); torch's own code loads its
    wheel's 9.19 by full path, which is what a child running it maps: no error (seen on the H100 with the system's 9.14:
    torch ran and reported 9.19)."""
    from tests.fakes.build import fake_cudnn

    torch_with_real_cudnn(machine, tmp_path)
    copy = bent_copy(tmp_path, "other-front", drop=("libcudnn.so.9",))
    fake_cudnn(tmp_path / "fake", version=90100, sublibraries=[])
    shutil.copyfile(tmp_path / "fake" / "libcudnn.so.9.1.0", copy / "libcudnn.so.9")
    machine.add_library_path(copy)
    report = machine.check_json()
    [seen] = [load for load in report["process"]["loads"] if load["user"] == "torch"]
    [torch] = [f for f in report["frameworks"] if f["name"] == "torch"]
    assert torch["cudnn_used"] == seen["front"] or torch["cudnn_used"].startswith(str(tmp_path / "venv")), torch
    assert seen["version"] == "9.19.0"
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


# --- the engine libraries, as cuDNN's graph library opens them ------------------------------------------------------

def _elf32_header() -> bytes:
    """A 32-bit (ELFCLASS32, i386) shared-object header: the loader skips a file of another class and searches on."""
    import struct

    ident = b"\x7fELF" + bytes([1, 1, 1, 0]) + bytes(8)
    return (ident + struct.pack("<HHIIIIIHHHHHH", 3, 3, 1, 0, 52, 0, 0, 52, 32, 0, 40, 0, 0)).ljust(4096, b"\0")


@pytest.mark.integration
def test_files_of_another_class_first_on_the_path_are_skipped_as_the_loader_skips_them(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    """32-bit files named like cuDNN's libraries first on LD_LIBRARY_PATH: the loader skips them and finds the
    engines in the graph library's own folder (its RUNPATH), as cuDNN's own dlopen does; the child asks the loader
    with that search list (dlinfo) instead of guessing a path, so torch's cuDNN loads whole and nothing is an
    error."""
    torch_with_real_cudnn(machine, tmp_path)
    folder = tmp_path / "elf32"
    folder.mkdir()
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9"):
        (folder / name).write_bytes(_elf32_header())
    machine.add_library_path(folder)
    report = machine.check_json()
    [seen] = [load for load in report["process"]["loads"] if load["user"] == "torch"]
    engines = next(step for step in seen["steps"] if step["library"] == "libcudnn_engines_precompiled.so.9")
    assert engines["ok"] and engines["mapped"] and not engines["mapped"][0].startswith(str(folder)), engines
    assert not [f for f in report["findings"] if f["severity"] == "error" and f["subject"] != "ld.so"
                and "torch" in (f.get("proof") or "")], report["findings"]


@pytest.mark.integration
def test_precompiled_engines_the_loader_refuses_are_a_warning_cudnn_goes_on_without(machine: Machine,
                                                                                    tmp_path: Path) -> None:
    """A folder named libcudnn_engines_precompiled.so.9 first on LD_LIBRARY_PATH: the loader refuses it ('Is a
    directory'), cuDNN goes on in JIT mode (torch and JAX worked on an H200): a warning with the loader's words."""
    torch_with_real_cudnn(machine, tmp_path)
    folder = tmp_path / "dir"
    (folder / "libcudnn_engines_precompiled.so.9").mkdir(parents=True)
    machine.add_library_path(folder)
    report = machine.check_json()
    said = finding(report, "CD319")
    assert said["severity"] == "warning" and said["evidence"] == "seen" and "directory" in said["proof"], said
    assert "JIT" in said["detail"]
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.integration
def test_precompiled_engines_cut_short_are_an_error_the_child_died_of(machine: Machine, tmp_path: Path) -> None:
    """The precompiled engines cut in half in a copy first on the path: the loader maps the file and the process
    dies; cuDNN cannot go on without them there: an error, seen."""
    torch_with_real_cudnn(machine, tmp_path)
    machine.add_library_path(bent_copy(tmp_path, "cut", cut=("libcudnn_engines_precompiled.so.9",)))
    report = machine.check_json()
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all(f["evidence"] in ("seen", "rule") for f in errors), errors
    assert any("libcudnn_engines_precompiled.so.9" in (f.get("proof") or "") for f in errors), errors


@pytest.mark.integration
def test_an_empty_entry_of_ld_library_path_is_the_working_folder(machine: Machine, tmp_path: Path) -> None:
    """LD_LIBRARY_PATH=":<driver>" (an empty first entry: ld.so searches the working folder there) started in a
    folder holding a half-downloaded libcudnn_graph.so.9: torch's cuDNN loads it and dies, seen in a child that
    searches what the program would (the children start from "/", so the entry is made the working folder first).
    fix's line takes the entry out and is verified; the reinstall steps it makes unneeded are not offered."""
    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(LOADING_TORCH)
    work = tmp_path / "work"
    work.mkdir()
    data = (real_cudnn("9.19.0") / "lib" / "libcudnn_graph.so.9").read_bytes()
    (work / "libcudnn_graph.so.9").write_bytes(data[: len(data) // 2])
    machine.env["LD_LIBRARY_PATH"] = ":" + machine.env.get("LD_LIBRARY_PATH", "")
    machine.cwd = work
    report = machine.check_json()
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all(f["evidence"] == "seen" for f in errors), errors
    assert any("libcudnn_graph.so.9" in (f.get("proof") or "") for f in errors), errors
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["verified"].startswith("verified here"), step
    [line] = step["env"]["bash"]
    value = line.split("=", 1)[1]
    assert value and "." not in value.split(":") and "" not in value.split(":"), line
    assert not [a for a in plan["actions"] if a["kind"] != "env" and set(a["resolves"]) & {e["code"] for e in errors}]


# --- XLA_FLAGS as the installed jaxlib parses them -----------------------------------------------------------------

def jax_on_the_cpu(machine: Machine, tmp_path: Path) -> Path:
    """A Python environment holding the real JAX and jaxlib (CPU build), its python3 the real interpreter."""
    from tests.real_wheels import real_jax_cpu

    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    for entry in real_jax_cpu().iterdir():
        if not entry.name.startswith("."):
            (site / entry.name).symlink_to(entry)
    real_python_sees(site, tmp_path)
    return site


@pytest.mark.integration
@pytest.mark.parametrize(("flags", "words"), [
    ("--xla_gpu_autotune_level=high", "Couldn't interpret value high for flag xla_gpu_autotune_level"),
    ("--xla_dump_hlo_as_text=maybe --xla_cpu_enable_fast_math=false", "Couldn't interpret value maybe"),
    # a value a flag's own setter refuses: XLA's CHECK says only "Flag parsing failed", with a usage line that names
    # the first flag whichever refused (JAX 0.11 said the same of --xla_gpu_enable_libnvptxcompiler=true on an H100)
    ("--xla_step_marker_location=bogus", "Flag parsing failed"),
    ("--xla_cpu_enable_fast_math=false --xla_gpu_shape_checks=bogus", "asked alone, XLA refuses --xla_gpu_shape_checks"),
])
def test_xla_flags_the_installed_jaxlib_refuses_are_seen(machine: Machine, tmp_path: Path, flags: str,
                                                         words: str) -> None:
    """XLA_FLAGS with a value XLA cannot parse (a known flag) or a flag it does not know: JAX is run on the CPU in a
    child with them, and XLA's own words end it there as they end a program at its first compilation: an error,
    seen, and the plan's line keeps the flags it accepts."""
    jax_on_the_cpu(machine, tmp_path)
    machine.env["XLA_FLAGS"] = flags
    report = machine.check_json()
    said = finding(report, "CD411")
    assert said["severity"] == "error" and said["evidence"] == "seen" and words in said["proof"], said
    plan = machine.run("fix", "--json").json
    sourced = env_lines(plan)  # the plan's lines, as plan_lines gives them (one `fix` run, one JAX child, for both)
    lines = " ".join(sourced)
    [bad] = [entry for entry in flags.split() if entry.endswith(("=high", "=maybe", "=bogus"))]
    assert "XLA_FLAGS" in lines and bad.split("=")[0] not in lines, lines
    for good in flags.split():
        assert good == bad or good in lines, lines
    # the closed loop: the plan's lines sourced in bash, check again asks the same jaxlib and finds it clean
    assert not [f for f in check_after(machine, sourced)["findings"] if f["code"] == "CD411"], sourced


@pytest.mark.integration
def test_xla_flags_the_installed_jaxlib_accepts_are_no_finding(machine: Machine, tmp_path: Path) -> None:
    jax_on_the_cpu(machine, tmp_path)
    machine.env["XLA_FLAGS"] = "--xla_gpu_autotune_level=2 --xla_cpu_enable_fast_math=false"
    report = machine.check_json()
    assert "CD411" not in codes(report), report["findings"]


# --- which part of the environment breaks a framework, asked of it ---------------------------------------------------

@pytest.mark.integration
def test_deep_names_the_part_of_the_environment_without_which_the_framework_works(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    """A folder on PYTHONPATH holds a `torch` package that fails its convolution (a shadowing copy): under --deep
    torch fails in its child, works in one without PYTHONPATH, and that is the error, seen, with the line fix
    writes (PYTHONPATH unset), verified."""
    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(LOADING_TORCH)
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(LOADING_TORCH.replace("def randn(", "def _unused(") +
                                        "\ndef randn(*shape, device=None):\n"
                                        "    raise RuntimeError('CUDA error: no kernel image is available')\n")
    machine.env["PYTHONPATH"] = f"{tmp_path / 'shadow'}:{machine.env['PYTHONPATH']}"
    python = tmp_path / "venv" / "bin" / "python3"  # the environment's python honours PYTHONPATH as a real one does
    python.write_text(f"#!/bin/sh\nPYTHONPATH=${{PYTHONPATH:+$PYTHONPATH:}}{site} exec {sys.executable} \"$@\"\n")
    report = machine.check_json("--deep")
    [cause] = [f for f in report["findings"] if f["subject"] == "environment: pythonpath"]
    assert cause["severity"] == "error" and cause["evidence"] == "seen" and "PYTHONPATH unset" in cause["detail"]
    assert report["process"]["cured_by"]["kind"] == "pythonpath"
    plan = machine.run("fix", "--json").json  # plain check reads the shadowing folder too: its line is the cure
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    [line] = step["env"]["bash"]
    assert line.startswith(("export PYTHONPATH=", "unset PYTHONPATH")) and str(tmp_path / "shadow") not in line, step
    assert step["verified"].startswith("verified here"), step


@pytest.mark.integration
def test_deep_finds_a_variable_nobody_wrote_down_among_many(machine: Machine, tmp_path: Path) -> None:
    """A torch whose convolution warns of a deprecation (as libraries do), in a session with PYTHONWARNINGS=error among
    thirty other variables: torch fails under --deep, the search over every variable finds the one without which it
    works (no row of the data names it), and fix's line unsets it, verified."""
    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(
        LOADING_TORCH.replace("def randn(", "def _randn(") +
        "\ndef randn(*shape, device=None):\n"
        "    import warnings\n"
        "    warnings.warn('torch.backends.cudnn.some_flag is deprecated', DeprecationWarning)\n"
        "    return _randn(*shape, device=device)\n")
    machine.env.update({f"APP_SETTING_{n:02d}": str(n) for n in range(30)})
    machine.env["PYTHONWARNINGS"] = "error"
    report = machine.check_json("--deep")
    cure = report["process"]["cured_by"]
    assert (cure["kind"], cure["variable"]) == ("variable", "PYTHONWARNINGS"), cure
    [cause] = [f for f in report["findings"] if f["subject"] == "environment: variable"]
    assert cause["severity"] == "error" and cause["evidence"] == "seen" and cause["code"] == "CD411", cause
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if a["kind"] == "env"]
    assert step["env"]["bash"] == ["unset PYTHONWARNINGS"] and step["verified"].startswith("verified here"), step


@pytest.mark.integration
def test_an_error_for_every_program_is_a_warning_where_every_framework_ran(machine: Machine, tmp_path: Path) -> None:
    """A libcuda.so.1 whose cuInit fails first on the path: plain check's CUDA child sees it refused (an error: every
    program started here). Under --deep the only framework ran its GPU steps in a child with this environment, which
    contradicts "every program": the error becomes a warning that says so."""
    from tests.fakes.build import fake_libcuda

    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(LOADING_TORCH)
    fake_libcuda(tmp_path / "other", driver_cuda=13000, devices=1, status=999)
    machine.env["LD_LIBRARY_PATH"] = f"{tmp_path / 'other'}:{machine.env['LD_LIBRARY_PATH']}"
    plain = {f["code"]: f for f in machine.check_json()["findings"]}
    assert plain["CD110"]["severity"] == "error", plain.get("CD110")
    deep = machine.check_json("--deep")
    [torch] = [f for f in deep["frameworks"] if f["name"] == "torch"]
    assert torch["details"]["deep"].get("conv_ran") is True, torch["details"]["deep"]
    said = next(f for f in deep["findings"] if f["code"] == "CD110")
    assert said["severity"] == "warning" and "ran its first GPU steps" in said["proof"], said


# a torch whose first GPU steps under --deep do not touch cuDNN (they run whatever the loader would map)
TORCH_NOT_USING_CUDNN = TORCH_INIT + '''
__version__ = "2.11.0+cu130"
class version:
    cuda = "13.0"
class backends:
    class cudnn:
        version = staticmethod(lambda: 91900)
class cuda:
    is_available = staticmethod(lambda: True)
    device_count = staticmethod(lambda: 1)
    synchronize = staticmethod(lambda: None)
def randn(*shape, device=None):
    return None
class nn:
    class functional:
        conv2d = staticmethod(lambda *args, **kwargs: None)
    class LSTM:
        def __init__(self, *args, **kwargs):
            pass
        def cuda(self):
            return self
        def __call__(self, *args, **kwargs):
            return None
'''


@pytest.mark.integration
def test_a_framework_that_ran_under_deep_outweighs_an_error_about_it(machine: Machine, tmp_path: Path) -> None:
    """The loading child dies on a cut libcudnn_ops in a copy first on the path (an error about torch, seen), but
    under --deep torch itself ran its first GPU steps in a child with this environment: the error about it alone
    is a warning that says so (plain check keeps it an error)."""
    site = torch_with_real_cudnn(machine, tmp_path)
    (site / "torch" / "__init__.py").write_text(TORCH_NOT_USING_CUDNN)
    machine.add_library_path(bent_copy(tmp_path, "cut", cut=("libcudnn_ops.so.9",)))
    plain = machine.check_json()
    about = [f for f in plain["findings"] if f["severity"] == "error" and "torch" in f.get("proof", "")]
    assert about, plain["findings"]
    deep = machine.check_json("--deep")
    same = [f for f in deep["findings"] if (f["code"], f["subject"]) in {(a["code"], a["subject"]) for a in about}]
    assert same and all(f["severity"] == "warning" and "under --deep PyTorch ran" in f["proof"] for f in same), same


@pytest.mark.integration
def test_an_empty_nvml_first_on_the_path_is_the_one_the_loader_refused(machine: Machine, tmp_path: Path) -> None:
    """A zero-length libnvidia-ml.so.1 first on LD_LIBRARY_PATH (seen on an H100: JAX 'No visible GPU devices'):
    the loader refuses it and nvmlInit says NVML was not found; that file is named, CD118, and the plan takes the
    folder out."""
    from tests.test_process_env import check_after, jax_install, plan_lines

    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    folder = tmp_path / "empty-nvml"
    folder.mkdir()
    (folder / "libnvidia-ml.so.1").write_bytes(b"")
    machine.env["LD_LIBRARY_PATH"] = f"{folder}:{machine.env['LD_LIBRARY_PATH']}"
    report = machine.check_json()
    wrong = finding(report, "CD118")
    assert wrong["severity"] == "error" and str(folder) in wrong["detail"], wrong
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(folder) not in line for line in lines), lines
    assert "CD118" not in codes(check_after(machine, lines))
