"""Issue 43, round fifteen (helper r20): what round fourteen left. NCCL's and torch's settings read by their readers'
own grammars (NCCL 2.30's ncclParamOneOf and ncclParamBitsetOf, its interface lists, NCCL_CUMEM_ENABLE's and
NCCL_COMM_BLOCKING's own tests of their number, torch's getCvarBool); every helper program (each toolkit's nvcc,
ldconfig) answered through the one runner with its guarantees, and what it did said; the outputs machines read kept
one document each under hostile machine values; round fourteen's readers (XLA's stub-table names, the libdevice
folder) against hostile files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.test_multi_gpu import MULTI_CODES, _gpus, _interfaces
from tests.test_reliability_round14 import _alive

pytestmark = pytest.mark.integration


# --- 2. NCCL's and torch's settings, as their own readers read them ----------------------------------------------

@pytest.mark.parametrize(("variable", "value", "code"), [
    # NCCL 2.30 ncclParamOneOf: trimmed, any case, ABORT is a level (before: ' INFO' and 'abort' were CD176)
    ("NCCL_DEBUG", " info", "CD181"),
    ("NCCL_DEBUG", "abort", None),
    ("NCCL_DEBUG", "Warn\t", None),
    ("NCCL_DEBUG", "INFOX", "CD176"),
    # ncclParamBitsetOf: P2P and ALLOC_HOST are names (before: refused by a letters-only pattern), '^' only first
    ("NCCL_DEBUG_SUBSYS", "INIT,P2P", None),
    ("NCCL_DEBUG_SUBSYS", "^init, alloc_host", None),
    ("NCCL_DEBUG_SUBSYS", "INIT,^NET", "CD176"),
    ("NCCL_DEBUG_SUBSYS", "INIT,FOO", "CD176"),
    # ncclCuMemEnable: param >= 0 ? param : (param == -2 && supported): 2 is on, -1 off, -2 the default
    ("NCCL_CUMEM_ENABLE", "2", None),
    ("NCCL_CUMEM_ENABLE", "-1", None),
    ("NCCL_CUMEM_ENABLE", "-2", None),
    # envConfigOverride takes 0 or 1 alone
    ("NCCL_COMM_BLOCKING", "0x1", None),
    ("NCCL_COMM_BLOCKING", "2", "CD176"),
    # a value of one character is not the user's list: NCCL picks by itself (strlen(env) > 1)
    ("NCCL_SOCKET_IFNAME", "x", "CD176"),  # said with NCCL's rule: it is not read as the user's list
    ("NCCL_SOCKET_IFNAME", "^", "CD176"),
    # '^' with no entry after it leaves no interface at all (matchIfList of an empty list matches every name)
    ("NCCL_SOCKET_IFNAME", "^,", "CD175"),
    # '=' for the whole list: '=eth0,lo' names eth0 and lo exactly
    ("NCCL_SOCKET_IFNAME", "=eth0,lo", None),
    ("NCCL_SOCKET_IFNAME", "=eth,lo", None),  # lo exactly: one is left
    ("NCCL_SOCKET_IFNAME", "=eth", "CD175"),  # no interface is called exactly 'eth'
    ("NCCL_SOCKET_IFNAME", "eth0,=lo", None),  # '=lo' a prefix that matches nothing; eth0 is left
    ("NCCL_SOCKET_IFNAME", "=lo0,=eth0", "CD175"),  # '=eth0' is a name exactly (with its '='), lo0 none
    # NCCL 2.30's bool parameters: '1', T, TRUE / '0', F, FALSE in any case, nothing else (before: 'true' refused)
    ("NCCL_SET_THREAD_NAME", "true", None),
    ("NCCL_WARN_ENABLE_DEBUG_INFO", "t", None),
    ("NCCL_SET_THREAD_NAME", "yes", "CD176"),
    # its bitset of levels (before: any text taken)
    ("NCCL_DEBUG_TIMESTAMP_LEVELS", "warn,Info", None),
    ("NCCL_DEBUG_TIMESTAMP_LEVELS", "LOUD", "CD176"),
])
def test_nccl_settings_read_by_nccls_own_readers(machine: Machine, tmp_path: Path, variable: str, value: str,
                                                 code: str | None) -> None:
    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "lo")
    machine.env[variable] = value
    report = machine.check_json()
    assert (codes(report) & MULTI_CODES) == ({code} if code else set()), [
        (f["code"], f["detail"]) for f in report["findings"] if f["code"] in MULTI_CODES]


@pytest.mark.parametrize(("value", "code"), [("=mlx5_0:1", None), ("mlx5", None), ("^=mlx5_0,mlx5_1", "CD176"),
                                           ("^mlx", "CD176"), ("=mlx5", "CD176")])
def test_nccl_ib_hca_read_as_nccl_reads_it(machine: Machine, tmp_path: Path, value: str, code: str | None) -> None:
    """NCCL_IB_HCA by the same reader (NCCL 2.30's net_ib/init.cc): a first '^', then '=' for the whole list, a
    ':port' after each adapter; where none of the node's adapters is left, NCCL talks over sockets (CD176)."""
    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "lo")
    _interfaces(machine, "mlx5_0", "mlx5_1", folder="infiniband")
    machine.env["NCCL_IB_HCA"] = value
    report = machine.check_json()
    assert (codes(report) & MULTI_CODES) == ({code} if code else set()), [
        (f["code"], f["detail"]) for f in report["findings"] if f["code"] in MULTI_CODES]


