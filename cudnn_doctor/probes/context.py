"""Where the probes look: the environment, the system prefix and the user's extra folders.

Everything a probe reads from the outside world comes through a SearchContext,
so a test (or a look at a mounted image) can point the doctor at another root.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING

from cudnn_doctor import json_values
from cudnn_doctor.operating_system import kernel_getcwd
from cudnn_doctor.records import record

if TYPE_CHECKING:
    from cudnn_doctor.model import Framework

# Folders the Linux dynamic loader searches after LD_LIBRARY_PATH and its cache
# (glibc's trusted directories, plus the multiarch ones Debian and Ubuntu add).
LINUX_DEFAULT_LIB_DIRS = (
    "/lib/{triplet}", "/usr/lib/{triplet}", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
)
TRIPLETS = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu"}


@record(frozen=True)
class LoaderLayout:
    """How one operating system's loader finds a library, and what NVIDIA's files are called there: one
    table per system, so that the search steps never ask which system they run on."""

    os_name: str
    library_path_variable: str  # the variable the loader searches: LD_LIBRARY_PATH, or Windows' PATH
    nvml: str  # the NVML library pynvml loads
    libcuda: str  # the CUDA driver library
    cudnn: str  # the main cuDNN library of a major: cudnn.format(major=9)
    nvcc: str
    # toolkit folders (glob patterns) and how a report names the way each was found; Windows' start at
    # %ProgramFiles%, Linux's at the system root
    toolkit_folders: tuple[tuple[str, str], ...]
    # variables that name one toolkit each: CUDA_PATH_V12_4, set by the Windows installer per version
    toolkit_variable_prefix: str | None = None


LINUX_LAYOUT = LoaderLayout(
    os_name="linux", library_path_variable="LD_LIBRARY_PATH", nvml="libnvidia-ml.so.1", libcuda="libcuda.so.1",
    cudnn="libcudnn.so.{major}", nvcc="nvcc",
    toolkit_folders=(("/usr/local/cuda", "/usr/local/cuda"), ("/usr/local/cuda-*", "/usr/local/cuda"),
                     ("/opt/cuda", "system"), ("/opt/nvidia/cuda*", "system")),
)
# The CUDA installer's folders and variables: https://docs.nvidia.com/cuda/cuda-installation-guide-microsoft-windows/
# ("C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\vX.Y", CUDA_PATH and CUDA_PATH_VX_Y); nvml.dll in System32
# since the DCH drivers, in NVSMI before (as pynvml looks for it)
WINDOWS_LAYOUT = LoaderLayout(
    os_name="windows", library_path_variable="PATH", nvml="nvml.dll", libcuda="nvcuda.dll",
    cudnn="cudnn64_{major}.dll", nvcc="nvcc.exe",
    toolkit_folders=(("NVIDIA GPU Computing Toolkit/CUDA/v*", "Program Files"),),
    toolkit_variable_prefix="CUDA_PATH_V",
)


@record
class SearchContext:
    """Where the probes look: the environment, the system root, extra folders."""

    env: dict[str, str]
    prefix: str = "/"  # the system root; CUDNN_DOCTOR_SYSTEM_PREFIX moves it
    search_paths: list[str] = field(default_factory=list)
    os_name: str = "linux"  # "linux" | "windows" | "macos"
    arch: str = "x86_64"
    python_paths: list[str] = field(default_factory=list)  # the running interpreter's sys.path, or --python's
    python: str | None = None  # --python PATH: only that interpreter's packages are looked at
    cwd: str | None = None  # the working folder: its ./.venv is a project's environment
    _found: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)  # one scan per run

    @classmethod
    def from_environment(cls, search_paths: list[str] | None = None, python: str | None = None,
                         env: Mapping[str, str] | None = None) -> SearchContext:
        """The running machine as a program started with ENV (this process's environment by default) sees it;
        PYTHON (--python) names the interpreter whose packages count. By default the variables the loader and Python
        read as a program starts are those this process was started with (started_environment)."""
        from cudnn_doctor.elf import host_arch, uname

        env = started_environment() if env is None else dict(env)
        system = uname()[0].lower()
        os_name = {"darwin": "macos"}.get(system, system)
        try:
            cwd: str | None = kernel_getcwd()
        except OSError:  # the working folder was removed under us
            cwd = None
        executable = resolve_interpreter(python, env) if python is not None else None
        return cls(
            env=env,
            prefix=env.get("CUDNN_DOCTOR_SYSTEM_PREFIX", "/") or "/",
            search_paths=[absolute_path(folder, cwd) for folder in search_paths or []],
            os_name=os_name,
            arch=host_arch(),
            python_paths=interpreter_paths(executable) if executable else [p for p in sys.path if p],
            python=executable,
            cwd=cwd,
        )

    @property
    def triplet(self) -> str:
        return TRIPLETS.get(self.arch, f"{self.arch}-linux-gnu")

    def system(self, path: str) -> str:
        """PATH (absolute, as on a normal system) under the system prefix."""
        if self.prefix in ("", "/"):
            return path
        return os.path.join(self.prefix, path.lstrip("/")).rstrip("/") or "/"

    @property
    def layout(self) -> LoaderLayout:
        return WINDOWS_LAYOUT if self.os_name == "windows" else LINUX_LAYOUT

    def env_paths(self, name: str) -> list[str]:
        """The folders of a search-path variable, in order. On Linux and macOS an empty entry (a leading, trailing or
        doubled ':') is the working folder to ld.so and to the shells, so it is "." here; Windows skips it."""
        value = self.env.get(name, "")
        if not value:
            return []
        if self.os_name == "windows":
            return [part for part in value.split(os.pathsep) if part]
        if name == "LD_LIBRARY_PATH":  # as ld.so splits it (at ':' and ';') and expands its tokens ($ORIGIN, $LIB)
            from cudnn_doctor.variables import loader_folders

            platform = None
            if "PLATFORM" in value:  # what ld.so puts for $PLATFORM, asked of it only where an entry names it
                from cudnn_doctor.probes.hwcaps import loader_platform

                platform = loader_platform(self.env)
            return [part or "." for part in loader_folders(value, expanded=True, origin=self.program_folder(),
                                                            platform=platform)]
        return [part or "." for part in value.split(":")]

    def searched_library_path(self) -> list[str]:
        """LD_LIBRARY_PATH's folders as ld.so searches them: each one's glibc-hwcaps subfolders that ld.so searches
        on this machine first (probes/hwcaps.py, asked of ld.so where such a subfolder exists). Windows: PATH."""
        if self.os_name == "windows":
            return self.library_path()
        from cudnn_doctor.probes.hwcaps import with_levels

        return with_levels(self.library_path(), self.env)

    def program_folder(self) -> str | None:
        """$ORIGIN of the programs that matter here, the frameworks' Python: --python's real folder, else this
        interpreter's (None: the default, this one's)."""
        return os.path.dirname(os.path.realpath(self.python)) if self.python else None

    def library_path(self) -> list[str]:
        """The folders of the variable the loader searches (LD_LIBRARY_PATH; PATH on Windows)."""
        return self.env_paths(self.layout.library_path_variable)

    def windows_folder(self) -> str:
        """%SystemRoot% (C:\\Windows), as the environment names it."""
        return self.env.get("SYSTEMROOT") or self.env.get("WINDIR") or "C:\\Windows"

    def program_files(self) -> list[str]:
        """%ProgramFiles% (and %ProgramW6432%, where a 32-bit program sees another)."""
        found = [self.env.get(name) for name in ("PROGRAMFILES", "PROGRAMW6432")]
        return list(dict.fromkeys(folder for folder in found if folder)) or ["C:\\Program Files"]

    def default_lib_dirs(self) -> list[str]:
        """The folders the loader searches after the library path (and, on Linux, its cache). Windows: System32
        and the Windows folder, in the order LoadLibrary searches them."""
        if self.os_name == "windows":
            return [os.path.join(self.windows_folder(), "System32"), self.windows_folder()]
        return [self.system(d.format(triplet=self.triplet)) for d in LINUX_DEFAULT_LIB_DIRS]

    def toolkit_folder_patterns(self) -> list[tuple[str, str]]:
        """(glob pattern, how it is named) of the folders where CUDA toolkits are installed."""
        if self.os_name == "windows":
            return [(os.path.join(root, pattern), source)
                    for root in self.program_files() for pattern, source in self.layout.toolkit_folders]
        return [(self.system(pattern), source) for pattern, source in self.layout.toolkit_folders]

    def site_packages_dirs(self) -> list[str]:
        """Every site-packages folder worth a look: this Python's, the active venv and conda
        environment's, each `python3` on PATH's, and conda environments in the usual places."""
        if "site-packages" not in self._found:
            self._found["site-packages"] = self._scan_site_packages()
        return self._found["site-packages"]

    def environment_roots(self) -> list[str]:
        """Python environments around: the active venv and conda environment, the project's
        ./.venv (uv, poetry, `python -m venv .venv`; active or not), and each python on PATH's."""
        roots: list[str] = []
        for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
            if self.env.get(variable):
                roots.append(self.env[variable])
        if self.cwd:
            roots.append(os.path.join(self.cwd, ".venv"))
        for folder in self.env_paths("PATH"):
            for name in ("python3", "python"):
                executable = os.path.join(folder, name)
                if os.path.exists(executable):
                    roots.append(os.path.dirname(os.path.dirname(os.path.realpath(executable))))
                    roots.append(os.path.dirname(os.path.dirname(os.path.normpath(executable))) or ".")
        return roots

    def _scan_site_packages(self) -> list[str]:
        found: list[str] = []
        candidates = [p for p in self.python_paths if p.endswith(("site-packages", "dist-packages"))]
        roots = [] if self.python else self.environment_roots() + self.conda_environments()
        for root in roots:
            candidates += glob.glob(os.path.join(root, "lib", "python3*", "site-packages"))
            candidates += glob.glob(os.path.join(root, "Lib", "site-packages"))
        for candidate in candidates:
            real = os.path.realpath(candidate)
            if os.path.isdir(real) and real not in found:
                found.append(real)
        return found

    def conda_environments(self) -> list[str]:
        if "conda" not in self._found:
            self._found["conda"] = self._scan_conda_environments()
        return self._found["conda"]

    def _scan_conda_environments(self) -> list[str]:
        home = self.env.get("HOME", "")
        bases = [self.env.get("CONDA_PREFIX", "")]
        for name in ("miniconda3", "anaconda3", "miniforge3", "mambaforge", ".conda"):
            if home:
                bases.append(os.path.join(home, name))
        bases += [self.system("/opt/conda"), self.system("/opt/miniconda3")]
        environments: list[str] = []
        for base in filter(None, bases):
            if os.path.isdir(os.path.join(base, "conda-meta")):
                environments.append(base)
            environments += sorted(glob.glob(os.path.join(base, "envs", "*")))
        unique: list[str] = []
        for environment in environments:
            if environment not in unique and os.path.isdir(environment):
                unique.append(environment)
        return unique


