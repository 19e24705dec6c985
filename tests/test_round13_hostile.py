"""Round thirteen's red-team (issue 43, r17) over the surfaces added in the last two rounds: the CUDA-library loading
children of check (probes/loading, _load_child), the settings read from the environment (XLA_FLAGS as XLA itself
splits it, each flag asked alone), the --deep child and its answer channel. Each test failed before its fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.fakes.build import fake_cuda_math
from tests.test_frameworks import install_torch, python_env, real_python_sees

# --- the loading children ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("pin", ["nvidia-cudnn-cu12==9x.1", "nvidia-cudnn-cu12==9\u0661.1", "nvidia-cudnn-cu12==9-1"])
def test_a_cudnn_pin_that_is_no_version_starts_the_loading_child_without_an_internal_error(
        machine_in_process: Machine, tmp_path: Path, pin: str) -> None:
    """torch's METADATA pins its cuDNN wheel at a release that begins with a digit and goes on otherwise, no cuDNN
    file resolved, LD_PRELOAD set (the loading children start): before, int('9x') ended check with exit 3."""
    machine = machine_in_process
    site = python_env(machine, tmp_path)
    install_torch(site, pin=pin)
    shutil.rmtree(site / "nvidia")
    (site / "torch" / "__init__.py").write_text("def _preload_cuda_deps(lib_folder, lib_name):\n    pass\n")
    real_python_sees(site, tmp_path)
    machine.env["LD_PRELOAD"] = "libm.so.6"
    report = machine.check_json()
    assert report["summary"]["exit_code"] != 3 and not [f for f in report["findings"] if f["code"] == "CD902"]
    [torch] = report["frameworks"]
    assert torch["cudnn_expected"] == pin.split("==")[1]
    # a pin pip refuses (packaging 26: 'Invalid specifier') is never a line to run; a post-release (9-1) is one
    run = [a["argv"] for a in report["plan"]["actions"] if a.get("argv") and pin in a["argv"]]
    assert bool(run) == (pin.endswith("9-1")), report["plan"]["actions"]


@pytest.mark.parametrize("folder", ["cu\tda/lib", "cu\\tda/lib", "lib\t\tx", "tab\\"])
def test_a_tab_or_backslash_in_a_library_folder_reaches_the_loading_childs_answer_whole(
        machine_in_process: Machine, tmp_path: Path, folder: str) -> None:
    """A CUDA library found in an LD_LIBRARY_PATH folder whose name holds a tab (or a backslash before a t): the
    loading child's line for it has its fields separated by tabs, so before, the path was cut at its tab and the rest
    read as the loader's words: a false CD203 'failed to load' naming a folder that does not exist."""
    machine = machine_in_process
    other = tmp_path / folder
    other.mkdir(parents=True)
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2), other / "libcublasLt.so.13")
    machine.add_library_path(other)
    report = machine.check_json()
    [seen] = [load for load in report["process"]["loads"] if load["user"] == "ld.so"]
    [library] = seen["libraries"]
    assert library["path"] == str(other / "libcublasLt.so.13") and library["said"] == "ok", library
    assert library["via"] == "LD_LIBRARY_PATH" and library["version"] == "13.0.2", library
    assert not [f for f in report["findings"] if f["code"] == "CD203"], report["findings"]


# --- XLA_FLAGS as XLA splits it ------------------------------------------------------------------------------------
# openxla/xla@001918b7 xla/parse_flags_from_env.cc (ParseArgvFromString): white space is " \t\r\n" only; a value in
# quotes is whole; parsing stops at the first entry that does not begin with '-'. The real jaxlib 0.4.38 (CPU) ran its
# first compilation with each of these (benchmarks/README.md, round thirteen): none of the words after a stop, after a
# no-break space or a vertical tab, or inside quotes, is a flag of its own.

@pytest.mark.parametrize(("value", "flags"), [
    ('--xla_dump_to="/tmp/my  dumps" --xla_b=1', [("xla_dump_to", '--xla_dump_to="/tmp/my  dumps"', "/tmp/my  dumps"),
                                                ("xla_b", "--xla_b=1", "1")]),
    ("--xla_a=1 junk --xla_never=2", [("xla_a", "--xla_a=1", "1")]),
    ("--xla_a=1\u00a0--xla_b=2", [("xla_a", "--xla_a=1\u00a0--xla_b=2", "1\u00a0--xla_b=2")]),
    ("--xla_a=1\v--xla_b=2\x1c--xla_c", [("xla_a", "--xla_a=1\v--xla_b=2\x1c--xla_c", "1\v--xla_b=2\x1c--xla_c")]),
    ("\r\n\t--xla_a='x\\ y'\t--xla_b=\"q\\\"r\"", [("xla_a", "--xla_a='x\\ y'", "x\\ y"),
                                                 ("xla_b", '--xla_b="q\\"r"', 'q"r')]),
    ("/etc/xla_flags --xla_a=1", []),  # a file's name: its flags are in the file
    ("--xla_a --xla_b=", [("xla_a", "--xla_a", None), ("xla_b", "--xla_b=", "")]),
])
def test_xla_flags_are_split_as_xla_splits_them(value: str, flags: list[tuple[str, str, str | None]]) -> None:
    from cudnn_doctor.variables import xla_flag_values

    assert xla_flag_values(value) == flags


