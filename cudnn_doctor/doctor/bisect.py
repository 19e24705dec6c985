"""Which part of the environment makes a framework fail, asked of the framework itself (issue 45).

Where a framework fails its first GPU steps in a child with the user's environment (`check --deep`, `fix`), the
same work runs again in children that each differ from it in one part only, side by side:

  LD_PRELOAD       unset
  LD_LIBRARY_PATH  without the folders that bring CUDA, cuDNN or NVIDIA libraries of their own (an empty entry is
                   the working folder, as ld.so reads it); a folder that holds the driver's own libcuda cures nothing
                   taken out, so it is never what is offered
  PATH             without the folders that hold a CUDA compiler (ptxas, nvcc): XLA runs the ptxas on PATH first
  PYTHONPATH       unset: a folder on it can shadow the installed framework or its packages
  working folder   PYTHONSAFEPATH=1, where the working folder holds a module a framework imports at start: Python
                   then leaves it off sys.path (`python -c`, the REPL, a script kept there)
  limits           the soft limits of address space, open files, stack, CPU time, processes and data raised to the
                   hard ones
  one variable     each CUDA, cuDNN, NCCL or framework variable that is set, unset alone: those compat/ knows (a
                   row, or a member of a family such as JAX_*), less those it says never to unset alone
  any variable     where none of those cures: every other variable the session set (not PATH, the loader's and
                   Python's paths, HOME, the shell's own, CUDA_VISIBLE_DEVICES), unset together, then halved while a
                   half still cures: the one variable (or the few together) without which the frameworks work,
                   whatever it is (a setting nobody wrote down as data: a Python, locale, library or tool variable)

A variant under which every failing framework works is the cause, seen: its change is what the framework needed,
and `fix` offers it verified. Nothing here reads the files to guess: the frameworks answer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from cudnn_doctor.model import EnvironmentCure, Framework, Report
from cudnn_doctor.operating_system import kernel_getcwd
from cudnn_doctor.plan.actions import EnvChange
from cudnn_doctor.probes.hwcaps import HWCAPS

# the libraries a folder (or LD_PRELOAD) brings that change what a GPU program gets
CUDA_LIBRARIES = ("libcudnn", "libcublas", "libcudart", "libnvrtc", "libcufft", "libcusparse", "libcurand",
                  "libcusolver", "libnccl", "libnvJitLink", "libnvidia-ml", "libcuda.so", "libcupti", "libnvToolsExt")
COMPILERS = ("ptxas", "nvcc", "nvlink", "fatbinary")
MAX_VARIABLES = 8  # the variables tried one by one: those compat/ knows (knowledge.environment.bisected)
# never unset by the search over every variable: the paths the other variants try by entry, what a shell or session
# needs to start a program at all, the scheduler's choice of GPUs, and the doctor's own
# (HOME: a framework installed with `pip install --user` is found through it)
KEPT = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "HOME", "PWD", "OLDPWD", "SHLVL", "_",
        "SHELL", "TERM", "USER", "LOGNAME", "DISPLAY", "SSH_AUTH_SOCK", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY",
        "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "HOSTNAME", "MAIL")
KEPT_PREFIXES = ("CUDNN_DOCTOR_", "SLURM_", "PMI_", "OMPI_COMM_")
LIMITS = (("RLIMIT_AS", "-v", 1024), ("RLIMIT_NOFILE", "-n", 1), ("RLIMIT_STACK", "-s", 1024), ("RLIMIT_CPU", "-t", 1),
          ("RLIMIT_NPROC", "-u", 1), ("RLIMIT_DATA", "-d", 1024))


@dataclass(frozen=True)
class Variant:
    """One part of the environment changed: what (in words), the changes as fix would write them, the limits a
    shell would set, and the part's kind (preload, library_path, path, pythonpath, limits, variable)."""

    kind: str
    words: str
    changes: tuple[EnvChange, ...]
    limits: tuple[tuple[str, str], ...] = ()
    variable: str | None = None
    removed: tuple[str, ...] = ()  # the entries or folders taken out


