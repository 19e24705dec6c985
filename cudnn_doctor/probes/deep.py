"""`check --deep`: import each framework in a child process and ask it what it really loaded.

Slow (an `import torch` costs seconds), so only on request, and every framework's child starts at
once, as soon as the frameworks are found, while the other probes run. The child uses the Python
that owns the framework's site-packages, and reports the cuDNN the framework says it
uses and the libcudnn file actually mapped into the process.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from cudnn_doctor.child import PROGRAM_BOOT, ChildBatch, ChildRequest, deadline_in, timeout_from_env
from cudnn_doctor.model import CudnnInstall, Framework
from cudnn_doctor.operating_system import kernel_getcwd
from cudnn_doctor.probes.context import interpreter_for
from cudnn_doctor.probes.xla_flags import flags_file

CHILD = str(Path(__file__).resolve().parents[1] / "_deep_child.py")
# python -c BOOT CHILD ARGS...: CHILD run as a script would be, without "" (the working folder) or CHILD's own folder
# on sys.path, PYTHONPATH's folders off it too while the child imports what it needs itself (child.PROGRAM_BOOT)
BOOT = PROGRAM_BOOT
# the same, as `python -c` started in the user's working folder HERE is: Python's own choice of whether "" (that
# folder) comes first on sys.path (not under PYTHONSAFEPATH, -I) is kept for the framework's import; the child's own
# imports are made without it (probes/deep.py: only where that folder holds a module the framework imports)
BOOT_HERE = "import os, sys; _DOCTOR_HERE = sys.path[:1] == ['']; os.chdir({here!r}); " + BOOT
# every other framework child works in the user's working folder too (what the framework writes or reads there by
# default: TunableOp's tunableop_results0.csv, XLA's ./cuda_sdk_lib, a core file), without that folder on sys.path;
# one it cannot enter (removed, no search permission) leaves the child where it started, as nothing can be found there
BOOT_IN = "import os, sys; os.path.isdir({here!r}) and os.access({here!r}, os.X_OK) and os.chdir({here!r}); " + BOOT
DEFAULT_TIMEOUT_S = 180.0
# the child's Python up (its site-packages and PYTHONPATH read, their sitecustomize and .pth files run) and saying so
# on its answer channel: a second or two where they are large; one that hangs there is cut off at this, not at the
# import's whole timeout
START_TIMEOUT_S = 15.0


DEEP_FRAMEWORKS = ("torch", "tensorflow", "jax")


class DeepImports:
    """One import child per framework, all started at once (in the background, while the other probes
    run): `--deep` costs the slowest import, not the sum of them."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str] | None = None,
                 limits: tuple[tuple[str, str], ...] = (), timeout: float | None = None) -> None:
        """ENV: the children's environment (None: this one's); LIMITS: (ulimit option, value) set in them first, as
        a shell that sourced `ulimit -S OPTION VALUE` would have them."""
        self.timeout = timeout_from_env("CUDNN_DOCTOR_DEEP_TIMEOUT", DEFAULT_TIMEOUT_S)
        if timeout is not None:  # a caller's own bound (fix's and --deep's trials of the environment's parts)
            self.timeout = max(1.0, min(self.timeout, timeout))
        # the children start from "/" (the runner makes the working folder's relative paths absolute in their
        # environment: child.started_environment), holding the descriptors a program started here inherits (they
        # count against its open-files limit)
        from cudnn_doctor.limits import hold_environment

        env = dict(os.environ if env is None else env)
        if not any(option == "close" for option, _value in limits):  # a trial of a shell that closed them: none held
            env = dict(hold_environment(env))
        self.early: dict[int, dict[str, object]] = {}  # framework index -> its answer without a child
        self.index: dict[int, int] = {}  # framework index -> request index
        requests: list[ChildRequest] = []
        here = _working_folder(frameworks)
        working = _here()
        for number, framework in enumerate(frameworks):
            if framework.name not in DEEP_FRAMEWORKS:
                continue
            site = str(framework.details.get("site_packages") or "")
            python = interpreter_for(site) if site else None
            if python is None:
                self.early[number] = {"error": f"no Python interpreter found for {site or framework.location}"}
                continue
            hostile = flags_file(env.get("XLA_FLAGS")) if framework.name == "jax" else None
            if hostile is not None:  # JAX would hang or fill its memory reading it: never tried, the rule says it
                self.early[number] = {"error": f"importing jax was not tried: XLA_FLAGS names {hostile[0]}, "
                                               f"{hostile[1]}", "not_run": True}
                continue
            self.index[number] = len(requests)
            # as a program of the user's starts: PYTHONPATH and the user's site-packages in force (they can shadow
            # the installed framework, and that is what programs get), in the working folder (BOOT_IN) but without it
            # on sys.path; where that folder holds a module the framework's import may reach (_working_folder), as
            # `python -c` starts there, the folder first where Python itself puts it
            boot = BOOT_HERE.format(here=here[framework.name]) if framework.name in here else \
                BOOT_IN.format(here=working) if working else BOOT
            argv: tuple[str, ...] = (python, "-c", boot, CHILD, framework.name, site)
            if ("trap", "- CHLD") in limits:  # SIGCHLD's default again: a shell cannot reset a signal it found
                # ignored when it started (as this child's would), so the child's Python does, before anything else
                argv = (python, "-c", "import signal; signal.signal(signal.SIGCHLD, signal.SIG_DFL); " + boot,
                        *argv[3:])
            shell_limits = [(option, value) for option, value in limits if option not in ("trap", "close")]
            if shell_limits:  # set as a shell's lines set them, then the child started in its place
                argv = limited(argv, shell_limits)
            requests.append(ChildRequest(argv, env, self.timeout, f"importing {framework.name}", answer_channel=True,
                                         start_timeout=min(START_TIMEOUT_S, self.timeout)))
        self.names = [f.name for f in frameworks]
        self.batch = ChildBatch(requests, deadline=deadline_in(self.timeout), parallel=len(requests) or 1)

    def answer(self, number: int) -> dict[str, object]:
        """What framework NUMBER said (waits for its child only)."""
        if number in self.early:
            return self.early[number]
        answer = self.batch.answer(self.index[number])
        name = self.names[number]
        if answer.timed_out and (answer.error or "").startswith("did not start"):  # a failure of the environment:
            return {"error": f"{name}'s Python did not start within {min(START_TIMEOUT_S, self.timeout):g} s: its "
                             "start-up hangs (a sitecustomize or usercustomize module, or a .pth file, on PYTHONPATH "
                             f"or in site-packages), before {name} is imported"}  # the bisection finds which part
        if answer.timed_out:
            return {"error": f"importing {name} did not finish within {self.timeout:g} s"}
        if answer.values is None and answer.crashed:  # the framework's own work killed it: its failure, not ours
            return {"error": f"{name} crashed: {answer.error}", "crashed": True}
        if answer.values is None:
            why = answer.error or f"exited without an answer{f' ({answer.stderr_tail})' if answer.stderr_tail else ''}"
            return {"error": f"the import child {why}"}
        from cudnn_doctor.json_values import exact

        # what the framework said, as every reader of the report can hold it: its NaN in words, 2^64 as digits
        return exact(answer.values, non_finite="words")  # type: ignore[no-any-return]