@pytest.mark.parametrize(("value", "code"), [("mlx5_0:1", None), ("mlx5_0:2", "CD176"), ("=mlx5_0:1,mlx5_1:3", None),
                                           ("^mlx5_0:1,mlx5_1:1", "CD176"), ("^mlx5_0:2", None)])
def test_nccl_ib_hca_ports_are_the_adapters_own(machine: Machine, tmp_path: Path, value: str, code: str | None) -> None:
    """NCCL's IB transport matches each port of each adapter (matchIfList with the port; an entry without one takes
    every port): a port the adapter does not have names nothing. Before: the port was cut off and never compared."""
    _gpus(machine, tmp_path, 2)
    _interfaces(machine, "eth0", "lo")
    for adapter in ("mlx5_0", "mlx5_1"):
        (machine.root / "sys" / "class" / "infiniband" / adapter / "ports" / "1").mkdir(parents=True)
    machine.env["NCCL_IB_HCA"] = value
    report = machine.check_json()
    assert (codes(report) & MULTI_CODES) == ({code} if code else set()), [
        (f["code"], f["detail"]) for f in report["findings"] if f["code"] in MULTI_CODES]
    assert report["multi_gpu"]["infiniband_ports"] == {"mlx5_0": [1], "mlx5_1": [1]}


def test_an_unknown_subsystem_says_nccls_own_rule() -> None:
    from cudnn_doctor.knowledge.data import load
    from cudnn_doctor.knowledge.environment import bitset_problem

    row = next(r for r in load("multi_gpu")["nccl_setting"] if r["variable"] == "NCCL_DEBUG_SUBSYS")
    said = bitset_problem(row, "INIT,^NET") or ""
    assert "'^NET'" in said and "only as the value's first character" in said and "whole value" in said


@pytest.mark.parametrize(("value", "refused"), [("yes", False), ("T", False), ("n", False), ("FALSE", False),
                                                ("2", True), (" 1", True), ("on", True)])
def test_torchs_blocking_wait_read_by_getcvarbool(value: str, refused: bool) -> None:
    """getCvarBool: y/yes/1/t/true, n/no/0/f/false in any case, no blank trimmed; anything else raises (TORCH_CHECK)
    where ProcessGroupNCCL is built. Before: 'yes' was refused, and '2' only 'ignored'."""
    from cudnn_doctor.knowledge import environment

    for variable in ("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT"):
        row = environment.rows()[variable]
        assert row["on_error"] == "raises"
        assert (environment.grammar_problem(row, value) is not None) == refused, (variable, value)