# the loader variant's folders: those that bring libraries a framework also has in its own wheels
OWN_LIBRARIES = ("libcudnn", "libcublas", "libcudart", "libnvrtc", "libcufft", "libcusparse", "libnccl")
PRELOADED_LIBRARIES = (*OWN_LIBRARIES, "libnvidia-ml", "libcuda.so")  # LD_PRELOAD's: the driver's own too


def loader_variant(changes: tuple[EnvChange, ...], env: dict[str, str]) -> tuple[EnvChange, ...] | None:
    """CHANGES (a plan's), with LD_LIBRARY_PATH's changes replaced by the removal of every folder in it that holds
    CUDA or cuDNN libraries of its own (never one that holds the driver's libcuda; an empty entry is the working
    folder, as ld.so reads it), and LD_PRELOAD without its CUDA and cuDNN libraries; None where that changes
    nothing. Every framework then loads the copies it was installed with: fix's first candidate."""
    from cudnn_doctor.variables import loader_folders, preload_entries

    removed = _holding(loader_folders(env.get("LD_LIBRARY_PATH", "")), OWN_LIBRARIES, skip_driver=True)
    entries = list(preload_entries(env))
    kept_preload = [entry for entry in entries if not os.path.basename(entry).startswith(PRELOADED_LIBRARIES)]
    if not removed and len(kept_preload) == len(entries):
        return None
    kept = tuple(c for c in changes if c.variable not in ("LD_LIBRARY_PATH", "LD_PRELOAD"))
    out = kept + tuple(EnvChange("LD_LIBRARY_PATH", "remove", folder) for folder in removed)
    if len(kept_preload) != len(entries):
        out += (EnvChange("LD_PRELOAD", "set", " ".join(kept_preload)) if kept_preload
                else EnvChange("LD_PRELOAD", "unset", ""),)
    return out


def variants(env: dict[str, str]) -> list[Variant]:
    """The variants of ENV worth a child: each changes one part that is set and can change what a program gets."""
    out: list[Variant] = []
    from cudnn_doctor.variables import preload_entries

    preload = list(preload_entries(env))
    if preload:
        out.append(Variant("preload", "LD_PRELOAD unset", (EnvChange("LD_PRELOAD", "unset", ""),),
                           removed=tuple(preload)))
    # a folder holding a libcuda.so.1 too: an empty or foreign one first on the path takes the GPU from every program;
    # the driver's own folder taken out cures nothing, so it is never offered (only what cures is)
    from cudnn_doctor.variables import loader_folders

    folders = _holding(loader_folders(env.get("LD_LIBRARY_PATH", "")), CUDA_LIBRARIES, skip_driver=False)
    if folders:
        out.append(Variant("library_path", f"LD_LIBRARY_PATH without {', '.join(folders)}",
                           tuple(EnvChange("LD_LIBRARY_PATH", "remove", folder) for folder in folders),
                           removed=tuple(folders)))
    tools = _holding(env.get("PATH", "").split(os.pathsep) if env.get("PATH") else [], COMPILERS, skip_driver=False,
                     exact=True)
    if tools:
        out.append(Variant("path", f"PATH without {', '.join(tools)}",
                           tuple(EnvChange("PATH", "remove", folder) for folder in tools), removed=tuple(tools)))
    if env.get("PYTHONPATH"):
        out.append(Variant("pythonpath", "PYTHONPATH unset", (EnvChange("PYTHONPATH", "unset", ""),),
                           removed=tuple(p for p in env["PYTHONPATH"].split(os.pathsep) if p)))
    here = _shadowing_folder(env)
    if here:
        out.append(Variant("working_folder", f"PYTHONSAFEPATH=1 (the working folder {here} off sys.path)",
                           (EnvChange("PYTHONSAFEPATH", "set", "1"),), removed=(here,)))
    settings = _shell_settings()
    if settings:
        out.append(Variant("shell", "the shell's settings as a login shell has them (" + "; ".join(
            f"{command} {value}" for command, value in settings) + ")",
            tuple(EnvChange(command, "shell", value) for command, value in settings), limits=settings))
    raised = _raised_limits()
    if raised:
        out.append(Variant("limits", "soft limits raised to the hard ones (" + ", ".join(
            f"ulimit -S {option} {value}" for option, value in raised) + ")",
            tuple(EnvChange(f"ulimit {option}", "limit", value) for option, value in raised), limits=raised))
    closed = _inherited_descriptors()
    if closed:
        out.append(Variant("descriptors", f"the descriptors the shell inherited from its parent closed ({closed})",
                           (EnvChange("close", "shell", closed),), limits=(("close", closed),), removed=(closed,)))
    from cudnn_doctor.knowledge.environment import bisected

    for name in bisected(env)[:MAX_VARIABLES]:
        out.append(Variant("variable", f"{name} unset", (EnvChange(name, "unset", ""),), variable=name))
    return out


