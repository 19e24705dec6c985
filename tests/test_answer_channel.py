"""The probes' answers survive what the user's environment loads into the child (issue 43, class 3): a preloaded
library that prints on stdout when it loads (no newline) and when the process exits (a line that looks like an
answer) changes no verdict: each child answers on a descriptor of its own, never on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import compile_library, fake_cudnn, fake_libcuda, fake_nvml
from tests.test_check import CUDNN9_SUBLIBS


def _noisy_machine(machine: Machine, tmp_path: Path) -> Path:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    machine.env["LD_PRELOAD"] = str(compile_library("noisy_preload.c", "libnoisy.so"))
    found = tmp_path / "cudnn" / "lib"
    fake_cudnn(found, version=91900, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    return found


def test_a_preloaded_library_that_prints_changes_no_verdict(machine_in_process: Machine, tmp_path: Path) -> None:
    machine = machine_in_process
    found = _noisy_machine(machine, tmp_path)
    machine.add_library_path(found)
    report = machine.check_json()
    assert "garbage" not in json.dumps(report), [f for f in report["findings"] if "garbage" in json.dumps(f)]
    assert "CD104" not in codes(report) and "CD101" not in codes(report), codes(report)
    assert report["driver"]["version"] == "580.65.06"
    [install] = [i for i in report["cudnn"] if i["path"] == str(found)]
    assert install["version"] == "9.19.0" and not install.get("crashed"), install


def test_fix_yes_checks_again_through_a_noisy_preload(machine_in_process: Machine, tmp_path: Path) -> None:
    machine = machine_in_process
    found = _noisy_machine(machine, tmp_path)
    result = machine.run("fix", "--json", "--yes", "--search-path", str(found))
    data = json.loads(result.stdout)
    assert data["after"]["summary"]["exit_code"] != 3 and "error" not in data["after"], data["after"]


@pytest.mark.parametrize(("misbehave", "said"), [(1, "crashed with SIGSEGV"), (2, "exited (status 0) before it answered"),
                                                 (3, "did not answer within 3 s")])
def test_a_cuda_probe_that_crashes_exits_or_hangs_is_a_finding(machine_in_process: Machine, tmp_path: Path,
                                                               misbehave: int, said: str) -> None:
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1, misbehave=misbehave)
    machine.add_library_path(tmp_path / "driver")
    machine.env["CUDA_VISIBLE_DEVICES"] = "0"  # CUDA itself is asked what it leaves
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"
    report = machine.check_json()
    [found] = [f for f in report["findings"] if f["code"] == "CD110"]
    assert said in found["detail"] and "cuInit" in found["detail"], found
    assert found["subject"] == str(tmp_path / "driver" / "libcuda.so.1") and found["evidence"] == "seen"  # named
    assert report["summary"]["exit_code"] == 1
    text = machine.run("check")
    assert "[✓] NVIDIA driver" not in text.stdout and "CD110" in text.stdout, text.stdout
    # the driver's own folder (its NVML beside it) is never what fix takes out of LD_LIBRARY_PATH
    plan = machine.run("fix", "--json").json
    assert not [a for a in plan["actions"] if a["kind"] == "env" and "CD110" in a["resolves"]], plan["actions"]


def test_a_libcuda_first_on_the_path_that_ends_the_program_is_named_and_taken_out(machine_in_process: Machine,
                                                                                 tmp_path: Path) -> None:
    """A libcuda.so.1 first on LD_LIBRARY_PATH (not the driver's folder: no NVML beside it) that ends every program
    that loads it: the child that asks CUDA ends before it answers; the finding names that file, seen, and fix takes
    its folder out of the path (found by round seven's red-team)."""
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    fake_libcuda(tmp_path / "hostile", driver_cuda=13000, devices=1, misbehave=2)
    machine.add_library_path(tmp_path / "hostile")
    machine.env["CUDA_VISIBLE_DEVICES"] = "0"
    report = machine.check_json()
    [found] = [f for f in report["findings"] if f["code"] == "CD110"]
    assert found["subject"] == str(tmp_path / "hostile" / "libcuda.so.1") and found["severity"] == "error", found
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert any("LD_LIBRARY_PATH" in line and str(tmp_path / "hostile") not in line for line in lines), lines
    from tests.test_process_env import check_after

    assert "CD110" not in {f["code"] for f in check_after(machine, lines)["findings"]}  # closed loop: sourced, clean


def test_ld_preload_is_split_as_ld_so_splits_it() -> None:
    """Colons and spaces only (glibc's rtld): a tab or a newline is part of a name."""
    from cudnn_doctor.variables import preload_entries

    assert preload_entries({"LD_PRELOAD": "/a b.so:/c\tname.so  /d\nx.so::"}) == ("/a", "b.so", "/c\tname.so",
                                                                                 "/d\nx.so")


def test_a_preloaded_stub_in_a_folder_with_a_tab_is_named_whole(machine_in_process: Machine, tmp_path: Path) -> None:
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    stub = fake_libcuda(tmp_path / "stubs\tof\ncuda", status=34, file_name="libcuda.so")
    machine.env["LD_PRELOAD"] = str(stub.resolve())
    report = machine.check_json()
    assert report["process"]["preload"] == [str(stub.resolve())]
    assert any(f["code"] == "CD111" for f in report["findings"]), codes(report)


def test_on_wsl_a_linux_libcuda_answering_803_gets_the_windows_driver_and_wsl_shutdown(machine: Machine,
                                                                                      tmp_path: Path) -> None:
    """Issue 43, class 9: on WSL 2 there is no kernel module to reload and a reboot inside WSL reloads nothing: a Linux
    libcuda whose cuInit answers 803 is the Linux driver to remove, then `wsl --shutdown`, never 'reboot'."""
    from tests.test_platforms import wsl_machine

    wsl = wsl_machine(machine, tmp_path, driver="572.61", cuda=12080)
    linux = tmp_path / "linux-driver"
    fake_libcuda(linux, driver_cuda=13000, status=803, file_name="libcuda.so.580.95.05")
    machine.env["LD_LIBRARY_PATH"] = f"{linux}:{wsl}"
    machine.env["CUDA_VISIBLE_DEVICES"] = "0"
    report = machine.check_json()
    [mismatch] = [f for f in report["findings"] if f["code"] == "CD112"]
    assert "wsl --shutdown" in mismatch["fix"], mismatch["fix"]
    assert "reboot" not in mismatch["fix"].lower().replace("a reboot inside wsl does not", ""), mismatch["fix"]
    plan = machine.run("fix").stdout
    assert "wsl --shutdown" in plan and "reload the nvidia modules" not in plan, plan


@pytest.mark.parametrize("closes", ["CLOSE_STDOUT", "CLOSE_BOTH", "CLOSE_ALL", "CLOSE_EVERY"])
def test_a_preload_that_closes_the_standard_descriptors_changes_no_verdict(machine_in_process: Machine,
                                                                           tmp_path: Path, closes: str) -> None:
    """A library preloaded into the children that closes stdout (and stderr, and stdin) before the child's first
    line: the child's own prints and flushes still work (the descriptor is /dev/null again), so NVML, cuInit and
    cuDNN answer as without it. One that closes every descriptor, the answer channel among them, and opens files on
    their numbers: the child opens the channel again by its path, and writes nothing where another file now is."""
    machine = machine_in_process
    found = _noisy_machine(machine, tmp_path)
    machine.add_library_path(found)
    machine.env["LD_PRELOAD"] = str(compile_library("closing_preload.c", f"libclosing-{closes}.so", {closes: True}))
    report = machine.check_json()
    assert "CD104" not in codes(report) and "CD110" not in codes(report) and "CD101" not in codes(report), \
        [f for f in report["findings"] if f["code"].startswith("CD1")]
    assert report["driver"]["version"] == "580.65.06"
    [install] = [i for i in report["cudnn"] if i["path"] == str(found)]
    assert install["version"] == "9.19.0" and not install.get("crashed"), install


def test_python_is_asked_through_a_preload_that_closes_every_descriptor(machine_in_process: Machine,
                                                                       tmp_path: Path) -> None:
    """--python's interpreter answers its sys.path on the answer channel a preloaded library closed (and put /dev/null
    on its number): it is a Python that answers, not CD009."""
    import sys

    machine = machine_in_process
    machine.env["LD_PRELOAD"] = str(compile_library("closing_preload.c", "libclosing-CLOSE_EVERY.so",
                                                    {"CLOSE_EVERY": True}))
    result = machine.run("check", "--json", "--python", sys.executable)
    assert result.exit_code in (0, 1) and "CD009" not in result.stdout, result.stdout[-2000:] + result.stderr


def test_deep_answers_through_a_preload_that_closes_every_descriptor(machine_in_process: Machine,
                                                                     tmp_path: Path) -> None:
    """--deep's import child answers what torch said on a channel a preloaded library closed: no framework 'crashed'."""
    from tests.test_frameworks import FAKE_TORCH, install_torch, python_env, real_python_sees

    machine = machine_in_process
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    real_python_sees(site, tmp_path)
    machine.env["LD_PRELOAD"] = str(compile_library("closing_preload.c", "libclosing-CLOSE_EVERY.so",
                                                    {"CLOSE_EVERY": True}))
    [torch] = machine.check_json("--deep")["frameworks"]
    deep = torch["details"]["deep"]
    assert deep["version"] == "2.5.1+cu124" and deep["cudnn_version"] == 90100, deep


def test_a_cuinit_that_closes_the_programs_descriptors_is_a_finding(machine_in_process: Machine, tmp_path: Path) -> None:
    """A driver whose cuInit closes every descriptor from 3 up, then works: the probe's answer still comes (its
    channel opened again by its path), and what was seen is said: a descriptor the child held open before cuInit was
    gone after it, as a program's own files and sockets would be (CD110, seen)."""
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1, misbehave=4)
    machine.add_library_path(tmp_path / "driver")
    machine.env["CUDA_VISIBLE_DEVICES"] = "0"  # CUDA itself is asked what it leaves
    report = machine.check_json()
    [found] = [f for f in report["findings"] if f["code"] == "CD110"]
    assert "closed descriptors it did not open" in found["detail"] and found["evidence"] == "seen", found
    assert "cuInit" in found["detail"], found


def test_an_nvml_first_on_the_path_that_hangs_the_program_is_named(machine_in_process: Machine,
                                                                   tmp_path: Path) -> None:
    """A libnvidia-ml.so.1 first on LD_LIBRARY_PATH that never returns from nvmlInit (not named for the kernel module's
    release: not the driver's): the child that asks NVML is stopped at its time limit, and CD118 names that file,
    seen (found by round seven's red-team)."""
    from tests.fakes.build import fake_nvml as nvml

    machine = machine_in_process
    nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    nvml(tmp_path / "hostile", driver="580.65.06", cuda=13000, init_sleep_ms=120000)
    machine.add_library_path(tmp_path / "hostile")
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"
    report = machine.check_json()
    [found] = [f for f in report["findings"] if f["code"] == "CD118"]
    assert found["subject"] == str(tmp_path / "hostile" / "libnvidia-ml.so.1") and found["evidence"] == "seen", found
    assert "did not answer" in found["proof"], found


def test_the_drivers_own_nvml_that_answers_late_is_not_called_another_nvml(machine_in_process: Machine,
                                                                           tmp_path: Path) -> None:
    """The driver's own libnvidia-ml.so.1 (a link to the file named for the kernel module's release) whose nvmlInit
    does not answer within the child's limit: slow under load (round sixteen's GPU set run six at a time on an H100:
    HOME=/sys, --deep called the driver's NVML 'not the driver's', CD118, while it ran alone in 36 s without it). A
    late answer is no proof that the file is another NVML: no CD118. The hostile copy named for no release stays one
    (the test above)."""
    machine = machine_in_process
    kernel = "580.159.04"
    (machine.root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (machine.root / "proc" / "driver" / "nvidia" / "version").write_text(
        f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {kernel}  Release Build\n")
    driver = tmp_path / "driver"
    built = fake_nvml(driver, driver=kernel, cuda=13000, init_sleep_ms=120000)
    built.rename(driver / f"libnvidia-ml.so.{kernel}")
    built.symlink_to(f"libnvidia-ml.so.{kernel}")
    fake_libcuda(driver, driver_cuda=13000, devices=1, file_name=f"libcuda.so.{kernel}")
    machine.add_library_path(driver)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "3"
    report = machine.check_json()
    assert report["process"]["nvml_died"], report["process"]  # the child was stopped at its limit
    assert report["process"]["nvml_release"] == kernel, report["process"]
    assert "CD118" not in codes(report), report["findings"]
