"""Round 19's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-18 took.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 300 python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round19/scenarios45/scenarios.py \
        --out "$OUT/s19" --quiet-cases --budget-s 230

Every scenario bends ONE shell's environment: variables, the working folder the programs start in, small files
written at build time under /tmp/cudnn-doctor-scenarios/s19-* (copies of real libraries of the machine with one
byte of their ELF identification changed or cut short, short shell scripts named like system tools, Python files
that shadow a module, an empty locale folder). Sources are found at build time from the judges' own Python (the
harness's interpreter: its version, its site-packages with torch, jaxlib, the CUDA wheels' `nvidia/*/lib`, the modules
it imports at start), the loader's cache, the CUDA toolkit under /usr/local. A scenario whose source is missing is
left out (on the GPU machine described none is, except the ONNX Runtime preload where ONNX Runtime is not in the
judges' environment). No installed file is written, nothing outside /tmp, no network, no GPU setting is touched, no
scenario runs alone, no memory hog.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails; for a scenario predicted to work, `causes` holds the code a wrong answer would most likely raise. Where no
code fits, or fits only partly, `cause_class` says the class in words. `predicted` is the author's guess before any
run; the judges decide. Each scenario also carries `source` (an attribute the harness ignores).
"""

from __future__ import annotations

import glob
import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import gpu_scenarios
from gpu_scenarios import Scenario, scratch

# ---- public sources -------------------------------------------------------------------------------------------
LD_SO_MAN = "https://man7.org/linux/man-pages/man8/ld.so.8.html (ENVIRONMENT: LD_TRACE_LOADED_OBJECTS, LD_SHOW_AUXV, " \
    "LD_VERBOSE, LD_WARN, LD_ORIGIN_PATH, LD_PRELOAD)"
GLIBC_RTLD = ("https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/rtld.c (process_envvars: a variable of length 20 "
              "named TRACE_LOADED_OBJECTS sets the trace mode whatever its value; SHOW_AUXV dumps the auxiliary "
              "vector; VERBOSE and WARN only matter in trace mode; ORIGIN_PATH is used only where an object's origin "
              "is unknown)")
GLIBC_DL_LOAD = ("https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/dl-load.c (open_verify: VALID_ELF_OSABI takes "
                 "ELFOSABI_SYSV and ELFOSABI_GNU; another OS ABI is 'ELF file OS ABI invalid', nonzero e_ident "
                 "padding 'nonzero padding in e_ident', another byte order 'ELF file data encoding not little-endian': "
                 "each goes to 'lose', which ends the search with an error, unlike a file of another class or "
                 "machine, which is skipped)")
PY_PATH_DOC = ("https://docs.python.org/3/using/cmdline.html#envvar-PYTHONSAFEPATH and "
               "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPATH and "
               "https://github.com/python/cpython/blob/main/Modules/getpath.py (each PYTHONPATH entry goes through "
               "abspath(), so an empty entry becomes the working folder, whatever PYTHONSAFEPATH says)")
PY_SYS_PATH = ("https://docs.python.org/3/library/sys.html#sys.path (python -c: the working folder is put first on "
               "sys.path, before the standard library, unless -P / PYTHONSAFEPATH)")
TORCH_TREE = "https://github.com/pytorch/pytorch/tree/main/torch (types.py, random.py, signal/, multiprocessing/, ...)"
JAX_TREE = "https://github.com/jax-ml/jax/tree/main/jax (typing.py, random.py, numpy/, ...)"
TORCH_ALLOC = ("https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDAAllocatorConfig.h (instance(): which of "
               "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF is read first has changed between releases; the other "
               "is not read at all) and https://github.com/pytorch/pytorch/blob/main/c10/core/AllocatorConfig.cpp "
               "(an unknown key: 'Unrecognized CachingAllocator option') and "
               "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf")
JAX_BRIDGE = ("https://github.com/jax-ml/jax/blob/main/jax/_src/xla_bridge.py (jax-ml/jax@cec06d1: _PLATFORM_NAME "
              "reads JAX_PLATFORM_NAME, lower-cased, as the default backend; _get_backend_uncached raises 'Unknown "
              "backend X. Available backends are [...]' when that platform is not among the initialised backends; "
              "canonicalize_platform maps 'gpu' to 'cuda')")
TORCH_INIT = ("https://github.com/pytorch/pytorch/blob/main/torch/__init__.py (_load_global_deps loads "
              "libtorch_global_deps.so by full path; its DT_NEEDED CUDA libraries come from the nvidia wheels)")
PEP_513 = ("https://peps.python.org/pep-0513/#libpythonx-y-so-1 (extension modules and the libraries they bring leave "
           "the Python C API symbols undefined, to be found in the interpreter that imports them) and " + LD_SO_MAN)
