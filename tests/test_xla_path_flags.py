"""Files and folders XLA's GPU compiler and JAX's persistent cache read or write at a program's first compilation
(issue 45, round twelve): the flags of XLA_FLAGS that name them (compat [[xla_path_flag]]) and
JAX_COMPILATION_CACHE_DIR with JAX_RAISE_PERSISTENT_CACHE_ERRORS. What XLA's GPU compiler refuses is a warning that
`check --deep` proves (no GPU compiler runs here); the cache's raise is proven against the real jax 0.4.38 on the
CPU; the values both take stay silent, and the plan's lines sourced in bash leave check clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudnn_doctor.knowledge.environment import xla_path_flags
from cudnn_doctor.probes.settings import xla_path_problems
from tests.conftest import Machine
from tests.real_wheels import real_jax_cpu
from tests.test_environment_settings import check, closed_loop, real_jax_site, settings_findings
from tests.test_settings_parsers import COMPILE, filled_jax_cache, run_jax_with

__all__ = ["real_jax_site"]  # the fixture, used by name

LOAD = "--xla_gpu_load_autotune_results_from"
DUMP = "--xla_gpu_dump_autotune_results_to"
REQUIRE = "--xla_gpu_require_complete_aot_autotune_results"


def _places(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "old.textproto").write_text("version: 2\nresults {\n  device: \"sm_9.0\"\n  version: 3\n}\n")
    (tmp_path / "new.textproto").write_text("results {\n  version: 2\n}\nversion: 3\n")
    (tmp_path / "bare.txt").write_text("")
    (tmp_path / "results.pb").write_bytes(b"\x10\x03")  # binary: its version is not read here
    names = {"folder": "folder", "file": "file", "old": "old.textproto", "new": "new.textproto", "bare": "bare.txt",
             "binary": "results.pb", "missing": "missing.txt"}
    return {key: str(tmp_path / name) for key, name in names.items()}


@pytest.mark.parametrize(("flags", "flag", "words"), [
    ("{load}={missing}", "xla_gpu_load_autotune_results_from", "does not exist"),
    ("{load}={folder}", "xla_gpu_load_autotune_results_from", "is a folder, not a file"),
    ("{load}={old}", "xla_gpu_load_autotune_results_from", "Expected 3 but was 2"),
    ("{load}={bare}", "xla_gpu_load_autotune_results_from", "Expected 3 but was 0"),
    ("{dump}={folder}", "xla_gpu_dump_autotune_results_to", "is a folder, where a file is written"),
    ("{dump}={folder}/none/results.txt", "xla_gpu_dump_autotune_results_to", "does not exist"),
    ("{dump}={file}/results.txt", "xla_gpu_dump_autotune_results_to", "is not a folder"),
    ("{require}", "xla_gpu_require_complete_aot_autotune_results", "no --xla_gpu_load_autotune_results_from"),
    ("--xla_gpu_autotune_level=4 {require}=true", "xla_gpu_require_complete_aot_autotune_results", "loads any"),
])
def test_a_path_xlas_gpu_compiler_cannot_use_is_a_warning_that_deep_proves(
        machine: Machine, real_jax_site: Path, tmp_path: Path, flags: str, flag: str, words: str) -> None:
    value = flags.format(load=LOAD, dump=DUMP, require=REQUIRE, **_places(tmp_path))
    machine.env["XLA_FLAGS"] = value
    report = check(machine)
    [made] = [f for f in settings_findings(report, "XLA_FLAGS") if f["code"] == "CD411"]
    assert made["severity"] == "warning" and made["evidence"] == "read", made
    assert f"--{flag}" in made["detail"] and words in made["detail"] and "check --deep" in made["detail"], made
    assert xla_path_flags()[flag]["source"] in made["refs"]
    assert not [f for f in settings_findings(report, "XLA_FLAGS") if f["severity"] == "error"]
    closed_loop(machine, "CD411", "XLA_FLAGS")


@pytest.mark.parametrize("flags", [
    "{load}={new}",  # the version XLA reads (a result's own version inside is not the file's)
    "{load}={binary}",  # binary: not read here
    "{dump}={folder}/results.txt",  # a writable dump
    "{dump}={folder}/results.txt {load}={new} {require}=true",  # complete results required, loaded
    "{require}=false",
    "--xla_gpu_deterministic_ops=true --xla_gpu_exclude_nondeterministic_ops=true",  # the determinism flags
    "{load}= {dump}=",  # empty: neither read nor written
])
def test_paths_xla_takes_and_the_determinism_flags_are_no_finding(
        machine: Machine, real_jax_site: Path, tmp_path: Path, flags: str) -> None:
    machine.env["XLA_FLAGS"] = flags.format(load=LOAD, dump=DUMP, require=REQUIRE, **_places(tmp_path))
    report = check(machine)
    assert not settings_findings(report, "XLA_FLAGS"), settings_findings(report, "XLA_FLAGS")
    # the installed jaxlib defines each flag: it parses them and runs its first compilation (on the CPU)
    said = run_jax_with({"XLA_FLAGS": machine.env["XLA_FLAGS"]}, COMPILE)
    assert said.returncode == 0, said.stderr[-600:]


def test_hostile_values_are_read_without_hanging(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "results.txt"
    os.mkfifo(fifo)
    assert xla_path_problems(f"{LOAD}={fifo}") == []  # a FIFO is never opened: nothing said of its version
    assert xla_path_problems(f"{LOAD} {REQUIRE}=maybe --xla_gpu_dump_autotune_results_to") == []
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"results {\n" * (1 << 17))  # past what is read: its version line may lie further
    assert xla_path_problems(f"{LOAD}={huge}") == []


# --- JAX's persistent compilation cache, its errors made fatal ------------------------------------------------------

@pytest.mark.parametrize("switch", ["1", "true"])
def test_a_cache_folder_jax_cannot_make_with_its_errors_fatal_is_named_and_unset_cures_it(
        machine: Machine, real_jax_site: Path, tmp_path: Path, switch: str) -> None:
    """A regular file where the cache's folder should be: the real jax 0.4.38 raises FileExistsError at its first
    compilation with JAX_RAISE_PERSISTENT_CACHE_ERRORS on, and warns and runs without it."""
    cache = tmp_path / "jax-cache"
    cache.write_text("a file\n")
    env = {"JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_RAISE_PERSISTENT_CACHE_ERRORS": switch}
    machine.env.update(env)
    report = check(machine)
    [made] = [f for f in settings_findings(report, "JAX_COMPILATION_CACHE_DIR") if f["code"] == "CD411"]
    assert made["severity"] == "warning" and "JAX_RAISE_PERSISTENT_CACHE_ERRORS" in made["detail"]
    assert "is not a folder" in made["detail"] and "check --deep" in made["detail"], made["detail"]
    said = run_jax_with(env, COMPILE)
    assert said.returncode != 0 and "FileExistsError" in said.stderr, said.stderr[-600:]
    closed_loop(machine, "CD411", "JAX_COMPILATION_CACHE_DIR")


@pytest.mark.parametrize("case", ["unusable-no-switch", "switch-off", "writable-strict", "no-optimizations"])
def test_the_caches_harmless_neighbours_raise_no_error(machine: Machine, real_jax_site: Path, tmp_path: Path,
                                                       case: str) -> None:
    (tmp_path / "cache-file").write_text("a file\n")
    env = {"unusable-no-switch": {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache-file")},
           "switch-off": {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache-file"),
                          "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "0"},
           "writable-strict": {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache"),
                               "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "1"},
           "no-optimizations": {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}}[case]
    machine.env.update(env)
    report = check(machine)
    about = [f for name in env for f in settings_findings(report, name)]  # the fake machine has no cuDNN: CD301
    assert not [f for f in about if f["severity"] == "error" or f["code"] == "CD411"], about
    if case.startswith("unusable") or case == "switch-off":  # still a folder it cannot use: a warning, who writes
        assert [f for f in settings_findings(report, "JAX_COMPILATION_CACHE_DIR") if f["code"] == "CD417"]
    said = run_jax_with(env, COMPILE)
    assert said.returncode == 0, said.stderr[-600:]


@pytest.mark.parametrize("words", [
    "jaxlib._jax.XlaRuntimeError: FAILED_PRECONDITION: Autotune results file does not exist: /data/results.txt",
    "jax.errors.JaxRuntimeError: INVALID_ARGUMENT: Version mismatch in autotune results. Expected 3 but was 2",
    "XlaRuntimeError: NOT_FOUND: Complete XLA AOT autotuning results are required, but no AOT result was found for "
    "key: <key model",
    "JaxRuntimeError: NOT_FOUND: No cached config found for HLO instr: %cudnn-conv = (f32[2,16,16,8]{3,2,1,0}",
])
def test_xlas_words_at_the_failed_compilation_are_a_setting_explain_names(machine: Machine, words: str) -> None:
    """What --deep's JAX says where XLA's GPU compiler refuses these flags: explain's reader (one knowledge, two
    doors) names CD411, the class plain check's warning has."""
    result = machine.run("explain", "--offline-only", "--json", words)
    assert [m["code"] for m in result.json["matches"]][:1] == ["CD411"], result.stdout[:1500]


