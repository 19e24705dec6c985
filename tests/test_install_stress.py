"""A sample of benchmarks/install_stress.py in CI (issue 43, class 7): installs interrupted at random instants by
SIGINT, SIGTERM, SIGHUP, a second Ctrl-C or SIGKILL, and two installs racing into one prefix, seeded. Each trial
holds the harness's invariants (what a run says of the prefix is what it left; the loser of a race says another
install is changing it and changes nothing; the uninstalls after leave the prefix as it was). The benchmark runs
hundreds; the suite a few, with a seed of its own each day, so that over time the sample covers more instants."""

from __future__ import annotations

import datetime
import importlib.util
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")


def _harness():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("install_stress", ROOT / "benchmarks" / "install_stress.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_a_seeded_sample_of_random_kill_points_and_races_holds(tmp_path: Path) -> None:
    seed = int(datetime.date.today().strftime("%Y%m%d"))
    summary = _harness().run(trials=10, seed=seed, work=tmp_path)
    assert summary["failed"] == 0, (f"seed {seed}: rerun with python benchmarks/install_stress.py --seed {seed}",
                                    summary["failures"])