# --- 1. every helper program through the one runner, with the same guarantees -------------------------------------

def _nvcc_toolkit(machine: Machine, tmp_path: Path, body: str, seconds: str = "0.5") -> Path:
    """A toolkit whose files name no version (so its nvcc is asked `--version`), CUDA_HOME pointing at it; the
    helpers given SECONDS."""
    toolkit = tmp_path / "cuda-nvcc"
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
    (toolkit / "bin").mkdir()
    nvcc = toolkit / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n" + body)
    nvcc.chmod(0o755)
    machine.env["CUDA_HOME"] = str(toolkit)
    machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = seconds
    return nvcc


# The helpers' time each kind of trouble is given, so that none turns on the machine's load: a program that never
# ends is cut at 0.5 s whatever the load; one that ends by itself (a signal) is given far more than its start could
# take; a flood is given more than the run's own 60 s, so only the runner's cut by bytes (STDOUT_LIMIT) ends it (at
# 0.5 s, a loaded machine's `yes` had not printed 8 MiB yet: "did not end" instead); a daemon's holder is seen only at
# the deadline after the program's exit, so the program (a shell, setsid, an echo) is given 2 s to exit first.
NEVER_ENDS_S, ENDS_S, FLOOD_S, DAEMON_S = "0.5", "60", "600", "2"
BANNER = "echo 'Cuda compilation tools, release 12.6, V12.6.85'\n"


