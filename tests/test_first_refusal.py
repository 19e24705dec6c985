"""The error names the first thing that refused, and only what refused is an error (issue 45, round twenty, k26).

Copies of the real cuDNN 9.19 wheel's sub-libraries whose ELF identification bytes were changed, as a patching tool or
a bad transfer leaves a user's copy (the magic, class and machine stay right): glibc's loader refuses some values in
its own words and ends its search there, and takes others (benchmarks/held_out/round19/scenarios45.py, section 7).
torch's own loading code (tests/test_loading's TORCH_INIT) loads the wheel's front library; every error carries seen
evidence; every plan line is sourced in bash and checked again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import compile_library
from tests.real_wheels import real_cudnn
from tests.test_loading import torch_with_real_cudnn
from tests.test_process_env import check_after, finding, plan_lines

EI_DATA, EI_VERSION, EI_OSABI, EI_PAD = 5, 6, 7, 9
ELFOSABI_GNU, ELFOSABI_FREEBSD = 3, 9
CUDNN_ERRORS = {"CD304", "CD305", "CD307", "CD308", "CD309"}


def patched_copy(name: str, folder: Path, offset: int, value: int) -> Path:
    """The real wheel's NAME copied into FOLDER with byte OFFSET of its ELF identification set to VALUE."""
    data = bytearray((real_cudnn("9.19.0") / "lib" / name).read_bytes())
    data[offset] = value
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(bytes(data))
    return folder / name


def errors_of(report: dict) -> list[dict]:
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert all(f["evidence"] in ("seen", "rule") for f in errors), errors
    return errors


@pytest.mark.integration
@pytest.mark.parametrize(("offset", "value", "words"), [
    (EI_OSABI, ELFOSABI_FREEBSD, "ELF file OS ABI invalid"),
    (EI_DATA, 2, "ELF file data encoding not little-endian"),
    (EI_VERSION, 2, "ELF file version ident does not match current one"),
], ids=["os-abi-freebsd", "big-endian", "version-ident"])
def test_a_graph_library_the_loader_refuses_is_named_by_its_refusal(machine: Machine, tmp_path: Path, offset: int,
                                                                   value: int, words: str) -> None:
    """The graph library with an identification byte the loader refuses, alone in a folder first on LD_LIBRARY_PATH:
    the loader's own words name the file and why (was CD307, 'fails to load', the refusal's words read as no kind);
    the error is CD308, the file is no library for this machine, and fix takes the folder out."""
    torch_with_real_cudnn(machine, tmp_path)
    bad = patched_copy("libcudnn_graph.so.9", tmp_path / "where", offset, value)
    machine.add_library_path(bad.parent)
    report = machine.run("check", "--json").json
    errors = errors_of(report)
    assert {f["code"] for f in errors} & CUDNN_ERRORS == {"CD308"}, errors
    made = finding(report, "CD308")
    assert made["evidence"] == "seen" and words in made["detail"] and str(bad) in made["detail"], made
    lines = plan_lines(machine)
    assert lines and not any(str(bad.parent) in line for line in lines), lines  # the folder out of the path
    after = check_after(machine, lines)
    assert not codes(after) & CUDNN_ERRORS, after["findings"]


@pytest.mark.integration
def test_a_heuristics_library_the_loader_refuses_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    """libcudnn_heuristic.so.9 with a nonzero byte in the identification's padding, alone first on LD_LIBRARY_PATH:
    the loader refuses it ('nonzero padding in e_ident') and cuDNN's graph library goes on without it (on an H100
    torch's convolution and LSTM and JAX's convolution ran: round nineteen's s19-heuristic-ident-padding, where plain
    check raised a false error, CD307). A warning with the loader's words, no error."""
    torch_with_real_cudnn(machine, tmp_path)
    bad = patched_copy("libcudnn_heuristic.so.9", tmp_path / "where", EI_PAD, 1)
    machine.add_library_path(bad.parent)
    report = machine.run("check", "--json").json
    assert not errors_of(report), report["findings"]
    made = finding(report, "CD319")
    assert made["severity"] == "warning" and made["evidence"] == "seen", made
    assert "nonzero padding in e_ident" in made["detail"] and str(bad) in made["detail"], made


