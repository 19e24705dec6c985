"""Round seventeen (k23): classes users make that the sets touched least, each asked of the thing itself. A framework's
own wheel copy damaged after pip installed it (the real NCCL 2.32.3 cut short, a Git LFS pointer in place of a
library torch's import needs): torch's own loading code opens it by full path, so nothing on LD_LIBRARY_PATH changes
it and plain check said nothing; now the loading child runs that code where a wheel's file reads broken, and the
file it died opening is named (seen) with the wheel pip puts back whole. A link to nothing first on LD_LIBRARY_PATH:
ld.so's open fails and it searches on (seen here, below), so it is no stop; check said one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cuda_math
from tests.real_wheels import real_nccl
from tests.test_cuda_libraries import jax_cu13, torch_cu13
from tests.test_frameworks import python_env
from tests.test_process_env import check_after, gpu_machine, jax_install, plan_lines

LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a2146\nsize 301234567\n"


def errors_of(report: dict) -> list[dict]:
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert all(f["evidence"] in ("seen", "rule") for f in errors), errors
    return errors


def cut_in_half(source: Path, target: Path) -> None:
    data = source.read_bytes()
    target.unlink(missing_ok=True)
    target.write_bytes(data[: len(data) // 2])


def pip_argv(plan: dict, code: str) -> list[str]:
    [action] = [a for a in plan["actions"] if code in a["resolves"]]
    assert action["kind"] == "pip", action
    return list(action["argv"])


@pytest.mark.integration
def test_the_real_nccl_cut_short_in_torchs_own_wheel_is_seen_killing_its_import(machine: Machine,
                                                                              tmp_path: Path) -> None:
    """The real libnccl.so.2 (nvidia-nccl-cu13 2.32.3) cut in half where torch's wheel keeps it: opening it dies of
    SIGBUS (asked of the real loader below), and torch 2.13's _load_global_deps opens it by full path as `import torch`
    starts. Before: no finding (nothing on the path, so no loading child ran). Now: CD409, seen, naming the file and
    the wheel; fix reinstalls that wheel (pip --force-reinstall --no-deps); with the wheel's file whole again (what
    that reinstall writes), check is clean."""
    site = torch_cu13(machine, tmp_path)
    own = site / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    cut_in_half(real_nccl(), own)
    opened = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(own)!r})"], capture_output=True,
                            timeout=60)
    assert opened.returncode == -7, opened  # SIGBUS: the real loader's answer, what torch's import gets
    report = machine.check_json()
    [error] = [f for f in errors_of(report) if f["code"] == "CD409"]
    assert error["subject"] == str(own) and error["evidence"] == "seen", error
    assert "SIGBUS" in error["detail"] and "nvidia-nccl-cu13==2.28.9" in error["detail"], error["detail"]
    assert "_load_global_deps" in error["proof"], error["proof"]
    argv = pip_argv(machine.run("fix", "--json").json, "CD409")
    assert argv[-4:] == ["install", "--force-reinstall", "--no-deps", "nvidia-nccl-cu13==2.28.9"], argv
    shutil.copyfile(real_nccl(), own)  # the wheel's file whole: what pip's reinstall writes back
    after = check_after(machine, [])
    assert "CD409" not in codes(after) and not errors_of(after), after["findings"]


@pytest.mark.integration
@pytest.mark.parametrize("damage", ["text", "cut", "aarch64", "dangling", "gone"])
def test_a_damaged_cublaslt_in_torchs_own_wheel_is_named_with_its_wheel(machine: Machine, tmp_path: Path,
                                                                        damage: str) -> None:
    """libcublasLt.so.13 of torch's own cu13 wheel a Git LFS pointer, cut short, built for another machine, a link
    to nothing, or deleted: torch's
    code opens it by full path (a refusal it swallows, a cut copy kills it) and its libraries need it (DT_NEEDED).
    Before: no finding. Now an error, seen in torch's loading child, naming that file; the plan reinstalls the wheel
    that owns it, never a path change (nothing on the path is the cause)."""
    site = torch_cu13(machine, tmp_path)
    own = site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13"
    if damage == "text":
        own.write_text(LFS_POINTER)
    elif damage == "cut":
        cut_in_half(own, own)
    elif damage == "aarch64":  # the loader skips a library of another machine: it finds none for torch's libraries
        data = bytearray(own.read_bytes())
        data[18:20] = (183).to_bytes(2, "little")  # e_machine: EM_AARCH64
        own.write_bytes(bytes(data))
    elif damage == "dangling":  # a link whose target is gone (a wheel folder copied without what its links point at)
        own.unlink()
        own.symlink_to(own.parent / "libcublasLt.so.13.1.0.3")
    else:  # deleted (a clean-up script), its wheel's RECORD still listing it
        own.unlink()
    report = machine.check_json()
    named = [f for f in errors_of(report) if f["subject"] == str(own)]
    assert named and named[0]["code"] in ("CD409", "CD203"), report["findings"]
    plan = machine.run("fix", "--json").json
    argv = pip_argv(plan, named[0]["code"])
    assert argv[-1] == "nvidia-cublas==13.1.0.3" and "--force-reinstall" in argv, argv
    assert not [a for a in plan["actions"] if named[0]["code"] in a["resolves"] and a["kind"] == "env"], plan


@pytest.mark.integration
def test_the_wheels_whole_start_no_loading_child(machine: Machine, tmp_path: Path) -> None:
    """Every wheel file reads whole and nothing is on the path: no loading child runs (plain check's cost kept)."""
    torch_cu13(machine, tmp_path)
    report = machine.check_json()
    assert report["process"]["loads"] == [] and not errors_of(report), report["findings"]


@pytest.mark.integration
def test_a_link_to_nothing_first_on_the_path_is_skipped_by_the_loader(machine: Machine, tmp_path: Path) -> None:
    """libcublasLt.so.13, a symbolic link to a file that is gone, in the first LD_LIBRARY_PATH folder, a whole copy in
    the second: the real ld.so skips it (its open fails) and loads the second (asked below). Before: a warning that
    a program opening it by name "stops at it". Now nothing is said of it."""
    torch_cu13(machine, tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "libcublasLt.so.13").symlink_to(tmp_path / "gone" / "libcublasLt.so.13.1.0.3")
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 1, 0), second / "libcublasLt.so.13")
    machine.add_library_path(second)
    machine.add_library_path(first)
    env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": machine.env["LD_LIBRARY_PATH"]}
    loaded = subprocess.run([sys.executable, "-I", "-c", "import ctypes; ctypes.CDLL('libcublasLt.so.13'); "
                             "print([l.split()[-1] for l in open('/proc/self/maps') if 'libcublasLt' in l][0])"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert loaded.stdout.strip() == str(second / "libcublasLt.so.13"), loaded
    report = machine.check_json()
    assert not [f for f in report["findings"] if "libcublasLt" in (f.get("subject") or "") + f["detail"]], \
        report["findings"]
    assert not errors_of(report), report["findings"]


def test_the_loading_childs_answer_names_the_file_its_preloading_code_died_opening() -> None:
    """The child says each file torch's own code opens before it opens it; killed inside one, that file is named."""
    from cudnn_doctor.probes.loading import MARK as MARK_BYTES
    from cudnn_doctor.probes.loading import parse_answer

    MARK = MARK_BYTES.decode()

    lines = [f"{MARK}libs-start\ttorch", f"{MARK}lib-recipe-start\ttorch/__init__.py: _load_global_deps",
             f"{MARK}lib-recipe-try\t/site/torch/lib/libtorch_global_deps.so",
             f"{MARK}lib-recipe-try\t/site/nvidia/cu13/lib/libcublasLt.so.13"]
    load = parse_answer("torch", None, "\n".join(lines) + "\n", -7, False, None)
    assert load.library_recipe_died_at == "/site/nvidia/cu13/lib/libcublasLt.so.13", load
    assert load.library_recipe is not None and "SIGBUS" in load.library_recipe, load.library_recipe
    whole = parse_answer("torch", None, "\n".join([*lines, f"{MARK}lib-recipe\tok", f"{MARK}libs-done"]) + "\n", 0,
                         False, None)
    assert whole.library_recipe_died_at is None, whole


# --- temporary folders: their readers take one only where it names a folder that exists ------------------------------

def python_tempdir(env: dict[str, str]) -> str:
    """What Python's own tempfile.gettempdir() answers in a child with ENV (Inductor's cache folder is below it)."""
    done = subprocess.run([sys.executable, "-I", "-c", "import tempfile; print(tempfile.gettempdir())"],
                          capture_output=True, text=True, env=env, timeout=60)
    return done.stdout.strip()


@pytest.mark.parametrize("kind", ["fifo", "file"])
def test_a_tmpdir_that_is_no_folder_is_skipped_by_its_readers_and_not_said(machine: Machine, tmp_path: Path,
                                                                           kind: str) -> None:
    """TMPDIR naming a FIFO or a plain file: Python's tempfile goes on to /tmp (asked here) and XLA's
    GetLocalTempDirectories takes only a folder that exists (its source), so no program uses it. Before: a CD417
    warning and a plan line that cured nothing. Now nothing is said of it."""
    gpu_machine(machine, tmp_path, gpus=1)
    named = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(named)
    else:
        named.write_text("x\n")
    machine.env["TMPDIR"] = str(named)
    assert python_tempdir({"TMPDIR": str(named), "PATH": "/usr/bin:/bin"}) == "/tmp"
    assert not [f for f in machine.check_json()["findings"] if f["subject"] == "TMPDIR"]


def test_tmp_is_judged_where_tmpdir_names_no_folder(machine: Machine, tmp_path: Path) -> None:
    """TMPDIR naming a file and TMP=/proc (a folder where no file can be made), JAX installed: XLA skips TMPDIR (not a
    folder) and takes TMP, where its PTX cannot be written (JAX's first convolution failed so on an H100, round
    sixteen). Before: nothing (TMPDIR set was taken to shadow TMP). Now CD417 on TMP, and the plan's line takes it
    out: checked again, clean."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    (tmp_path / "afile").write_text("x\n")
    machine.env["TMPDIR"] = str(tmp_path / "afile")
    machine.env["TMP"] = "/proc"
    [made] = [f for f in machine.check_json()["findings"] if f["subject"] == "TMP"]
    assert made["code"] == "CD417", made
    lines = plan_lines(machine)
    assert "unset TMP" in lines, lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["subject"] in ("TMP", "TMPDIR")]


# --- a framework's wheels shadowed: a PYTHONPATH folder holding nvidia/<part>/lib ---------------------------------------

def venv_python_keeps_pythonpath(site: Path, tmp_path: Path) -> None:
    """The environment's python3 as a real venv's: the user's PYTHONPATH on sys.path before its site-packages."""
    wrapper = tmp_path / "venv" / "bin" / "python3"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH=\"${{PYTHONPATH:+$PYTHONPATH:}}{site}\" exec {sys.executable} \"$@\"\n")


@pytest.mark.integration
def test_a_cut_copy_in_a_pythonpath_nvidia_folder_is_what_torchs_code_opens(machine: Machine, tmp_path: Path) -> None:
    """A PYTHONPATH folder holding nvidia/cu13/lib/libcublasLt.so.13 cut short (a half-copied wheel folder): torch's
    own code globs sys.path for its wheels' libraries, PYTHONPATH first, and opens that copy by full path: its import
    dies (SIGBUS, seen in its loading child). Before: a CD419 warning (read) only. Now CD409, seen, naming the file
    and the folder; the plan takes that folder out of PYTHONPATH, and checked after it no error is left."""
    site = torch_cu13(machine, tmp_path)
    venv_python_keeps_pythonpath(site, tmp_path)
    shadow = tmp_path / "half-copied"
    lib = shadow / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    cut_in_half(site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13", lib / "libcublasLt.so.13")
    machine.env["PYTHONPATH"] = f"{shadow}:{machine.env['PYTHONPATH']}"
    report = machine.check_json()
    [error] = [f for f in errors_of(report) if f["code"] == "CD409"]
    assert error["subject"] == str(lib / "libcublasLt.so.13") and "PYTHONPATH" in error["detail"], error
    lines = plan_lines(machine)
    assert any("PYTHONPATH" in line and str(shadow) not in line for line in lines), lines
    after = check_after(machine, lines)
    assert "CD409" not in codes(after) and not errors_of(after), after["findings"]


@pytest.mark.integration
def test_a_cut_copy_in_jaxs_own_wheel_is_seen_killing_its_plugins_load(machine: Machine, tmp_path: Path) -> None:
    """libcublasLt.so.13 of JAX's own cu13 wheel cut short: its CUDA plugin's _load_nvidia_libraries opens it by full
    path (ctypes.cdll.LoadLibrary, jax_plugins/cuda/__init__.py) as JAX starts its GPU backend: the child running that
    code dies there (seen). Before: no finding. Now CD409 naming the file and the wheel pip puts back."""
    site = jax_cu13(machine, tmp_path)
    own = site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13"
    cut_in_half(own, own)
    report = machine.check_json()
    [error] = [f for f in errors_of(report) if f["code"] == "CD409"]
    assert error["subject"] == str(own) and "JAX" in error["detail"] and "_load_nvidia_libraries" in error["proof"]
    argv = pip_argv(machine.run("fix", "--json").json, "CD409")
    assert argv[-1] == "nvidia-cublas==13.1.0.3", argv


# --- the GCC runtime cut short first on LD_LIBRARY_PATH (round sixteen's leftover: named, not cured) -----------------

def system_gcc_runtime() -> Path:
    found = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    for line in found.splitlines():
        if line.strip().startswith("libgcc_s.so.1 ") and "x86-64" in line:
            return Path(os.path.realpath(line.rsplit("=> ", 1)[-1].strip()))
    pytest.skip("no libgcc_s.so.1 in this machine's loader cache")


@pytest.mark.integration
def test_a_cut_gcc_runtime_first_on_the_path_is_named_and_taken_out(machine: Machine, tmp_path: Path) -> None:
    """The first half of this machine's libgcc_s.so.1 in a folder first on LD_LIBRARY_PATH: the real cuDNN 9.19 needs
    it (DT_NEEDED), and the loader mapping it dies of SIGBUS (asked below). Before: CD309 on cuDNN with "reinstall
    cuDNN", which cured nothing (round sixteen, on the H100). Now the loader's own `ld.so --list` of the framework's
    library, killed by SIGBUS, names the runtime: CD409, seen, and the plan's one line takes the folder out of
    LD_LIBRARY_PATH for it and for the crash; sourced, the check after it has no error."""
    torch_cu13(machine, tmp_path)
    folder = tmp_path / "project-lib"
    folder.mkdir()
    cut_in_half(system_gcc_runtime(), folder / "libgcc_s.so.1")
    machine.add_library_path(folder)
    opened = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libgcc_s.so.1')"], capture_output=True,
                            timeout=60, env={"LD_LIBRARY_PATH": str(folder), "PATH": "/usr/bin:/bin"})
    assert opened.returncode == -7, opened  # SIGBUS: what every C++ library's load gets here
    report = machine.check_json()
    [named] = [f for f in errors_of(report) if f["code"] == "CD409"]
    assert "SIGBUS" in named["detail"] and str(folder / "libgcc_s.so.1") in named["detail"], named
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if "CD409" in a["resolves"]]
    assert step["kind"] == "env" and set(codes(report)) & {"CD309"} <= set(step["resolves"]), step
    assert not [a for a in plan["actions"] if "CD309" in a["resolves"] and a["kind"] == "manual"], plan["actions"]
    after = check_after(machine, plan_lines(machine))
    assert not errors_of(after), after["findings"]


