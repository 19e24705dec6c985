"""Issue 43, round fourteen (helper r19): what round thirteen left. A ptxas whose `--version` leaves a daemon holding
its output (XLA reads that output to its end: it hangs there), asked once for both of its readers, started as XLA
starts it (posix_spawnp: no /bin/sh for a file without '#!'); NCCL's enum settings given as numbers, read by NCCL's
own readers; numbers beyond Python's 4,300-digit int() limit from every source; the loading child's escaped fields
and json_values under depth, width and colliding keys; and CD180's plan line sourced in a real bash, then checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.test_first_use import jax_cu12, xla_of
from tests.test_first_use_hostile import hostile_ptxas, strict_json

pytestmark = pytest.mark.integration

SHORT = "0.5"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _check(machine: Machine, folder: Path) -> dict:
    machine.env["PATH"] = f"{folder}:{machine.env['PATH']}"
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = SHORT
    done = machine.run("check", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    return strict_json(done.stdout)


@pytest.mark.subprocess  # the doctor's own process is the subreaper that adopts a daemon with no token
@pytest.mark.parametrize("daemon", ["setsid sleep 30", "env -i setsid sleep 30", "sleep 30"],
                         ids=["own-session", "own-session-no-environment", "same-group"])
def test_a_ptxas_that_leaves_a_daemon_holding_its_output_is_said_to_hang_xla_and_the_daemon_is_gone(
        machine: Machine, tmp_path: Path, daemon: str) -> None:
    """XLA's GetToolVersionString reads `ptxas --version`'s stdout to its end with no timeout: a daemon that holds it
    hangs JAX's first compilation there. Before: taken as 'used' (the runner read what was there at exit)."""
    jax_cu12(machine, tmp_path, nvcc=False)
    pids = tmp_path / "pids"
    body = (f"{daemon} & echo $! >> {pids}\n"
            "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n")
    report = _check(machine, hostile_ptxas(tmp_path / "x", body).parent)
    [first, *rest] = xla_of(report)["ptxas"]
    assert first["verdict"] == "hangs" and "holding its output" in first["said"] and not rest, first
    said = [f for f in report["findings"] if f["code"] == "CD208" and f["subject"] == first["path"]]
    assert said and "hang" in said[0]["detail"], [f["detail"] for f in report["findings"]]
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"the daemon {pid} outlived check"


def test_a_daemon_holding_only_stderr_does_not_hang_xla(machine: Machine, tmp_path: Path) -> None:
    """XLA pipes stdout alone (stderr goes to /dev/null): a daemon on stderr holds nothing XLA reads."""
    jax_cu12(machine, tmp_path, nvcc=False)
    body = "setsid sleep 30 >/dev/null & echo 'Cuda compilation tools, release 12.6, V12.6.85'\n"
    [first, *_] = xla_of(_check(machine, hostile_ptxas(tmp_path / "x", body).parent))["ptxas"]
    assert first["verdict"] == "used", first


def test_a_ptxas_that_never_ends_is_where_xla_stops_looking(machine: Machine, tmp_path: Path) -> None:
    """A later good ptxas is never reached: XLA waits at the first for ever. Before: passed over as 'did not run'
    and the next one 'used'."""
    from tests.test_first_use import script_ptxas

    jax_cu12(machine, tmp_path, nvcc=False)
    good = script_ptxas(tmp_path / "good", "12.6.85").parent
    machine.env["PATH"] = f"{good}:{machine.env['PATH']}"
    candidates = xla_of(_check(machine, hostile_ptxas(tmp_path / "x", "exec sleep 60\n").parent))["ptxas"]
    assert [c["verdict"] for c in candidates] == ["hangs"], candidates