# What --python's interpreter is asked, run isolated (-I) and without site (-S): none of its .pth files or
# sitecustomize runs. It answers, as JSON, its sys.path and the site-packages folders `site` would add,
# computed the way site.py does (pyvenv.cfg read as text: site.venv() would run the .pth files).
SYS_PATH_CODE = """\
import json, os, site, sys
exe_dir = os.path.dirname(os.path.abspath(sys.executable))
venv, system_site = None, True
for folder in (exe_dir, os.path.dirname(exe_dir)):
    config = os.path.join(folder, "pyvenv.cfg")
    if os.path.isfile(config):
        venv = os.path.dirname(exe_dir)
        with open(config, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, equals, value = line.partition("=")
                if equals and key.strip().lower() == "include-system-site-packages":
                    system_site = value.strip().lower() == "true"
        break
# a venv's own folder as site.venv() adds it (site.getsitepackages() is patched by Debian and others to name
# dist-packages, and under -S sys.prefix is still the base: the venv's folder is named here, not asked of it)
version = "python%d.%d" % sys.version_info[:2]
folders = [os.path.join(venv, lib, version, "site-packages") for lib in ("lib", "lib64")] if venv else []
if venv and os.name == "nt":
    folders = [os.path.join(venv, "Lib", "site-packages")]
if system_site or not venv:
    folders += site.getsitepackages([sys.base_prefix, sys.base_exec_prefix] if venv else [sys.prefix, sys.exec_prefix])
if (system_site or not venv) and not os.environ.get("PYTHONNOUSERSITE"):
    folders.append(site.getusersitepackages())
paths = [p for p in sys.path if p] + [f for f in folders if os.path.isdir(f)]
answer = json.dumps(list(dict.fromkeys(paths)))
data = answer.encode("utf-8", "surrogateescape")
fd = _stdio["answer_fd"]()
while data:
    data = data[os.write(fd, data):]
"""
MAX_PATHS = 10_000  # entries of an answer
MAX_PATH_LENGTH = 4096  # PATH_MAX


