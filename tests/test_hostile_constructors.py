"""A vendor library first on LD_LIBRARY_PATH whose constructor takes something from every program that loads it
(issue 43, round eight): the environment cleared or a variable unset, standard output and error pointed at
/dev/null, the open-files limit dropped to 3, the umask and folder changed, an alarm armed, Ctrl-C and kill blocked,
SIGCHLD ignored, the process pinned to one CPU. The library works
otherwise, so nothing the program asks it fails: what the child that loaded it lost is what is seen
(_child_stdio's ProcessWatch), and the finding of its family names the file and the folder that brought it
(CD110 for libcuda.so.1, CD309 for libcudnn.so.9, CD118 for libnvidia-ml.so.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn, fake_libcuda, fake_nvml
from tests.test_check import CUDNN9_SUBLIBS

# hostile_constructor.c's HOSTILE_TAKES -> what the finding says the program lost
TAKES = {
    1: ("cleared the environment",),
    2: ("pointed the program's standard output at /dev/null", "pointed the program's standard error at /dev/null",
        "closed descriptors it did not open"),
    3: ("lowered the program's limit of open files (ulimit -n) from",),
    4: ("set the program's umask to 0777", "changed the program's working folder to /tmp"),
    5: ("armed an alarm: SIGALRM ends the program 1 s later",),
    6: ("unset the program's variables HOME",),
    7: ("blocked SIGINT, SIGTERM (the program no longer stops on Ctrl-C, kill or a hang-up)",),
    8: ("ignored SIGCHLD (its waits for its children fail)",),
    9: ("pinned the program to 1 of its",),
}


def _hostile_machine(machine: Machine, tmp_path: Path, takes: int) -> dict[str, Path]:
    """The driver's libcuda and NVML, a good cuDNN, and before them on LD_LIBRARY_PATH a folder each for a working
    libcuda.so.1, libcudnn.so.9 and libnvidia-ml.so.1 whose constructor takes TAKES from the program."""
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    fake_cudnn(tmp_path / "cudnn", version=91900, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "cudnn")
    hostile = {"CD110": fake_libcuda(tmp_path / "hostile cuda", driver_cuda=13000, devices=1, takes=takes),
               "CD309": fake_cudnn(tmp_path / "hostile cudnn", version=91900, cudart=13000,
                                   sublibraries=CUDNN9_SUBLIBS, takes=takes),
               "CD118": fake_nvml(tmp_path / "hostile nvml", driver="580.65.06", cuda=13000, takes=takes)}
    for library in hostile.values():
        machine.add_library_path(library.parent)
    machine.env["CUDA_VISIBLE_DEVICES"] = "0"  # CUDA itself is asked what it leaves
    return hostile


@pytest.mark.parametrize("takes", sorted(TAKES))
def test_what_a_library_takes_from_the_program_is_seen_and_named(machine_in_process: Machine, tmp_path: Path,
                                                                 takes: int) -> None:
    import os

    if takes == 9 and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to pin the program to")
    machine = machine_in_process
    hostile = _hostile_machine(machine, tmp_path, takes)
    report = machine.check_json()
    for code, library in hostile.items():
        found = [f for f in report["findings"] if f["code"] == code and f["subject"] == str(library)]
        assert found, (code, library, codes(report), [f["detail"][:300] for f in report["findings"]])
        [made] = found
        assert made["severity"] == "error" and made["evidence"] == "seen", made
        for words in TAKES[takes]:
            assert words in made["detail"], (words, made["detail"])
        assert str(library.parent) in json.dumps(made), made  # the folder that brought it
    assert report["summary"]["exit_code"] == 1
    if takes == 1:  # the text report says it too (once: each run is a second of the suite)
        text = machine.run("check").stdout
        assert "[✓] NVIDIA driver" not in text and "CD110" in text and "CD309" in text, text


def test_a_driver_library_that_clears_the_environment_is_taken_out_of_the_path(machine_in_process: Machine,
                                                                              tmp_path: Path) -> None:
    """fix takes the hostile libcuda.so.1's folder out of LD_LIBRARY_PATH; sourced in bash, check is clean of it."""
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    fake_libcuda(tmp_path / "hostile", driver_cuda=13000, devices=1, takes=1)
    machine.add_library_path(tmp_path / "hostile")
    machine.env["CUDA_VISIBLE_DEVICES"] = "0"
    plan = machine.run("fix", "--json").json
    [action] = [a for a in plan["actions"] if "CD110" in a["resolves"]]
    assert "takes from every program that loads it" in action["why"], action
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    from tests.test_process_env import check_after

    assert "CD110" not in codes(check_after(machine, lines))


def test_a_healthy_machine_loses_nothing(machine_in_process: Machine, tmp_path: Path) -> None:
    """The same machine without the hostile folders: no child says it lost anything."""
    machine = machine_in_process
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000)
    fake_libcuda(tmp_path / "driver", driver_cuda=13000, devices=1)
    machine.add_library_path(tmp_path / "driver")
    fake_cudnn(tmp_path / "cudnn", version=91900, cudart=13000, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "cudnn")
    machine.env["CUDA_VISIBLE_DEVICES"] = "0"
    report = machine.check_json()
    assert not {"CD110", "CD118", "CD309"} & codes(report), report["findings"]
    assert report["process"]["changed_process"] == [] and not any(i["changed_process"] for i in report["cudnn"])