def test_paths_first_ptxas_is_run_once_for_both_of_its_readers(machine: Machine, tmp_path: Path) -> None:
    """The ptxas probe (its release, for CD206) and XLA's search took one answer each: the file ran twice."""
    jax_cu12(machine, tmp_path, nvcc=False)
    runs = tmp_path / "runs"
    body = f"echo run >> {runs}\necho 'Cuda compilation tools, release 12.6, V12.6.85'\n"
    report = _check(machine, hostile_ptxas(tmp_path / "x", body).parent)
    assert runs.read_text().splitlines() == ["run"], runs.read_text()
    assert report["process"]["ptxas"] == str(tmp_path / "x" / "ptxas") and \
        report["process"]["ptxas_release"] == "12.6", report["process"]
    assert xla_of(report)["path_ptxas_used"] is True


def test_a_ptxas_without_a_shebang_does_not_start_as_in_xla(machine: Machine, tmp_path: Path) -> None:
    """XLA starts it with posix_spawnp (glibc's GLIBC_2.15 symbol tries no /bin/sh): ENOEXEC, passed over. Before:
    the search ran it through /bin/sh ('used') while the ptxas probe ran it directly (no release)."""
    jax_cu12(machine, tmp_path, nvcc=False)
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "ptxas").write_text("echo 'Cuda compilation tools, release 12.6, V12.6.85'\n")
    (folder / "ptxas").chmod(0o755)
    report = _check(machine, folder)
    [first, *_] = xla_of(report)["ptxas"]
    assert first["verdict"] == "did not run" and "format" in first["said"].lower(), first
    assert report["process"]["ptxas_release"] is None


# --- 2. NCCL's enum settings given as numbers, read by NCCL's own readers ------------------------------------------

@pytest.mark.parametrize(("variable", "value", "code", "words"), [
    ("NCCL_P2P_LEVEL", "0", "CD181", ""),  # old level 0 is LOC: peer-to-peer off (before: taken, nothing said)
    ("NCCL_P2P_LEVEL", "0x10", None, ""),  # strtol base 0: 16, above 5 is 5: SYS
    ("NCCL_P2P_LEVEL", "sys", "CD176", "exactly as written"),  # strcmp: NCCL ignores it
    ("NCCL_P2P_LEVEL", "9" * 30, "CD176", "beyond the 64-bit number"),
    ("NCCL_NET_GDR_LEVEL", "NVL", None, ""),  # every name up to SYS (before: CD176)
    ("NCCL_P2P_DISABLE", "0x1", "CD181", ""),  # strtol(value, NULL, 0) == 1 (before: CD176 'not one of 0, 1')
    ("NCCL_SHM_DISABLE", "01", "CD181", ""),  # octal 1
    ("NCCL_SHM_DISABLE", "yes", "CD176", "takes it as 0"),  # no number: 0 without a word, not 'on'
    ("NCCL_IB_DISABLE", "2", "CD181", ""),  # `if (ncclParamIbDisable())`: any number but 0 (before: CD176)
    ("NCCL_SHM_DISABLE", "2", "CD176", "acts on 1 alone"),  # `== 1`: 2 leaves shared memory on
    ("NCCL_NTHREADS", "0x40", None, ""),  # 64 (before: CD176 'not one of 64, 128, 256, 512')
    ("NCCL_CROSS_NIC", "01", None, ""),
    ("NCCL_PROTO", "allreduce:LL128;broadcast:simple", None, ""),  # parseList's prefixes, any case
    ("NCCL_PROTO", "2", "CD176", "creating a communicator fails"),  # parseList reads no number
    ("NCCL_PROTO", ";LL", "CD176", "must have a prefix"),  # strtok_r skips ';' but its token is not the string's first
    ("NCCL_ALGO", "ring,3", "CD176", "'3' is not one of Tree, Ring"),  # before: a string, nothing said
])
def test_nccl_settings_read_as_nccls_own_readers_read_them(machine: Machine, tmp_path: Path, variable: str,
                                                          value: str, code: str | None, words: str) -> None:
    from tests.test_multi_gpu import MULTI_CODES, _gpus, _interfaces

    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "lo")
    machine.env[variable] = value
    report = machine.check_json()
    said = [f for f in report["findings"] if f["code"] in MULTI_CODES and f["subject"] == variable]
    assert [f["code"] for f in said] == ([code] if code else []), [(f["code"], f["detail"]) for f in said]
    assert not said or words in said[0]["detail"], said[0]["detail"]