@pytest.mark.subprocess  # the doctor's own process is the subreaper that adopts a daemon with no token
@pytest.mark.parametrize(("body", "said", "seconds"), [
    ("setsid sleep 30 & echo $! >> PIDS\n" + BANNER, "left a process holding its output", DAEMON_S),
    ("env -i setsid sleep 30 & echo $! >> PIDS\n" + BANNER, "left a process holding its output", DAEMON_S),
    (BANNER + "exec sleep 30\n", "did not end within 0.5 s", NEVER_ENDS_S),
    (BANNER + "kill -SEGV $$\n", "SIGSEGV", ENDS_S),
    ("yes 'Cuda compilation tools, release 12.6, V12.6.85'\n", "printed more than 8 MiB, still printing", FLOOD_S),
], ids=["daemon", "daemon-no-environment", "never-ends", "signal", "floods"])
def test_a_toolkits_nvcc_version_that_misbehaves_is_said_and_stopped(machine: Machine, tmp_path: Path, body: str,
                                                                     said: str, seconds: str) -> None:
    """A toolkit's `nvcc --version` (asked where its files name no version) was taken at its exit: a daemon it left
    was killed, but nothing said that a build reading its output to its end (subprocess.check_output) would wait;
    a signal, an endless run and a flood were silent too. Now CD213 names the command and what it did."""
    pids = tmp_path / "pids"
    nvcc = _nvcc_toolkit(machine, tmp_path, body.replace("PIDS", str(pids)), seconds)
    done = machine.run("check", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    import json

    report = json.loads(done.stdout)
    made = [f for f in report["findings"] if f["code"] == "CD213"]
    assert [f["subject"] for f in made] == [f"{nvcc} --version"], [(f["code"], f["title"]) for f in report["findings"]]
    assert said in made[0]["detail"], made[0]["detail"]
    for pid in map(int, pids.read_text().split()) if pids.exists() else ():
        assert not _alive(pid), f"the daemon {pid} outlived check"


def test_a_toolkits_nvcc_that_cannot_be_run_is_said(machine: Machine, tmp_path: Path) -> None:
    """An nvcc that is no program (mode 644, no '#!'): its `--version` cannot start; said (CD213), not silent."""
    nvcc = _nvcc_toolkit(machine, tmp_path, BANNER)
    nvcc.write_text("not a program\n")
    report = machine.check_json()
    made = [f for f in report["findings"] if f["code"] == "CD213"]
    assert made and "could not be run" in made[0]["detail"], [(f["code"], f["detail"]) for f in report["findings"]]


def test_a_toolkits_nvcc_that_answers_and_ends_is_not_said(machine: Machine, tmp_path: Path) -> None:
    _nvcc_toolkit(machine, tmp_path, BANNER)
    report = machine.check_json()
    assert "CD213" not in codes(report)
    assert {t["path"]: t["version"] for t in report["toolkits"]}[str(tmp_path / "cuda-nvcc")] == "12.6.85"


@pytest.mark.parametrize(("body", "said", "seconds"), [
    ("printf '\\377\\376 not utf-8\\n'; kill -KILL $$\n", "SIGKILL", ENDS_S),
    ("echo gcc 12.2.0; exec sleep 30\n", "did not end within 0.5 s", NEVER_ENDS_S),
])
def test_a_compilers_version_ended_by_a_signal_is_said_in_its_row(machine: Machine, tmp_path: Path, body: str,
                                                                  said: str, seconds: str) -> None:
    """`--format markdown`'s compiler rows said a daemon and an endless run (round fourteen), but a compiler killed by
    a signal was only 'version unreadable'. Now every helper's trouble is said by one function (child.helper_trouble)."""
    from cudnn_doctor.probes.system import _compilers

    folder = tmp_path / "bin"
    folder.mkdir()
    gcc = folder / "gcc"
    gcc.write_text("#!/bin/sh\n" + body)
    gcc.chmod(0o755)
    env = {"PATH": f"{folder}:/usr/bin:/bin", "CUDNN_DOCTOR_HELPER_TIMEOUT": seconds}
    import os

    old = os.environ.get("CUDNN_DOCTOR_HELPER_TIMEOUT")
    os.environ["CUDNN_DOCTOR_HELPER_TIMEOUT"] = seconds
    try:
        row = _compilers(env, None)["gcc"] or ""
    finally:
        if old is None:
            os.environ.pop("CUDNN_DOCTOR_HELPER_TIMEOUT", None)
        else:
            os.environ["CUDNN_DOCTOR_HELPER_TIMEOUT"] = old
    assert said in row, row


def test_ldconfig_that_leaves_a_daemon_or_never_ends_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ldconfig -p` (the loader's cache) was read at its exit, and one that did not end was an empty cache without a
    word: now it is read to its end like every helper, and what it did is CD213. The system's own ldconfig is taken
    before PATH's, so a hostile program stands in for it here by its command line; the runner is the real one."""
    from cudnn_doctor.probes import collect, loader
    from cudnn_doctor.probes.context import SearchContext

    pids = tmp_path / "pids"
    for body, said, seconds in ((f"setsid sleep 30 & echo $! >> {pids}\necho '0 libs found in cache'\n",
                                 "holding its output", DAEMON_S),
                                ("echo '0 libs found in cache'; exec sleep 30\n", "did not end", NEVER_ENDS_S)):
        script = tmp_path / "ldconfig"
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)
        monkeypatch.setenv("CUDNN_DOCTOR_HELPER_TIMEOUT", seconds)
        monkeypatch.setattr(loader, "ldconfig_command", lambda ctx, script=script: [str(script), "-p"])
        helpers = collect.HelperRuns(SearchContext.from_environment())
        assert helpers.ldconfig_cache() == {}
        helpers.finish()
        assert [c for c, _ in helpers.troubles] == ["ldconfig -p"] and said in helpers.troubles[0][1], helpers.troubles
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"the daemon {pid} outlived the batch"


# --- 3. the outputs machines read, under hostile machine values ---------------------------------------------------

HOSTILE_TEXT = {  # a GPU name (from NVML) and a path (CUDA_HOME) holding each, end to end through the CLI
    "tab-cr": "a\tb\rc",
    "separators": "a\u2028b\u2029c",
    "bidi": "a\u202eb\u2066c\u200f",
    "long": "L" * 10_000,
    "not-utf8": "a\udcff\udcfeb",  # bytes a path may hold that are not UTF-8, as Python keeps them
    "markup": "a|b`c<&>e\"f'g%h\\i$(j)",
}