# --- --deep's cure of a temporary folder is classed as its data says (round sixteen's leftover: CD411 for CD417) ----

@pytest.mark.parametrize(("kind", "removed"), [("variable", ("TMP",)), ("variable", ("TMPDIR",)),
                                                ("variables", ("TMPDIR", "TMP")), ("variables", ("TEST_TMPDIR", "TMP"))])
def test_a_deep_cure_that_unset_a_temporary_folder_is_a_path_its_reader_cannot_use(kind: str,
                                                                                   removed: tuple[str, ...]) -> None:
    """Under --deep JAX failed with TMPDIR or TMP naming a folder it cannot write, and worked with it unset: the cure's
    class is the rows' (CD417, "a setting names a path its reader cannot use", as round sixteen's writer filed it),
    not a value the framework refuses (CD411). Variables of different classes together keep the old class."""
    from cudnn_doctor.model import EnvironmentCure
    from cudnn_doctor.rules.process_env import _cure_code

    cure = EnvironmentCure(kind, "unset " + " ".join(removed), tuple((name, "unset", "") for name in removed),
                           removed=removed, variable=removed[0] if kind == "variable" else None)
    assert _cure_code(cure) == "CD417", cure
    mixed = EnvironmentCure("variables", "unset both", (("TMP", "unset", ""), ("JAX_PLATFORMS", "unset", "")),
                            removed=("TMP", "JAX_PLATFORMS"))
    assert _cure_code(mixed) == "CD411"


