"""The libraries a program maps, asked of the loader (issue 45, round nine): the glibc-hwcaps subfolders it searches
first, names it never matches, a lone copy whose $ORIGIN holds nothing, a flag of the ELF header it may refuse, and
the C++ runtime it gives before the system's. The real cuDNN 9.19 wheel, torch's own loading code (tests/test_loading's
TORCH_INIT), gcc-built libraries; every error carries seen evidence, every plan line is sourced in bash and checked
again."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.real_wheels import real_cudnn
from tests.test_loading import bent_copy, torch_with_real_cudnn
from tests.test_process_env import check_after, finding, plan_lines

CUDNN_FINDINGS = {"CD304", "CD305", "CD307", "CD308", "CD309"}


def errors_of(report: dict) -> list[dict]:
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert all(f["evidence"] in ("seen", "rule") for f in errors), errors
    return errors


def searched_levels() -> tuple[str, ...]:
    """The glibc-hwcaps levels this machine's ld.so searches (its own --help), best first."""
    from cudnn_doctor.probes.hwcaps import searched_levels as asked

    return asked(dict(os.environ))


def hwcaps_folder(tmp_path: Path, machine: Machine) -> Path:
    """A folder first on LD_LIBRARY_PATH with a glibc-hwcaps subfolder of the lowest level ld.so searches here."""
    levels = searched_levels()
    if not levels:
        pytest.skip("this ld.so searches no glibc-hwcaps subfolder (glibc before 2.33)")
    folder = tmp_path / "x"
    level = folder / "glibc-hwcaps" / levels[-1]
    level.mkdir(parents=True)
    machine.add_library_path(folder)
    return level


# --- glibc-hwcaps subfolders ----------------------------------------------------------------------------------------