def _c_literal(text: str) -> str:
    """TEXT as the body of a C string literal, every byte outside printable ASCII as an octal escape."""
    data = text.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}" for b in data)


PROMETHEUS_LINE = __import__("re").compile(
    r"# HELP [a-zA-Z_:][a-zA-Z0-9_:]* (?:[^\\\n]|\\[\\n])*"
    r"|# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (?:counter|gauge|histogram|summary|untyped)"
    r"|[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\n]|\\[\\\"n])*\""
    r"(?:,[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\n]|\\[\\\"n])*\")*,?)?\})? "
    r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|Inf|NaN))(?: -?[0-9]+)?")


def prometheus_samples(text: str) -> list[str]:
    """TEXT read by the Prometheus text exposition format 0.0.4's grammar: UTF-8, lines ended by '\\n' (no NUL),
    each a HELP, a TYPE, or one sample with its label values escaped ('\\\\', '\\"', '\\n': a CR or a tab may stand as it is,
    the format says); the samples."""
    text.encode("utf-8")  # a lone surrogate cannot be written as UTF-8
    assert "\0" not in text and text.endswith("\n")
    samples = []
    for line in text[:-1].split("\n"):
        assert PROMETHEUS_LINE.fullmatch(line), line[:300]
        if not line.startswith("#"):
            samples.append(line)
    return samples


def _hostile_machine(machine: Machine, tmp_path: Path, text: str) -> None:
    from tests.fakes.build import fake_nvml

    machine.add_library_path(fake_nvml(tmp_path / "nvml", name=_c_literal(text)).parent)
    machine.env["CUDA_HOME"] = f"/nowhere/{text}"  # CD204: a path in a finding's title, detail and fix
    # a toolkit whose version.json and the system's os-release hold a NUL, bytes that are not UTF-8, a separator
    toolkit = tmp_path / "cuda-files"
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
    (toolkit / "version.json").write_bytes(b'{"cuda": {"name": "CUDA SDK", "version": "12.4.\\u0000\xff\xfe'
                                           + text.encode("utf-8", "surrogateescape")[:200] + b'\\u2028"}}')
    machine.env["CUDA_PATH"] = str(toolkit)
    (machine.root / "etc" / "os-release").write_bytes(b'PRETTY_NAME="Linux\x00\xff\r\xe2\x80\xa8 ' +
                                                      text.encode("utf-8", "surrogateescape")[:200] + b'"\n')


@pytest.mark.parametrize("name", list(HOSTILE_TEXT))
def test_every_machine_output_stays_one_document_for_its_parser(machine: Machine, tmp_path: Path, name: str) -> None:
    import json
    import xml.etree.ElementTree as ET
    from xml.parsers import expat

    _hostile_machine(machine, tmp_path, HOSTILE_TEXT[name])
    outputs = {}
    for form in ("json", "junit", "prometheus", "markdown", "github"):
        done = machine.run("check", "--format", form)
        assert "Traceback" not in done.stderr and done.exit_code in (0, 1), (form, done.exit_code, done.stderr[-800:])
        outputs[form] = done.stdout
    report = json.loads(outputs["json"], parse_constant=lambda word: pytest.fail(f"non-JSON constant {word}"))
    assert isinstance(report, dict) and "CD204" in codes(report)
    expat.ParserCreate().Parse(outputs["junit"].encode("utf-8"), True)
    assert ET.fromstring(outputs["junit"]).iter("testcase")
    assert any(s.startswith("cudnn_doctor_") for s in prometheus_samples(outputs["prometheus"]))
    _markdown_tables_hold(outputs["markdown"])
    for line in outputs["github"].split("\n"):  # a workflow command is one line, its data escaped (%0D %0A)
        assert "\r" not in line and "\u2028" not in line and "\u2029" not in line, line[:200]


