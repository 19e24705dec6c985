"""The two hostile families of issue 43 over the doctor itself, whole or sampled, with a figure: its own installed
data damaged (tests/damaged_data.py) and its own Python under the variables users set for their programs
(tests/python_env.py). CI runs a seeded sample of each (tests/test_damaged_data.py, tests/test_python_env.py).

Usage: python benchmarks/hostile_own.py {damaged,python-env} [--count N | --all] [--seed S] [--package DIR]
  --package DIR: the doctor to judge (a `git archive` of another commit unpacked there: the figure before a change);
  by default this checkout. Prints each broken case with what broke, then `N cases, B broken, T s`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", choices=("damaged", "python-env"))
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--package", type=Path, help="the checkout (package and compat/) to judge")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix=f"hostile-{options.family}-"))
    started = time.monotonic()
    if options.family == "damaged":
        from tests import damaged_data as family_module

        if options.package:
            family_module.ROOT = options.package.resolve()
            family_module.COMPAT = family_module.ROOT / "compat"
        cases = family_module.every_case() if options.all else family_module.sample(options.seed, options.count)
        family = family_module.Family(work)
        results = [(case.name, family.run_case(case, options.seed)) for case in cases]
    else:
        from tests import python_env as env_module

        if options.package:
            env_module.ROOT = options.package.resolve()
        cases_env = env_module.single_cases() if options.all else env_module.sample(options.seed, options.count)
        env_family = env_module.Family(work)
        results = [(case.name, env_family.run_case(case)) for case in cases_env]
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    broken = 0
    for name, problems in results:
        if problems:
            broken += 1
            print(f"{name}: {' | '.join(p[:400] for p in problems)}")
    print(f"{len(results)} cases, {broken} broken, {time.monotonic() - started:.0f} s (seed {options.seed})")
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