@pytest.mark.integration
def test_a_cut_short_graph_library_in_a_hwcaps_subfolder_is_the_one_the_loader_takes(machine: Machine,
                                                                                    tmp_path: Path) -> None:
    """The graph library cut short in FOLDER/glibc-hwcaps/LEVEL, FOLDER first on LD_LIBRARY_PATH and holding nothing
    else: ld.so takes it before torch's own (seen: the child dies of SIGBUS in it). The error names that file, not
    the wheel's, and fix takes FOLDER out; checked again, no cuDNN finding is left."""
    torch_with_real_cudnn(machine, tmp_path)
    level = hwcaps_folder(tmp_path, machine)
    data = (real_cudnn("9.19.0") / "lib" / "libcudnn_graph.so.9").read_bytes()
    (level / "libcudnn_graph.so.9").write_bytes(data[: len(data) // 2])
    report = machine.check_json()
    errors = errors_of(report)
    assert any(str(level / "libcudnn_graph.so.9") in (f.get("proof") or "") + f["detail"] for f in errors), errors
    assert not any("cache" in f["detail"] and "cudnn-doctor-tests" in f["detail"] for f in errors), errors
    lines = plan_lines(machine)
    assert any("LD_LIBRARY_PATH" in line for line in lines), lines
    assert not codes(check_after(machine, lines)) & CUDNN_FINDINGS


@pytest.mark.integration
def test_a_text_file_in_a_hwcaps_subfolder_is_refused_in_the_loaders_words(machine: Machine, tmp_path: Path) -> None:
    """A Git LFS pointer as FOLDER/glibc-hwcaps/LEVEL/libcudnn_ops.so.9: the loader stops at it, so torch's cuDNN
    answers SUBLIBRARY_UNAVAILABLE; the error quotes the loader refusing that file (not 'not beside it')."""
    torch_with_real_cudnn(machine, tmp_path)
    level = hwcaps_folder(tmp_path, machine)
    (level / "libcudnn_ops.so.9").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\n")
    report = machine.check_json()
    refused = finding(report, "CD308")  # the loader's words: the file is no library (invalid ELF header)
    assert refused["severity"] == "error" and refused["evidence"] == "seen", refused
    assert str(level / "libcudnn_ops.so.9") in refused["detail"], refused
    lines = plan_lines(machine)
    assert not codes(check_after(machine, lines)) & CUDNN_FINDINGS


# --- names the loader never matches ---------------------------------------------------------------------------------

def _rename_in_wheel(site: Path, name: str, new_name: str | None = None, link_to: str | None = None) -> Path:
    lib = site / "nvidia" / "cudnn" / "lib"
    (lib / name).unlink()
    if new_name is not None:
        (lib / new_name).symlink_to(real_cudnn("9.19.0") / "lib" / name)
    if link_to is not None:
        (lib / name).symlink_to(link_to)
    return lib


@pytest.mark.integration
@pytest.mark.parametrize(("name", "new_name", "link_to", "words"), [
    ("libcudnn_graph.so.9", "libcudnn_graph.so.9.0", None, "another name, which the loader is not asked for"),
    ("libcudnn_adv.so.9", "libcudnn_adv.so.9 ", None, "blanks in its name"),
    ("libcudnn_ops.so.9", None, "libcudnn_ops.so.9.19.0", "a link that ends nowhere"),
])
def test_a_sublibrary_under_a_name_the_loader_never_matches_is_missing(machine: Machine, tmp_path: Path, name: str,
                                                                       new_name: str | None, link_to: str | None,
                                                                       words: str) -> None:
    """The wheel's sub-library saved under a name the loader never takes for it (libcudnn_graph.so.9.0, a trailing
    blank) or as a link that ends nowhere: cuDNN does not find it (its front library aborts without the graph library:
    'Invalid handle'). Missing, seen, with where the loader looked and the file it passed over; never 'broken'."""
    site = torch_with_real_cudnn(machine, tmp_path)
    _rename_in_wheel(site, name, new_name, link_to)
    report = machine.check_json()
    missing = finding(report, "CD304")
    assert missing["severity"] == "error" and missing["evidence"] == "seen", missing
    assert name in missing["detail"] and words in missing["proof"], missing
    assert "CD308" not in codes(report), report["findings"]


# --- copies decided by their ELF header -----------------------------------------------------------------------------

@pytest.mark.integration
def test_a_lone_front_library_preloaded_finds_no_graph_library_beside_it(machine: Machine, tmp_path: Path) -> None:
    """libcudnn.so.9 copied alone into a folder and preloaded: its RUNPATH is $ORIGIN, which holds no sub-library,
    and its graph library is nowhere the loader looks from it; torch's symbols bind to it and cuDNN aborts. Missing,
    seen (not a broken graph library); fix unsets LD_PRELOAD, and checked again no cuDNN error is left."""
    torch_with_real_cudnn(machine, tmp_path)
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copyfile(real_cudnn("9.19.0") / "lib" / "libcudnn.so.9", lone / "libcudnn.so.9")
    machine.env["LD_PRELOAD"] = str(lone / "libcudnn.so.9")
    report = machine.check_json()
    missing = [f for f in errors_of(report) if f["code"] == "CD304"]
    assert missing and "libcudnn_graph.so.9" in missing[0]["detail"] and str(lone) in missing[0]["proof"], missing
    assert "CD308" not in codes(report), report["findings"]
    lines = plan_lines(machine)
    assert any("LD_PRELOAD" in line for line in lines), lines
    after = check_after(machine, lines)
    assert not [f for f in after["findings"] if f["severity"] == "error" and f["code"] in CUDNN_FINDINGS], after


def _with_exec_stack(source: Path, target: Path) -> None:
    """SOURCE copied to TARGET with its PT_GNU_STACK segment asking for an executable stack (what execstack -s does)."""
    data = bytearray(source.read_bytes())
    phoff = struct.unpack_from("<Q", data, 0x20)[0]
    size, count = struct.unpack_from("<HH", data, 0x36)
    for index in range(count):
        at = phoff + index * size
        if struct.unpack_from("<I", data, at)[0] == 0x6474E551:  # PT_GNU_STACK
            struct.pack_into("<I", data, at + 4, 7)  # PF_R | PF_W | PF_X
    target.write_bytes(bytes(data))


@pytest.mark.integration
def test_an_exec_stack_graph_library_is_judged_as_this_loader_judges_it(machine: Machine, tmp_path: Path) -> None:
    """A whole copy first on LD_LIBRARY_PATH whose graph library asks for an executable stack: glibc 2.41 and later
    refuse to dlopen it ('cannot enable executable stack'), older ones load it. Nothing is modelled: the child asks
    this machine's loader, and check says what it said (an error in its words, or nothing)."""
    torch_with_real_cudnn(machine, tmp_path)
    folder = bent_copy(tmp_path, "execstack", drop=("libcudnn_graph.so.9",))
    _with_exec_stack(real_cudnn("9.19.0") / "lib" / "libcudnn_graph.so.9", folder / "libcudnn_graph.so.9")
    machine.add_library_path(folder)
    probe = subprocess.run(["python3", "-c", f"import ctypes; ctypes.CDLL({str(folder / 'libcudnn_graph.so.9')!r})"],
                           capture_output=True, text=True, timeout=60)
    report = machine.check_json()
    if probe.returncode == 0:  # this glibc loads it: cuDNN works, and so says check
        assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]
    else:
        refused = finding(report, "CD307")
        assert refused["evidence"] == "seen" and "stack" in refused["detail"], refused


# --- the C++ runtime --------------------------------------------------------------------------------------------------

SYSTEM_CXX = next((p for p in ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib64/libstdc++.so.6",
                               "/usr/lib/aarch64-linux-gnu/libstdc++.so.6") if os.path.exists(p)), None)


