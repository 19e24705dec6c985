"""Whether the frameworks' Python starts in this environment, asked of it (issue 45): Python reads PYTHONHOME,
PYTHONPLATLIBDIR, PYTHONIOENCODING, PYTHONHASHSEED, PYTHONMALLOC, PYTHONWARNINGS and more at start, and with a value
it cannot use it stops before any program's first line ("Fatal Python error: init_fs_encoding", "Fatal Python error:
PYTHONHASHSEED must be ..."); the loader's own variables (LD_TRACE_LOADED_OBJECTS lists a program's libraries and
ends it unrun, LD_ASSUME_KERNEL refuses libraries built for a newer kernel) and glibc's (GLIBC_TUNABLES, MALLOC_*)
act before it. Where any such variable is set, each framework's interpreter is started with the
user's environment, as a program is (site-packages, sitecustomize, PYTHONSTARTUP left out: not read by programs);
where it does not start, each of those variables is unset alone in a child of its own, side by side, and the one
whose absence lets it start is named. A Python start costs some 20-50 ms, beside the other probes: this module says
what to ask and what the answers mean (StartQuestion); probes/framework_python.py starts the children, one per
interpreter for every question asked of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cudnn_doctor.model import Framework

if TYPE_CHECKING:
    from cudnn_doctor.child import ChildAnswer
    from cudnn_doctor.probes.framework_python import PythonAnswer

FRAMEWORK_NAMES = ("torch", "jax", "tensorflow")  # where `import NAME` finds each, asked at the program's first line
GPU_LIBRARIES = ("libcudnn", "libcublas", "libcudart", "libnvrtc", "libnvJitLink", "libcufft", "libcusparse",
                 "libcusolver", "libcurand", "libnccl", "libcuda.", "libnvidia-ml")
HOOK_WORDS = (b"sys.path", b"addsitedir", b"ctypes", b"CDLL", b"cdll", b"dlopen", b"LoadLibrary", b"cudnn", b"cuda", b"nvidia", b"LD_PRELOAD")
MAX_HOOK_BYTES = 1 << 20
MAX_PTH_FILES = 64
# read by Python at start but never a reason it stops, or another probe's part (PYTHONPATH: the bisection's)
QUIET = ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE", "PYTHONSTARTUP",
         "PYTHONFAULTHANDLER", "PYTHONBREAKPOINT", "PYTHONSAFEPATH")
MAX_VARIABLES = 12


class StartQuestion:
    """Whether the frameworks' Python starts with this environment, what its start-up hooks loaded, and where its
    `import FRAMEWORK` goes: asked (probes/framework_python.py) only where a variable Python or the loader reads at
    start is set or a start-up hook may load a GPU library; read from the answers with preloaded(), resolved() and
    result()."""

    def __init__(self, frameworks: list[Framework], env: dict[str, str]) -> None:
        from cudnn_doctor.probes.context import framework_pythons

        self.env = env
        self.names = sorted(n for n in env if (n.startswith(("PYTHON", "LD_", "MALLOC_")) or n == "GLIBC_TUNABLES")
                            and n not in QUIET)[:MAX_VARIABLES]
        self.pythons: list[str] = []
        self.hooks = start_hooks(env, frameworks)
        self.sites: dict[str, set[str]] = {}  # each interpreter's frameworks' site-packages, as real paths
        self.placing: frozenset[str] = frozenset()
        if not self.names and not self.hooks:
            return
        self.pythons = framework_pythons(frameworks)
        self.placing = placing()
        if any(name in self.placing for name in self.names):
            import os

            from cudnn_doctor.probes.context import interpreter_for

            for framework in frameworks:
                site = str(framework.details.get("site_packages") or "")
                python = interpreter_for(site) if site and not framework.details.get("assumed") else None
                if python:
                    self.sites.setdefault(python, set()).add(os.path.realpath(site))

    def request(self, python: str) -> dict[str, object]:
        """Its part of PYTHON's request: the program's first line, what was mapped there (where a hook may have
        loaded something) and where each framework's import goes."""
        return {"resolve": list(FRAMEWORK_NAMES), **({"mapped": list(GPU_LIBRARIES)} if self.hooks else {})}

    def trials(self, answers: Mapping[str, PythonAnswer]) -> list[tuple[str, str]]:
        """Each variable unset alone, for each interpreter that did not start: the one without which it starts; and
        each variable that places Python (placing()), for each interpreter that started without a framework's
        site-packages among its own: the one without which it has it again."""
        return [(python, name) for python in self._refused(answers) for name in self.names] + [
            (python, name) for python in self._lost(answers) for name in self.names if name in self.placing]

    def trial_request(self) -> dict[str, object]:
        return {"resolve": list(FRAMEWORK_NAMES)}  # whether it starts (its first answer), and its own site-packages

    def _lost(self, answers: Mapping[str, PythonAnswer]) -> list[str]:
        """The interpreters that started and answered, whose own site-packages lack one of their frameworks'."""
        return [python for python, sites in self.sites.items()
                if python in answers and answers[python].started and answers[python].own_sites
                and sites - _real(answers[python].own_sites)]

    def lost(self, answers: Mapping[str, PythonAnswer], trials: Mapping[tuple[str, str], PythonAnswer]
             ) -> dict[tuple[str, str], tuple[str, str]]:
        """(python, a framework's site-packages, real path) -> (the variable, its value) without which that Python,
        started with this environment, calls that folder its own again: the variable took it away (seen)."""
        out: dict[tuple[str, str], tuple[str, str]] = {}
        for python in self._lost(answers):
            for site in sorted(self.sites[python] - _real(answers[python].own_sites)):
                cured = next((name for name in self.names if name in self.placing and (python, name) in trials
                              and site in _real(trials[(python, name)].own_sites)), "")
                if cured:
                    out[(python, site)] = (cured, self.env.get(cured, ""))
        return out

    def _refused(self, answers: Mapping[str, PythonAnswer]) -> list[str]:
        if not self.names:
            return []
        return [python for python in self.pythons
                if python in answers and not answers[python].child.timed_out and not answers[python].started]

    def preloaded(self, answers: Mapping[str, PythonAnswer]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        """(python, a GPU library it had mapped when its program's first line ran, the start-up hooks that may have
        loaded it) for each interpreter that started: what its frameworks then get by that library's soname."""
        if not self.pythons or not self.hooks:
            return ()
        out = [(python, library, tuple(self.hooks)) for python in self.pythons
               if python in answers and answers[python].started for library in answers[python].mapped]
        return tuple(out[:32])

    def resolved(self, answers: Mapping[str, PythonAnswer]) -> tuple[tuple[str, str, str, str], ...]:
        """(python, framework, the file `import FRAMEWORK` finds at a program's first line: '' a namespace portion,
        '-' none; its own site-packages folders, NUL-separated) for each interpreter that started, asked of its own
        finders with the user's environment."""
        if not self.pythons or not (self.names or self.hooks):
            return ()
        out = [(python, name, where, "\0".join(answers[python].own_sites)) for python in self.pythons
               if python in answers and answers[python].started for name, where in answers[python].resolved]
        return tuple(out[:16])

    def result(self, answers: Mapping[str, PythonAnswer], trials: Mapping[tuple[str, str], PythonAnswer]
               ) -> tuple[tuple[str, str, str, str, str], ...]:
        """(python, its words, the variable without which it started or "", its value, the variables tried) for each
        interpreter that did not start (TRIALS: PythonChildren.trials, each variable unset alone)."""
        if not self.pythons or not self.names:
            return ()
        out = []
        for python in self._refused(answers):
            cured = next((name for name in self.names if (python, name) in trials and trials[(python, name)].started),
                         "")
            out.append((python, _words(answers[python].child), cured, self.env.get(cured, ""), ", ".join(self.names)))
        return tuple(out)


def placing() -> frozenset[str]:
    """The variables Python reads to place itself (compat/process_env.toml rows with places_python: PYTHONHOME,
    PYTHONEXECUTABLE, ...): with one, a venv's python3 may start as another Python and no longer call the framework
    installed beside it its own."""
    from cudnn_doctor.knowledge.environment import rows

    return frozenset(name for name, row in rows().items() if row.get("places_python"))


def _real(folders: tuple[str, ...]) -> set[str]:
    import os

    return {os.path.realpath(folder) for folder in folders if folder}


def _words(answer: ChildAnswer) -> str:
    lines = [line.strip() for line in (answer.stderr_tail or answer.error or "").splitlines() if line.strip()]
    fatal = [line for line in lines if "Fatal Python error" in line or "Error" in line]
    return (fatal[0] if fatal else lines[-1] if lines else f"it exited with {answer.exit_code}")[:400]


def user_site(env: dict[str, str], site: str) -> str:
    """The user's site folder the Python owning SITE reads (PYTHONUSERBASE or ~/.local), or "" where it reads none,
    as Lib/site.py decides: PYTHONNOUSERSITE set to a non-empty value (Python/initconfig.c config_get_env counts an
    empty one as unset), or SITE in a venv whose pyvenv.cfg lacks include-system-site-packages = true (site.venv()
    sets ENABLE_USER_SITE False). ~ is HOME, else the password database's home, as os.path.expanduser has it."""
    import os

    version = os.path.basename(os.path.dirname(site))
    if env.get("PYTHONNOUSERSITE") or not version.startswith("python"):
        return ""
    if _venv_without_user_site(os.path.dirname(os.path.dirname(os.path.dirname(site)))):
        return ""
    base = env.get("PYTHONUSERBASE") or ""
    if not base:
        home = env.get("HOME") or ""
        if not home:
            try:
                import pwd

                home = pwd.getpwuid(os.getuid()).pw_dir
            except (ImportError, KeyError, OSError):
                home = ""
        base = os.path.join(home, ".local") if home else ""
    return os.path.join(base, "lib", version, "site-packages") if base else ""


def _venv_without_user_site(prefix: str) -> bool:
    """Whether PREFIX is a venv (its pyvenv.cfg) whose site reads no user site: include-system-site-packages not
    true (Lib/site.py venv(): the key's value lowercased; read bounded)."""
    import os

    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    config = os.path.join(prefix, "pyvenv.cfg")
    if not os.path.isfile(config):
        return False
    try:
        text = read_user_file(config, 1 << 16).decode("utf-8", "replace")
    except UnreadableFile:
        return False
    system_site = "false"
    for line in text.splitlines():  # site.venv(): every such line read, the last one kept
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "include-system-site-packages":
            system_site = value.strip().lower()
    return system_site != "true"


def start_hooks(env: dict[str, str], frameworks: list[Framework]) -> list[str]:
    """The Python start-up hooks a framework's program runs before its first line that may load a GPU library (their
    text names ctypes, dlopen, cuDNN, CUDA...: read, so that the started Python is asked only then):
    sitecustomize.py and usercustomize.py on PYTHONPATH and in the frameworks' site-packages, and the import lines of
    the .pth files there."""
    import os

    found = []
    for path, text in _hook_texts(env, frameworks):
        if path.endswith(".pth"):  # only its lines that start with import are run: their own code, and the modules
            lines = [line for line in text.splitlines() if line.startswith((b"import ", b"import\t"))]
            if _pth_may_load(lines, os.path.dirname(path)):  # they import from that site
                found.append(path)
        elif any(word in text for word in HOOK_WORDS):
            found.append(path)
    return found[:16]


def _hook_texts(env: dict[str, str], frameworks: list[Framework]) -> list[tuple[str, bytes]]:
    """(path, its first MAX_HOOK_BYTES) of each start-up hook file a framework's program may run: sitecustomize.py
    and usercustomize.py on PYTHONPATH and in the frameworks' site-packages and user sites, and the .pth files there
    (regular files only, read without waiting on a FIFO)."""
    import glob
    import os

    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    folders = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    sites = list(dict.fromkeys(str(f.details.get("site_packages")) for f in frameworks
                               if f.details.get("site_packages") and not f.details.get("assumed")))
    # each framework's Python's user site too (usercustomize lives there)
    sites += [mine for mine in dict.fromkeys(user_site(env, site) for site in sites) if mine]
    candidates = [os.path.join(folder, name) for folder in folders + sites
                  for name in ("sitecustomize.py", "usercustomize.py", os.path.join("sitecustomize", "__init__.py"))]
    candidates += [path for site in sites for path in sorted(glob.glob(os.path.join(glob.escape(site), "*.pth")))
                   [:MAX_PTH_FILES]]
    texts = []
    for path in candidates:
        if not os.path.isfile(path):
            continue
        try:
            texts.append((path, read_user_file(path, MAX_HOOK_BYTES)))
        except UnreadableFile:
            continue
    return texts


def hooks_setting(env: dict[str, str], frameworks: list[Framework], names: list[str]) -> dict[str, list[str]]:
    """For each variable of NAMES (set inside Python by a start-up hook: probes/context.set_inside_python), the hook
    files whose text names it: where a program's Python gets that value, so the step that changes it."""
    if not names:
        return {}
    texts = _hook_texts(env, frameworks)
    return {name: [path for path, text in texts if name.encode() in text] for name in names}


# what loads a library, said in a .pth line or in a module it imports (a module's name alone is no evidence: numba's
# `import _numba_cuda_redirector` finds modules, and would start a Python in every check of such a machine)
LOADING_WORDS = (b"ctypes", b"CDLL", b"cdll", b"dlopen", b"LoadLibrary", b"LD_PRELOAD", b"libcudnn", b"libcuda",
                 b"libnv", b"import torch", b"import jax", b"import cupy", b"import tensorflow",
                 # and what puts a folder before site-packages, where `import torch` may then find another torch
                 b"sys.path.insert(0", b"sys.path[:0]", b"sys.path[0:0]")


def _pth_may_load(lines: list[bytes], site: str) -> bool:
    """Whether .pth import LINES may load a GPU library: their own code names a loading call, or a module they import
    from SITE does (its file's text, read bounded)."""
    import os
    import re

    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    for line in lines:
        if any(word in line for word in LOADING_WORDS):
            return True
        for statement in line.split(b";"):
            found = re.match(rb"\s*import\s+([\w., \t]+)", statement)
            for name in (found.group(1).split(b",") if found else []):
                top = name.strip().split(b".")[0].split()[0].decode("ascii", "replace") if name.strip() else ""
                if not top.isidentifier():
                    continue
                for module in (os.path.join(site, top + ".py"), os.path.join(site, top, "__init__.py")):
                    try:
                        if os.path.isfile(module) and any(word in read_user_file(module, MAX_HOOK_BYTES)
                                                          for word in LOADING_WORDS):
                            return True
                    except UnreadableFile:
                        continue
    return False


def framework_imports(frameworks: list[Framework], resolved: tuple[tuple[str, str, str, str], ...],
                      lost: Mapping[tuple[str, str], tuple[str, str]] | None = None
                      ) -> tuple[tuple[str, ...], ...]:
    """(framework, python, the file its `import` finds, "installed" | "other" | "none" | "lost"[, the variable, its
    value]) for each framework whose Python answered (StartQuestion.resolved): "none" where no finder has it or only
    a namespace portion. Only for a framework in a site-packages folder that Python calls its own: one it never had
    is not a program's there, unless a variable took it away (LOST: StartQuestion.lost, that Python asked again with
    the variable unset): "lost", with the variable and its value."""
    import os

    from cudnn_doctor.probes.context import interpreter_for

    out: list[tuple[str, ...]] = []
    for framework in frameworks:
        site = str(framework.details.get("site_packages") or "")
        if not site or framework.details.get("assumed"):
            continue
        python = interpreter_for(site)
        found = next(((where, own) for who, name, where, own in resolved if who == python and name == framework.name),
                     None)
        if found is None:
            continue
        answer, own = found
        if os.path.realpath(site) not in {os.path.realpath(folder) for folder in own.split("\0") if folder}:
            taken = (lost or {}).get((python or "", os.path.realpath(site)))
            if taken and (answer in ("-", "") or not os.path.realpath(answer).startswith(
                    os.path.realpath(os.path.join(site, framework.name)) + os.sep)):
                out.append((framework.name, python or "", answer, "lost", *taken))
            continue
        installed = os.path.realpath(os.path.join(site, framework.name)) + os.sep
        verdict = "none" if answer in ("-", "") else \
            "installed" if os.path.realpath(answer).startswith(installed) else "other"
        out.append((framework.name, python or "", answer, verdict))
    return tuple(out)


_IMPORTED_AT_START: dict[str, frozenset[str]] = {}


def imported_at_start(package_init: str) -> frozenset[str]:
    """The top-level module names a framework's own `__init__.py` (PACKAGE_INIT) imports as it runs, read from its
    installed file (its module-level `import X` and `from X import ...`, inside `try`, `if` and `with` too; not in
    functions): a module of one of those names in the working folder is what `python -c 'import torch'` there gets.
    Empty where the file cannot be read or parsed (bounded: 2 MiB)."""
    if package_init in _IMPORTED_AT_START:
        return _IMPORTED_AT_START[package_init]
    import ast

    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    names: set[str] = set()
    try:
        tree = ast.parse(read_user_file(package_init, 2 << 20))
    except (UnreadableFile, OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    pending = list(tree.body) if tree is not None else []
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
        elif isinstance(node, (ast.If, ast.Try, ast.With)):  # module level still: their bodies run at import
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []) or []:
                    pending.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    _IMPORTED_AT_START[package_init] = frozenset(n for n in names if n.isidentifier())
    return _IMPORTED_AT_START[package_init]