def working_folder() -> str | None:
    """The real working folder (os.getcwd(), never a stale $PWD); None when it was deleted under us."""
    try:
        return kernel_getcwd()
    except OSError:
        return None


ENVIRONMENT_INTERPRETERS = ("bin/python3", "bin/python", "Scripts/python.exe", "python.exe")


def resolve_interpreter(python: str, env: dict[str, str]) -> str:
    """--python PATH as an executable file: an interpreter, a name looked up on PATH (python3.12), or an
    environment's folder (.venv, a conda environment) as pip's and uv's --python take it: DIR/bin/python."""
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.operating_system import which

    if not python.strip():
        raise DoctorError("--python: empty path", fix="give the environment or its interpreter, e.g. --python .venv", code="CD001")
    if os.path.isdir(python):
        found = next((os.path.join(python, name) for name in ENVIRONMENT_INTERPRETERS
                      if os.path.isfile(os.path.join(python, name)) and os.access(os.path.join(python, name), os.X_OK)),
                     None)
        if found is None:
            raise DoctorError(f"--python {python}: a folder without bin/python, so not a Python environment",
                              fix="give the environment's folder (the one with bin/python, e.g. .venv) or its interpreter", code="CD005")
        return os.path.abspath(found)
    found = python if os.sep in python else which(python, env.get("PATH"))
    if os.sep not in python and not python.startswith(".") and not found and not os.path.lexists(python):
        raise DoctorError(f"--python {python}: no program of that name on PATH, nor a folder of that name here",
                          fix="give an environment's folder or its interpreter, e.g. --python .venv or "
                              "--python .venv/bin/python", code="CD004")
    if not os.path.lexists(python) and (os.sep in python or python.startswith(".")):
        if os.path.basename(python.rstrip(os.sep)).startswith("python"):
            raise DoctorError(f"--python {python}: no such file",
                              fix="give an existing interpreter, or the environment's folder, e.g. --python .venv", code="CD004")
        raise DoctorError(f"--python {python}: no such folder",
                          fix=f"create the environment first (python3 -m venv {python}), or give an existing "
                              "environment's folder or its interpreter", code="CD004")
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise DoctorError(f"--python {python}: not an executable file",
                          fix="give the environment's folder or its interpreter, e.g. --python .venv or .venv/bin/python", code="CD005")
    return os.path.abspath(found)