def _markdown_tables_hold(text: str) -> None:
    """Each table of TEXT keeps its shape: every row has its header's number of cells (a '|' inside a cell escaped),
    and no row is cut by a raw line break (CR, U+2028, U+2029) or holds a NUL."""
    text.encode("utf-8")
    assert "\r" not in text and "\0" not in text and "\u2028" not in text and "\u2029" not in text
    import re

    width = None
    for line in text.split("\n"):
        if not line.startswith("|"):
            width = None
            continue
        cells = len(re.findall(r"(?<!\\)\|", line)) - 1
        if width is None:
            width = cells
        assert cells == width, line[:300]


@pytest.mark.parametrize("name", ["separators", "bidi", "long", "markup"])
def test_fix_lines_for_a_hostile_folder_set_exactly_it_in_each_real_shell(machine: Machine, tmp_path: Path,
                                                                          name: str) -> None:
    """fix's environment lines for a cuDNN in a folder named with U+2028/U+2029, bidi controls, 3,000 characters or
    the shells' specials: each real shell (bash, zsh, fish) that sources them gets exactly that folder first
    (round thirteen tried quotes, tab, CR, ESC, DEL and bytes that are not UTF-8)."""
    from tests.test_shell_lines import VARIABLE, _fix_json, _shells, source_in

    text = HOSTILE_TEXT[name] if name != "long" else "/".join(["L" * 250] * 12)
    folder, action = _fix_json(machine, tmp_path, text.encode("utf-8", "surrogateescape"))
    assert _shells()
    for shell in _shells():
        exported = source_in(shell, action["env"][shell], b"/old/lib", tmp_path)
        assert exported[VARIABLE.encode()] == __import__("os").fsencode(folder) + b":/old/lib", shell


# --- 4. round fourteen's readers against hostile files ------------------------------------------------------------

@pytest.mark.parametrize("what", ["fifo", "folder", "loop", "dangling", "empty", "html"])
def test_a_libdevice_that_is_no_file_is_said_as_xla_meets_it(machine: Machine, tmp_path: Path, what: str) -> None:
    """CUDA_ROOT's nvvm/libdevice/libdevice.10.bc a FIFO or a folder: XLA's FileExists (access F_OK) finds it and
    LLVM opens it, so JAX hangs (a FIFO waits for a writer) or fails to read it, not 'libdevice not found'; before,
    both were said as not found (an error with rule evidence). A link loop or a dangling link XLA's FileExists does
    not find either: 'not found', as before."""
    import os

    from tests.test_first_use import jax_cu12, of_kind

    jax_cu12(machine, tmp_path)
    partial = tmp_path / "cuda-partial"
    folder = partial / "nvvm" / "libdevice"
    folder.mkdir(parents=True)
    target = folder / "libdevice.10.bc"
    if what == "fifo":
        os.mkfifo(target)
    elif what == "folder":
        target.mkdir()
    elif what == "loop":
        target.symlink_to(target)
    elif what == "empty":  # a copy that stopped before its first byte
        target.write_bytes(b"")
    elif what == "html":  # a download that saved a proxy's error page under the name
        target.write_bytes(b"<html><body>403 Forbidden</body></html>")
    else:
        target.symlink_to(tmp_path / "gone")
    machine.env["CUDA_ROOT"] = str(partial)
    [made] = of_kind(machine.check_json(), "libdevice")
    if what == "fifo":
        assert made["severity"] == "warning" and "hangs" in made["detail"] and "not found" not in made["detail"], made
    elif what in ("folder", "empty", "html"):
        assert made["severity"] == "warning" and "cannot take libdevice's functions" in made["detail"], made
        assert what != "empty" or "not LLVM bitcode (empty)" in made["detail"], made
    else:
        assert "libdevice not found at" in made["detail"], made


