"""`fix` verifies before it prints (issue 45): the plan's environment lines tried in children, not assumed.

Each installed framework first runs its smallest cuDNN work in a child with the user's environment (what
`check --deep` runs; its answers are reused where the check ran them). Where one fails, it runs again in a child
with the plan's environment lines in force (variables changed, limits set by a shell): each step then says
"verified here" or what the framework still said. Where the plan's lines do not cure it, one more candidate is
tried, LD_LIBRARY_PATH without the folders that bring their own CUDA or cuDNN libraries (every framework then loads
the copies it was installed with); the one that cures is offered, and where none does the plan says so and shows
what was tried. Installs (pip, conda, cudnn-doctor install) are not tried here: `fix --yes` checks again after them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from cudnn_doctor.doctor.bisect import Variant, curing, loader_variant, variants
from cudnn_doctor.doctor.bisect import failed as _failed
from cudnn_doctor.doctor.bisect import run_frameworks as _run
from cudnn_doctor.doctor.diagnosis import Diagnosis
from cudnn_doctor.model import Framework, Report
from cudnn_doctor.plan.actions import ENV, Action, EnvChange, Plan
from cudnn_doctor.plan.process_env import CURE_SOURCES

WORK = {"torch": "its cuDNN convolution and LSTM", "jax": "its convolution", "tensorflow": "its GPU listing"}
NAMES = {"torch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}


def _runnable(report: Report) -> list[Framework]:
    from cudnn_doctor.probes.deep import DEEP_FRAMEWORKS

    return [f for f in report.frameworks if f.name in DEEP_FRAMEWORKS and f.details.get("site_packages")
            and not f.details.get("assumed") and not f.details.get("cpu_only")]


def _trial(plan_changes: tuple[EnvChange, ...], env: dict[str, str]) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """ENV as a shell that sourced CHANGES would have it, and the limits such a shell would set (set in the child,
    never in this process)."""
    from cudnn_doctor.plan.shell import apply_changes

    limits = tuple((change.variable.split()[-1], change.folder) for change in plan_changes if change.op == "limit")
    limits += tuple((change.variable, change.folder) for change in plan_changes if change.op == "shell")  # umask, trap
    return apply_changes(tuple(c for c in plan_changes if c.op != "limit"), env), limits


def verified(diagnosis: Diagnosis, env: dict[str, str] | None = None) -> Diagnosis:
    """DIAGNOSIS with its plan's steps tried here (verify_plan), in the environment ENV (this process's)."""
    plan = verify_plan(diagnosis.report, diagnosis.plan, dict(os.environ if env is None else env))
    diagnosis.report.plan = plan
    return replace(diagnosis, plan=plan)


def verify_plan(report: Report, plan: Plan, env: dict[str, str],
                run: Callable[..., dict[str, dict[str, object]]] = _run) -> Plan:
    """PLAN with each step marked verified here (or why not), after trying its environment lines in children; a
    candidate that cures in place of lines that do not; `tried` where nothing cures. RUN: how frameworks are run
    (children; a test may pass another runner)."""
    frameworks = _runnable(report)
    if not frameworks:
        return _marked(plan, "not verified here: no framework is installed here to run its GPU work with it") \
            if plan.actions else plan
    before = {f.name: f.details["deep"] for f in frameworks if isinstance(f.details.get("deep"), dict)}
    missing = [f for f in frameworks if f.name not in before]
    if missing:
        before.update(run(missing, env))
    failing = [f for f in frameworks if _failed(before.get(f.name, {}))]
    if not plan.actions and not failing:
        return plan  # nothing to treat, and every framework ran its first GPU work here
    if not failing:
        ran = [NAMES.get(f.name, f.name) for f in frameworks if not before.get(f.name, {}).get("error")]
        why = (f"not verified: {', '.join(ran)} already ran {'their' if len(ran) > 1 else 'its'} first GPU work here "
               "without it; it treats a warning" if ran else "not verified here: no framework could be run here")
        return _marked(plan, why)
    said = "; ".join(f"{NAMES.get(f.name, f.name)}: {_failed(before[f.name])}"[:300] for f in failing)
    changes = tuple(change for action in plan.actions if action.kind == ENV for change in action.env)
    after: dict[str, dict[str, object]] = {}
    still = failing
    if changes:
        after = run(failing, *_trial(changes, env))
        still = [f for f in failing if _failed(after.get(f.name, {})) or after.get(f.name, {}).get("error")]
        if not still:
            return _marked(plan, _cured_words(failing, "the plan's lines"), only_env=True)
    # the loader's own path without what brings CUDA or cuDNN libraries of its own, then each part of the
    # environment alone (doctor/bisect.py): tried whether or not the plan had lines, since a file first on the path
    # can break a framework whose own copy the files show whole
    alternative = loader_variant(changes, env)
    candidates = ([Variant("loader", "LD_LIBRARY_PATH and LD_PRELOAD without what brings CUDA or cuDNN libraries",
                           alternative)] if alternative is not None else []) + [
        v for v in variants(env) if v.changes != alternative]
    variant, _ = curing(failing, env, run, candidates, said_before=[str(_failed(before[f.name])) for f in failing])
    if variant is not None and changes and variant.kind != "loader":
        # the plan's lines treat findings of their own (a FIFO named libcuda.so.1 on the path, which the failing
        # framework's work never touched): kept beside the part that cures, where the frameworks work with both
        both = run(failing, *_trial(changes + variant.changes, env))
        if not any(both.get(f.name, {}).get("error") for f in failing):
            words = _cured_words(failing, "these lines and the plan's others")
            if {c.variable for c in variant.changes} & {c.variable for c in changes}:
                # one variable changed by both (two folders out of LD_LIBRARY_PATH): one step, whose line writes the
                # value both make; two lines would each write a whole value, the second undoing the first
                return _replaced(plan, changes + variant.changes, words, report, variant.words, variant.kind)
            return _added(plan, variant, words, report)
    if variant is not None:
        return _replaced(plan, variant.changes, _cured_words(failing, "these lines"), report,
                         None if variant.kind == "loader" else variant.words, variant.kind)
    others = ("; none of these cured it either: " + ", ".join(v.words for v in candidates)) if candidates else ""
    if not changes:
        tried = f"nothing in this plan can be tried without installing; here {said}{others}"
        return replace(_marked(plan, "not verified here: it installs or changes files; `cudnn-doctor fix --yes` "
                                     "checks again after it"), tried=tried)
    words = "; ".join(f"{NAMES.get(f.name, f.name)} still fails: {after.get(f.name, {}).get('error')}"[:300]
                      for f in still)
    tried = f"with the plan's lines in force {words}{others}"
    return replace(_marked(plan, f"tried here, not cured: {words}", only_env=True), tried=tried)


def _cured_words(failing: list[Framework], what: str) -> str:
    names = [NAMES.get(f.name, f.name) for f in failing]
    work = "; ".join(f"{NAMES.get(f.name, f.name)} {WORK.get(f.name, 'its GPU work')}" for f in failing)
    return (f"verified here: {', '.join(names)} failed without {what} and ran with them, in a child started with "
            f"them in force ({work})")


def _marked(plan: Plan, words: str, only_env: bool = False) -> Plan:
    """PLAN with WORDS on each step (on the environment steps only where ONLY_ENV; the others say why not)."""
    actions = []
    for action in plan.actions:
        if action.kind == ENV or not only_env:
            actions.append(replace(action, verified=words))
        else:
            actions.append(replace(action, verified="not verified here: it installs or changes files; `cudnn-doctor "
                                                    "fix --yes` checks again after it"))
    return replace(plan, actions=tuple(actions))


def _added(plan: Plan, variant: Variant, words: str, report: Report) -> Plan:
    """PLAN with one step of VARIANT's changes first, verified with the plan's own environment steps (kept, verified
    with it): it resolves the errors those steps do not."""
    env_actions = [a for a in plan.actions if a.kind == ENV]
    covered = {code for a in env_actions for code in a.resolves}
    errors = [f for f in report.findings if f.severity == "error" and f.code not in covered]
    one = Action(ENV, tuple(dict.fromkeys(f.code for f in errors)), f"{variant.words}: the failing frameworks ran in "
                 "a child with this change and the plan's other lines in force (those alone did not cure them)",
                 CURE_SOURCES.get(variant.kind, CURE_SOURCES["variable"]), env=variant.changes,
                 findings=tuple(dict.fromkeys((f.code, f.subject) for f in errors)), verified=words)
    cured = set(one.resolves)
    others = [replace(a, verified=words) if a.kind == ENV else
              replace(a, verified="not verified here: it installs or changes files; `cudnn-doctor fix --yes` checks "
                                  "again after it") for a in plan.actions
              if a.kind == ENV or not (a.resolves and set(a.resolves) <= cured)]
    return replace(plan, actions=(one, *others))


def _replaced(plan: Plan, alternative: tuple[EnvChange, ...], words: str, report: Report,
              what: str | None = None, kind: str = "loader") -> Plan:
    """PLAN with its environment steps replaced by one step of ALTERNATIVE's changes, verified, first: it resolves
    what the plan's environment steps did, and the errors (the frameworks that failed ran with it)."""
    env_actions = [a for a in plan.actions if a.kind == ENV]
    errors = [f for f in report.findings if f.severity == "error"]
    resolves = tuple(dict.fromkeys([*(code for a in env_actions for code in a.resolves), *(f.code for f in errors)]))
    found = tuple(dict.fromkeys([*(pair for a in env_actions for pair in a.findings),
                                 *((f.code, f.subject) for f in errors)]))
    one = Action(ENV, resolves, (f"{what}: the failing frameworks ran in a child with this change" if what else
                                 "LD_LIBRARY_PATH and LD_PRELOAD without what brings CUDA or cuDNN libraries of "
                                 "their own (an empty LD_LIBRARY_PATH entry is the working folder): each framework "
                                 "then loads the copies it was installed with") + (
                                    " (the plan's first lines were tried here and did not cure it)"
                                    if env_actions else ""), CURE_SOURCES.get(kind, CURE_SOURCES["variable"]),
                 env=alternative,
                 findings=found, verified=words)
    # a step that only resolves errors this one was seen to cure is not needed (a reinstall of a copy that is whole)
    cured = {f.code for f in errors}
    others = [replace(a, verified="not verified here: it installs or changes files; `cudnn-doctor fix --yes` checks "
                                  "again after it") for a in plan.actions
              if a.kind != ENV and not (a.resolves and set(a.resolves) <= cured)]
    return replace(plan, actions=(one, *others))