# how a shell's `ulimit -S OPTION VALUE` sets each soft limit: the resource, and the unit of VALUE (bash and dash)
SHELL_LIMITS = {"-v": ("RLIMIT_AS", 1024), "-n": ("RLIMIT_NOFILE", 1), "-s": ("RLIMIT_STACK", 1024),
                "-t": ("RLIMIT_CPU", 1), "-u": ("RLIMIT_NPROC", 1), "-d": ("RLIMIT_DATA", 1024)}
SET_THEN_EXEC = """import os, resource, sys
units, count = UNITS, int(sys.argv[1])
pairs, argv = sys.argv[2:2 + 2 * count], sys.argv[2 + 2 * count:]
for option, value in zip(pairs[::2], pairs[1::2]):
    try:
        if option == "umask":
            os.umask(int(value, 8))
            continue
        name, unit = units[option]
        number = getattr(resource, name)
        soft = resource.RLIM_INFINITY if value == "unlimited" else int(value) * unit
        resource.setrlimit(number, (soft, resource.getrlimit(number)[1]))
    except (ValueError, OSError, KeyError, AttributeError):
        pass  # as the shell's line fails and the next one runs
import signal
for name in ("SIGPIPE", "SIGXFSZ"):  # this Python ignored them at its start, and exec keeps a signal ignored: the
    if hasattr(signal, name):  # child gets them as the runner gives every child (subprocess's restore_signals)
        signal.signal(getattr(signal, name), signal.SIG_DFL)
os.execvp(argv[0], argv)
"""