def older_cxx_runtime(tmp_path: Path) -> Path:
    """This machine's libstdc++ as an older GCC's would be: the versions from GLIBCXX_3.4.26 on renamed (same length,
    so the loader finds no such version: what a GCC 8 runtime lacks), everything older kept (cuDNN needs 3.4.11)."""
    if SYSTEM_CXX is None or shutil.which("g++") is None:
        pytest.skip("needs this machine's libstdc++ and g++")
    folder = tmp_path / "oldcxx"
    folder.mkdir()
    data = re.sub(rb"GLIBCXX_3\.4\.(2[6-9]|3[0-9])\x00", lambda m: m.group(0).replace(b"GLIBCXX_3", b"GLIBCXX_9"),
                  Path(SYSTEM_CXX).read_bytes())
    (folder / "libstdc++.so.6").write_bytes(data)
    return folder


def torch_cxx_library(site: Path) -> Path:
    """torch/lib/libc10.so built by g++ from C++ that streams a string: it needs GLIBCXX_3.4.26 (or later) of the
    C++ runtime, as every torch library does."""
    source = site.parent / "c10.cc"
    source.write_text('#include <sstream>\n#include <string>\n'
                      'extern "C" int c10_marker(int n) { std::ostringstream s; s << n; return (int)s.str().size(); }\n')
    target = site / "torch" / "lib" / "libc10.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-o", str(target), str(source)], check=True, capture_output=True)
    return target


@pytest.mark.integration
@pytest.mark.parametrize("how", ["LD_LIBRARY_PATH", "LD_PRELOAD"])
def test_an_older_cxx_runtime_given_first_breaks_the_frameworks_library(machine: Machine, tmp_path: Path,
                                                                       how: str) -> None:
    """An older libstdc++.so.6 first on LD_LIBRARY_PATH, or preloaded: cuDNN loads with it (it needs 3.4.11), torch's
    own library does not ('version `GLIBCXX_3.4.26' not found'). The loader says so (ld.so --list in a child): CD409,
    seen, in its words; fix takes the folder or the entry out, and checked again nothing is left."""
    site = torch_with_real_cudnn(machine, tmp_path)
    library = torch_cxx_library(site)
    folder = older_cxx_runtime(tmp_path)
    if how == "LD_PRELOAD":
        machine.env["LD_PRELOAD"] = str(folder / "libstdc++.so.6")
    else:
        machine.add_library_path(folder)
    report = machine.check_json()
    refused = next(f for f in errors_of(report) if f["code"] == "CD409" and f["subject"] == str(library))
    assert "GLIBCXX_3.4.2" in refused["proof"] and "not found" in refused["proof"], refused
    assert str(folder / "libstdc++.so.6") in refused["detail"] and how in refused["detail"], refused
    lines = plan_lines(machine)
    assert any(how in line for line in lines), lines
    assert "CD409" not in codes(check_after(machine, lines))