def test_the_real_jaxs_cache_error_is_read_by_its_frames_as_the_setting(tmp_path: Path) -> None:
    """Under --deep a strict cache's FileExistsError names no setting in its words: the frames it was raised through
    (the real jax 0.4.38's compilation_cache.py and lru_cache.py, kept by the deep child's frames_of) name CD411."""
    import json

    from cudnn_doctor.doctor.deep_words import codes_of

    cache = tmp_path / "jax-cache"
    cache.write_text("a file\n")
    code = ("import json, sys\nfrom cudnn_doctor._deep_child import frames_of\nimport jax\n"
            "try:\n    jax.jit(lambda x: x + 1)(1.0)\nexcept Exception as e:\n"
            "    print(json.dumps({'error': f'{type(e).__name__}: {e}', 'traceback': frames_of(e)}))\n")
    root = Path(__file__).resolve().parent.parent
    said = run_jax_with({"JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "1",
                         "PYTHONPATH": f"{root}:{real_jax_cpu()}"}, code)
    deep = json.loads(said.stdout.strip().splitlines()[-1])
    assert deep["error"].startswith("FileExistsError"), deep
    assert codes_of(deep)[:1] == ("CD411",), deep
    assert codes_of({"error": deep["error"], "traceback": []}) == (), "the words alone name nothing"