def _shell_settings() -> tuple[tuple[str, str], ...]:
    """(command, words) undoing each setting of this process's shell that compat/process_start.toml says can break a
    program (a umask that masks the owner's own bits, SIGCHLD ignored): as a shell line, and as the trial child sets
    it (probes/deep.py)."""
    from cudnn_doctor.knowledge.data import load
    from cudnn_doctor.probes.process_start import read_shell_settings

    shell = read_shell_settings()
    ignored = shell.get("ignored", "").split(",")
    out = []
    for row in load("process_start").get("shell_setting", []):
        command, _, value = str(row["line"]).partition(" ")
        if row["kind"] == "umask" and shell.get("umask") and int(shell["umask"], 8) & int(row.get("mask", "0600"), 8):
            out.append((command, value))
        elif row["kind"] == "ignored" and row["name"] in ignored:
            out.append((command, value))
    return tuple(out)


def _inherited_descriptors() -> str:
    """The descriptors past the standard streams a program started here holds, as runs ("3-983"), where they may be
    what leaves it too few (fewer than 1024 free, or so many that new ones are numbered past select()'s 1024); else
    "". The children of --deep hold as many (probes/deep.py); one that does not is this variant."""
    from cudnn_doctor.limits import held_at_start, inherited_runs
    from cudnn_doctor.probes.process_env import free_descriptors

    held, free = held_at_start(), free_descriptors()
    if held is None or held <= 3 or not (free is not None and free < 1024 or held > 1000):
        return ""
    return inherited_runs()


def _shadowing_folder(env: dict[str, str]) -> str | None:
    """The working folder, where it holds a module a framework imports at start (a `torch/`, a `numpy.py`, a
    `typing.py`: probes/process_env's lists) and Python puts it first on sys.path (PYTHONSAFEPATH unset)."""
    from cudnn_doctor.probes.process_env import IMPORTED, SHADOWED, STDLIB_AT_START

    if env.get("PYTHONSAFEPATH"):
        return None
    try:
        here = kernel_getcwd()
        names = os.listdir(here)[:10000] if os.path.realpath(here) != "/" else []
    except OSError:
        return None
    import sys

    wanted = {*STDLIB_AT_START, *(m for ms in (*SHADOWED.values(), *IMPORTED.values()) for m in ms),
              *getattr(sys, "stdlib_module_names", ())}
    found = [n for n in names if (n.endswith(".py") and n[:-3] in wanted) or (
        n in wanted and os.path.isfile(os.path.join(here, n, "__init__.py")))]
    return here if found else None


def _holding(entries: list[str], prefixes: tuple[str, ...], skip_driver: bool, exact: bool = False) -> list[str]:
    """The ENTRIES of a folder list whose folder holds a file named with one of PREFIXES (EXACT: named so), an empty
    entry read as the working folder and written "."; with SKIP_DRIVER, never one holding libcuda."""
    from cudnn_doctor.probes.hwcaps import loader_platform
    from cudnn_doctor.variables import expand_loader_tokens

    found: list[str] = []
    for entry in entries:
        # ld.so's $ORIGIN, $LIB, $PLATFORM (asked of ld.so); the entry as written is what is taken out
        folder = expand_loader_tokens(entry, platform=loader_platform(os.environ) if "PLATFORM" in entry else None)
        try:
            names = os.listdir(folder or ".") if folder is not None else []
        except OSError:
            continue
        if HWCAPS in names:  # what its glibc-hwcaps subfolders hold, ld.so takes before the folder's own
            names += [name for level in _listed(os.path.join(folder or ".", HWCAPS))
                      for name in _listed(os.path.join(folder or ".", HWCAPS, level))]
        hits = [n for n in names if (n in prefixes if exact else n.startswith(prefixes))]
        if skip_driver and any(n.startswith("libcuda.so") for n in names):
            continue
        if hits and (entry or ".") not in found:
            found.append(entry or ".")
    return found


