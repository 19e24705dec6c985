"""compat/slurm.toml's srun row ([[command]]): srun's command-line options as its getopt_long table has them (issue 43: the
doctor reads the srun options a user gives `fleet run --slurm` the way srun reads them).

slurm_option_table_create (src/common/slurm_opt.c) puts into srun's table every option of common_options[] that has
a set_func (every command's) or a set_func_srun, a long name each, and its `val` as a short option where it is a
character, with ':' after it for a required argument and '::' for an optional one; the option string starts with '+'
(getopt stops at the first word that is not an option). Prints the TOML; the maintainer writes it to compat/slurm.toml.

    python maintenance/srun_options.py SLURM_GIT_DIR [--commit SHA]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess


def rows(source: str) -> list[tuple[str, str, str | None]]:
    """(long name, 'required' | 'optional' | 'none', short letter or None) of each option of srun's table."""
    defined = {}
    for match in re.finditer(r"static slurm_cli_opt_t (\w+) = \{(.*?)\n\};", source, re.S):
        body = match.group(2)
        name = re.search(r'\.name = "([^"]+)"', body)
        takes = re.search(r"\.has_arg = (\w+)", body)
        short = re.search(r"\.val = '(.)'", body)
        in_srun = ".set_func =" in body or ".set_func_srun" in body
        if name and takes and in_srun:
            defined[match.group(1)] = (name.group(1), takes.group(1).removesuffix("_argument"),
                                       short.group(1) if short else None)
    listed = re.search(r"static const slurm_cli_opt_t \*common_options\[\] = \{(.*?)\};", source, re.S)
    if listed is None:
        raise SystemExit("common_options[] not found: another layout of slurm_opt.c")
    return [defined[name] for name in re.findall(r"&(\w+)", listed.group(1)) if name in defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("slurm_git_dir")
    parser.add_argument("--commit", default="HEAD")
    options = parser.parse_args()
    commit = subprocess.run(["git", "-C", options.slurm_git_dir, "rev-parse", options.commit], check=True,
                            capture_output=True, text=True).stdout.strip()
    source = subprocess.run(["git", "-C", options.slurm_git_dir, "show", f"{commit}:src/common/slurm_opt.c"],
                            check=True, capture_output=True, text=True).stdout
    table = rows(source)

    def names(kind: str) -> str:
        return json.dumps(sorted(name for name, takes, _ in table if takes == kind))

    shorts = ", ".join(f"{letter} = {json.dumps(name)}" for name, _, letter in sorted(table, key=lambda r: r[2] or "")
                       if letter)
    print(f"""# srun's command-line options, as its getopt_long table has them: read by cudnn_doctor/fleet/srun_options.py
# (fleet run --slurm reads the options a user gives srun the way srun reads them: whether they name the job, join an
# allocation, or set the working folder). Written by maintenance/srun_options.py.
schema = "cudnn-doctor/compat/slurm/1"

[[command]]
name = "srun"
source = "SchedMD/slurm@{commit} src/common/slurm_opt.c (common_options[], each slurm_cli_opt_t's name, has_arg and val; slurm_option_table_create: an option with set_func or set_func_srun is in srun's table, its val a short option with ':' for a required and '::' for an optional argument, the option string starting with '+') and src/srun/opt.c (getopt_long over that table); glibc getopt_long(3): a required argument is the rest of the word or the next word whatever it holds, an optional one only after '=' or in the same word, a long name may be cut to an unambiguous prefix, '--' ends the options"
required = {names("required")}
optional = {names("optional")}
none = {names("no")}
short = {{ {shorts} }}""")


if __name__ == "__main__":
    main()