def test_a_path_flag_beside_a_flag_jaxlib_refuses_gets_one_fix_without_both(
        machine: Machine, real_jax_site: Path, tmp_path: Path) -> None:
    machine.env["XLA_FLAGS"] = f"{LOAD}={tmp_path / 'missing.txt'} --xla_gpu_no_such_flag_at_all=true " \
                               "--xla_gpu_autotune_level=2"
    report = check(machine)
    made = [f for f in settings_findings(report, "XLA_FLAGS") if f["code"] == "CD411"]
    assert len(made) == 2 and {f["severity"] for f in made} == {"error", "warning"}, made
    assert {line for line in closed_loop_lines(machine)} == {"export XLA_FLAGS=--xla_gpu_autotune_level=2"}
    closed_loop(machine, "CD411", "XLA_FLAGS")


def closed_loop_lines(machine: Machine) -> list[str]:
    from tests.test_process_env import plan_lines

    return [line for line in plan_lines(machine) if "XLA_FLAGS" in line]


def test_a_text_file_where_xla_reads_its_binary_kernel_cache_is_named(tmp_path: Path) -> None:
    """--xla_gpu_kernel_cache_file naming a Git LFS pointer checked out in place of the team's cache (round eighteen's
    published GPU set, not blind: JAX 0.11 failed its first convolution on an H100, 'DATA_LOSS: Can't parse ... as
    binary proto', with no other flag): named; a missing file (XLA makes it), an empty one, a binary one and a FIFO
    (never opened) are not."""
    import os

    lfs = tmp_path / "kernels.bin"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 1048576\n")
    [(flag, why)] = xla_path_problems(f"--xla_gpu_kernel_cache_file={lfs}")
    assert flag == "xla_gpu_kernel_cache_file" and "Git LFS pointer" in why, why
    note = tmp_path / "note.bin"
    note.write_text("kernels go here\n")
    assert "text file" in xla_path_problems(f"--xla_gpu_kernel_cache_file={note}")[0][1]
    binary = tmp_path / "real.bin"
    binary.write_bytes(b"\n\x8a\x01\x12\x00\x1a\xff" * 10)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    fifo = tmp_path / "fifo.bin"
    os.mkfifo(fifo)
    for path in (tmp_path / "missing.bin", empty, binary, fifo):
        assert not xla_path_problems(f"--xla_gpu_kernel_cache_file={path}"), path


def test_cache_entries_cut_short_with_jaxs_errors_fatal_are_named(machine: Machine, real_jax_site: Path,
                                                                  tmp_path: Path) -> None:
    """JAX's persistent cache written by the real jax (0.4.38, CPU), its entries then cut in half (a copy interrupted,
    a full disk): with JAX_RAISE_PERSISTENT_CACHE_ERRORS on, the real jax raises reading one back ('Error -5 while
    decompressing data'; round eighteen's published GPU set, JAX 0.11 on an H100, not blind) and check names the cut
    entries (a warning --deep proves: its own work may hit no such entry); whole entries, or the switch off, nothing."""
    fill, entries = filled_jax_cache(tmp_path)
    strict = {**fill, "JAX_RAISE_PERSISTENT_CACHE_ERRORS": "true"}
    machine.env.update(strict)
    assert not settings_findings(check(machine), "JAX_COMPILATION_CACHE_DIR")  # whole: nothing
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:entry.stat().st_size // 2])
    [made] = [f for f in settings_findings(check(machine), "JAX_COMPILATION_CACHE_DIR") if f["code"] == "CD411"]
    assert made["severity"] == "warning" and "cut short" in made["detail"], made
    said = run_jax_with(strict, COMPILE)
    assert said.returncode != 0 and "decompress" in said.stderr, said.stderr[-600:]
    machine.env["JAX_RAISE_PERSISTENT_CACHE_ERRORS"] = "false"
    assert not settings_findings(check(machine), "JAX_COMPILATION_CACHE_DIR")
    assert run_jax_with(fill, COMPILE).returncode == 0  # without the switch it warns and compiles again


