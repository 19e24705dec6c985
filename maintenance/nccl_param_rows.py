"""compat/multi_gpu.toml [[nccl_setting]] rows for NCCL's integer parameters that have none (issue 45, item 3; k22).

Every NCCL_PARAM(Name, "ENV", default) of NCCL's own source (a git checkout of NVIDIA/nccl, at a commit) whose
variable NCCL_ENV the installed libnccl holds (benchmarks/results/variables_read.json, reader nccl) and no row
names: its grammar is ncclLoadParam's (src/misc/param.cc: strtoll(value, NULL, 0), a text with no number read as
0, one out of range the default), its effect the comment above the declaration where that names it, its source the
file and line at that commit. Prints the rows; the maintainer appends them to compat/multi_gpu.toml.

    python maintenance/nccl_param_rows.py NCCL_GIT_DIR [--commit SHA]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECLARED = re.compile(r'^[ \t]*NCCL_PARAM\((\w+),\s*"([A-Z0-9_]+)",\s*(.+?)\);?[ \t]*(?://.*)?$', re.M)


def declarations(git_dir: str, commit: str) -> list[tuple[str, int, str, str, str]]:
    """(file, line, Name, NCCL_ENV, default, comment above) of every NCCL_PARAM in src/ at COMMIT."""
    listed = subprocess.run(["git", "-C", git_dir, "grep", "-n", "NCCL_PARAM(", commit, "--", "src"],
                            capture_output=True, text=True, check=True).stdout
    files = sorted({line.split(":")[1] for line in listed.splitlines()})
    out = []
    for path in files:
        text = subprocess.run(["git", "-C", git_dir, "show", f"{commit}:{path}"], capture_output=True, text=True,
                              check=True).stdout
        lines = text.splitlines()
        for match in DECLARED.finditer(text):
            number = text.count("\n", 0, match.start()) + 1
            above = lines[number - 2].strip() if number > 1 else ""
            comment = above[2:].strip() if above.startswith("//") else ""
            out.append((path, number, match.group(1), "NCCL_" + match.group(2), match.group(3).strip(), comment))
    return out


def row(path: str, line: int, name: str, variable: str, default: str, comment: str, commit: str) -> str:
    # the comment above the declaration, only where it names the variable (others describe a neighbour)
    said = f"{comment.rstrip('.')}; " if comment and variable[5:] in comment and len(comment) < 200 else ""
    effect = (f"{said}NCCL's integer parameter {name} (ncclParam{name}(), default {default}), read once, as NCCL "
              "first needs it")
    source = (f"NVIDIA/nccl@{commit} {path}:{line} NCCL_PARAM({name}, \\\"{variable[5:]}\\\", {default}); "
              f"src/misc/param.cc ncclLoadParam (strtoll(value, NULL, 0): a text with no number is 0, one out of "
              f"range the default); benchmarks/results/variables_read.json: the installed libnccl holds the name")
    return (f'[[nccl_setting]]\nvariable = "{variable}"\ngrammar = "integer"\nreader = "nccl-param"\n'
            f'on_error = "ignored"\neffect = "{effect.replace(chr(34), chr(39))}"\nsource = "{source}"\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("git_dir")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "-C", args.git_dir, "rev-parse", args.commit], capture_output=True, text=True,
                            check=True).stdout.strip()
    held = set(json.loads((ROOT / "benchmarks" / "results" / "variables_read.json").read_text())["readers"]["nccl"]
               ["names"])
    sys.path.insert(0, str(ROOT))
    from cudnn_doctor.knowledge.environment import rows

    known = rows()
    seen: set[str] = set()
    for path, line, name, variable, default, comment in declarations(args.git_dir, commit):
        if variable in held and variable not in known and variable not in seen:
            seen.add(variable)
            print(row(path, line, name, variable, default, comment, commit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