def _listed(folder: str) -> list[str]:
    try:
        return os.listdir(folder)[:4096]
    except OSError:
        return []


def _raised_limits() -> tuple[tuple[str, str], ...]:
    """(ulimit option, value) for each soft limit below its hard one that can stop a GPU program."""
    try:
        import resource
    except ImportError:  # Windows
        return ()
    raised = []
    for name, option, unit in LIMITS:
        number = getattr(resource, name, None)
        if number is None:
            continue
        try:
            soft, hard = resource.getrlimit(number)
        except (OSError, ValueError):
            continue
        if soft == hard or soft == resource.RLIM_INFINITY:
            continue
        raised.append((option, "unlimited" if hard == resource.RLIM_INFINITY else str(hard // unit)))
    return tuple(raised)


Runner = Callable[..., dict[str, dict[str, object]]]
NOT_RUN = ("the import child", "no Python interpreter", "importing ")  # the framework could not be asked at all


def run_frameworks(frameworks: list[Framework], env: dict[str, str], limits: tuple[tuple[str, str], ...] = (),
                   timeout: float | None = None) -> dict[str, dict[str, object]]:
    """Each framework's answer to its smallest cuDNN work in a child (side by side) started with ENV and LIMITS,
    within TIMEOUT seconds."""
    from cudnn_doctor.probes.deep import DeepImports

    children = DeepImports(frameworks, env, limits, timeout)
    return {framework.name: children.answer(number) for number, framework in enumerate(frameworks)}


def failed(answer: dict[str, object]) -> str | None:
    """What the framework said where its work failed; None where it ran, or where it could not be asked."""
    error = answer.get("error")
    if not isinstance(error, str) or error.startswith(NOT_RUN):
        return None
    return error


def cure_for(report: Report, env: dict[str, str], run: Runner = run_frameworks) -> EnvironmentCure | None:
    """--deep: where frameworks failed in their children, the one part of ENV without which they all work."""
    failing = [f for f in report.frameworks if isinstance(f.details.get("deep"), dict)
               and failed(f.details["deep"])]  # type: ignore[arg-type]
    if not failing:
        return None
    variant, _ = curing(failing, env, run, said_before=[str(failed(f.details["deep"])) for f in failing])  # type: ignore[arg-type]
    if variant is None:
        return None
    said = "; ".join(f"{f.name}: {failed(f.details['deep'])}"[:300] for f in failing)  # type: ignore[arg-type]
    libraries: list[str] = []
    if variant.kind == "preload":  # a renamed copy answers the loader by its SONAME, not by its file's name
        for entry in variant.removed:
            libraries += [os.path.basename(entry), *_soname(entry)]
    if variant.kind == "library_path":
        for folder in variant.removed:
            try:
                libraries += sorted(n for n in os.listdir(folder or ".") if n.startswith(CUDA_LIBRARIES))[:64]
            except OSError:
                continue
    return EnvironmentCure(variant.kind, variant.words, tuple((c.variable, c.op, c.folder) for c in variant.changes),
                           variant.removed, variant.variable, tuple(f.name for f in failing), said,
                           tuple(dict.fromkeys(libraries)))


def _soname(entry: str) -> list[str]:
    """The SONAME in ENTRY's dynamic section where ENTRY is a path to an ELF file ([] otherwise): the name the loader
    then answers for it (a libcudnn_graph.so.9 renamed libgraph-old.so still satisfies libcudnn_graph.so.9)."""
    if "/" not in entry:
        return []
    from cudnn_doctor.elf import ElfError, read_elf

    try:
        soname = read_elf(entry).soname
    except (ElfError, OSError):
        return []
    return [soname] if soname else []


BUDGET_S = 45.0  # the variants tried one after another (one GPU: JAX children side by side would take each
# other's preallocated memory) until one cures or this is spent


START_HANG = "did not start within"  # probes/deep.py's words for a child whose Python never came up


def curing(failing: list[Framework], env: dict[str, str], run: Runner,
           candidates: list[Variant] | None = None, budget_s: float = BUDGET_S,
           said_before: list[str] | None = None) -> tuple[Variant | None, dict[str, str]]:
    """The first variant (in VARIANTS' order) under which every FAILING framework works, the failing frameworks of
    one variant side by side, one variant after another within BUDGET_S; and what each variant left the frameworks
    saying (words, for `tried`). SAID_BEFORE: what they said with ENV (where Python itself never started, the
    parts that act before the framework are tried first)."""
    import time

    from cudnn_doctor.plan.shell import apply_changes

    said: dict[str, str] = {}
    ends = time.monotonic() + budget_s

    def cures(variant: Variant) -> bool:
        changed = apply_changes(tuple(c for c in variant.changes if c.op != "limit"), env)
        answers = run(failing, changed, variant.limits, max(1.0, ends - time.monotonic()))
        still = [f for f in failing if answers.get(f.name, {}).get("error")]
        if still:
            said[variant.words] = "; ".join(f"{f.name}: {str(answers[f.name].get('error'))[:160]}" for f in still)
        return not still

    tried = list(candidates if candidates is not None else variants(env))
    if said_before and all(START_HANG in words for words in said_before):
        # Python itself did not come up (a sitecustomize, a .pth file, a preloaded library hangs): only what runs
        # before the framework can be the cause, so those parts first, each child bounded by the start timeout
        tried.sort(key=lambda variant: variant.kind not in ("pythonpath", "preload"))
    for variant in tried:
        if time.monotonic() > ends:
            said[variant.words] = "not tried: the time for trying was spent"
            continue
        if cures(variant):
            return _one_limit(variant, cures, ends), said
    alone = {v.variable for v in tried if v.variable}
    names = [name for name in sorted(env) if name not in alone and name not in KEPT and not name.startswith(KEPT_PREFIXES)]
    return search_variables(names, cures, ends), said


def _one_limit(variant: Variant, cures: Callable[[Variant], bool], ends: float) -> Variant:
    """VARIANT, where it raised several soft limits and cured: the one limit whose raising alone cures (one child a
    limit, in LIMITS' order, while time is left), so that the line offered raises what the framework needed and
    nothing else; VARIANT itself where none alone does."""
    import time

    if variant.kind != "limits" or len(variant.limits) < 2:
        return variant
    for option, value in variant.limits:
        if time.monotonic() > ends:
            break
        alone = Variant("limits", f"the soft limit raised to the hard one (ulimit -S {option} {value})",
                        (EnvChange(f"ulimit {option}", "limit", value),), limits=((option, value),))
        if cures(alone):
            return alone
    return variant


def unset_variables(names: list[str]) -> Variant:
    words = f"{names[0]} unset" if len(names) == 1 else f"{len(names)} variables unset ({', '.join(names[:6])}" + (
        ", ...)" if len(names) > 6 else ")")
    return Variant("variable" if len(names) == 1 else "variables", words,
                   tuple(EnvChange(name, "unset", "") for name in names),
                   variable=names[0] if len(names) == 1 else None, removed=tuple(names))


def search_variables(names: list[str], cures: Callable[[Variant], bool], ends: float) -> Variant | None:
    """The variable of NAMES (or the few together) without which the frameworks work: all unset in one child; where
    that cures, the half that still cures, halving while time is left (halving.smallest_group: a cause that needs
    variables of both halves together stays the smallest group found). None where unsetting them all cures nothing."""
    import time

    from cudnn_doctor.halving import smallest_group

    if not names or time.monotonic() > ends or not cures(unset_variables(names)):
        return None
    return unset_variables(smallest_group(names, lambda group: cures(unset_variables(group)), ends))