def other_release_folder(folder: Path, release: str = "9.14.0") -> Path:
    """The engine libraries of another cuDNN release, as a system copy holds them (NAME.so.9 -> NAME.so.RELEASE): each
    needs a symbol this release's graph library does not define, so the loader refuses it beside 9.19's."""
    folder.mkdir()
    for stem in ("libcudnn_heuristic", "libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled"):
        built = compile_library("fake_cudnn_other_release.c", f"{stem}.so.{release}", soname=f"{stem}.so.9")
        (folder / f"{stem}.so.{release}").write_bytes(built.read_bytes())
        os.symlink(f"{stem}.so.{release}", folder / f"{stem}.so.9")
    return folder


@pytest.mark.integration
def test_a_graph_library_the_loader_takes_away_from_its_files_leads_the_chain(machine: Machine, tmp_path: Path) -> None:
    """The graph library with its OS-ABI byte set to GNU/Linux, which the loader takes, alone in a folder first on
    LD_LIBRARY_PATH, and another release's engine libraries in a folder after it (on the H100 the system's 9.14, from
    the loader's cache): the graph library opens its engines from its own folder, then by name, and meets 9.14's,
    which the loader refuses ('undefined symbol'). On an H100 torch and JAX failed with
    CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED and plain check said CD307 twice (round nineteen's s19-graph-osabi-gnu).
    The error is the mix of releases (CD305, seen: the loader's words), it names the graph library the chain started
    from, the file's bytes alone are no error, and fix takes both folders out."""
    torch_with_real_cudnn(machine, tmp_path)
    graph = patched_copy("libcudnn_graph.so.9", tmp_path / "where", EI_OSABI, ELFOSABI_GNU)
    old = other_release_folder(tmp_path / "old")
    machine.add_library_path(old)
    machine.add_library_path(graph.parent)
    report = machine.run("check", "--json").json
    errors = errors_of(report)
    assert {f["code"] for f in errors} & CUDNN_ERRORS == {"CD305"}, errors
    made = finding(report, "CD305")
    assert made["evidence"] == "seen" and "9.14.0" in made["detail"] and "undefined symbol" in made["detail"], made
    assert str(graph) in made["detail"], made
    lines = plan_lines(machine)
    assert lines and not any(str(graph.parent) in line or str(old) in line for line in lines), lines
    after = check_after(machine, lines)
    assert not codes(after) & CUDNN_ERRORS, after["findings"]


@pytest.mark.integration
def test_a_refused_graph_library_leads_what_follows_from_it(machine: Machine, tmp_path: Path) -> None:
    """The graph library with its OS-ABI byte set to FreeBSD first on LD_LIBRARY_PATH, and a folder after it whose
    libcudnn_graph.so (the bare name) is the wheel's own: the loader refuses the first file cuDNN asks for, and cuDNN's
    front library goes on with the bare name, whose folder ($ORIGIN) holds none of its engines: torch's work would
    fail there. On an H100 the copy cuDNN went on with was the system's 9.14, and plain check named its
    consequences (torch's version refusal CD408, a front library answering 9.14 CD305) and not the refused file
    (round nineteen's s19-graph-osabi-freebsd). The refusal is the one error (CD308, seen, the loader's words); the
    missing engines follow from it (warnings that say so); the plan's one step takes the refused file's folder out,
    and resolves them all."""
    torch_with_real_cudnn(machine, tmp_path)
    bad = patched_copy("libcudnn_graph.so.9", tmp_path / "where", EI_OSABI, ELFOSABI_FREEBSD)
    other = tmp_path / "other"
    other.mkdir()
    (other / "libcudnn_graph.so").symlink_to(real_cudnn("9.19.0") / "lib" / "libcudnn_graph.so.9")
    machine.add_library_path(other)
    machine.add_library_path(bad.parent)
    report = machine.run("check", "--json").json
    errors = errors_of(report)
    assert [f["code"] for f in errors if f["code"] in CUDNN_ERRORS] == ["CD308"], errors
    root = finding(report, "CD308")
    assert str(bad) in root["detail"] and "ELF file OS ABI invalid" in root["detail"], root
    following = [f for f in report["findings"] if f["detail"].startswith(f"Follows from the loader's refusal of {bad}")]
    assert following and all(f["severity"] == "warning" for f in following), report["findings"]
    plan = machine.run("fix", "--json").json
    step = next(a for a in plan["actions"] if "CD308" in a["resolves"])
    assert {f["code"] for f in following} <= set(step["resolves"]), plan["actions"]
    lines = plan_lines(machine)
    assert lines and not any(str(bad.parent) in line for line in lines), lines
    after = check_after(machine, lines)
    assert not codes(after) & CUDNN_ERRORS, after["findings"]