def limited(argv: tuple[str, ...], settings: list[tuple[str, str]]) -> tuple[str, ...]:
    """ARGV started with SETTINGS ((ulimit option, value) or ("umask", value)) set first, as a shell sourcing
    `ulimit -S OPTION VALUE` and `umask VALUE` sets them, its environment passed on whole: a POSIX shell (dash)
    drops the variables whose names it cannot hold (APP-MODE, a.b), which bash and a program's own environment keep,
    so a trial through it was a trial without them too. An option not in SHELL_LIMITS is left to /bin/sh."""
    import sys

    if not sys.executable or any(option != "umask" and option not in SHELL_LIMITS for option, _ in settings):
        import shlex

        sets = "; ".join(f"umask {shlex.quote(value)}" if option == "umask" else
                         f"ulimit -S {option} {shlex.quote(value)}" for option, value in settings)
        return ("/bin/sh", "-c", f'{sets}; exec "$@"', "sh", *argv)
    pairs = tuple(item for pair in settings for item in pair)
    code = SET_THEN_EXEC.replace("UNITS", repr(SHELL_LIMITS), 1)
    return (sys.executable, "-I", "-S", "-c", code, str(len(settings)), *pairs, *argv)


def _working_folder(frameworks: list[Framework]) -> dict[str, str]:
    """framework name -> the working folder, for each framework whose import at start reaches a module that folder
    holds (a `torch/`, a `numpy.py`, a `typing.py`: probes/process_env.python_shadows): its child is started as
    `python -c`, the REPL and a script kept there start, that folder first on sys.path where Python puts it."""
    from cudnn_doctor.probes.process_env import python_shadows

    try:
        here = kernel_getcwd()
    except OSError:  # removed under us: nothing there to import
        return {}
    found = {framework: folder for folder, _module, framework, how in python_shadows({}, frameworks, here)
             if how == "working folder"}
    # beyond the modules the files name: any module of Python's own library, or any package installed beside the
    # framework, that the folder holds a module of the same name of (a `dataclasses.py`, a `code.py`): whether the
    # framework's import reaches it, its Python says when it runs there
    held = set(_modules_in(here)) if os.path.realpath(here) != "/" else set()
    for framework in frameworks:
        site = str(framework.details.get("site_packages") or "")
        if framework.name in found or not held or not site or framework.details.get("assumed") or \
                os.path.realpath(here) == os.path.realpath(site):
            continue
        if held & (set(getattr(sys, "stdlib_module_names", ())) | set(_modules_in(site))):
            found[framework.name] = here
    return found


def _here() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # removed under us: the child stays where the runner starts it
        return None


def _modules_in(folder: str) -> list[str]:
    """The top-level modules Python finds in FOLDER: NAME.py, NAME/__init__.py, an extension NAME.*.so (at most the
    first 4096 entries)."""
    try:
        names = os.listdir(folder)[:4096]
    except OSError:
        return []
    out = []
    for name in names:
        if name.endswith(".py"):
            out.append(name[:-3])
        elif name.endswith(".so") and "." in name[:-3]:
            out.append(name.split(".", 1)[0])
        elif name.isidentifier() and os.path.isfile(os.path.join(folder, name, "__init__.py")):
            out.append(name)
    return out


def confirm_frameworks(frameworks: list[Framework], installs: list[CudnnInstall],
                       started: DeepImports | None = None) -> tuple[list[Framework], list[CudnnInstall]]:
    """Each Python framework with what it reports at run time under details["deep"]; the cuDNN it really
    mapped replaces the one resolved from files. STARTED: the children already running for FRAMEWORKS."""
    same = started is not None and started.names == [f.name for f in frameworks]
    deep = started if started is not None and same else DeepImports(frameworks)
    confirmed = []
    for number, framework in enumerate(frameworks):
        if framework.name not in DEEP_FRAMEWORKS:
            confirmed.append(framework)
            continue
        answer = deep.answer(number)
        details = {**framework.details, "deep": answer}
        listed = answer.get("mapped_cudnn")
        mapped = [str(p) for p in (listed if isinstance(listed, list) else [])
                  if os.path.basename(str(p)).startswith("libcudnn.so")]
        used = framework.cudnn_used
        if mapped:
            real = os.path.realpath(mapped[0])
            match = next((i for i in installs if os.path.realpath(i.library) == real), None)
            used = match.library if match else mapped[0]
            installs = [replace(i, loaded_by=tuple(x for x in i.loaded_by if x != framework.name)) for i in installs]
            installs = [replace(i, loaded_by=i.loaded_by + (framework.name,)) if i is match or (
                match and os.path.realpath(i.library) == real) else i for i in installs]
        confirmed.append(replace(framework, details=details, cudnn_used=used))
    return confirmed, installs
