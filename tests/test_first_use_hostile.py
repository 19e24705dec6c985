"""The first-use probes against a hostile machine (issue 43, r18): a ptxas that hangs, floods its pipes, leaves a
daemon holding them or dies by a signal; XLA_FLAGS written as XLA's own parser reads it (quotes, a word that is not
a flag); PATH of 20,000 entries; folders whose names hold quotes, `$(...)`, a newline, a tab or a byte
that is not UTF-8. What is printed is escaped, the JSON strict, and a command in the plan is exactly that command
when bash reads it. Fast: the helper programs' timeout is set short where a child is made to hang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cudnn_doctor.quoting import split_code_spans
from tests.conftest import Machine
from tests.test_first_use import jax_cu12, of_kind, script_ptxas, xla_of

pytestmark = pytest.mark.integration

SHORT = "0.5"  # CUDNN_DOCTOR_HELPER_TIMEOUT where a ptxas is made to hang: seconds, not the default 5


def strict_json(text: str) -> dict:
    """TEXT as a strict JSON reader reads it: NaN and Infinity refused."""
    def refuse(word: str) -> None:
        raise ValueError(f"not JSON: {word}")
    return json.loads(text, parse_constant=refuse)


def hostile_ptxas(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ptxas"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def first_candidate(machine: Machine, folder: Path) -> dict:
    machine.env["PATH"] = f"{folder}:{machine.env['PATH']}"
    done = machine.run("check", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    return xla_of(strict_json(done.stdout))["ptxas"][0]


@pytest.mark.parametrize("body", [
    "exec sleep 60\n",  # hangs
    "exec yes 'V12.6.85 and more'\n",  # prints forever to stdout
    "exec yes 'a line of stderr' >&2\n",  # to stderr
], ids=["hangs", "stdout-flood", "stderr-flood"])
def test_a_ptxas_that_never_finishes_is_passed_over_within_the_helper_timeout(machine: Machine, tmp_path: Path,
                                                                           body: str) -> None:
    """XLA reads ptxas's stdout to its end: one that never ends hangs its first compilation; the doctor stops
    asking at the helper programs' timeout and names it as hanging XLA there (r19: 'hangs', was 'did not run')."""
    jax_cu12(machine, tmp_path, nvcc=False)
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = SHORT
    candidate = first_candidate(machine, hostile_ptxas(tmp_path / "x", body).parent)
    assert candidate["verdict"] == "hangs" and candidate["version"] is None, candidate


def test_a_ptxas_killed_by_a_signal_is_named_by_its_signal(machine: Machine, tmp_path: Path) -> None:
    jax_cu12(machine, tmp_path, nvcc=False)
    candidate = first_candidate(machine, hostile_ptxas(tmp_path / "x", "kill -SEGV $$\n").parent)
    assert candidate["verdict"] == "did not run" and "SIGSEGV" in candidate["said"], candidate


@pytest.mark.parametrize("line", [
    "printf 'V1\\033[31mred\\033]0;title\\007 \\342\\200\\256gnp.exe \\377\\n' >&2; exit 1\n",
    "head -c 1048576 /dev/zero | tr '\\0' x >&2; exit 1\n",
], ids=["control-bidi-not-utf8", "one-megabyte-line"])
def test_what_a_failing_ptxas_says_is_printed_escaped_and_bounded(machine: Machine, tmp_path: Path,
                                                                  line: str) -> None:
    jax_cu12(machine, tmp_path, nvcc=False)
    folder = hostile_ptxas(tmp_path / "x", line).parent
    candidate = first_candidate(machine, folder)
    assert candidate["verdict"] == "did not run" and len(candidate["said"]) < 400, candidate
    text = machine.run("check").stdout
    assert not [c for c in text if (ord(c) < 32 and c not in "\n") or c in "\u202e\x7f"], repr(text[-800:])


def _sparse(path: Path) -> None:
    with open(path, "wb") as stream:
        stream.truncate(8 << 30)  # 8 GB of nothing: no ELF, no '#!', so it would go to /bin/sh
    path.chmod(0o755)


@pytest.mark.parametrize("make", [lambda path: path.mkdir(mode=0o755), os.mkfifo,
                                  lambda path: path.symlink_to(path.name), _sparse],
                         ids=["folder", "fifo", "link-loop", "sparse-8-GB"])
def test_a_ptxas_that_is_no_program_is_never_taken(machine: Machine, tmp_path: Path, make: object) -> None:
    """A folder, a FIFO, a link to itself or an 8 GB sparse file named ptxas first on PATH: passed over (the FIFO
    never opened), or asked under the helpers' timeout, never taken and never an internal error."""
    jax_cu12(machine, tmp_path, nvcc=False)
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = SHORT
    (tmp_path / "x").mkdir()
    make(tmp_path / "x" / "ptxas")  # type: ignore[operator]
    machine.env["PATH"] = f"{tmp_path / 'x'}:{machine.env['PATH']}"
    done = machine.run("check", "--json")
    assert done.exit_code != 3 and "Traceback" not in done.stderr, done.stderr
    xla = xla_of(strict_json(done.stdout))
    assert not [c for c in xla["ptxas"] if c["verdict"] == "used"], xla["ptxas"]