@pytest.mark.integration
def test_the_systems_own_cxx_runtime_on_the_path_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    """This machine's own libstdc++ copied into a folder first on LD_LIBRARY_PATH: it has every version torch's
    library needs; it is read, the loader is not asked, and nothing is said."""
    site = torch_with_real_cudnn(machine, tmp_path)
    torch_cxx_library(site)
    if SYSTEM_CXX is None:
        pytest.skip("needs this machine's libstdc++")
    folder = tmp_path / "syscxx"
    folder.mkdir()
    shutil.copyfile(SYSTEM_CXX, folder / "libstdc++.so.6")
    machine.add_library_path(folder)
    report = machine.check_json()
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]
    assert "CD409" not in codes(report)


def test_the_versions_a_library_defines_are_read_from_its_header() -> None:
    """DT_VERDEF as the loader reads it: this machine's libstdc++ defines GLIBCXX_3.4 and CXXABI_1.3 (and its soname
    as the base version); a library that defines none reads as none."""
    from cudnn_doctor.elf import read_elf

    if SYSTEM_CXX is None:
        pytest.skip("needs this machine's libstdc++")
    defined = read_elf(SYSTEM_CXX).version_defs
    assert "GLIBCXX_3.4" in defined and "CXXABI_1.3" in defined and defined[0] == "libstdc++.so.6", defined
    from tests.fakes.build import compile_library

    assert read_elf(str(compile_library("fake_cuda_library.c", "libnvJitLink.so"))).version_defs == ()


@pytest.mark.integration
def test_a_copy_stripped_of_its_section_headers_is_whole(machine: Machine, tmp_path: Path) -> None:
    """A whole copy first on LD_LIBRARY_PATH whose files have no section headers at all (e_shoff 0: sstrip, or
    strip --strip-section-headers): the loader needs none and loads every file; nothing calls it truncated."""
    torch_with_real_cudnn(machine, tmp_path)
    folder = tmp_path / "sstripped"
    folder.mkdir()
    for library in (real_cudnn("9.19.0") / "lib").iterdir():
        shutil.copyfile(library, folder / library.name)  # by the kernel, not through Python's bytes (480 MB)
        with (folder / library.name).open("r+b") as copy:
            copy.seek(0x28)
            copy.write(struct.pack("<Q", 0))  # e_shoff
            copy.seek(0x3A)
            copy.write(struct.pack("<HHH", 0, 0, 0))  # e_shentsize, e_shnum, e_shstrndx
    machine.add_library_path(folder)
    report = machine.check_json()
    assert not codes(report) & {"CD307", "CD308", "CD309", "CD319"}, report["findings"]
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


# --- fix verifies its lines on a torch that loads as the real one ------------------------------------------------------