def refusal_only_warned(report: dict, bad: Path) -> None:  # type: ignore[type-arg]
    """The loader's refusal of BAD (OS ABI) is one CD308 warning, seen, and no cuDNN error stands beside it."""
    assert not [f for f in errors_of(report) if f["code"] in CUDNN_ERRORS], report["findings"]
    said = finding(report, "CD308")
    assert said["severity"] == "warning" and said["evidence"] == "seen", said
    assert str(bad) in said["detail"] and "ELF file OS ABI invalid" in said["detail"], said

@pytest.mark.integration
def test_a_refused_file_nothing_follows_from_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    """The same refused graph library first on LD_LIBRARY_PATH, and after it a folder whose libcudnn_graph.so is a
    whole copy of the wheel's with its engine libraries beside it: cuDNN goes on with that copy and finds its engines
    there. The refusal is said (the loader's words, seen), as a warning: nothing that follows from it fails."""
    torch_with_real_cudnn(machine, tmp_path)
    bad = patched_copy("libcudnn_graph.so.9", tmp_path / "where", EI_OSABI, ELFOSABI_FREEBSD)
    other = tmp_path / "other"
    other.mkdir()
    lib = real_cudnn("9.19.0") / "lib"
    (other / "libcudnn_graph.so").write_bytes((lib / "libcudnn_graph.so.9").read_bytes())
    for stem in ("libcudnn_heuristic", "libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled"):
        (other / f"{stem}.so.9").symlink_to(lib / f"{stem}.so.9")
    machine.add_library_path(other)
    machine.add_library_path(bad.parent)
    report = machine.run("check", "--json").json
    refusal_only_warned(report, bad)


@pytest.mark.parametrize(("words", "code"), [
    ("OSError: /opt/lib/libcudnn_graph.so.9: ELF file OS ABI invalid", "CD308"),
    ("/home/me/lib/libcudnn_heuristic.so.9: nonzero padding in e_ident", "CD308"),
    ("libcudnn_ops.so.9: ELF file version ident does not match current one", "CD308"),
    ("/home/me/lib/libnvidia-ml.so.1: ELF file data encoding not little-endian", "CD118"),
    ("/home/me/lib/libnvidia-ml.so.1: file too short", "CD118"),
], ids=["graph-os-abi", "heuristic-padding", "ops-version-ident", "nvml-big-endian", "nvml-cut"])
def test_explain_reads_the_loaders_refusal_as_check_does(machine: Machine, words: str, code: str) -> None:
    """The loader's own words refusing a file, pasted: the same rows (compat/libraries.toml [[failure]]) name the
    cause of the library's kind, a cuDNN file that is no library for this machine (CD308), an NVML on the path that
    is not the driver's (CD118, the library's refused_finding), where explain named nothing or the driver's start."""
    answer = machine.run("explain", "--json", "--offline-only", words).json
    assert [match["code"] for match in answer["matches"]][:1] == [code], answer["matches"]


