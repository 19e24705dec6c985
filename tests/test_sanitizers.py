"""AddressSanitizer preloaded into every program (issue 45): its protected shadow gap holds the address range the
CUDA driver needs at a fixed place, and cuInit answers CUDA_ERROR_OUT_OF_MEMORY (2): the driver fails to initialise (CD110), its cause the sanitizer. gcc's real libasan is preloaded
into the doctor's CUDA child, with a fake libcuda that needs that range (tests/fakes/fake_libcuda.c,
FAKE_CUDA_FIXED_RESERVE): what ASan maps there is the kernel's answer in that child. The plan's line, sourced in a
real bash, appends protect_shadow_gap=0 to ASAN_OPTIONS, and check is then clean of it."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_libcuda, fake_nvml
from tests.test_process_env import KERNEL, bash, check_after, doctor_line, finding, plan_lines


def libasan() -> str | None:
    """gcc's AddressSanitizer run-time (Debian's libasan8, installed with gcc by .ci/run)."""
    found = sorted(glob.glob("/usr/lib/*-linux-gnu/libasan.so.[0-9]*"))
    return next((f for f in found if f.count(".so.") == 1 and f.rsplit(".so.", 1)[1].isdigit()), None)


needs_libasan = pytest.mark.skipif(libasan() is None, reason="gcc's libasan is not installed (.ci/run installs it)")


def asan_machine(machine: Machine, tmp_path: Path) -> None:
    (machine.root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (machine.root / "proc" / "driver" / "nvidia" / "version").write_text(
        f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {KERNEL}  Release Build\n")
    (machine.root / "dev").mkdir()
    (machine.root / "dev" / "nvidia-uvm").write_text("")
    driver = tmp_path / "driver"
    fake_nvml(driver, driver=KERNEL, gpus=1)
    fake_libcuda(driver, driver_cuda=13000, devices=1, file_name=f"libcuda.so.{KERNEL}", fixed_reserve=True)
    machine.add_library_path(driver)
    machine.env["LD_PRELOAD"] = str(libasan())
    machine.env["LSAN_OPTIONS"] = "detect_leaks=0"  # the doctor's own Python leaks at exit, as every Python does


@needs_libasan
@pytest.mark.parametrize("options", [None, "detect_leaks=0:halt_on_error=1", "protect_shadow_gap=0:verbosity=0 "
                                     "protect_shadow_gap=1"])
def test_asan_preloaded_is_named_as_the_cause_and_its_line_cures_it(machine: Machine, tmp_path: Path,
                                                                    options: str | None) -> None:
    asan_machine(machine, tmp_path)
    if options is not None:
        machine.env["ASAN_OPTIONS"] = options
    report = machine.check_json()
    assert report["process"]["cuinit"] == 2, report["process"]
    gap = finding(report, "CD110")
    assert gap["severity"] == "error" and gap["evidence"] == "seen", gap
    assert "protect_shadow_gap" in gap["detail"] and "libasan" in gap["detail"], gap["detail"]
    lines = plan_lines(machine)
    wanted = f"{options}:protect_shadow_gap=0" if options else "protect_shadow_gap=0"
    assert f"export ASAN_OPTIONS={wanted!r}" in lines or f"export ASAN_OPTIONS={wanted}" in lines, lines
    after = check_after(machine, lines)
    assert after["process"]["cuinit"] == 0, after["process"]
    assert "CD116" not in codes(after) and "CD110" not in codes(after)


@needs_libasan
@pytest.mark.parametrize("options", ["protect_shadow_gap=0", "protect_shadow_gap=false", "verbosity=0,protect_shadow_gap=no",
                                     "protect_shadow_gap=1:protect_shadow_gap='0'"])
def test_asan_with_its_gap_unprotected_is_no_finding(machine: Machine, tmp_path: Path, options: str) -> None:
    """Each spelling as the real libasan reads it (the fake driver's answer is the judge: 0 only where ASan left the
    gap unprotected)."""
    asan_machine(machine, tmp_path)
    machine.env["ASAN_OPTIONS"] = options
    report = machine.check_json()
    assert report["process"]["cuinit"] == 0
    assert not {"CD110", "CD116"} & codes(report)


def test_asan_options_are_read_as_compiler_rt_reads_them() -> None:
    from cudnn_doctor.rules.process_env import sanitizer_flag

    assert sanitizer_flag("", "protect_shadow_gap") is None
    assert sanitizer_flag("halt_on_error=1", "protect_shadow_gap") is None
    assert sanitizer_flag("protect_shadow_gap=0 verbosity=1", "protect_shadow_gap") == "0"
    assert sanitizer_flag("protect_shadow_gap=0:protect_shadow_gap=1", "protect_shadow_gap") == "1"
    assert sanitizer_flag("suppressions='a b:c',protect_shadow_gap=\"0\"", "protect_shadow_gap") == "0"
    assert sanitizer_flag("log_path=\"x:protect_shadow_gap=0\"", "protect_shadow_gap") is None


def test_a_process_limit_that_stops_cuinit_is_still_named_as_a_limit(machine: Machine, tmp_path: Path) -> None:
    """cuInit answering 2 without ASan mapped stays what it was: a process limit (ulimit -v)."""
    (machine.root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    driver = tmp_path / "driver"
    fake_nvml(driver, driver=KERNEL, gpus=1)
    fake_libcuda(driver, driver_cuda=13000, devices=1, status=2)
    machine.add_library_path(driver)
    done = bash(machine, f"ulimit -S -v 64000000; {doctor_line('check', '--json')}")
    report = json.loads(done.stdout)
    limit = finding(report, "CD116")
    assert limit["subject"] == "RLIMIT_AS" and "protect_shadow_gap" not in limit["detail"]


@needs_libasan
def test_the_text_names_asan_and_its_line(machine: Machine, tmp_path: Path) -> None:
    asan_machine(machine, tmp_path)
    machine.env["ASAN_OPTIONS"] = "halt_on_error=1"
    shown = machine.run("check", "--select", "CD110").stdout
    assert "protect_shadow_gap=0" in shown and "export ASAN_OPTIONS=halt_on_error=1:protect_shadow_gap=0" in shown


@needs_libasan
def test_asan_leak_reports_at_exit_make_no_finding_of_their_own(machine: Machine, tmp_path: Path) -> None:
    """LeakSanitizer reports the leaks of every process that exits (the doctor's children too) and ends it with
    its own status: nothing of that is a finding; with the gap unprotected, check is clean of ASan."""
    asan_machine(machine, tmp_path)
    del machine.env["LSAN_OPTIONS"]
    machine.env["ASAN_OPTIONS"] = "protect_shadow_gap=0"
    report = machine.check_json()
    assert report["process"]["cuinit"] == 0
    assert not [f for f in report["findings"] if f["severity"] in ("error", "warning")
                and f["code"] not in ("CD201", "CD301")], report["findings"]
    # the doctor's own process under ASan (a real one, as a user's shell starts it): its answer and exit status are
    # its own, not LeakSanitizer's
    done = bash(machine, doctor_line("check", "--json"))
    assert "LeakSanitizer" not in done.stderr, done.stderr[-2000:]
    assert json.loads(done.stdout)["summary"]["exit_code"] == done.returncode
