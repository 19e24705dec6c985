"""What one CLI run of the test suite costs, in-process (the `machine` fixture's default) against a new
`python -m cudnn_doctor` (the `subprocess` mark): wall time and CPU (this process's and its children's).

    python benchmarks/suite_speed.py [--runs 10]

A pretend machine as the tests build it (tests/conftest.py's Machine, the gcc-built fakes of tests/fakes/:
a driver's NVML, a cuDNN 8.9.7 with its sub-libraries on LD_LIBRARY_PATH, a CUDA 13 toolkit), then
`check --json` RUNS times each way, alternating; prints the medians. Needs gcc. The whole suite's figures
are benchmarks/README.md's "Test suite speed"."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import Machine  # noqa: E402
from tests.fakes.build import fake_cudnn, fake_nvml  # noqa: E402
from tests.test_check import CUDNN8_SUBLIBS, make_toolkit  # noqa: E402


def pretend_machine(folder: Path, in_process: bool) -> Machine:
    machine = Machine(folder, in_process=in_process)
    fake_nvml(folder / "driver", driver="580.65.06", cuda=13000)
    machine.add_library_path(folder / "driver")
    make_toolkit(machine.root, "13.0.96", 13000)
    fake_cudnn(folder / "cudnn8" / "lib", version=8907, cudart=12020, sublibraries=CUDNN8_SUBLIBS)
    machine.add_library_path(folder / "cudnn8" / "lib")
    return machine


def one_run(machine: Machine) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and the children it waited for) of one `check --json`."""
    before, started = os.times(), time.perf_counter()
    report = machine.check_json()
    wall, after = time.perf_counter() - started, os.times()
    assert report["findings"], "the pretend machine has findings"
    cpu = sum(getattr(after, name) - getattr(before, name) for name in ("user", "system", "children_user",
                                                                        "children_system"))
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        machines = {mode: pretend_machine(Path(scratch) / mode, mode == "in-process")
                    for mode in ("in-process", "subprocess")}
        for machine in machines.values():
            one_run(machine)  # warm: the fakes built, the page cache, the in-process imports
        figures: dict[str, list[tuple[float, float]]] = {mode: [] for mode in machines}
        for _ in range(options.runs):
            for mode, machine in machines.items():
                figures[mode].append(one_run(machine))
    print(f"check --json on a pretend machine, median of {options.runs} runs each, {os.cpu_count()} cores")
    for mode, runs in figures.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"  {mode:11} {wall * 1000:7.0f} ms wall  {cpu * 1000:7.0f} ms CPU")


if __name__ == "__main__":
    main()