# --- 3. numbers past Python's 4,300-digit int() limit, from a child's answer, --deep's JSON, a file ----------------

BIG = "7" * 5000


def test_a_childs_answer_holding_an_integer_past_ints_limit_is_still_its_answer() -> None:
    """json.loads raises ValueError on an integer of over 4,300 digits: the whole answer was lost ('no answer')."""
    from cudnn_doctor.child import last_json_object

    read = last_json_object('{"version": ' + BIG + ', "ok": true}\n')
    assert read == {"version": BIG, "ok": True}, str(read)[:80]


def test_deep_answers_past_ints_limit_are_the_frameworks_answer_not_a_crash(machine_in_process: Machine,
                                                                         tmp_path: Path) -> None:
    """The --deep child's json.dumps raised on torch's own 10**5000 (str() of an int past 4,300 digits): 'torch
    crashed: ValueError: Exceeds the limit'. Now the number is said in words and the rest of the answer kept."""
    from tests.test_strict_readers import FAKE_TORCH, install_torch, python_env, real_python_sees, strict_loads

    site = python_env(machine_in_process, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(
        FAKE_TORCH.replace("return int(_cudnn.cudnnGetVersion())", "return 10**5000")
        .replace('cuda = "12.4"', 'cuda = 10**6000'))
    real_python_sees(site, tmp_path)
    result = machine_in_process.run("check", "--deep", "--json")
    assert "Traceback" not in result.stderr, result.stderr
    [torch] = strict_loads(result.stdout)["frameworks"]
    deep = torch["details"]["deep"]
    assert "crashed" not in str(deep.get("error")) and deep["version"] == "2.5.1+cu124", deep
    assert deep["cudnn_version"] == "(an integer of 16610 bits)", deep["cudnn_version"]


def test_an_autotune_results_version_past_ints_limit_is_words_not_a_value_error(tmp_path: Path) -> None:
    from cudnn_doctor.probes.settings import _results_version

    results = tmp_path / "results.txt"
    results.write_text(f"version: {BIG}\nresults {{\n}}\n")
    said = _results_version(str(results), 3)
    assert said and "5000 digits" in said and "int32" in said, said


# --- 4. json_values and the loading child's fields: depth, width, NUL, lone surrogates, a failing __str__ ------------

def test_json_values_take_any_depth_without_a_recursion_error() -> None:
    """exact() walked every level: 990 nested lists (what json.loads still parses) were a RecursionError."""
    from cudnn_doctor.json_values import MAX_DEPTH, exact, loads

    nested: object = 0
    for _ in range(990):
        nested = [nested]
    text = str(exact(nested))
    assert f"nested deeper than {MAX_DEPTH} levels" in text
    read = loads("[" * 900 + "1" + "]" * 900)
    assert f"nested deeper than {MAX_DEPTH} levels" in str(read)
    wide = exact({"list": list(range(200000)), "big": 10**5000})
    assert len(wide["list"]) == 200000 and wide["big"].startswith("(an integer of")


def test_the_loading_childs_fields_survive_nul_a_lone_surrogate_and_a_failing_str() -> None:
    """A framework's exception words reach say(): a lone surrogate was a UnicodeEncodeError (the child died, read as
    a crash of the loading), a NUL split the field (FIELD is NUL once read), and a __str__ that raises killed it."""
    import subprocess
    import sys

    from cudnn_doctor.probes.loading import MARK, parse_answer

    code = ("import sys; sys.path.insert(0, sys.argv[1]); from cudnn_doctor import _load_jobs as c\n"
            "class Bad(Exception):\n    def __str__(self): raise RuntimeError('no words')\n"
            "c.say('start', 'ld.so')\n"
            "c.say('recipe', 'RuntimeError: a\\x00b \\ud800 c\\td')\n"
            "c.say('recipe', Bad())\n")
    done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parents[1])],
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.count(MARK) == 3
    steps = parse_answer("ld.so", None, done.stdout, 0, False, None).steps
    said = [s.said for s in steps if s.step == "recipe"]
    assert said[0].startswith("RuntimeError: a\ufffdb ") and said[0].endswith(" c\td"), said
    assert said[1] == "(a Bad whose str() fails)", said


