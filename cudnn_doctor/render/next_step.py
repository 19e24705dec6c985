"""The next step a `check` report points at: `cudnn-doctor fix --yes` with the same targets, and how many of the
findings it treats (as ruff's "[*] N fixable with the --fix option")."""

from __future__ import annotations

import shlex
import sys

from cudnn_doctor.model import Report
from cudnn_doctor.options import CHECK_TARGETS

# check's options that choose what is judged and treated (options.py); `fix` takes each of them with the same meaning
TARGET_OPTIONS = tuple(name for option in CHECK_TARGETS for name in option.names)


def fixable(report: Report) -> int:
    """The errors and warnings `fix --yes` treats by itself: each has a step it runs (pip, conda, install) and
    none it leaves to the user (a driver upgrade, an edit)."""
    from cudnn_doctor.plan.actions import ENV, RUNNABLE

    plan = report.plan
    if plan is None:
        return 0
    count = 0
    for finding in report.findings:
        if finding.severity not in ("error", "warning"):
            continue
        kinds = {action.kind for action in plan.for_finding(finding.code, finding.subject)}
        if kinds & set(RUNNABLE) and kinds <= {*RUNNABLE, ENV}:
            count += 1
    return count


def fix_command(args: list[str] | None = None) -> str:
    """`cudnn-doctor fix --yes` with the target options of this check's command line (ARGS: sys.argv[1:])."""
    args = sys.argv[1:] if args is None else args
    words = ["cudnn-doctor", "fix", "--yes"]
    rest = iter(args[args.index("check") + 1:] if "check" in args else [])
    for arg in rest:
        name, equals, value = arg.partition("=")
        if name in TARGET_OPTIONS:
            words += [name, value if equals else next(rest, "")]
    return shlex.join(words)
