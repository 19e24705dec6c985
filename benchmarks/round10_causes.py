"""Round nine's GPU scenarios (benchmarks/held_out/round9/scenarios45.py, a development set) with their causes mapped
onto the codes added since (round ten): the classes its writer found no code for and gave CD415 ("a framework failed
its first GPU steps") or no code at all, where a code now means that class. Nothing else of a scenario changes; the
harness runs it as the original (build_scenarios is the original's).

- CD421 "A plugin the framework loads at import fails": a torch.backends plugin that raises or whose module is gone,
  a distribution's entry-point metadata importlib.metadata cannot parse (torch and JAX read every distribution's
  entry points as they load their plugins).
- CD419 "Python imports another copy of a module than the one installed": a partial second copy of torch or jaxlib,
  a stale dependency (a sourceless .pyc, an unchecked-hash .pyc, a zip on the path), in front of site-packages.

The ASan scenarios keep their writer's CD110: with the shadow gap unprotected cuInit starts, and what fails is cuDNN's
loading under ASan's dlopen interceptor (its RUNPATH lost: CD304/CD305, tests/test_failure_mechanism.py); the lead
judges whether that scenario's cause is to be mapped so.

    python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/round10_causes.py --out DIR --quiet-cases --budget-s 540
    bash benchmarks/gpu_round10.sh scenarios OUT benchmarks/round10_causes.py
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

ORIGINAL = Path(__file__).resolve().parent / "held_out" / "round9" / "scenarios45.py"
PLUGIN = ("s9-torch-backend-plugin-raises", "s9-torch-backend-module-gone", "s9-torch-backend-autoload-off",
          "s9-entry-points-malformed", "s9-entry-points-latin1")
COPY = ("s9-half-removed-torch", "s9-half-removed-jaxlib", "s9-sourceless-pyc-shadow", "s9-unchecked-hash-pyc",
        "s9-zip-bundle-shadow", "s9-torch-leftover-namespace", "s9-user-site-stale-dependency")


def mapped(name: str, causes: tuple[str, ...]) -> tuple[str, ...]:
    """NAME's causes with CD415 (or none) replaced by the code that now means its class."""
    new = "CD421" if name in PLUGIN else "CD419" if name in COPY else ""
    if not new:
        return causes
    kept = tuple(code for code in causes if code != "CD415")
    return (new, *(code for code in kept if code != new))


def build_scenarios(machine: dict[str, object]) -> list[object]:
    spec = importlib.util.spec_from_file_location("round9_scenarios45", ORIGINAL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [replace(s, causes=mapped(s.name, tuple(s.causes))) for s in module.build_scenarios(machine)]