@pytest.mark.parametrize("name", ["journal.json", "manifest-x.json"])
def test_a_state_file_nested_past_the_parser_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    """A journal (or a manifest) of 5,000 nested lists: json.loads raised RecursionError, an internal error (exit
    3); now read by json_values.loads, the one reader of what another program wrote, and refused as no state file a
    run of ours wrote (exit 2, one JSON object)."""
    from tests.install_helpers import clean_env, cudnn7_archive, cudnn7_prefix, run_json

    archive = cudnn7_archive(tmp_path / "archive")
    prefix = cudnn7_prefix(tmp_path / "cuda")
    state = prefix / ".cudnn-doctor"
    state.mkdir()
    (state / name).write_text("[" * 5000 + "]" * 5000)
    code, data, err = run_json(["install", "--from", str(archive), "--prefix", str(prefix), "--yes"],
                               clean_env(tmp_path))
    assert code in (0, 1, 2) and "Traceback" not in err and "RecursionError" not in json.dumps(data), (code, data)


@pytest.mark.parametrize("variable", ["TORCH_NCCL_HIGH_PRIORITY", "TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_NCCL_DESYNC_DEBUG",
                                      "TORCH_NCCL_ENABLE_TIMING", "TORCH_NCCL_ENABLE_MONITORING",
                                      "TORCH_NCCL_AVOID_RECORD_STREAMS", "NCCL_DESYNC_DEBUG", "NCCL_ENABLE_TIMING"])
def test_torchs_other_getcvarbool_settings(variable: str) -> None:
    """Each setting ProcessGroupNCCL reads with getCvarBool: its words taken, anything else raises (before: 'yes'
    and 'T' refused as 'not one of 0, 1, true, false', and a refused value only 'ignored')."""
    from cudnn_doctor.knowledge import environment

    row = environment.rows()[variable]
    assert row["on_error"] == "raises" and "getCvarBool" in row["source"]
    assert [environment.grammar_problem(row, value) is None for value in ("yes", "T", "n", "2", " 1")] == \
        [True, True, True, False, False]


@pytest.mark.parametrize(("key", "value"), [("findings", [{"code": 5, "severity": "error"}]),
                                            ("gpus", [{"name": ["H100"]}]), ("summary", {"status": 5})])
def test_a_fleet_report_whose_strings_are_of_another_type_is_a_failed_node(tmp_path: Path, key: str,
                                                                           value: object) -> None:
    """A node report whose finding code, GPU name or status is a number or a list (`check --json` writes strings):
    before, read as the text of that value ('5', 'H100') and merged as a healthy node; now a failed node, with why."""
    from cudnn_doctor.fleet.merge import merge_paths

    good = {"schema": "cudnn-doctor/report/1", "host": {"hostname": "a"}, "gpus": [{"name": "NVIDIA H100"}],
            "findings": [], "summary": {"status": "ok"}}
    bad = {**json.loads(json.dumps(good)), "host": {"hostname": "b"}, key: value}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps(bad))
    result = merge_paths([str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert [node.node for node in result.failed] == ["b"] and "writes a string" in (result.failed[0].failure or ""), \
        result.failed


def test_the_bench_compilers_version_is_asked_as_every_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bench's CPU reference names its compiler by `CC --version`: taken at its exit (a daemon it left killed, nothing
    said); now asked through child.helper_request, what it did said beside the compiler's name (_build)."""
    from cudnn_doctor.bench import compiled
    from cudnn_doctor.child import deadline_in

    pids = tmp_path / "pids"
    cc = tmp_path / "cc"
    cc.write_text(f"#!/bin/sh\nsetsid sleep 30 & echo $! >> {pids}\necho 'gcc (Debian 12.2.0-14) 12.2.0'\n")
    cc.chmod(0o755)
    monkeypatch.setenv("CUDNN_DOCTOR_HELPER_TIMEOUT", DAEMON_S)
    version, trouble = compiled._version([str(cc)], deadline_in(20))
    assert "12.2.0" in version and trouble and "holding its output" in trouble, (version, trouble)
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"the daemon {pid} outlived the question"