JAX_PLUGIN = ("https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (jax-ml/jax@cec06d1: "
              "_load_nvidia_libraries loads libcudnn.so.9 alone by full path; cuDNN's sub-libraries are then opened by "
              "name; 'cuda_nvrtc isn't directly a dependency of JAX, but CUDNN appears to need it')")
CUDNN_SUBLIBS = ("https://docs.nvidia.com/deeplearning/cudnn/backend/latest/api/overview.html (cuDNN 9's "
                 "sub-libraries: libcudnn.so.9 loads libcudnn_graph, _heuristic, _engines_* and the others by name "
                 "at run time) and "
                 "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/troubleshooting.html")
NVRTC_DOC = ("https://docs.nvidia.com/cuda/nvrtc/index.html (NVRTC loads its builtins library "
             "libnvrtc-builtins.so.<major>.<minor> by name at compile time; it must come from the same release) and "
             "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/developer/graph-api.html (runtime-compiled "
             "engines are built with NVRTC)")
NVML_DOC = ("https://docs.nvidia.com/deploy/nvml-api/index.html (libnvidia-ml.so.1 is the driver's and is opened by "
            "name)")
LDCONFIG_DOC = ("https://man7.org/linux/man-pages/man8/ldconfig.8.html and "
                "https://github.com/python/cpython/blob/main/Lib/ctypes/util.py (_findSoname_ldconfig runs "
                "/sbin/ldconfig by its full path; ld.so reads /etc/ld.so.cache itself and runs no tool)")
LDD_DOC = "https://man7.org/linux/man-pages/man1/ldd.1.html (ldd is a script that runs the loader in trace mode)"
LOCALE_DOC = ("https://man7.org/linux/man-pages/man7/locale.7.html (LOCPATH) and "
              "https://man7.org/linux/man-pages/man3/iconv_open.3.html (GCONV_PATH) and "
              "https://peps.python.org/pep-0538/ and https://peps.python.org/pep-0540/ (a C locale at start makes "
              "Python coerce it or turn on UTF-8 mode)")
BASH_DOC = ("https://www.gnu.org/software/bash/manual/bash.html#index-SHELLOPTS (in the environment at start, each "
            "option listed is enabled) and https://www.gnu.org/software/bash/manual/bash.html#Bash-POSIX-Mode "
            "(POSIXLY_CORRECT in the environment at start puts bash in POSIX mode)")
ORT_DOC = "https://onnxruntime.ai/docs/get-started/with-c.html (libonnxruntime.so: the C API library, one exported " \
    "entry point, OrtGetApiBase)"

EI_DATA, EI_OSABI, EI_PAD = 5, 7, 9
ELFOSABI_GNU, ELFOSABI_FREEBSD = 3, 9
# Modules of the judges' own dependencies a working-folder file could hide (besides the standard library)
THIRD_PARTY = {"numpy", "ml_dtypes", "typing_extensions", "sympy", "mpmath", "filelock", "jinja2", "markupsafe",
               "networkx", "fsspec", "opt_einsum", "scipy", "setuptools", "packaging", "jaxlib", "torch", "jax"}


def _ldconfig() -> dict[str, str]:
    """soname -> path from the loader's cache (x86-64 entries; the first listed wins)."""
    try:
        text = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if match and "x86-64" in match.group(2):
            found.setdefault(match.group(1), match.group(3))
    return found


def _site_packages(machine: dict[str, object]) -> list[str]:
    """The judges' site-packages folders (the harness's own interpreter is the judges')."""
    folders = [str(machine.get("site") or ""), sysconfig.get_paths().get("purelib", ""),
               sysconfig.get_paths().get("platlib", "")]
    folders += glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages"))
    seen: list[str] = []
    for folder in folders:
        if folder and os.path.isdir(folder) and folder not in seen:
            seen.append(folder)
    return seen


def _first(patterns: list[str]) -> str:
    for pattern in patterns:
        for name in sorted(glob.glob(pattern), key=len):
            if os.path.isfile(name):
                return name
    return ""


def _in_sites(sites: list[str], *parts: str) -> str:
    return _first([os.path.join(site, *parts) for site in sites])


def _package_dir(sites: list[str], name: str) -> str:
    for site in sites:
        folder = os.path.join(site, name)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return folder
    return ""


def _patched_copy(source: str, target: Path, offset: int, value: int) -> bool:
    """A copy of SOURCE (followed to its real file) at TARGET with byte OFFSET of its ELF identification set."""
    data = bytearray(Path(os.path.realpath(source)).read_bytes())
    if data[:4] != b"\x7fELF":
        return False
    data[offset] = value
    target.write_bytes(bytes(data))
    return True