def interpreter_paths(python: str, timeout: float | None = None) -> list[str]:
    """PYTHON's sys.path, asked of it through the child runner: from a neutral folder, one deadline that
    covers its output (a child that leaves something running cannot keep us waiting), and whatever it
    started killed."""

    from cudnn_doctor.child import deadline_in, run_child, with_stdio
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.probes.library_jobs import probe_timeout

    timeout = probe_timeout() if timeout is None else timeout
    # through the one child runner: one deadline over its output, and all it started killed
    answer = run_child([python, "-I", "-S", "-c", with_stdio(SYS_PATH_CODE)], None, deadline_in(timeout),
                       what=f"--python {python}", answer_channel=True)
    if answer.error and not answer.crashed and not answer.timed_out:
        raise DoctorError(f"--python {python}: cannot run it: {answer.error.split(': ', 1)[-1]}",
                          fix="give a working Python interpreter", code="CD009")
    if answer.timed_out:
        raise DoctorError(f"--python {python}: did not answer within {timeout:g} s",
                          fix="give a working Python interpreter", code="CD009")
    returncode = answer.exit_code
    try:
        paths = json_values.loads(answer.answer) if returncode == 0 else None
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a parser goes
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise DoctorError(f"--python {python}: not a Python interpreter that answers (exit status {returncode})",
                          fix="give the interpreter of the environment, e.g. --python .venv/bin/python", code="CD009")
    bad = next((p for p in paths if "\0" in p or len(p) > MAX_PATH_LENGTH), None)
    if bad is not None or len(paths) > MAX_PATHS:
        why = (f"{len(paths)} paths" if bad is None else
               "a path with a NUL byte" if "\0" in bad else f"a path of {len(bad)} characters")
        raise DoctorError(f"--python {python}: answered with {why}, which no real interpreter has",
                          fix="give the interpreter of the environment, e.g. --python .venv/bin/python", code="CD009")
    return [p for p in paths if p]


def absolute_path(path: str, cwd: str | None, option: str = "--search-path") -> str:
    """PATH (given with OPTION) as an absolute path, so that every plan, line and diff built from it names the same
    file whatever the working folder of the program that reads it (`--search-path cudnn/lib`, `--search-path -dash`,
    `--project app`)."""
    from cudnn_doctor.errors import DoctorError

    if not path.strip():
        raise DoctorError(f"{option} '': an empty path", fix=f"name it, e.g. {option} /opt/cudnn/lib "
                          "(is a shell variable unset?)", exit_code=2, code="CD001")
    if os.path.isabs(path):
        return path
    if cwd is None:
        raise DoctorError(f"{option} {path}: a relative path, and the working folder is gone",
                          fix="give it as an absolute path", exit_code=2, code="CD001")
    return os.path.join(cwd, path)