def test_complete_aot_results_beside_a_warm_jax_cache_is_the_programs_shapes_business(tmp_path: Path) -> None:
    """--xla_gpu_require_complete_aot_autotune_results beside a JAX cache that holds results (round eighteen's
    published GPU set, not blind: the program whose shapes were tuned there ran on an H100 while --deep's own
    convolution failed, a false error): the words say a program's own shapes decide; under --deep the failure of the
    doctor's own work stays a warning with what it saw. With no cache, or an empty one, the words of before."""
    from cudnn_doctor.codes import finding
    from cudnn_doctor.model import Framework, Host, Report, Tool
    from cudnn_doctor.rules.process_env import with_evidence

    flags = "--xla_gpu_require_complete_aot_autotune_results=true"
    cache = tmp_path / "jax-cache"
    cache.mkdir()
    assert "no --xla_gpu_load_autotune_results_from loads any" in xla_path_problems(flags, str(cache))[0][1]
    (cache / "xla_gpu_per_fusion_autotune_cache_dir").mkdir()
    [(flag, why)] = xla_path_problems(flags, str(cache))
    assert "autotuning cache JAX keeps in" in why and str(cache) in why, why
    assert "no --xla_gpu_load" in xla_path_problems(flags, None)[0][1]
    words = ("jax.errors.JaxRuntimeError: NOT_FOUND: Complete XLA AOT autotuning results are required, but no AOT "
             "result was found for key: <key model=...>")
    jax = Framework("jax", "0.11.0", "13", None, None, "dist-info", details={"deep": {"error": words}})
    made = finding("CD411", subject="XLA_FLAGS", evidence="read", variable="XLA_FLAGS", value=flags, why=why,
                   framework="JAX", consequence="fails", effect="", fix_value=None)
    report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.12", "h"), frameworks=[jax])
    for own, severity in ((True, "warning"), (False, "error")):
        given = made.__class__(**{**made.__dict__, "severity": "warning",
                                  "values": {**made.values, **({"own_work_only": True} if own else {})}})
        [said] = [f for f in with_evidence(report, [given], {"jax": ("CD411",)}) if f.subject == "XLA_FLAGS"]
        assert said.severity == severity and said.evidence == "seen", said


def test_deeps_cure_of_a_setting_that_fails_only_its_own_work_is_a_warning(tmp_path: Path) -> None:
    """The same flag beside a warm JAX cache: --deep's bisection finds JAX's convolution works without XLA_FLAGS, but
    what it proves is of the doctor's own untuned convolution (round eighteen's published GPU set on 35fb20f, H100: the
    cure's error was the one --deep false error left): a warning. A cure that took out anything else stays an error."""
    from cudnn_doctor.codes import finding
    from cudnn_doctor.model import EnvironmentCure, Framework, Host, ProcessView, Report, Tool
    from cudnn_doctor.rules.process_env import environment_cure, with_evidence

    words = "jax.errors.JaxRuntimeError: NOT_FOUND: Complete XLA AOT autotuning results are required"
    jax = Framework("jax", "0.11.0", "13", None, None, "dist-info", details={"deep": {"error": words}})
    setting = finding("CD411", subject="XLA_FLAGS", evidence="read", variable="XLA_FLAGS", value="--x", why="w",
                      framework="JAX", consequence="fails", effect="", fix_value=None)
    setting = setting.__class__(**{**setting.__dict__, "severity": "warning",
                                   "values": {**setting.values, "own_work_only": True}})
    for removed, severity in ((("XLA_FLAGS",), "warning"), (("XLA_FLAGS", "JAX_PLATFORMS"), "error")):
        cure = EnvironmentCure("variable", "without XLA_FLAGS", (("XLA_FLAGS", "unset", ""),), removed=removed,
                               variable="XLA_FLAGS", frameworks=("jax",), said=words)
        report = Report(tool=Tool("cudnn-doctor", "0"), host=Host("linux", "x86_64", "3.12", "h"), frameworks=[jax],
                        process=ProcessView(cured_by=cure))
        [made] = environment_cure(report)
        assert made.severity == "error"
        [said] = [f for f in with_evidence(report, [setting, made], {"jax": ("CD411",)}) if f.subject == made.subject]
        assert said.severity == severity, said