@pytest.mark.integration
@pytest.mark.parametrize("case", ["hwcaps", "lone front", "older runtime"])
def test_fix_verifies_its_line_on_torchs_own_work(machine: Machine, tmp_path: Path, case: str) -> None:
    """A torch whose import loads cuDNN as torch does and its own C++ library (torch/lib/libc10.so), and whose first
    convolution runs cuDNN's version checks (tests/test_loading's LOADING_TORCH): fix runs it with the plan's line
    before printing it, and the line that takes the loader's culprit away is verified here."""
    from tests.test_loading import LOADING_TORCH

    site = torch_with_real_cudnn(machine, tmp_path)
    torch_cxx_library(site)
    (site / "torch" / "__init__.py").write_text(
        "import os as _os\nimport ctypes as _ctypes\n"
        "_ctypes.CDLL(_os.path.join(_os.path.dirname(__file__), 'lib', 'libc10.so'))\n" + LOADING_TORCH)
    if case == "hwcaps":
        level = hwcaps_folder(tmp_path, machine)
        data = (real_cudnn("9.19.0") / "lib" / "libcudnn_graph.so.9").read_bytes()
        (level / "libcudnn_graph.so.9").write_bytes(data[: len(data) // 2])
    elif case == "lone front":
        lone = tmp_path / "lone"
        lone.mkdir()
        shutil.copyfile(real_cudnn("9.19.0") / "lib" / "libcudnn.so.9", lone / "libcudnn.so.9")
        machine.env["LD_PRELOAD"] = str(lone / "libcudnn.so.9")
    else:
        machine.add_library_path(older_cxx_runtime(tmp_path))
    report = machine.check_json()
    assert errors_of(report), report["findings"]
    plan = machine.run("fix", "--json").json
    steps = [a for a in plan["actions"] if a["kind"] == "env"]
    assert steps and steps[0]["verified"].startswith("verified here"), plan["actions"]


# --- the pieces, without a command ------------------------------------------------------------------------------------

def test_the_loaders_culprit_is_the_last_file_its_words_name(tmp_path: Path) -> None:
    """'A: B: C: reason': C is the file the loader refused (A needed B, which needed C). It is taken out only where
    LD_LIBRARY_PATH (or its glibc-hwcaps subfolder) or LD_PRELOAD gave it; a culprit of the system's own is not ours."""
    from cudnn_doctor.model import Host, ProcessView, Report, Tool
    from cudnn_doctor.plan.process_env import loader_named

    old, wheel = tmp_path / "old", tmp_path / "wheel"
    (old / "glibc-hwcaps" / "x86-64-v3").mkdir(parents=True)
    wheel.mkdir()
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.11", "h"),
                    ld_library_path=[str(wheel), str(old)], ld_library_path_real=[str(wheel), str(old)],
                    process=ProcessView(preload=(str(tmp_path / "pre" / "libgcc_s.so.1"),)))
    words = (f"{wheel}/libcudnn.so.9: {old}/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
             f"{wheel}/libcudnn.so.9)")
    assert loader_named(words, report) == ("LD_LIBRARY_PATH", str(old), f"{old}/libstdc++.so.6")
    hwcaps = f"{old}/glibc-hwcaps/x86-64-v3/libz.so.1"
    assert loader_named(f"{hwcaps}: file too short", report) == ("LD_LIBRARY_PATH", str(old), hwcaps)
    preloaded = str(tmp_path / "pre" / "libgcc_s.so.1")
    assert loader_named(f"{wheel}/x.so: {preloaded}: version `GCC_12.0.0' not found", report)[:2] == (
        "LD_PRELOAD", preloaded)
    system = "/usr/lib/x86_64-linux-gnu/libz.so.1"
    assert loader_named(f"{wheel}/libcudnn_graph.so.9: {system}: version `ZLIB_9' not found", report) is None
    assert loader_named("libcudnn_ops.so.9: cannot open shared object file: No such file or directory", report) is None


def test_files_the_loader_never_takes_for_a_name_are_named(tmp_path: Path) -> None:
    """The loading child's words for a sub-library no folder holds: a link of its name to nowhere, the name with a
    blank, another case, more version after it; a file of the very name is no near miss."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("load_jobs", Path(__file__).parents[1] / "cudnn_doctor"
                                                  / "_load_jobs.py")
    assert spec and spec.loader
    child = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(child)
    (tmp_path / "libcudnn_graph.so.9.0").write_bytes(b"")
    (tmp_path / "libcudnn_ops.so.9 ").write_bytes(b"")
    (tmp_path / "libcudnn_adv.so.9").symlink_to("libcudnn_adv.so.9.19.0")
    (tmp_path / "LIBCUDNN_CNN.so.9").write_bytes(b"")
    (tmp_path / "libcudnn_heuristic.so.9").write_bytes(b"")
    assert "another name" in child.near_misses("libcudnn_graph.so.9", [str(tmp_path)])
    assert "blanks" in child.near_misses("libcudnn_ops.so.9", [str(tmp_path)])
    assert "ends nowhere (-> libcudnn_adv.so.9.19.0)" in child.near_misses("libcudnn_adv.so.9", [str(tmp_path)])
    assert "case" in child.near_misses("libcudnn_cnn.so.9", [str(tmp_path)])
    assert child.near_misses("libcudnn_heuristic.so.9", [str(tmp_path)]) == ""
    assert child.with_levels([str(tmp_path)]) == [str(tmp_path)]  # no glibc-hwcaps subfolder: ld.so is not asked


@pytest.mark.integration
def test_a_torch_without_a_cudnn_wheel_is_no_loading_error(machine: Machine, tmp_path: Path) -> None:
    """torch's own loading code finds no nvidia/cudnn wheel (a torch that takes the system's cuDNN through its
    RUNPATH; its _preload_cuda_lib raises ValueError, which its import never reaches): that is not the loader refusing
    anything, and no error is said of it."""
    site = torch_with_real_cudnn(machine, tmp_path)
    shutil.rmtree(site / "nvidia" / "cudnn")
    machine.add_library_path(bent_copy(tmp_path, "whole"))
    report = machine.check_json()
    assert "CD409" not in codes(report), report["findings"]