def framework_pythons(frameworks: list[Framework]) -> list[str]:
    """The interpreters that own the frameworks' site-packages (those found, not assumed), each once, in order: the
    Pythons a program of the user's runs the frameworks with."""
    pythons: list[str] = []
    for framework in frameworks:
        site = str(framework.details.get("site_packages") or "")
        python = interpreter_for(site) if site and not framework.details.get("assumed") else None
        if python and python not in pythons:
            pythons.append(python)
    return pythons


def interpreter_for(site_packages: str) -> str | None:
    """The python that owns SITE_PACKAGES: this one, or <prefix>/bin/python3 (<prefix>/python.exe on Windows), the
    prefix three folders up from a lib/pythonX.Y/site-packages."""
    if site_packages in (os.path.realpath(p) for p in sys.path if p):
        from cudnn_doctor.child import own_python

        return own_python()  # not sys.executable, which PYTHONEXECUTABLE rewrites
    parts = site_packages.replace("\\", "/").split("/")
    if "lib" not in parts:
        return None
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(site_packages.rstrip("/\\"))))
    for candidate in (os.path.join(prefix, "bin", "python3"), os.path.join(prefix, "python.exe")):
        if os.path.exists(candidate):
            return candidate
    return None


# read by the loader and by Python as a program starts, before any of its code: a sitecustomize, usercustomize or .pth
# file that sets them in os.environ changes nothing for the program that runs it (its children inherit them)
READ_AT_START = ("LD_", "PYTHON", "GLIBC_TUNABLES")
ENVIRON_LIMIT = 8 << 20


def set_inside_python() -> dict[str, str]:
    """The variables this process's start-up hooks set or changed inside Python (os.environ against
    /proc/self/environ, the kernel's copy of what exec was given), with their values there: a sitecustomize on
    PYTHONPATH that sets XLA_FLAGS or defaults JAX_PLATFORMS does it in every Python program, and `unset` in the shell
    changes nothing. Empty where this is not the command's own process, or /proc cannot say."""
    import cudnn_doctor

    if not cudnn_doctor.COMMAND_PROCESS:
        return {}
    started = _started_values()
    if started is None:
        return {}
    return {name: value for name, value in os.environ.items()
            if not name.startswith(READ_AT_START) and name not in DOCTORS_OWN and started.get(name) != value}


DOCTORS_OWN = ("COLUMNS", "LINES")  # entry.py sets COLUMNS itself for a terminal too narrow to print in


def _started_values() -> dict[str, str] | None:
    try:
        with open("/proc/self/environ", "rb") as handle:
            raw = handle.read(ENVIRON_LIMIT + 1)
    except OSError:
        return None
    if len(raw) > ENVIRON_LIMIT:
        return None
    started = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key:
            started[os.fsdecode(key)] = os.fsdecode(value)
    return started


def started_environment() -> dict[str, str]:
    """This process's environment, with the variables of READ_AT_START as the process was started with them
    (/proc/self/environ, the kernel's copy of what exec was given): the doctor, a Python program, ran the same
    start-up hooks as the user's programs, and what a hook set there (LD_LIBRARY_PATH pointed elsewhere inside
    Python) is not what their loader searched. The other variables stay as the hooks left them: CUDA, the
    frameworks and their libraries read them after Python has started (CUDA_VISIBLE_DEVICES at cuInit)."""
    import cudnn_doctor

    env = dict(os.environ)
    if not cudnn_doctor.COMMAND_PROCESS:  # called in another program's process: its environment is what it passes
        return env
    started = _started_values()
    if started is None:  # not Linux, no /proc, or an environment past the limit: as the hooks left it
        return env
    # GLIBC_TUNABLES: glibc rewrites its own start-up copy in place, keeping only the entries it took (seen with glibc
    # 2.36), so /proc/self/environ holds that; the environment a program here passes on holds them all, as given
    for name in [n for n in env if n.startswith(READ_AT_START) and n not in started and n != "GLIBC_TUNABLES"]:
        del env[name]
    env.update({name: value for name, value in started.items()
                if name.startswith(READ_AT_START) and name != "GLIBC_TUNABLES"})
    return env
