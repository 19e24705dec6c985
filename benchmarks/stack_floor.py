#!/usr/bin/env python3
"""The stack (ulimit -s) the doctor needs: for each size, whether CPython starts (with and without -P, which skips
computing sys.path[0]) and whether Python's own guards against deep input (JSON, TOML, XML, a nested list's repr
and comparison, 100,000 levels each) end in RecursionError rather than SIGSEGV. cudnn_doctor/limits.py's
FLOOR_STACK_KIB is twice the smallest size at which every guard holds.

    python3 benchmarks/stack_floor.py [--sizes 64,96,128,160,192,256,384,512] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

DEEP = r"""
import json, tomllib, xml.etree.ElementTree as ET
def guard(f):
    try:
        f()
    except (RecursionError, ValueError, MemoryError, ET.ParseError):
        pass
guard(lambda: json.loads("[" * 100000 + "]" * 100000))
guard(lambda: json.loads('{"a":' * 100000 + "1" + "}" * 100000))
x = []
for _ in range(100000):
    x = [x]
guard(lambda: repr(x)); guard(lambda: json.dumps(x)); guard(lambda: x == x)
guard(lambda: tomllib.loads("a = " + "[" * 100000 + "]" * 100000))
guard(lambda: ET.fromstring("<a>" * 100000 + "</a>" * 100000))
"""


def run(kib: int, argv: list[str]) -> int:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (kib << 10, kib << 10))

    return subprocess.run(argv, preexec_fn=limit, capture_output=True, timeout=120).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64,72,80,96,128,160,192,256,384,512")
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = []
    for kib in (int(size) for size in args.sizes.split(",")):
        row = {"stack_kib": kib, "starts": run(kib, [sys.executable, "-c", "pass"]) == 0,
               "starts_with_P": run(kib, [sys.executable, "-P", "-c", "pass"]) == 0,
               "deep_input_guarded": run(kib, [sys.executable, "-P", "-c", DEEP]) == 0}
        rows.append(row)
        print(f"{kib:>5} KiB  starts={row['starts']!s:5}  starts -P={row['starts_with_P']!s:5}  "
              f"deep input guarded={row['deep_input_guarded']}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump({"python": sys.version.split()[0], "rows": rows}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