def _cut_copy(source: str, target: Path) -> None:
    """The first half of SOURCE, as an interrupted copy leaves it."""
    left = os.path.getsize(os.path.realpath(source)) // 2
    with open(os.path.realpath(source), "rb") as reading, open(target, "wb") as writing:
        while left > 0:
            chunk = reading.read(min(left, 1 << 20))
            if not chunk:
                break
            writing.write(chunk)
            left -= len(chunk)


def _startup_modules() -> set[str]:
    """Modules the judges' Python has imported before it runs a -c command (the working folder cannot hide them)."""
    try:
        out = subprocess.run([sys.executable, "-c", "import sys; print(' '.join(sys.modules))"], cwd="/",
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set(sys.builtin_module_names)
    return {name.split(".")[0] for name in out.split()} | set(sys.builtin_module_names)


def _module_names(folder: str) -> set[str]:
    """Top-level module names a folder provides when it is first on sys.path (modules, packages, extensions)."""
    names: set[str] = set()
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    try:
        entries = os.listdir(folder)
    except OSError:
        return names
    for entry in entries:
        path = os.path.join(folder, entry)
        if entry.endswith((".py", ".pyc")) and os.path.isfile(path):
            names.add(entry.rsplit(".", 1)[0])
        elif os.path.isdir(path) and os.path.isfile(os.path.join(path, "__init__.py")):
            names.add(entry)
        else:
            for suffix in suffixes:
                if entry.endswith(suffix):
                    names.add(entry[: -len(suffix)])
                    break
    return names


def _hidden(folder: str, startup: set[str]) -> list[str]:
    """Standard-library or dependency modules a working FOLDER would hide from a python -c program."""
    stdlib = set(getattr(sys, "stdlib_module_names", ()))
    own = os.path.basename(folder.rstrip("/"))
    return sorted(n for n in _module_names(folder) if (n in stdlib or n in THIRD_PARTY) and n not in startup
                  and n != own)


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    sites = _site_packages(machine)
    cache = _ldconfig()
    found: list[Scenario] = []
    py = sys.version_info[:2]

    def add(name: str, why: str, causes: tuple[str, ...], predicted: str, source: str, cause_class: str = "",
            **kwargs: object) -> None:
        scenario = Scenario(name, why, causes, predicted=predicted, cause_class=cause_class,
                            **kwargs)  # type: ignore[arg-type]
        scenario.source = source  # type: ignore[attr-defined]
        found.append(scenario)

    # 1. The loader's own diagnostic switches, left exported. ld.so reads them in every dynamically linked program,
    #    the shell included: one turns every program into a list of its libraries, whatever its value; the others
    #    only print, or only matter in that mode, or only where an object's origin is unknown.
    add("s19-ld-show-auxv",
        "LD_SHOW_AUXV=1 left exported after a look at the auxiliary vector: the loader prints AT_* lines on the "
        "standard output of every program before it starts (the programs then run as before)",
        (), "works", LD_SO_MAN + "; " + GLIBC_RTLD, env={"LD_SHOW_AUXV": "1"},
        cause_class="the loader's own diagnostic output on every program's standard output (nothing refused)")
    add("s19-ld-verbose-warn",
        "LD_VERBOSE=1 and LD_WARN=1 exported from a debugging session (they change only what the loader's trace mode "
        "prints; no trace mode is on)",
        (), "works", LD_SO_MAN + "; " + GLIBC_RTLD, env={"LD_VERBOSE": "1", "LD_WARN": "1"},
        cause_class="loader switches that only matter in its trace mode")
    add("s19-ld-origin-path",
        "LD_ORIGIN_PATH=/opt/removed/lib exported (the torch, cuDNN and CUDA wheels' RUNPATHs say $ORIGIN; the "
        "variable is used only for an object whose own folder the loader cannot tell, which none of them is)",
        ("CD304", "CD401", "CD409"), "works", LD_SO_MAN + "; " + GLIBC_RTLD, env={"LD_ORIGIN_PATH": "/opt/removed/lib"})
    add("s19-ld-trace-zero",
        "LD_TRACE_LOADED_OBJECTS=0 exported by a user who meant to turn the loader's trace off: ld.so enters trace "
        "mode whatever the value, so every dynamically linked program (bash, python) lists its libraries and exits 0 "
        "without running",
        (), "fails", LD_SO_MAN + "; " + GLIBC_RTLD, env={"LD_TRACE_LOADED_OBJECTS": "0"},
        cause_class="a loader switch that stops every program from running (its value is not read), so no program, "
                    "no doctor either, can run in the shell; the cure is to unset it")

    # 2. System tools a diagnostic might ask, shadowed on PATH by scripts that answer wrongly. No judge runs them:
    #    ld.so reads its cache itself, and Python's ctypes runs /sbin/ldconfig by its full path.
    tools = scratch("s19-path-tools")
    stub = str(machine.get("stub") or "/usr/local/cuda/lib64/stubs/libcuda.so")
    lies = tools / "lies"
    lies.mkdir()
    _script(lies / "ldconfig",
            "#!/bin/sh\n# a wrapper left by a container build: answers from a cache of another image\n"
            "echo '4 libs found in cache `/etc/ld.so.cache'\"'\"\n"
            f"echo '\tlibcuda.so.1 (libc6,x86-64) => {stub}'\n"
            "echo '\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0'\n"
            "echo '\tlibcudnn_graph.so.9 (libc6,x86-64) => /opt/cudnn-8.9/lib/libcudnn_graph.so.9'\n"
            "echo '\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.470.57.02'\n"
            "exit 0\n")
    path = os.environ.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    add("s19-path-ldconfig-lies",
        "an `ldconfig` script first on PATH (a container build's wrapper) that lists the toolkit's stub as "
        "libcuda.so.1, a cuDNN 9.0 and an NVML of driver 470; the loader never runs it",
        ("CD111", "CD112", "CD118", "CD302"), "works", LDCONFIG_DOC, env={"PATH": f"{lies}:{path}"})
    broken = tools / "broken"
    broken.mkdir()
    _script(broken / "ldconfig",
            "#!/bin/sh\necho \"ldconfig: Can't open cache file /etc/ld.so.cache: No such file or directory\" >&2\n"
            "exit 1\n")
    _script(broken / "ldd",
            "#!/bin/sh\n# a site's 'safe ldd' that refuses to run the loader on other users' files\n"
            "echo 'ldd: refusing to trace binaries on this system' >&2\nexit 1\n")
    add("s19-path-ldconfig-ldd-fail",
        "`ldconfig` and `ldd` scripts first on PATH that fail (exit 1, 'Can't open cache file', 'refusing to trace'); "
        "no program the judges start asks them",
        ("CD301", "CD101", "CD009"), "works", LDCONFIG_DOC + "; " + LDD_DOC, env={"PATH": f"{broken}:{path}"})
    notfound = tools / "notfound"
    notfound.mkdir()
    _script(notfound / "ldd",
            "#!/bin/sh\n# an ldd from another distribution's image: prints every CUDA library as missing\n"
            "echo '\tlinux-vdso.so.1 (0x00007ffd5a1f2000)'\n"
            "echo '\tlibcudnn.so.9 => not found'\necho '\tlibcudnn_graph.so.9 => not found'\n"
            "echo '\tlibcudart.so.13 => not found'\necho '\tlibcublas.so.13 => not found'\n"
            "echo '\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2b1c400000)'\nexit 0\n")
    add("s19-path-ldd-not-found",
        "an `ldd` script first on PATH that says 'not found' for cuDNN, cudart and cuBLAS on any file it is given; the "
        "loader itself finds them all",
        ("CD304", "CD401", "CD203"), "works", LDD_DOC, env={"PATH": f"{notfound}:{path}"})

    other_python = _first(["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"])
    if other_python and os.path.abspath(other_python) != os.path.abspath(sys.executable):
        conda = tools / "otherpython"
        conda.mkdir()
        os.symlink(other_python, conda / "python3")
        os.symlink(other_python, conda / "python")
        add("s19-path-python3-other",
            f"another interpreter first on PATH as python3 and python ({other_python}, no torch or JAX: a base "
            "environment's bin folder put first by a shell profile); the programs run the virtual environment's "
            "interpreter by its full path",
            ("CD523", "CD406", "CD401"), "works", PY_SYS_PATH + " and https://docs.python.org/3/library/venv.html "
            "(a virtual environment's interpreter can be run by its path without activation)",
            env={"PATH": f"{conda}:{path}"})

    # 3. PYTHONPATH with an empty entry, beside PYTHONSAFEPATH=1 and a working folder holding a user's file named
    #    like a framework: the empty entry becomes the working folder (abspath('')), so the safe-path switch the user
    #    set to keep the folder off sys.path does not.
    extra = scratch("s19-pythonpath-extra")
    (extra / "project_utils.py").write_text("VALUE = 1\n")
    shadow_torch = scratch("s19-safepath-torch")
    (shadow_torch / "torch.py").write_text("raise ImportError('this is my torch.py, a note about torch, not torch')\n")
    (shadow_torch / "train.py").write_text("import torch\n")
    shadow_jax = scratch("s19-safepath-jax")
    (shadow_jax / "jax.py").write_text("raise ImportError('jax.py of a tutorial, not JAX')\n")
    both = scratch("s19-safepath-both")
    (both / "torch.py").write_text("raise ImportError('my torch.py')\n")
    (both / "jax.py").write_text("raise ImportError('my jax.py')\n")
    harmless = scratch("s19-pythonpath-harmless")
    (harmless / "train_model.py").write_text("print('training')\n")
    (harmless / "my_dataset.py").write_text("ROWS = []\n")
    (harmless / "config.yaml").write_text("lr: 0.001\n")
    safe = py >= (3, 11)  # PYTHONSAFEPATH exists from 3.11; before it the working folder is first anyway
    add("s19-safepath-leading-colon",
        "PYTHONSAFEPATH=1 set to keep the working folder (which holds a user's torch.py) off sys.path, and "
        "PYTHONPATH=':<folder>' from a script that appends to an empty PYTHONPATH: the empty entry is the working "
        "folder, and torch.py hides torch",
        ("CD419",), "fails", PY_PATH_DOC, env={"PYTHONSAFEPATH": "1", "PYTHONPATH": f":{extra}"},
        cwd=str(shadow_torch))
    add("s19-safepath-double-colon",
        "PYTHONSAFEPATH=1 and PYTHONPATH='<a>::<b>' (a doubled separator) in a working folder holding a tutorial's "
        "jax.py: the empty entry between the colons is the working folder",
        ("CD419",), "fails", PY_PATH_DOC, env={"PYTHONSAFEPATH": "1", "PYTHONPATH": f"{extra}::/opt/removed/python"},
        cwd=str(shadow_jax))
    add("s19-safepath-no-empty-entry",
        "PYTHONSAFEPATH=1 and a PYTHONPATH without an empty entry, in a working folder holding torch.py and jax.py: "
        "the folder stays off sys.path" + ("" if safe else " (this Python predates PYTHONSAFEPATH: it is not read)"),
        ("CD419",), "works" if safe else "fails", PY_PATH_DOC + "; " + PY_SYS_PATH,
        env={"PYTHONSAFEPATH": "1", "PYTHONPATH": f"{extra}:/opt/removed/python"}, cwd=str(both))
    add("s19-pythonpath-colon-harmless",
        "PYTHONPATH=':' (set empty-joined by a script) in a working folder of a user's own scripts, none named like "
        "a module the frameworks import",
        ("CD419",), "works", PY_PATH_DOC + "; " + PY_SYS_PATH, env={"PYTHONPATH": ":"}, cwd=str(harmless))

    # 4. The working folder inside an installed package (a user who cd'd into site-packages to look): python -c puts
    #    the folder first on sys.path, so the package's own modules named like standard-library modules (torch's
    #    types.py, random.py; JAX's typing.py, numpy/) hide them. Predicted from the folder's listing, the standard
    #    library's module names and the modules the judges' Python has imported before the command runs.
    startup = _startup_modules()
    torch_dir = _package_dir(sites, "torch")
    jax_dir = _package_dir(sites, "jax")
    for label, folder, source in (("torch", torch_dir, TORCH_TREE), ("jax", jax_dir, JAX_TREE)):
        if not folder:
            continue
        hidden = _hidden(folder, startup)
        add(f"s19-cwd-inside-{label}",
            f"the programs start in the installed {label} package's own folder (cd into site-packages/{label} to read "
            f"its code): its modules named like standard-library or dependency modules come first on sys.path"
            + (f" ({', '.join(hidden[:6])})" if hidden else " (none found here)"),
            ("CD419",), "fails" if hidden else "works", source + "; " + PY_SYS_PATH, cwd=folder,
            env={"PYTHONDONTWRITEBYTECODE": "1"})  # no .pyc written into the installed package
    torch_lib = os.path.join(torch_dir, "lib") if torch_dir else ""
    if torch_lib and os.path.isdir(torch_lib):
        hidden = _hidden(torch_lib, startup)
        add("s19-cwd-inside-torch-lib",
            "the programs start in torch's own lib folder (libraries only: the working folder is not a loader search "
            "folder, and no file there is named like a module a framework imports)"
            + (f"; hidden here: {', '.join(hidden[:6])}" if hidden else ""),
            ("CD419", "CD409", "CD317"), "fails" if hidden else "works", PY_SYS_PATH + "; " + LD_SO_MAN, cwd=torch_lib)
    cudnn_pkg = ""
    for site in sites:
        if os.path.isdir(os.path.join(site, "nvidia", "cudnn", "lib")):
            cudnn_pkg = os.path.join(site, "nvidia", "cudnn")
            break
    if cudnn_pkg:
        hidden = _hidden(cudnn_pkg, startup)
        add("s19-cwd-inside-cudnn-wheel",
            "the programs start in the cuDNN wheel's package folder (nvidia/cudnn: include/ and lib/, nothing named "
            "like a module)" + (f"; hidden here: {', '.join(hidden[:6])}" if hidden else ""),
            ("CD419", "CD302", "CD317"), "fails" if hidden else "works", PY_SYS_PATH, cwd=cudnn_pkg)
    earlier = gpu_scenarios.SCRATCH / "s19-cwd-mode-000"
    if earlier.is_dir():  # an earlier build's folder: let scratch() remove it whoever runs
        earlier.chmod(0o755)
    closed = scratch("s19-cwd-mode-000")
    (closed / "notes.txt").write_text("experiment 12\n")
    closed.chmod(0)
    root = os.geteuid() == 0
    add("s19-cwd-mode-000",
        "the programs start in a folder of mode 000 (a shared project folder closed by `chmod 000`); "
        + ("the run is root, which reads and enters it anyway" if root else "this user cannot enter it"),
        (), "works" if root else "fails", "https://man7.org/linux/man-pages/man7/capabilities.7.html "
        "(CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) and " + PY_SYS_PATH, cwd=str(closed),
        cause_class="a working folder whose permission bits refuse everyone but root")

    # 5. The two names of torch's allocator setting set at once, to different values: each release reads one of them
    #    (the other not at all); a typo in the one read stops the first CUDA allocation.
    good = "max_split_size_mb:256,garbage_collection_threshold:0.6"
    typo = "max_split_size_mb:256,garbage_collection_treshold:0.6"
    add("s19-alloc-new-name-typo",
        "PYTORCH_ALLOC_CONF (the new name) with a misspelt key beside PYTORCH_CUDA_ALLOC_CONF spelt right: a shell "
        "profile sets the old name, a job script the new one",
        ("CD411",), "fails", TORCH_ALLOC, env={"PYTORCH_ALLOC_CONF": typo, "PYTORCH_CUDA_ALLOC_CONF": good})
    add("s19-alloc-old-name-typo",
        "PYTORCH_CUDA_ALLOC_CONF (the old name) with a misspelt key beside PYTORCH_ALLOC_CONF spelt right (a release "
        "that reads the new name first never reads the old one)",
        ("CD411",), "works", TORCH_ALLOC, env={"PYTORCH_ALLOC_CONF": good, "PYTORCH_CUDA_ALLOC_CONF": typo})
    add("s19-alloc-both-names-agree",
        "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF both set to the same valid value",
        ("CD411", "CD414"), "works", TORCH_ALLOC,
        env={"PYTORCH_ALLOC_CONF": "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})

    # 6. JAX's older default-platform variable, JAX_PLATFORM_NAME (still read: the default backend), alone and beside
    #    JAX_PLATFORMS: a platform no backend has, a capitalised alias, one outside JAX_PLATFORMS, one inside it.
    add("s19-jax-platform-name-tpu",
        "JAX_PLATFORM_NAME=tpu left from a TPU VM's profile: JAX's default backend is asked for a platform no "
        "installed plugin provides ('Unknown backend tpu')",
        ("CD411", "CD412"), "fails", JAX_BRIDGE, env={"JAX_PLATFORM_NAME": "tpu"})
    add("s19-jax-platform-name-upper-gpu",
        "JAX_PLATFORM_NAME=GPU (capitals): JAX lower-cases it, and 'gpu' is the CUDA backend's alias",
        ("CD411", "CD412"), "works", JAX_BRIDGE, env={"JAX_PLATFORM_NAME": "GPU"})
    add("s19-jax-platform-name-outside-platforms",
        "JAX_PLATFORMS=cuda with JAX_PLATFORM_NAME=cpu from an older notebook: only the CUDA backend is started, then "
        "the default backend is asked for cpu ('Unknown backend cpu'); JAX does not fall back to the GPU",
        ("CD411", "CD412"), "fails", JAX_BRIDGE, env={"JAX_PLATFORMS": "cuda", "JAX_PLATFORM_NAME": "cpu"})
    add("s19-jax-platform-name-inside-platforms",
        "JAX_PLATFORMS=cuda,cpu with JAX_PLATFORM_NAME=cuda: both name the GPU",
        ("CD411", "CD412"), "works", JAX_BRIDGE, env={"JAX_PLATFORMS": "cuda,cpu", "JAX_PLATFORM_NAME": "cuda"})

    # 7. Real library files whose ELF identification bytes were changed (a patching tool, a bad transfer): the magic,
    #    class and machine are right, so a reader that checks those sees a good x86-64 library; the loader refuses
    #    some values and ends its search there, and accepts others. Each file alone in a folder first on
    #    LD_LIBRARY_PATH; cuDNN's sub-libraries and NVML are opened by name.
    graph = _in_sites(sites, "nvidia", "cudnn", "lib", "libcudnn_graph.so.9")
    heuristic = _in_sites(sites, "nvidia", "cudnn", "lib", "libcudnn_heuristic.so.9")
    if graph:
        where = scratch("s19-graph-osabi-freebsd")
        if _patched_copy(graph, where / "libcudnn_graph.so.9", EI_OSABI, ELFOSABI_FREEBSD):
            add("s19-graph-osabi-freebsd",
                "a copy of the wheel's own libcudnn_graph.so.9 whose ELF OS-ABI byte says FreeBSD, alone in a folder "
                "first on LD_LIBRARY_PATH: 'ELF file OS ABI invalid', and the loader stops searching there",
                ("CD308",), "fails", GLIBC_DL_LOAD + "; " + CUDNN_SUBLIBS + "; " + JAX_PLUGIN,
                env={"LD_LIBRARY_PATH": str(where)})
        where = scratch("s19-graph-osabi-gnu")
        if _patched_copy(graph, where / "libcudnn_graph.so.9", EI_OSABI, ELFOSABI_GNU):
            add("s19-graph-osabi-gnu",
                "the same copy with the OS-ABI byte set to GNU/Linux (3) instead of System V (0): the bytes "
                "differ from the wheel's, and the loader takes it (the same code, first on the path)",
                ("CD308", "CD305"), "works", GLIBC_DL_LOAD + "; " + CUDNN_SUBLIBS,
                env={"LD_LIBRARY_PATH": str(where)})
    if heuristic:
        where = scratch("s19-heuristic-ident-padding")
        if _patched_copy(heuristic, where / "libcudnn_heuristic.so.9", EI_PAD, 1):
            add("s19-heuristic-ident-padding",
                "a copy of the wheel's libcudnn_heuristic.so.9 with a nonzero byte in the ELF identification's "
                "padding, alone in a folder first on LD_LIBRARY_PATH: 'nonzero padding in e_ident', the search ends "
                "there",
                ("CD308",), "fails", GLIBC_DL_LOAD + "; " + CUDNN_SUBLIBS, env={"LD_LIBRARY_PATH": str(where)})
    nvml = cache.get("libnvidia-ml.so.1", "")
    if nvml and os.path.exists(nvml):
        where = scratch("s19-nvml-big-endian")
        if _patched_copy(nvml, where / "libnvidia-ml.so.1", EI_DATA, 2):
            add("s19-nvml-big-endian",
                "a copy of the driver's own libnvidia-ml.so.1 whose ELF data-encoding byte says big-endian, alone in a "
                "folder first on LD_LIBRARY_PATH: 'ELF file data encoding not little-endian', and every program that "
                "opens NVML by name gets no NVML",
                ("CD118", "CD104"), "fails", GLIBC_DL_LOAD + "; " + NVML_DOC,
                env={"LD_LIBRARY_PATH": str(where)},
                cause_class="an NVML file the loader refuses (not a stub, not another release), first on the path")

    # 8. LD_PRELOAD of a framework's own library: a Python extension module (its Python C API symbols are undefined
    #    in every program but the interpreter, bash included), and two libraries that need nothing of Python.
    jaxlib_dir = _package_dir(sites, "jaxlib")
    jax_ext = ""
    if jaxlib_dir:
        jax_ext = _first([os.path.join(jaxlib_dir, "_jax" + s) for s in importlib.machinery.EXTENSION_SUFFIXES]
                         + [os.path.join(jaxlib_dir, "_jax.*.so"), os.path.join(jaxlib_dir, "xla_extension*.so")])
    if jax_ext:
        add("s19-preload-jaxlib-extension",
            f"LD_PRELOAD of jaxlib's own extension module ({os.path.basename(jax_ext)}), meant for PYTHONPATH: "
            "preloaded into bash and every program, it needs the Python C API",
            ("CD409", "CD421"), "fails", PEP_513 + "; " + JAX_PLUGIN, env={"LD_PRELOAD": jax_ext},
            cause_class="a preload that needs the Python runtime: every program, the shell included, stops at start "
                        "with an undefined symbol")
    global_deps = os.path.join(torch_dir, "lib", "libtorch_global_deps.so") if torch_dir else ""
    if global_deps and os.path.isfile(global_deps):
        add("s19-preload-torch-global-deps",
            "LD_PRELOAD of torch's libtorch_global_deps.so (the library torch itself loads first, with the CUDA "
            "wheels' libraries it needs): every program gets the same files torch and JAX's plugin load anyway",
            ("CD317", "CD409", "CD305"), "works", TORCH_INIT + "; " + JAX_PLUGIN, env={"LD_PRELOAD": global_deps})
    ort = ""
    for site in sites:
        ort = _first([os.path.join(site, "onnxruntime", "capi", "libonnxruntime.so*")])
        if ort:
            break
    if ort:
        add("s19-preload-onnxruntime",
            "LD_PRELOAD of ONNX Runtime's own C library from the same environment (a C++ service's launcher left it "
            "exported): a second framework's runtime in every program",
            ("CD409", "CD317"), "works", ORT_DOC + "; " + LD_SO_MAN, env={"LD_PRELOAD": ort})

    # 9. glibc's locale and character-set data paths pointing where nothing is: setlocale fails and the C locale
    #    stays (Python coerces it or turns on UTF-8 mode); iconv modules are not what Python's codecs use.
    locales = scratch("s19-locpath-empty")
    add("s19-locpath-empty",
        "LOCPATH names an empty folder (a relocated application's locale folder) with LC_ALL and LANG en_US.UTF-8: no "
        "locale can be loaded, every program stays in the C locale",
        (), "works", LOCALE_DOC, env={"LOCPATH": str(locales), "LC_ALL": "en_US.UTF-8", "LANG": "en_US.UTF-8"},
        cause_class="locale data missing for the locale asked (no GPU or library effect)")
    gconv = scratch("s19-gconv-garbage")
    (gconv / "gconv-modules").write_text("module  INTERNAL  NOWHERE//  /nonexistent/libNOWHERE  1\nalias garbage\x01\n")
    add("s19-gconv-path-garbage",
        "GCONV_PATH names a folder whose gconv-modules file is garbage (left by an embedded toolchain's environment "
        "script)",
        (), "works", LOCALE_DOC, env={"GCONV_PATH": str(gconv)},
        cause_class="character-set conversion modules nobody here loads")

    # 10. Shell options exported in the environment: bash enables them at start in every non-interactive shell (the
    #     shells the programs and the doctor's children start in); xtrace writes each command to standard error.
    add("s19-shellopts-xtrace",
        "SHELLOPTS with xtrace and nounset exported (a CI script ran `set -xu; export SHELLOPTS`): every bash started "
        "from here traces its commands on standard error",
        (), "works", BASH_DOC, env={"SHELLOPTS": "braceexpand:hashall:interactive-comments:nounset:xtrace"},
        cause_class="shell tracing on every shell's standard error (nothing refused)")
    add("s19-posixly-correct",
        "POSIXLY_CORRECT=1 exported (for a GNU tool's option order): bash starts in POSIX mode, GNU tools change how "
        "they parse options",
        (), "works", BASH_DOC, env={"POSIXLY_CORRECT": "1"},
        cause_class="POSIX mode for bash and GNU tools (nothing refused)")

    # 11. NVRTC's builtins sub-library (opened by name by NVRTC when it compiles, e.g. for cuDNN's runtime-compiled
    #     engines), first on the path: the toolkit's file under the wheel's name, and the wheel's own file cut short.
    builtins = ""
    for site in sites:
        for name in sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc-builtins.so.*"))):
            if re.fullmatch(r"libnvrtc-builtins\.so\.\d+\.\d+", os.path.basename(name)):
                builtins = name
                break
        if builtins:
            break
    toolkit_builtins = _first(["/usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc-builtins.so.*.*.*",
                               "/usr/local/cuda*/lib64/libnvrtc-builtins.so.*.*.*",
                               "/usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc-builtins.so.*",
                               "/usr/local/cuda*/lib64/libnvrtc-builtins.so.*"])
    if builtins and toolkit_builtins:
        soname = os.path.basename(builtins)
        where = scratch("s19-nvrtc-builtins-toolkit")
        shutil.copy2(os.path.realpath(toolkit_builtins), where / soname)
        same = Path(os.path.realpath(toolkit_builtins)).read_bytes() == Path(os.path.realpath(builtins)).read_bytes()
        add("s19-nvrtc-builtins-toolkit",
            f"the toolkit's {os.path.basename(os.path.realpath(toolkit_builtins))} copied as {soname} (the wheel's "
            "name) into a folder first on LD_LIBRARY_PATH" + (" (the same bytes as the wheel's)" if same else
                                                             " (another build than the wheel's NVRTC)")
            + "; a failed runtime compilation is one candidate engine less, the others run",
            ("CD203", "CD409", "CD305"), "works", NVRTC_DOC + "; " + JAX_PLUGIN,
            env={"LD_LIBRARY_PATH": str(where)})
    if builtins:
        soname = os.path.basename(builtins)
        where = scratch("s19-nvrtc-builtins-cut")
        _cut_copy(builtins, where / soname)
        add("s19-nvrtc-builtins-cut",
            f"the wheel's {soname} cut to half its size (an interrupted copy) in a folder first on LD_LIBRARY_PATH: "
            "NVRTC opens it by name the first time cuDNN compiles an engine at run time, and the loader faults on "
            "the missing half",
            ("CD203", "CD409", "CD308"), "fails", NVRTC_DOC + "; " + JAX_PLUGIN + "; " + GLIBC_DL_LOAD,
            env={"LD_LIBRARY_PATH": str(where)},
            cause_class="a truncated NVRTC sub-library first on the path, loaded only when a kernel is compiled at "
                        "run time")
    return found