def test_a_refusal_named_inside_another_sub_librarys_words_leads_the_chain() -> None:
    """Round nineteen's s19-graph-osabi-freebsd as the H100's loading child reported it: the front library of the wheel
    answered 9.14 (cuDNN took the system's graph library under its bare name after the loader refused the one first on
    the path), libcudnn_cnn.so.9 was refused with words naming that graph file, and the rules said CD305 and CD408
    (errors) and CD319 (a warning). The chain's rule reads the refused graph file from the cnn library's words: CD308
    is the one error, the others follow from it."""
    from cudnn_doctor.codes import finding as made
    from cudnn_doctor.model import Host, LoadedCudnn, ProcessView, Report, SubLibrary, Tool
    from cudnn_doctor.rules.chains import first_refusal

    wheel = "/opt/venv/lib/python3.12/site-packages/nvidia/cudnn/lib"
    graph = "/home/me/where/libcudnn_graph.so.9"
    said = (f"torch: cudnnCnnVersionCheck -> the loader refuses {wheel}/libcudnn_cnn.so.9: {graph}: ELF file OS ABI "
            "invalid (CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)")
    cnn = SubLibrary("libcudnn_cnn.so.9", f"{wheel}/libcudnn_cnn.so.9", "9.19.0",
                     f"not loadable: {said.split(' -> the loader refuses ', 1)[1]}", rarely_used=True, seen=said)
    loaded = LoadedCudnn("torch", f"{wheel}/libcudnn.so.9", "9.14.0", "RUNPATH", (cnn,), None, f"{wheel}/libcudnn.so.9",
                         observed=True)
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.12", "node"),
                    process=ProcessView(cudnn=(loaded,)))
    front = f"{wheel}/libcudnn.so.9"
    findings = [made("CD305", subject=front, library=front, version="9.14.0", mismatched="libcudnn_ops.so.9"),
                made("CD408", subject=front, framework="PyTorch", framework_version="2.11.0", expected="9.19.0",
                     found="9.14.0"),
                made("CD319", subject=cnn.path, framework="torch", library=front, version="9.14.0",
                     sublibrary="libcudnn_cnn.so.9", problem="is not loadable", why="only the legacy API loads it",
                     loaded_library=front)]
    out = first_refusal(report, findings)
    errors = [f for f in out if f.severity == "error"]
    assert [(f.code, f.values.get("sublibrary_file")) for f in errors] == [("CD308", graph)], out
    assert errors[0].evidence == "seen" and "ELF file OS ABI invalid" in errors[0].detail
    following = [f for f in out if f.values.get("follows") == f"CD308 {graph}"]
    assert {f.code for f in following} == {"CD305", "CD408", "CD319"}, out
    assert all(f.severity == "warning" and f.detail.startswith(f"Follows from the loader's refusal of {graph}")
               for f in following)


@pytest.mark.integration
def test_a_front_library_refused_by_name_is_an_error_only_for_whom_it_fails(machine: Machine, tmp_path: Path) -> None:
    """The wheel's libcudnn.so.9 with its OS-ABI byte set to FreeBSD, alone first on LD_LIBRARY_PATH: the loader
    refuses it to a program that opens cuDNN by name, while torch's own code loads its wheel's copy by full path. One
    finding, CD308 with the loader's words, a warning (torch is not hit); the copy's own load was a second error
    (CD307) from the same refusal."""
    torch_with_real_cudnn(machine, tmp_path)
    bad = patched_copy("libcudnn.so.9", tmp_path / "where", EI_OSABI, ELFOSABI_FREEBSD)
    machine.add_library_path(bad.parent)
    report = machine.run("check", "--json").json
    refusal_only_warned(report, bad)


def test_a_copy_wholly_of_another_release_is_a_cause_of_its_own() -> None:
    """The same refusal inside another sub-library's words, in a copy whose front library and sub-libraries are all
    9.14: no other release came in by the refusal, so torch's refusal of 9.14 (CD408) stays an error of its own; the
    sub-library's own finding still follows from the refusal, which is a warning as what follows from it is (the
    legacy API's library)."""
    from cudnn_doctor.codes import finding as made
    from cudnn_doctor.model import Host, LoadedCudnn, ProcessView, Report, SubLibrary, Tool
    from cudnn_doctor.rules.chains import first_refusal

    system = "/usr/lib/x86_64-linux-gnu"
    graph = "/home/me/where/libcudnn_graph.so.9"
    said = (f"torch: cudnnCnnVersionCheck -> the loader refuses {system}/libcudnn_cnn.so.9: {graph}: ELF file OS ABI "
            "invalid (CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)")
    cnn = SubLibrary("libcudnn_cnn.so.9", f"{system}/libcudnn_cnn.so.9", "9.14.0",
                     f"not loadable: {said.split(' -> the loader refuses ', 1)[1]}", rarely_used=True, seen=said)
    front = f"{system}/libcudnn.so.9"
    loaded = LoadedCudnn("torch", front, "9.14.0", "the loader's cache or a system folder", (cnn,), None, front,
                         observed=True)
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.12", "node"),
                    process=ProcessView(cudnn=(loaded,)))
    findings = [made("CD408", subject=front, framework="PyTorch", framework_version="2.11.0", expected="9.19.0",
                     found="9.14.0"),
                made("CD319", subject=cnn.path, framework="torch", library=front, version="9.14.0",
                     sublibrary="libcudnn_cnn.so.9", problem="is not loadable", why="only the legacy API loads it",
                     loaded_library=front)]
    out = {f.code: f for f in first_refusal(report, findings)}
    assert out["CD408"].severity == "error" and not out["CD408"].values.get("follows"), out
    assert out["CD319"].values.get("follows") == f"CD308 {graph}" and out["CD308"].severity == "warning", out