def test_xla_flags_data_dir_in_quotes_with_a_space_is_read_as_xla_reads_it(machine: Machine, tmp_path: Path) -> None:
    """XLA's own parser (ParseArgvFromString) takes a value in double quotes whole: the ptxas in that folder is
    XLA's first place and the one it takes (split at the space, the doctor looked in '"/.../my' and said none)."""
    jax_cu12(machine, tmp_path, nvcc=False)
    folder = tmp_path / "my cuda"
    script_ptxas(folder / "bin", "12.6.85")
    machine.env["XLA_FLAGS"] = f'--xla_gpu_cuda_data_dir="{folder}" --xla_gpu_autotune_level=0'
    report = strict_json(machine.run("check", "--json").stdout)
    xla = xla_of(report)
    assert xla["flag_data_dir"] == str(folder) and xla["data_dir"] == str(folder), xla
    assert xla["ptxas_used"] == str(folder / "bin" / "ptxas") and not of_kind(report, "ptxas"), xla


def test_xla_flags_after_a_word_that_is_not_a_flag_are_not_read(machine: Machine, tmp_path: Path) -> None:
    """XLA stops reading XLA_FLAGS at the first entry that does not begin with '-': a data folder after it has no
    effect, and XLA's default is its first place."""
    jax_cu12(machine, tmp_path, nvcc=False)
    script_ptxas(tmp_path / "cuda" / "bin", "12.6.85")
    machine.env["XLA_FLAGS"] = f"stray --xla_gpu_cuda_data_dir={tmp_path / 'cuda'}"
    xla = xla_of(strict_json(machine.run("check", "--json").stdout))
    assert xla["flag_data_dir"] is None and xla["data_dir_from"] == "XLA's default", xla


def test_a_vertical_tab_does_not_end_an_xla_flag(machine: Machine, tmp_path: Path) -> None:
    """XLA splits at space, tab, CR and newline only: a vertical tab (or a no-break space) is part of the value."""
    jax_cu12(machine, tmp_path, nvcc=False)
    machine.env["XLA_FLAGS"] = f"--xla_gpu_cuda_data_dir={tmp_path}\x0b--xla_gpu_autotune_level=0"
    xla = xla_of(strict_json(machine.run("check", "--json").stdout))
    assert xla["flag_data_dir"] == f"{tmp_path}\x0b--xla_gpu_autotune_level=0", xla


def test_twenty_thousand_path_entries_are_counted_and_the_finding_stays_short(machine: Machine,
                                                                              tmp_path: Path) -> None:
    jax_cu12(machine, tmp_path, nvcc=False)
    # relative entries (each a folder under the working one), short enough to pass exec's 128 KiB for one variable
    machine.env["PATH"] = ":".join([*(f"{n:x}" for n in range(20000)), "", ".", "bin", machine.env["PATH"]])
    report = strict_json(machine.run("check", "--json").stdout)
    [said] = of_kind(report, "ptxas")
    assert xla_of(report)["places"] >= 20003 and len(said["detail"]) < 4000, len(said["detail"])