# --- a framework's own wheel copy replaced by another release: its size is not the one its wheel's RECORD gives --------

def records_with_sizes(site: Path) -> None:
    """Each nvidia-* dist-info's RECORD as pip writes it: path, hash, size (the tests' wheels list path alone)."""
    for record in site.glob("nvidia_*.dist-info/RECORD"):
        lines = []
        for line in record.read_text().splitlines():
            path = line.split(",", 1)[0]
            size = (site / path).stat().st_size if (site / path).is_file() else ""
            lines.append(f"{path},sha256=-,{size}")
        record.write_text("\n".join(lines) + "\n")


@pytest.mark.integration
def test_another_release_copied_over_torchs_own_cublaslt_is_said_with_its_wheel(machine: Machine,
                                                                                tmp_path: Path) -> None:
    """cuBLASLt 13.0.2 (of another size) copied over torch's own wheel's 13.1 copy: torch maps its own path, so
    nothing on the loader's path differs and nothing was said. Its size is not the one the wheel's RECORD gives (a
    stat): the loading child runs, sees torch map that file answering 13.0.2: a warning that names the file, the
    release and the wheel, which the plan reinstalls. With every file of the size RECORD gives, nothing runs."""
    site = torch_cu13(machine, tmp_path)
    records_with_sizes(site)
    assert machine.check_json()["process"]["loads"] == []
    own = site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13"
    own.write_bytes(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2).read_bytes() + bytes(4096))
    report = machine.check_json()
    [warned] = [f for f in report["findings"] if f["subject"] == str(own)]
    assert warned["code"] == "CD203" and warned["severity"] == "warning", warned
    assert "13.0.2" in warned["detail"] and "RECORD" in warned["detail"] and "--deep" in warned["detail"], warned
    argv = pip_argv(machine.run("fix", "--json").json, "CD203")
    assert argv[-1] == "nvidia-cublas==13.1.0.3", argv


