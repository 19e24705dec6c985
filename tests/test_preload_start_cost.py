"""Plain check asks the loader what a preload no row knows costs and takes (issue 45, round nineteen). Round eighteen's
published set preloaded glibc's memory profiler (libmemusage.so, MEMUSAGE_TRACE_MMAP=1) into every process: every
process crawled on the H100, the frameworks and the doctor ran past the harness's limit, and plain check said nothing
of the preload (no row knows it). Now a bare Python is started twice side by side, with LD_PRELOAD and without the
entries no row knows, and a start that much slower is a CD412 warning, seen, naming the entry; the plan takes it out.
The slow library here is a gcc fake whose constructor sleeps in the doctor's children (tests/fakes/slow_preload.c);
the real libmemusage.so, where glibc installs it, is asked and, costing nothing on this CPU, not said. The same two
starts say what the preload's constructor took from the process (the environment, a signal, a limit, the umask, an
alarm, the working folder): tests/fakes/hostile_constructor.c, preloaded, CD116 seen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cudnn_doctor.probes.start_cost import unvouched_preloads
from tests.conftest import Machine
from tests.fakes.build import compile_library

MEMUSAGE = next((path for path in ("/usr/lib/x86_64-linux-gnu/libmemusage.so", "/lib/x86_64-linux-gnu/libmemusage.so",
                                   "/usr/lib64/libmemusage.so", "/usr/lib/aarch64-linux-gnu/libmemusage.so")
                 if os.path.exists(path)), None)


def _slow(ms: int) -> Path:
    return compile_library("slow_preload.c", f"libslowstart{ms}.so", defines={"SLOW_MS": ms})


def _said(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == "CD412" and f["values"].get("variable") == "LD_PRELOAD"]


def test_a_preload_that_slows_every_start_is_seen_and_named(machine: Machine) -> None:
    slow = _slow(900)
    machine.env["LD_PRELOAD"] = str(slow)
    report = machine.check_json()
    [said] = _said(report)
    assert said["severity"] == "warning" and said["evidence"] == "seen", said
    assert said["subject"] == str(slow), said
    assert "with LD_PRELOAD took" in said["proof"] and f"without {slow}" in said["proof"], said
    entries, took, bare, seconds = report["process"]["preload_start"]
    assert entries == str(slow) and took >= 900 > bare and seconds == 5, report["process"]["preload_start"]
    assert "unset LD_PRELOAD" in said["fix"], said["fix"]
    plan = machine.run("fix", "--json").json
    [step] = [a for a in plan["actions"] if "CD412" in a["resolves"]]
    assert step["kind"] == "env" and "LD_PRELOAD" in str(step), step


def test_only_the_unknown_entry_leaves_the_preload(machine: Machine, tmp_path: Path) -> None:
    """The entry no row knows is the one the plan takes out; an entry the data knows stays preloaded."""
    slow = _slow(900)
    known = tmp_path / "libnvToolsExt.so.1"  # NVTX: a row of compat/libraries.toml
    known.write_bytes(_slow(0).read_bytes())
    machine.env["LD_PRELOAD"] = f"{known} {slow}"
    report = machine.check_json()
    [said] = _said(report)
    assert said["subject"] == str(slow), said
    assert str(known) in said["fix"] and str(slow) not in said["fix"].replace(f"{slow} out", ""), said["fix"]


def test_a_preload_that_costs_nothing_is_asked_and_not_said(machine: Machine) -> None:
    machine.env["LD_PRELOAD"] = str(_slow(0))
    report = machine.check_json()
    assert not _said(report), _said(report)
    entries, took, bare, _seconds = report["process"]["preload_start"]
    assert entries == str(_slow(0)) and took >= 0 and bare >= 0
    assert report["process"]["preload_takes"] == [], report["process"]["preload_takes"]  # it takes nothing
    assert not [f for f in report["findings"] if f["code"] == "CD116"], report["findings"]


@pytest.mark.skipif(MEMUSAGE is None, reason="glibc's libmemusage.so is not installed here")
def test_the_real_memory_profiler_is_asked_and_the_check_ends(machine: Machine, tmp_path: Path) -> None:
    """glibc's own libmemusage.so with MEMUSAGE_TRACE_MMAP=1, as round eighteen's scenario preloaded it: asked (no row
    knows it); on this CPU its starts cost nothing worth saying, so nothing is said and the check answers."""
    machine.env.update({"LD_PRELOAD": str(MEMUSAGE), "MEMUSAGE_TRACE_MMAP": "1",
                        "MEMUSAGE_OUTPUT": str(tmp_path / "memusage.dat")})
    report = machine.check_json()
    assert report["process"]["preload_start"][0] == MEMUSAGE
    assert report["process"]["preload_start"][1] >= 0
    # its SIGPROF timer (MEMUSAGE_OUTPUT) is no signal a program loses: nothing taken, nothing said
    assert report["process"]["preload_takes"] == [], report["process"]["preload_takes"]
    assert not [f for f in report["findings"] if f["subject"] == MEMUSAGE], report["findings"]


def test_no_preload_no_question() -> None:
    """Nothing is started where LD_PRELOAD is unset or holds only what the data knows (a CUDA library, a cuDNN
    sub-library, a sanitizer's run-time): those have rules of their own."""
    assert unvouched_preloads({}) == ()
    known = "/x/libcublasLt.so.13 /y/libcudnn_adv.so.9:/z/libasan.so.8 /w/libnvidia-ml.so.1"
    assert unvouched_preloads({"LD_PRELOAD": known}) == ()
    assert unvouched_preloads({"LD_PRELOAD": f"{known} /v/libmemusage.so"}) == ("/v/libmemusage.so",)


def test_a_healthy_check_starts_no_bare_python(machine: Machine) -> None:
    """No LD_PRELOAD: nothing asked, nothing reported (the healthy machine's check keeps its children)."""
    report = machine.check_json()
    assert report["process"] is None or report["process"].get("preload_start") is None


# tests/fakes/hostile_constructor.c's HOSTILE_TAKES (in the doctor's children only) -> what the finding says the
# preload took from a program's process, and whether that stops every program (an error) or not (a warning)
TAKES = {
    1: ("cleared the environment", "error"),
    3: ("exited with", "error"),  # the open-files limit dropped to 3: Python cannot start
    4: ("set the umask to 0777", "warning"),
    5: ("armed an alarm: SIGALRM ends every program 1 s after its start", "error"),
    6: ("unset the variables HOME", "warning"),
    7: ("blocked SIGINT, SIGTERM", "warning"),
    8: ("ignored SIGCHLD", "warning"),
}


@pytest.mark.parametrize("takes", sorted(TAKES))
def test_what_an_unknown_preload_takes_from_every_process_is_seen(machine: Machine, takes: int) -> None:
    """A preload no row knows whose constructor takes something from every process: a bare Python started with it,
    beside one without it, shows what (CD116, seen), and the plan takes the entry out of LD_PRELOAD."""
    hostile = compile_library("hostile_constructor.c", f"libhostilepreload{takes}.so", defines={"HOSTILE_TAKES": takes})
    machine.env["LD_PRELOAD"] = str(hostile)
    report = machine.check_json()
    words, severity = TAKES[takes]
    made = [f for f in report["findings"] if f["code"] == "CD116" and f["subject"] == str(hostile)]
    assert made, [(f["code"], f["detail"][:200]) for f in report["findings"]]
    assert made[0]["evidence"] == "seen" and made[0]["severity"] == severity, made[0]
    assert words in made[0]["detail"] and "unset LD_PRELOAD" in made[0]["fix"], made[0]
    assert any(words in take for take in report["process"]["preload_takes"]), report["process"]["preload_takes"]
    assert "closed or redirected" not in made[0]["detail"], made[0]  # each start's own pipe is not a change


def test_the_doctors_children_the_preload_slowed_are_its_finding_not_the_libraries(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """A preload that makes every start slower than the doctor's own deadline (here 1.5 s, CUDNN_DOCTOR_PROBE_TIMEOUT;
    the preload sleeps 3 s in each child): NVML's, CUDA's and cuDNN's children do not answer in time. Those are not
    the driver's or cuDNN's hangs (CD104, CD110, CD118, CD309 were each an error blaming its library): the preload's
    CD412 names them, and no error is left standing on a library's timeout."""
    from tests.fakes.build import fake_cudnn, fake_libcuda, fake_nvml
    from tests.test_check import CUDNN9_SUBLIBS

    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    fake_cudnn(tmp_path / "cudnn", version=91900, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "cudnn")
    machine.env.update({"LD_PRELOAD": str(_slow(3000)), "CUDNN_DOCTOR_PROBE_TIMEOUT": "1.5"})
    report = machine.check_json()
    [said] = _said(report)
    assert "more than 1.5 s (cut off there)" in said["detail"], said["detail"]
    assert "did not answer within their time either" in said["detail"] and "CD110" in said["detail"], said["detail"]
    hung = [f for f in report["findings"] if "it hangs while loading" in f["detail"]]
    assert not hung, [(f["code"], f["detail"][:160]) for f in hung]
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


def test_an_audit_library_is_asked_as_a_preload_is(machine: Machine) -> None:
    """LD_AUDIT's libraries are loaded into every process before the program as LD_PRELOAD's are (rtld-audit(7)), and
    no row of the data knows any: the same two starts, without LD_AUDIT for the second; the plan unsets it."""
    audit = compile_library("slow_preload.c", "libslowaudit900.so", defines={"SLOW_MS": 900}, also=("audit_version.c",))
    machine.env["LD_AUDIT"] = str(audit)
    report = machine.check_json()
    [said] = [f for f in report["findings"] if f["code"] == "CD412" and f["values"].get("variable") == "LD_AUDIT"]
    assert said["evidence"] == "seen" and said["subject"] == str(audit), said
    assert "with LD_AUDIT took" in said["proof"] and "unset LD_AUDIT" in said["fix"], said
    assert "LD_PRELOAD" not in said["fix"], said["fix"]