HOSTILE = ["a b", "q'uote", 'd"q', "$(touch PWNED)", "`touch PWNED`", "new\nline", "t\tab", "bad\udcffbyte"]
IN_WORDS = ("q'uote", "new\nline", "t\tab", "bad\udcffbyte")  # no one line that every shell reads alike
SHELLS = {"bash": "chmod() {{ printf '%s\\0' \"$@\"; }}; {}", "zsh": "chmod() {{ printf '%s\\0' \"$@\"; }}; {}",
          "fish": "function chmod; printf '%s\\0' $argv; end; {}"}


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_the_chmod_step_for_a_hostile_folder_is_exactly_chmod_in_each_shell_or_words(machine: Machine,
                                                                                    tmp_path: Path, name: str) -> None:
    """CUDA_ROOT names a folder whose ptxas this user may not run: the plan's command, read by bash, zsh and fish
    as a user pastes it, runs chmod on that file and nothing else; where no one line reads alike in every shell
    (a quote, a backslash, a control character, a byte that is not UTF-8) the step is words, with no command."""
    jax_cu12(machine, tmp_path, nvcc=False)
    root = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), os.fsencode(name))))
    script_ptxas(root / "bin", "12.6.85", mode=0o644)
    machine.env["CUDA_ROOT"] = str(root)
    plan = strict_json(machine.run("fix", "--json").stdout)
    [step] = [a for a in plan["actions"] if "CD208" in a["resolves"] and "chmod" in (a.get("text") or "")]
    commands = [part for index, part in enumerate(split_code_spans(step["text"])) if index % 2]
    if name in IN_WORDS:
        assert not commands and "execute bit" in step["text"], step["text"]
    else:
        [command] = commands
        for shell, script in SHELLS.items():
            if shutil.which(shell) is None:
                continue
            shown = subprocess.run([shell, "-c", script.format(command)], capture_output=True, cwd=tmp_path,
                                   env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
            assert shown.stdout.split(b"\0")[:-1] == [b"a+x", os.fsencode(str(root / "bin" / "ptxas"))], \
                (shell, command, shown)
    assert not (tmp_path / "PWNED").exists()
    text = machine.run("fix").stdout
    assert not [c for c in text if ord(c) < 32 and c != "\n"], repr(text)


def test_nvrtcs_refusal_survives_a_preloaded_library_that_prints(machine: Machine, tmp_path: Path) -> None:
    """A library the environment preloads prints at load and, at exit, a last line of its own: NVRTC's answer
    (compiling a kernel in a child, without its builtins) is kept, on the child's own answer channel."""
    from tests.fakes.build import compile_library
    from tests.test_first_use import _nvrtc_wheel

    site = jax_cu12(machine, tmp_path)
    _nvrtc_wheel(site, builtins=False)
    machine.env["LD_PRELOAD"] = str(compile_library("noisy_preload.c", "libnoisy.so"))
    report = strict_json(machine.run("check", "--json").stdout)
    [seen] = report["first_use"]["nvrtc"]
    assert seen["said"].startswith("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"), seen
    assert of_kind(report, "nvrtc-builtins"), report["findings"]


def test_a_version_in_other_digits_is_no_version_to_xla(machine: Machine, tmp_path: Path) -> None:
    """XLA reads `--version` with RE2's \\bV(\\d+)\\.(\\d+)\\.(\\d+)\\b, whose \\d is 0-9 only: Arabic-Indic digits
    (which Python's \\d and int() take) are no version, and the ptxas is passed over."""
    jax_cu12(machine, tmp_path, nvcc=False)
    folder = hostile_ptxas(tmp_path / "x", "echo 'Cuda compilation tools, release 12.6, V\u0661\u0662.6.85'\n").parent
    candidate = first_candidate(machine, folder)
    assert candidate["verdict"] == "no version" and candidate["version"] is None, candidate


def test_an_nvrtc_that_hangs_is_cut_off_at_the_library_childrens_timeout(machine: Machine, tmp_path: Path) -> None:
    """JAX's wheel NVRTC without its builtins, whose library never finishes loading: NVRTC's child is a library
    child, cut off at CUDNN_DOCTOR_PROBE_TIMEOUT (here 0.5 s, not its own 5 s), and nothing is said as NVRTC's."""
    from tests.fakes.build import compile_library

    site = jax_cu12(machine, tmp_path)
    lib = site / "nvidia" / "cuda_nvrtc" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(compile_library("hanging_library.c", "libnvrtc.so.12", soname="libnvrtc.so.12"),
                    lib / "libnvrtc.so.12")
    info = site / "nvidia_cuda_nvrtc_cu12-12.6.85.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("nvidia/cuda_nvrtc/lib/libnvrtc.so.12,,\n")
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = SHORT
    report = strict_json(machine.run("check", "--json").stdout)
    [seen] = report["first_use"]["nvrtc"]
    assert seen["problem"] and f"{SHORT} s" in seen["said"], seen
    assert not of_kind(report, "nvrtc-builtins"), report["findings"]


@pytest.mark.parametrize("name", [b"new\nline", b"t\tab", b"bad\xffbyte", "\u202egnp".encode(), b"$(touch PWNED)", b""],
                         ids=["newline", "tab", "not-utf8", "bidi", "command", "empty"])
def test_a_hostile_cuda_root_and_data_dir_print_escaped_and_unset_exactly(machine: Machine, tmp_path: Path,
                                                                          name: bytes) -> None:
    """CUDA_ROOT (and XLA_FLAGS's data folder) naming a folder with a newline, a tab, a byte that is not UTF-8, a
    bidi control or a command, or empty: the text holds no raw control, the JSON is strict, and the plan's line for
    each shell unsets the variable and quotes nothing."""
    jax_cu12(machine, tmp_path, nvcc=False)
    root = os.fsdecode(os.fsencode(tmp_path) + b"/" + name) if name else ""
    machine.env.update(CUDA_ROOT=root, XLA_FLAGS=f"--xla_gpu_cuda_data_dir={root}")
    assert xla_of(strict_json(machine.run("check", "--json").stdout))["data_dir_from"] == "CUDA_ROOT"
    text = machine.run("check").stdout
    assert not [c for c in text if (ord(c) < 32 and c != "\n") or c in "\u202e\x7f"], repr(text[-600:])
    lines = set()
    for shell in ("bash", "zsh", "fish", "powershell"):
        plan = strict_json(machine.run("fix", "--json", "--shell", shell).stdout)
        lines |= {line for a in plan["actions"] if a["kind"] == "env" for line in a["env"].get(shell, [])
                  if "CUDA_ROOT" in line}
    assert lines == {"unset CUDA_ROOT", "set -e CUDA_ROOT", "Remove-Item Env:CUDA_ROOT -ErrorAction SilentlyContinue"}
    assert not (tmp_path / "PWNED").exists()