def test_a_quoted_xla_path_with_blanks_and_a_flag_xla_never_reads_are_no_path_problem(tmp_path: Path) -> None:
    """Before, '--flag="/a b/results.txt"' was read as the path '"/a' (does not exist), and a flag after an entry XLA
    stops at was judged though XLA never reads it."""
    from cudnn_doctor.probes.settings import xla_path_problems

    results = tmp_path / "my  results" / "autotune.txtpb"
    results.parent.mkdir()
    results.write_text("version: 3\n")
    load = "--xla_gpu_load_autotune_results_from"
    assert xla_path_problems(f'{load}="{results}"') == []
    assert xla_path_problems(f"--xla_dump_to=/tmp stop {load}={tmp_path}/missing.txt") == []
    [(flag, why)] = xla_path_problems(f"{load}='{tmp_path}/missing  results.txt'")
    assert flag == "xla_gpu_load_autotune_results_from" and "missing  results.txt" in why, why


def test_the_fix_for_xla_flags_keeps_each_other_flag_as_written(machine_in_process: Machine, tmp_path: Path) -> None:
    """XLA_FLAGS with a quoted folder holding two blanks and a results file that does not exist: the fix's new value
    takes the one flag out and keeps the quoted one as written (before: split at every blank and joined with one,
    '/tmp/a  b' became '"/tmp/a b"', another folder)."""
    from tests.test_process_env import gpu_machine, jax_install

    machine = machine_in_process
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    dumps = tmp_path / "my  dumps"
    dumps.mkdir()
    machine.env["XLA_FLAGS"] = (f'--xla_dump_to="{dumps}"  --xla_gpu_load_autotune_results_from={tmp_path}/none.txt'
                                "\t--xla_gpu_autotune_level=4")
    report = machine.check_json()
    [made] = [f for f in report["findings"] if f["code"] == "CD411" and f["subject"] == "XLA_FLAGS"]
    kept = f'--xla_dump_to="{dumps}" --xla_gpu_autotune_level=4'
    [line] = [a["text"] for a in report["plan"]["actions"] if "CD411" in a["resolves"]]
    assert line == f"export XLA_FLAGS='{kept}'", (line, made)


def test_a_loading_child_killed_inside_a_line_leaves_no_half_line_read_as_whole() -> None:
    """The child's lines reach the answer channel whole only up to the pipe's atomic 4096 bytes; killed inside a longer
    write (its deadline, the OOM killer), the channel ends in half a line. Before, 'version\\t91' (of 91900) was read
    as cuDNN 0.0.91, and a 'lib' line cut after its path as the loader's words."""
    from cudnn_doctor.probes.loading import MARK, parse_answer

    lines = [b"start\tld.so", b"front\t/opt/cudnn/libcudnn.so.9", b"check-start\tcudnnGetVersion", b"version\t91"]
    data = b"\n".join(MARK + line for line in lines)
    seen = parse_answer("ld.so", None, data, -9, False, None)
    assert seen.version is None and seen.front == "/opt/cudnn/libcudnn.so.9", seen
    assert seen.died == "the process was killed by SIGKILL while loading libcudnn_graph.so.9", seen.died
    cut = MARK + b"libs-start\tld.so\n" + MARK + b"lib-start\tlibcublasLt.so.13\n" + MARK + \
        b"lib\tlibcublasLt.so.13\tLD_LIBRARY_PATH\t/opt/lib/libcublasLt.so.13\tthe loader refuses it: " + b"x" * 5000
    [library] = parse_answer("ld.so", None, cut, -9, False, None).libraries
    assert library.how == "died" and library.said == "the process was killed by SIGKILL while loading " \
        "libcublasLt.so.13", library