# --- 5. CD180's plan line, sourced in a real bash, then the doctor's own check --------------------------------------

@pytest.mark.parametrize("on_path", [True, False], ids=["its-folder-on-ld-library-path", "preloaded-only"])
def test_the_plan_that_drops_a_preloaded_older_nccl_leaves_check_without_cd180(machine: Machine, tmp_path: Path,
                                                                               on_path: bool) -> None:
    """torch's own NCCL is the real nvidia-nccl-cu13 2.32.3 (it answers ncclGetVersion itself); an older NCCL
    (2.18.3) is preloaded. The plan's bash lines, sourced in a real bash, then check: torch gets its own NCCL, and
    CD180 is gone. Before: with its folder on LD_LIBRARY_PATH too, the plan unset LD_PRELOAD alone and CD180 stayed
    (now through LD_LIBRARY_PATH); preloaded only, it was never seen (the probe searched as if nothing were
    preloaded, and found torch's own)."""
    import shutil

    from tests.fakes.build import fake_nccl
    from tests.real_wheels import real_nccl
    from tests.test_multi_gpu import _found, _gpus, _torch_with_nccl
    from tests.test_process_env import check_after, plan_lines

    _gpus(machine, tmp_path, 2)
    site = _torch_with_nccl(machine, tmp_path, pin="2.32.3")
    own = site / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    own.unlink()
    shutil.copyfile(real_nccl(), own)
    old = fake_nccl(tmp_path / "old-nccl", version=21803)
    if on_path:
        machine.add_library_path(old.parent)
    machine.env["LD_PRELOAD"] = f" {old}:"  # ld.so splits at blanks and colons: an empty entry on each side
    [before] = _found(machine.check_json(), "CD180")
    assert str(old) in before["detail"] or "2.18.3" in before["detail"], before["detail"]
    lines = plan_lines(machine)
    assert any("LD_PRELOAD" in line for line in lines), lines
    after = check_after(machine, lines)
    assert not [f for f in after["findings"] if f["code"] == "CD180"], after["findings"]
    [lib] = after["multi_gpu"]["nccl_libraries"]
    assert (lib["version"], lib["library"]) == ("2.32.3", str(own)), lib


@pytest.mark.subprocess  # the doctor's own process is the subreaper that adopts what the compiler left
def test_a_compiler_whose_version_leaves_a_daemon_is_said_and_the_daemon_is_gone(machine: Machine,
                                                                             tmp_path: Path) -> None:
    """Any program check asks `--version` (here gcc, for --format markdown's machine table): what it leaves holding
    its output is said there and stopped. Before: its version was taken, nothing said."""
    folder = tmp_path / "bin"
    folder.mkdir()
    pids = tmp_path / "pids"
    gcc = folder / "gcc"
    gcc.write_text(f"#!/bin/sh\nsetsid sleep 30 & echo $! >> {pids}\necho 'gcc (Debian 12.2.0-14) 12.2.0'\n")
    gcc.chmod(0o755)
    machine.env["PATH"] = f"{folder}:{machine.env['PATH']}"
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = SHORT
    done = machine.run("check", "--format", "markdown")
    assert "Traceback" not in done.stderr, done.stderr
    [row] = [line for line in done.stdout.splitlines() if line.startswith("| gcc")]
    assert "12.2.0" in row and "left a process holding its output" in row, row
    assert not [pid for pid in map(int, pids.read_text().split()) if _alive(pid)]