@pytest.mark.integration
def test_a_cut_copy_in_the_working_folders_nvidia_folder_is_what_python_c_opens(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    """Started in a folder holding nvidia/cu13/lib/libcublasLt.so.13 cut short (a build context with a half-copied
    wheel folder): `python -c`, the REPL and a script kept there put the working folder first on sys.path, and torch's
    code globs sys.path for its wheels' libraries: it opens that copy and dies (SIGBUS, seen in its loading child run
    with that folder first). Before: nothing. Now CD409, seen, naming the file and the folder; the plan sets
    PYTHONSAFEPATH=1 (Python then leaves the working folder off sys.path), and checked after it no error is left."""
    site = torch_cu13(machine, tmp_path)
    context = tmp_path / "build-context"
    lib = context / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    cut_in_half(site / "nvidia" / "cu13" / "lib" / "libcublasLt.so.13", lib / "libcublasLt.so.13")
    machine.cwd = context
    report = machine.check_json()
    [error] = [f for f in errors_of(report) if f["code"] == "CD409"]
    assert error["subject"] == str(lib / "libcublasLt.so.13") and "working folder" in error["detail"], error
    lines = plan_lines(machine)
    assert "export PYTHONSAFEPATH=1" in lines, lines
    after = check_after(machine, lines)
    assert "CD409" not in codes(after) and not errors_of(after), after["findings"]
    machine.cwd = tmp_path  # started elsewhere: python -c does not search that folder
    assert "CD409" not in codes(machine.check_json())


@pytest.mark.integration
def test_text_files_in_the_working_folders_nvidia_folder_start_nothing(machine: Machine, tmp_path: Path) -> None:
    """Git LFS pointers named like the CUDA wheel libraries in the working folder's nvidia/cu13/lib (round sixteen's
    s16-cwd-nvidia-cu13-text, which worked on the H100): torch's code swallows the loader's refusal and its
    libraries' RUNPATH find the wheels' own. No loading child, no finding about them."""
    torch_cu13(machine, tmp_path)
    lib = tmp_path / "context" / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    for name in ("libcublasLt.so.13", "libcublas.so.13", "libcudart.so.13", "libnvJitLink.so.13"):
        (lib / name).write_text(LFS_POINTER)
    machine.cwd = tmp_path / "context"
    report = machine.check_json()
    assert report["process"]["loads"] == [] and not errors_of(report), report["findings"]