def test_a_long_library_path_of_repeated_folders_is_asked_once_a_folder(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """LD_LIBRARY_PATH of 20,000 entries (a launcher that prepends its folders at every level repeats them): the
    loading probe's question of which CUDA libraries it holds, and the glibc-hwcaps levels of each folder, ask the
    file system once a distinct folder (before: 40 sonames x every entry, about 5 s of check), with the same answer.
    Counted, not timed: every stat and lstat made while they run."""
    import os

    from cudnn_doctor.probes.hwcaps import with_levels
    from cudnn_doctor.probes.loading import cuda_libraries_on_path

    real = tmp_path / "lib"
    real.mkdir()
    shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2), real / "libcublasLt.so.13")
    folders = [f"/nonexistent/{n % 50}" for n in range(20_000)] + [str(real)]
    asked: list[str] = []
    for name in ("stat", "lstat"):
        original = getattr(os, name)

        def counted(path: object, *args: object, _original: object = original, **kwargs: object) -> object:
            asked.append(str(path))
            return _original(path, *args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(os, name, counted)
    assert cuda_libraries_on_path({}, folders) == ("libcublasLt.so.13",)
    assert with_levels(folders, {}) == folders
    monkeypatch.undo()
    assert len(asked) < 500, len(asked)


# --- the --deep child's answer --------------------------------------------------------------------------------------

def test_a_framework_error_of_megabytes_is_still_its_answer(machine_in_process: Machine, tmp_path: Path) -> None:
    """A framework whose import raises with 9 MiB of words (a tensor's repr, a list of paths): before, the answer
    overran the 8 MiB the runner keeps of the channel and --deep said only 'the import child exited without an
    answer'; its two ends (where the status and the library are named) are kept."""
    machine = machine_in_process
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(
        'raise RuntimeError("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED " + "x" * (9 << 20) + '
        '" libcudnn_graph.so.9: cannot open shared object file: No such file or directory")\n')
    real_python_sees(site, tmp_path)
    report = machine.check_json("--deep")
    [torch] = report["frameworks"]
    error = torch["details"]["deep"]["error"]
    assert error.startswith("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED x"), error[:200]
    assert error.endswith("libcudnn_graph.so.9: cannot open shared object file: No such file or directory")
    assert len(error) < 20_000 and "characters ...]" in error
    assert torch["details"]["deep"]["traceback"][-1].endswith("torch/__init__.py:1:<module>")


KEYS = (b"version", b"lib-version", b"lib-bound", b"lib", b"lib-died", b"lib-missing", b"lib-unbound", b"check",
        b"asked", b"later", b"later-start", b"later-died", b"front", b"mapped", b"recipe", b"lib-try", b"lib-start",
        b"lib-recipe-start", b"lib-recipe", b"check-start", b"no-recipe", b"open-error", b"done", b"libs-done")
VALUES = (b"9" * 5000, "\u0661\u0662".encode(), b"", b"\t" * 5, b"libcublasLt.so.13\t" + b"9" * 5000,
          b"libcublasLt.so.13\t" + "\u0661".encode(), b"libcublasLt.so.13\t1.2." + b"9" * 5000, b"x\t-\t-\t-",
          b"cudnnGetVersion\t" + b"9" * 5000 + b"\tok", b"\xff\xfe\\", b"\\t\\n\\")


def test_the_loading_childs_lines_of_any_value_are_read_without_an_error() -> None:
    """Every key the loading child says, with values no child of ours writes (another writer on the channel: a
    preloaded library that writes to every descriptor): 5,000 digits (past int()'s limit: a ValueError before, for
    version, lib-version and lib-bound), Unicode digits, missing and empty fields, bytes that are not UTF-8."""
    from cudnn_doctor.probes.loading import MARK, parse_answer

    start = MARK + b"start\tld.so\n" + MARK + b"lib-start\tlibcublasLt.so.13\n" + MARK + \
        b"lib\tlibcublasLt.so.13\tLD_LIBRARY_PATH\t/x/libcublasLt.so.13\tok\n"
    for key in KEYS:
        for value in VALUES:
            seen = parse_answer("ld.so", None, start + MARK + key + b"\t" + value + b"\n", 0, False, None)
            assert seen.version is None or len(seen.version) < 30, (key, value[:20], seen.version)
            assert all(library.version is None or len(library.version) < 30 for library in seen.libraries)


def test_xlas_unknown_flags_words_name_a_quoted_flag_once() -> None:
    """XLA's words for a quoted value with a blank, as the real jaxlib 0.4.38 ends with XLA_FLAGS='--xla_no_such="a b"
    --xla_other=1' (its entries joined by one space, the value unquoted): before, 'b' was read as a third flag."""
    from cudnn_doctor.probes.xla_flags import parse

    said = ("2026-12-07 02:01:49.565712: F external/xla/xla/parse_flags_from_env.cc:226] Unknown flags in XLA_FLAGS: "
            "--xla_no_such=a b --xla_other=1")
    assert parse(1, said, ['--xla_no_such="a b"', "--xla_other=1", "--xla_dump_to=/tmp"]).refused == (
        "xla_no_such", "xla_other")
    assert parse(1, said).refused == ("xla_no_such", "xla_other")
