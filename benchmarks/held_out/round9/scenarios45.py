"""Round 9's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-8 have.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 590 python3 benchmarks/gpu_scenarios.py --scenarios benchmarks/held_out/round9/scenarios45.py \
        --out "$OUT/s9" --quiet-cases --budget-s 540

Every scenario bends ONE shell's environment: variables, soft process settings (nice), files it writes under
/tmp/cudnn-doctor-scenarios/s9-* (copies, links, small Python files, package metadata), the working folder. Sources are
found on the machine at build time (the judges' Python and its site-packages: torch, jax, jaxlib, typing_extensions,
numpy; the loader's cache: the system cuDNN, libasan; the CUDA toolkit's stubs); a scenario whose source is missing is
left out. No installed file is written, nothing outside /tmp, no network, no GPU setting is touched.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails. Where no code fits, `causes` is empty and `cause_class` says the class in words; where a code fits only partly,
both are given. `predicted` is the author's guess before any run; the judges decide. Each scenario also carries
`source` (an attribute the harness ignores): where the class comes from real users or the documentation.
"""

from __future__ import annotations

import glob
import json
import os
import py_compile
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from gpu_scenarios import Scenario, scratch

GONE = "/proc/cudnn-doctor-s9-nowhere"  # a folder nobody (root included) can create files in


# ------------------------------------------------------------------------------------------------ helpers
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


def _dist_info(root: Path, name: str, version: str, entry_points: str | bytes | None = None,
               extra_metadata: str = "") -> Path:
    """A minimal installed-distribution record (PEP 376 / core metadata) under ROOT, as pip leaves it."""
    folder = root / f"{name}-{version}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{extra_metadata}")
    (folder / "INSTALLER").write_text("pip\n")
    if entry_points is not None:
        target = folder / "entry_points.txt"
        if isinstance(entry_points, bytes):
            target.write_bytes(entry_points)
        else:
            target.write_text(entry_points)
    return folder


def _compile(source_text: str, target: Path, dfile: Path, unchecked: bool = False) -> None:
    """Bytecode of SOURCE_TEXT for the judges' own Python (this process is theirs), written at TARGET; DFILE is the
    source name the bytecode records."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / (target.name + ".src.py")
    tmp.write_text(source_text)
    mode = py_compile.PycInvalidationMode.UNCHECKED_HASH if unchecked else py_compile.PycInvalidationMode.TIMESTAMP
    try:
        py_compile.compile(str(tmp), cfile=str(target), dfile=str(dfile), doraise=True,
                           invalidation_mode=mode)
    finally:
        tmp.unlink()


def _numpy_features() -> tuple[list[str], list[str]]:
    """(baseline, dispatched) CPU features of the judges' numpy, as numpy names them; ([], []) if none."""
    code = ("import json\ntry:\n    import numpy._core._multiarray_umath as m\nexcept ImportError:\n"
            "    import numpy.core._multiarray_umath as m\n"
            "print(json.dumps([list(m.__cpu_baseline__), list(m.__cpu_dispatch__)]))")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
        baseline, dispatched = json.loads(out.strip().splitlines()[-1])
        return [str(x) for x in baseline], [str(x) for x in dispatched]
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return [], []


STALE_TYPING_EXTENSIONS = '''"""Backported type hints (typing_extensions 3.7.4.3, vendored by an old tool)."""
import typing

__version__ = "3.7.4.3"
Literal = typing.Literal
Protocol = typing.Protocol
final = typing.final
runtime_checkable = typing.runtime_checkable
TypedDict = typing.TypedDict
'''

STALE_ML_DTYPES = '''"""ml_dtypes 0.1.0: bfloat16 only (a stale copy from an old TensorFlow-era environment)."""
__version__ = "0.1.0"
__all__ = ["__version__"]
'''


# ------------------------------------------------------------------------------------------------ the set
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    site_dir = str(machine.get("site") or "")
    pip_cudnn = str(machine.get("pip_cudnn") or "")
    cache = _ldconfig()
    pip_cudnn_libs = sorted(glob.glob(os.path.join(pip_cudnn, "libcudnn*.so.9"))) if pip_cudnn else []
    system_main = cache.get("libcudnn.so.9") or str(machine.get("system_cudnn") or "")
    system_dir = os.path.dirname(system_main) if system_main else ""
    system_libs = {os.path.basename(p): os.path.join(system_dir, os.path.basename(p)) for p in pip_cudnn_libs}
    system_libs = {n: p for n, p in system_libs.items() if system_dir and os.path.exists(p)}
    torch_dir = os.path.join(site_dir, "torch") if site_dir else ""
    jax_dir = os.path.join(site_dir, "jax") if site_dir else ""
    jaxlib_dir = os.path.join(site_dir, "jaxlib") if site_dir else ""
    has_torch = bool(torch_dir) and os.path.isfile(os.path.join(torch_dir, "__init__.py"))
    has_jax = bool(jax_dir) and os.path.isfile(os.path.join(jax_dir, "version.py"))
    has_jaxlib = bool(jaxlib_dir) and os.path.isfile(os.path.join(jaxlib_dir, "__init__.py"))
    stub = str(machine.get("stub") or "")
    stub_nvml = os.path.join(os.path.dirname(stub), "libnvidia-ml.so") if stub else ""
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    # ======================================================== torch's backend autoload (entry points, torch >= 2.5)
    plugin = scratch("s9-torch-backend-plugin")
    _dist_info(plugin, "torch_acme", "0.3.1",
               "[torch.backends]\ntorch_acme = torch_acme:_autoload\n")
    (plugin / "torch_acme").mkdir()
    (plugin / "torch_acme" / "__init__.py").write_text(
        "# an out-of-tree accelerator backend built for another machine's runtime\n"
        "def _autoload():\n"
        "    raise ImportError('libacmert.so.2: cannot open shared object file: No such file or directory')\n")
    add(Scenario("s9-torch-backend-plugin-raises", "PYTHONPATH holds another project's packages, among them an "
                 "out-of-tree torch backend whose 'torch.backends' entry point torch autoloads at import; its hook "
                 "raises (its runtime library is missing here)", ("CD415",), env={"PYTHONPATH": str(plugin)},
                 predicted="fails",
                 cause_class="a third-party backend plugin torch loads at import (entry point group torch.backends) "
                             "fails; TORCH_DEVICE_BACKEND_AUTOLOAD=0 turns the autoload off"),
        "https://docs.pytorch.org/tutorials/unstable/python_extension_autoload.html (Failed to load the backend "
        "extension; TORCH_DEVICE_BACKEND_AUTOLOAD=0)")

    add(Scenario("s9-torch-backend-autoload-off", "the same broken backend plugin on PYTHONPATH, with "
                 "TORCH_DEVICE_BACKEND_AUTOLOAD=0 set as the error message advises", ("CD415",),
                 env={"PYTHONPATH": str(plugin), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, predicted="works",
                 cause_class="a broken torch backend plugin present but its autoload turned off"),
        "https://github.com/pytorch/pytorch/issues/122468 (RFC: autoload device extension, the switch)")

    gone = scratch("s9-torch-backend-module-gone")
    _dist_info(gone, "torch_npu", "2.8.0", "[torch.backends]\ntorch_npu = torch_npu:_autoload\n")
    add(Scenario("s9-torch-backend-module-gone", "PYTHONPATH holds the metadata (dist-info) of an uninstalled torch "
                 "backend whose package folder is gone (an interrupted uninstall): its 'torch.backends' entry point "
                 "names a module that does not exist", ("CD415",), env={"PYTHONPATH": str(gone)}, predicted="fails",
                 cause_class="a torch backend entry point naming a module that is gone"),
        "https://docs.pytorch.org/tutorials/unstable/python_extension_autoload.html")

    # ======================================================== package metadata Python cannot read (entry points)
    bad = scratch("s9-entry-points-malformed")
    _dist_info(bad, "labtools", "1.4.0", "[console_scripts]\nlabtools-sync\nlabtools = labtools.cli:main\n")
    (bad / "labtools").mkdir()
    (bad / "labtools" / "__init__.py").write_text("")
    add(Scenario("s9-entry-points-malformed", "PYTHONPATH holds a hand-edited package whose entry_points.txt has a "
                 "line without '=' (importlib.metadata raises when any program lists entry points: torch at import, "
                 "JAX when it discovers its plugins)", (), env={"PYTHONPATH": str(bad)}, predicted="fails",
                 cause_class="a distribution's entry-point metadata that Python's importlib.metadata cannot parse"),
        "https://packaging.python.org/en/latest/specifications/entry-points/ (file format: name = value)")

    latin = scratch("s9-entry-points-latin1")
    _dist_info(latin, "outils_labo", "0.9", b"[console_scripts]\nr\xe9sum\xe9 = outils_labo.cli:main\n")
    add(Scenario("s9-entry-points-latin1", "PYTHONPATH holds a package whose entry_points.txt was written in Latin-1 "
                 "(a console script named 'r\\xe9sum\\xe9'): importlib.metadata reads it as UTF-8 and raises", (),
                 env={"PYTHONPATH": str(latin)}, predicted="fails",
                 cause_class="a distribution's entry-point metadata that is not UTF-8"),
        "https://docs.python.org/3/library/importlib.metadata.html#entry-points")

    # ======================================================== a second, partial or newer copy of a framework package
    if has_torch:
        d = scratch("s9-half-removed-torch")
        (d / "torch").mkdir()
        for name in ("__init__.py", "version.py"):
            if os.path.exists(os.path.join(torch_dir, name)):
                shutil.copy2(os.path.join(torch_dir, name), d / "torch" / name)
        add(Scenario("s9-half-removed-torch", "PYTHONPATH names an old project's site-packages where an interrupted "
                     "'pip uninstall torch' left torch/__init__.py and version.py only", ("CD415",),
                     env={"PYTHONPATH": str(d)}, predicted="fails",
                     cause_class="a partial second copy of a framework package shadows the installed one"),
            "https://github.com/zai-org/GLM-4/issues/419 (ModuleNotFoundError: No module named 'torch._utils')")

        d = scratch("s9-torch-leftover-namespace")
        (d / "torch" / "lib").mkdir(parents=True)
        for name in ("libtorch_cuda.so", "libc10_cuda.so", "libtorch_cpu.so"):
            (d / "torch" / "lib" / name).write_bytes(b"")
        add(Scenario("s9-torch-leftover-namespace", "PYTHONPATH names a folder where a removed torch left torch/lib/ "
                     "with zero-length libraries and no __init__.py (a namespace portion loses to the installed "
                     "regular package)", ("CD415", "CD409"), env={"PYTHONPATH": str(d)}, predicted="works",
                     cause_class="a leftover framework folder without __init__.py on the Python path"),
            "https://peps.python.org/pep-0420/ (namespace packages: a regular package found anywhere wins)")

    if has_jaxlib:
        d = scratch("s9-half-removed-jaxlib")
        (d / "jaxlib").mkdir()
        for name in ("__init__.py", "version.py"):
            if os.path.exists(os.path.join(jaxlib_dir, name)):
                shutil.copy2(os.path.join(jaxlib_dir, name), d / "jaxlib" / name)
        add(Scenario("s9-half-removed-jaxlib", "PYTHONPATH names a folder where an interrupted uninstall left "
                     "jaxlib/__init__.py and version.py only (no compiled extension)", ("CD415",),
                     env={"PYTHONPATH": str(d)}, predicted="fails",
                     cause_class="a partial second copy of a framework package shadows the installed one"),
            "https://docs.jax.dev/en/latest/installation.html (jax and jaxlib must both be installed and match)")

    if has_jax:
        d = scratch("s9-jax-dev-checkout")
        shutil.copytree(jax_dir, d / "jax", ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
        version_py = d / "jax" / "version.py"
        text = version_py.read_text()
        current = re.search(r'^_version\s*(?::\s*str)?\s*=\s*"(\d+)\.(\d+)\.(\d+)', text, re.M)
        newer = f"{current.group(1)}.{current.group(2)}.{int(current.group(3)) + 1}" if current else "99.0.0"
        text, count = re.subn(r'^(_minimum_jaxlib_version\s*(?::\s*str)?\s*=\s*)"[^"]*"', rf'\g<1>"{newer}"', text,
                              flags=re.M)
        text = re.sub(r'^(_version\s*(?::\s*str)?\s*=\s*)"[^"]*"', rf'\g<1>"{newer}"', text, flags=re.M)
        version_py.write_text(text)
        if count:
            add(Scenario("s9-jax-dev-checkout", f"PYTHONPATH names a JAX source checkout one release ahead ({newer}, "
                         f"needing jaxlib >= {newer}) while the installed jaxlib is the release before",
                         ("CD410", "CD415"), env={"PYTHONPATH": str(d)}, predicted="fails",
                         cause_class="a framework's Python package from a source checkout newer than its installed "
                                     "compiled part"),
                "https://docs.jax.dev/en/latest/jep/9419-jax-versioning.html (jaxlib is version X, but this version "
                "of jax requires version >= Y)")

    # ======================================================== bytecode that shadows a dependency
    d = scratch("s9-sourceless-pyc-shadow")
    _compile(STALE_ML_DTYPES, d / "ml_dtypes.pyc", d / "ml_dtypes.py")
    add(Scenario("s9-sourceless-pyc-shadow", "PYTHONPATH holds a folder where only a compiled ml_dtypes.pyc of a "
                 "stale copy is left (its .py removed): Python imports sourceless bytecode found beside the sources",
                 ("CD415",), env={"PYTHONPATH": str(d)}, predicted="fails",
                 cause_class="a stale dependency module shadows the installed one (sourceless bytecode)"),
        "https://peps.python.org/pep-3147/ (sourceless .pyc files are still imported from the source folder)")

    typing_ext = os.path.join(site_dir, "typing_extensions.py") if site_dir else ""
    if typing_ext and os.path.isfile(typing_ext):
        d = scratch("s9-unchecked-hash-pyc")
        shutil.copy2(typing_ext, d / "typing_extensions.py")
        tag = sys.implementation.cache_tag
        _compile(STALE_TYPING_EXTENSIONS, d / "__pycache__" / f"typing_extensions.{tag}.pyc",
                 d / "typing_extensions.py", unchecked=True)
        add(Scenario("s9-unchecked-hash-pyc", "PYTHONPATH holds a helper folder with a current typing_extensions.py "
                     "whose __pycache__ keeps an unchecked-hash .pyc of an old version (built with --invalidation-mode "
                     "unchecked-hash): Python never compares it with the source", ("CD415",),
                     env={"PYTHONPATH": str(d)}, predicted="fails",
                     cause_class="a stale dependency module shadows the installed one (bytecode Python never "
                                 "revalidates)"),
            "https://peps.python.org/pep-0552/ (unchecked hash-based .pyc files)")

    d = scratch("s9-zip-bundle-shadow")
    with zipfile.ZipFile(d / "vendored-deps.zip", "w") as bundle:
        bundle.writestr("typing_extensions.py", STALE_TYPING_EXTENSIONS)
        bundle.writestr("six.py", "# six 1.10.0\n__version__ = '1.10.0'\n")
    add(Scenario("s9-zip-bundle-shadow", "PYTHONPATH names a zip of vendored dependencies (as zipapps and cloud "
                 "function layers ship them) holding an old typing_extensions.py: Python imports from zip files on "
                 "the path before site-packages", ("CD415",), env={"PYTHONPATH": str(d / "vendored-deps.zip")},
                 predicted="fails",
                 cause_class="a stale dependency module shadows the installed one (a zip on the Python path)"),
        "https://docs.python.org/3/library/zipimport.html (zip archives on sys.path)")

    # ======================================================== metadata or files on the path that nothing loads
    d = scratch("s9-stale-dist-metadata")
    _dist_info(d, "torch", "2.1.0+cpu", None, "Requires-Dist: filelock\n")
    _dist_info(d, "nvidia_cudnn_cu12", "8.9.2.26", None, "Summary: cuDNN runtime libraries\n")
    _dist_info(d, "jaxlib", "0.4.13", None)
    add(Scenario("s9-stale-dist-metadata", "PYTHONPATH holds an old environment's metadata only (dist-info folders "
                 "of torch 2.1.0+cpu, nvidia-cudnn-cu12 8.9.2.26 and jaxlib 0.4.13, their packages gone)",
                 ("CD406", "CD408", "CD410"), env={"PYTHONPATH": str(d)}, predicted="works",
                 cause_class="installed-package metadata that describes packages no program imports"),
        "https://packaging.python.org/en/latest/specifications/recording-installed-packages/")

    d = scratch("s9-pth-outside-site")
    (d / "zz-gpu-pin.pth").write_text("import os; os.environ['CUDA_VISIBLE_DEVICES'] = '-1'\n")
    (d / "helpers.py").write_text("# the project's helpers\n")
    add(Scenario("s9-pth-outside-site", "PYTHONPATH holds a folder with a .pth file that would hide every GPU "
                 "(import os; CUDA_VISIBLE_DEVICES=-1): Python runs .pth lines only in site folders, never on "
                 "PYTHONPATH", ("CD113",), env={"PYTHONPATH": str(d)}, predicted="works",
                 cause_class="a start-up file in a folder Python does not treat as a site folder"),
        "https://docs.python.org/3/library/site.html (.pth files are processed in site-packages folders only)")

    home = scratch("s9-user-site-home")
    user_site = sysconfig.get_path("purelib", f"{os.name}_user", vars={"userbase": str(home / ".local")})
    Path(user_site).mkdir(parents=True, exist_ok=True)
    (Path(user_site) / "typing_extensions.py").write_text(STALE_TYPING_EXTENSIONS)
    user_site_read = bool(site.ENABLE_USER_SITE)
    add(Scenario("s9-user-site-stale-dependency", "HOME names a shared home whose ~/.local user site holds an old "
                 "typing_extensions.py from a 'pip install --user' long ago" + (
                     "" if user_site_read else " (the judges' Python is a virtual environment: it never reads the "
                                               "user site)"), ("CD415",), env={"HOME": str(home)},
                 predicted="fails" if user_site_read else "works",
                 cause_class="a stale dependency in the user site (PYTHONNOUSERSITE=1 keeps it out)"),
        "https://peps.python.org/pep-0370/ (per-user site-packages; disabled inside virtual environments)")

    add(Scenario("s9-pycache-prefix-unusable", "PYTHONPYCACHEPREFIX names a folder that cannot exist: Python neither "
                 "reads nor writes bytecode there and compiles every module from source at each start (slow)",
                 ("CD417",), env={"PYTHONPYCACHEPREFIX": f"{GONE}/pycache"}, predicted="works",
                 cause_class="Python's bytecode cache sent where nothing can be written"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONPYCACHEPREFIX")

    add(Scenario("s9-python-dev-mode", "Python's development mode with the debug allocator: PYTHONDEVMODE=1, "
                 "PYTHONMALLOC=debug, PYTHONFAULTHANDLER=1 (every warning shown, slower allocations)", (),
                 env={"PYTHONDEVMODE": "1", "PYTHONMALLOC": "debug", "PYTHONFAULTHANDLER": "1"}, predicted="works",
                 cause_class="Python's development mode and debug allocator"),
        "https://docs.python.org/3/library/devmode.html")

    # ======================================================== numpy / CPU kernel selection
    baseline, dispatched = _numpy_features()
    if baseline:
        add(Scenario("s9-numpy-disable-baseline", f"NPY_DISABLE_CPU_FEATURES={baseline[-1]} (copied from a guide "
                     "for an older CPU): numpy refuses to disable a feature of its baseline and fails at import",
                     ("CD411", "CD415"), env={"NPY_DISABLE_CPU_FEATURES": baseline[-1]}, predicted="fails",
                     cause_class="numpy's CPU-dispatch variable naming a baseline feature (numpy, which JAX imports, "
                                 "refuses it)"),
            "https://numpy.org/doc/stable/reference/simd/build-options.html (NPY_DISABLE_CPU_FEATURES)")
    if dispatched:
        add(Scenario("s9-numpy-disable-dispatched", f"NPY_DISABLE_CPU_FEATURES='{' '.join(dispatched)}' (every "
                     "dispatched kernel off: numpy runs its baseline code)", ("CD411",),
                     env={"NPY_DISABLE_CPU_FEATURES": " ".join(dispatched)}, predicted="works",
                     cause_class="numpy's CPU-dispatch variable with a value numpy takes"),
            "https://numpy.org/doc/stable/reference/simd/build-options.html (runtime dispatch)")

    add(Scenario("s9-cpu-kernel-selection", "CPU kernel selection forced for torch and OpenBLAS: "
                 "ATEN_CPU_CAPABILITY=default (torch's scalar kernels), OPENBLAS_CORETYPE=Haswell, "
                 "OPENBLAS_VERBOSE=2", ("CD411",),
                 env={"ATEN_CPU_CAPABILITY": "default", "OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_VERBOSE": "2"},
                 predicted="works", cause_class="CPU kernel-selection variables of torch and OpenBLAS"),
        "https://github.com/OpenMathLib/OpenBLAS/wiki/Faq (OPENBLAS_CORETYPE in containers)")

    # ======================================================== a sanitizer runtime preloaded
    asan = next((cache[n] for n in ("libasan.so.8", "libasan.so.6", "libasan.so.5") if n in cache), "")
    if asan:
        add(Scenario("s9-asan-preloaded", f"LD_PRELOAD={asan} with ASAN_OPTIONS=detect_leaks=0 (to test a C "
                     "extension under AddressSanitizer): ASan's protected shadow gap covers the addresses the CUDA "
                     "driver reserves", ("CD110",),
                     env={"LD_PRELOAD": asan, "ASAN_OPTIONS": "detect_leaks=0"}, predicted="fails",
                     cause_class="a sanitizer runtime in every program (ASan's shadow gap against CUDA's address "
                                 "reservation; ASAN_OPTIONS=protect_shadow_gap=0 is the known workaround)"),
            "https://github.com/google/sanitizers/issues/629 (asan: problem calling NVIDIA CUDA libraries)")
        add(Scenario("s9-asan-shadow-gap-off", f"LD_PRELOAD={asan} with "
                     "ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0 (the known workaround for CUDA)", ("CD110",),
                     env={"LD_PRELOAD": asan, "ASAN_OPTIONS": "protect_shadow_gap=0:detect_leaks=0"},
                     predicted="works", cause_class="a sanitizer runtime in every program, set up for CUDA"),
            "https://github.com/facebook/openzl/pull/903 (ASAN_OPTIONS=protect_shadow_gap=0 for CUDA tests)")

    # ======================================================== a library that answers by its SONAME, not its file name
    graph = system_libs.get("libcudnn_graph.so.9")
    if graph:
        d = scratch("s9-preload-renamed-graph")
        shutil.copy2(os.path.realpath(graph), d / "libcudnn_graph-9.14-pinned.so")
        add(Scenario("s9-preload-renamed-graph", "LD_PRELOAD of a renamed copy of the system's libcudnn_graph "
                     "(9.14), made to 'pin' cuDNN: its SONAME is still libcudnn_graph.so.9, so the loader hands it "
                     "to every later request for that name", ("CD317", "CD305"),
                     env={"LD_PRELOAD": str(d / "libcudnn_graph-9.14-pinned.so")}, predicted="fails",
                     cause_class="a preloaded library that answers by its SONAME under another file name"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (already-loaded objects are matched by SONAME)")
    if stub_nvml and os.path.exists(stub_nvml):
        d = scratch("s9-preload-renamed-nvml-stub")
        shutil.copy2(os.path.realpath(stub_nvml), d / "libgpumon_shim.so")
        add(Scenario("s9-preload-renamed-nvml-stub", "LD_PRELOAD of a monitoring agent's 'shim' that is the "
                     "toolkit's NVML link stub renamed (libgpumon_shim.so, SONAME libnvidia-ml.so.1): every later "
                     "request for libnvidia-ml.so.1 gets the stub", ("CD118", "CD104"),
                     env={"LD_PRELOAD": str(d / "libgpumon_shim.so")}, predicted="fails",
                     cause_class="a preloaded library that answers by its SONAME under another file name"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_PRELOAD; SONAME matching)")
    if stub and os.path.exists(stub):
        d = scratch("s9-preload-renamed-cuda-stub")
        shutil.copy2(os.path.realpath(stub), d / "libvgpu_hook.so")
        add(Scenario("s9-preload-renamed-cuda-stub", "LD_PRELOAD of a GPU-sharing hook library (libvgpu_hook.so) that "
                     "a broken build left as the toolkit's libcuda link stub (SONAME libcuda.so.1): every later "
                     "request for libcuda.so.1 gets the stub", ("CD111",),
                     env={"LD_PRELOAD": str(d / "libvgpu_hook.so")}, predicted="fails",
                     cause_class="a preloaded library that answers by its SONAME under another file name"),
            "https://github.com/Project-HAMi/HAMi-core (a CUDA hook library loaded through LD_PRELOAD)")

    # ======================================================== torch's own variables no set touched
    add(Scenario("s9-torch-distributed-debug-1", "TORCH_DISTRIBUTED_DEBUG=1 (written like other debug switches; "
                 "torch takes OFF, INFO or DETAIL)", ("CD411",), env={"TORCH_DISTRIBUTED_DEBUG": "1"},
                 predicted="fails"),
        "https://docs.pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications")

    add(Scenario("s9-torch-debug-modes", "torch debugging left on: TORCH_CUDA_SANITIZER=1 (the CUDA stream "
                 "sanitizer), TORCH_SHOW_CPP_STACKTRACES=1, TORCH_CPP_LOG_LEVEL=INFO", ("CD411", "CD412"),
                 env={"TORCH_CUDA_SANITIZER": "1", "TORCH_SHOW_CPP_STACKTRACES": "1", "TORCH_CPP_LOG_LEVEL": "INFO"},
                 predicted="works", cause_class="torch's debugging modes"),
        "https://docs.pytorch.org/docs/stable/cuda._sanitizer.html")

    add(Scenario("s9-tunableop-unwritable", "TunableOp on with its results file in a folder that cannot exist: "
                 "PYTORCH_TUNABLEOP_ENABLED=1, PYTORCH_TUNABLEOP_TUNING=1, PYTORCH_TUNABLEOP_FILENAME=<nowhere>",
                 ("CD411", "CD417"),
                 env={"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "1",
                      "PYTORCH_TUNABLEOP_FILENAME": f"{GONE}/tunableop_results%d.csv"}, predicted="works",
                 cause_class="torch's GEMM tuning with an unwritable results file (the judges run no GEMM)"),
        "https://docs.pytorch.org/docs/stable/cuda.tunable.html")

    # ======================================================== JAX's own variables no set touched
    add(Scenario("s9-jax-debug-logging", "JAX and XLA logging at their most talkative: JAX_LOGGING_LEVEL=DEBUG, "
                 "TF_CPP_MIN_LOG_LEVEL=0, JAX_LOG_COMPILES=1", ("CD411",),
                 env={"JAX_LOGGING_LEVEL": "DEBUG", "TF_CPP_MIN_LOG_LEVEL": "0", "JAX_LOG_COMPILES": "1"},
                 predicted="works", cause_class="JAX's and XLA's logging on stderr"),
        "https://docs.jax.dev/en/latest/config_options.html (jax_logging_level)")

    add(Scenario("s9-jax-strict-promotion", "JAX's strict numerics: JAX_NUMPY_DTYPE_PROMOTION=strict, "
                 "JAX_NUMPY_RANK_PROMOTION=raise (the judge's convolution mixes neither)", ("CD411",),
                 env={"JAX_NUMPY_DTYPE_PROMOTION": "strict", "JAX_NUMPY_RANK_PROMOTION": "raise"},
                 predicted="works", cause_class="JAX's type- and rank-promotion strictness"),
        "https://docs.jax.dev/en/latest/type_promotion.html (jax_numpy_dtype_promotion)")

    gone_plugin = scratch("s9-jax-plugin-entry-gone")
    _dist_info(gone_plugin, "jax_metal", "0.1.1", "[jax_plugins]\nmetal = jax_metal_plugin\n")
    add(Scenario("s9-jax-plugin-entry-gone", "PYTHONPATH holds the metadata of a removed JAX plugin (jax-metal) "
                 "whose 'jax_plugins' entry point names a module that is gone: JAX logs a configuration error and "
                 "goes on", ("CD415", "CD412"), env={"PYTHONPATH": str(gone_plugin)}, predicted="works",
                 cause_class="a JAX plugin entry point naming a module that is gone"),
        "https://openxla.org/xla/pjrt/pjrt_integration (plugins discovered through the jax_plugins entry points)")

    # ======================================================== what the environment holds beyond settings
    add(Scenario("s9-env-latin1-bytes", "variables with Latin-1 bytes (not UTF-8) from an old .bashrc: a project "
                 "folder and OLDPWD named 'donn\\xe9es'", (),
                 env={"PROJET_DONNEES": "/srv/donn\udce9es/projet", "OLDPWD": "/srv/donn\udce9es",
                      "S9_NOTE": "r\udce9sum\udce9 des essais"}, predicted="works",
                 cause_class="environment values that are not UTF-8"),
        "https://peps.python.org/pep-0383/ (non-decodable bytes in the environment: surrogateescape)")

    add(Scenario("s9-lmod-exported-functions", "an HPC login shell's Lmod/EasyBuild state: exported bash functions "
                 "(BASH_FUNC_module%%, BASH_FUNC_ml%%) and LOADEDMODULES/EBROOTCUDNN naming a cuDNN 8.9 module that "
                 "is not loaded here (no path variable points at it)", ("CD417", "CD418"),
                 env={"BASH_FUNC_module%%": "() {  eval \"$($LMOD_CMD bash \"$@\")\" && eval "
                                            "\"$(${LMOD_SETTARG_CMD:-:} -s sh)\"\n}",
                      "BASH_FUNC_ml%%": "() {  eval \"$($LMOD_DIR/ml_cmd \"$@\")\"\n}",
                      "LMOD_CMD": "/apps/lmod/lmod/libexec/lmod", "LMOD_DIR": "/apps/lmod/lmod/libexec",
                      "LOADEDMODULES": "GCCcore/13.2.0:CUDA/12.4.0:cuDNN/8.9.7.29-CUDA-12.4.0",
                      "_LMFILES_": "/apps/modules/all/cuDNN/8.9.7.29-CUDA-12.4.0.lua",
                      "MODULEPATH": "/apps/modules/all",
                      "EBROOTCUDNN": "/apps/software/cuDNN/8.9.7.29-CUDA-12.4.0",
                      "EBVERSIONCUDNN": "8.9.7.29"}, predicted="works",
                 cause_class="environment-module bookkeeping (exported shell functions, module lists) with no path "
                             "effect"),
        "https://lmod.readthedocs.io/en/latest/ (module/ml are shell functions; LOADEDMODULES, _LMFILES_)")

    add(Scenario("s9-terminal-vars", "terminal variables at odd values: TERM=dumb, COLUMNS=0, LINES=-1, NO_COLOR=1 "
                 "with FORCE_COLOR=3 and CLICOLOR_FORCE=1", (),
                 env={"TERM": "dumb", "COLUMNS": "0", "LINES": "-1", "NO_COLOR": "1", "FORCE_COLOR": "3",
                      "CLICOLOR_FORCE": "1"}, predicted="works",
                 cause_class="terminal and colour variables with contradictory or out-of-range values"),
        "https://no-color.org/ (NO_COLOR) and https://docs.python.org/3/library/shutil.html#shutil.get_terminal_size")

    d = scratch("s9-home-odd-path")
    odd_home = d / "J\u00f6rg M\u00fcller (lab 2)"
    (odd_home / ".nv" / "ComputeCache").mkdir(parents=True)
    (odd_home / ".nv" / "ComputeCache" / "index").write_bytes(b"\x00\xffnot a cache index\x00" * 64)
    (odd_home / ".cache").mkdir()
    add(Scenario("s9-home-odd-path", "HOME with spaces, parentheses and non-ASCII letters, its CUDA JIT cache "
                 "(~/.nv/ComputeCache/index) full of garbage", ("CD417",), env={"HOME": str(odd_home)},
                 predicted="works",
                 cause_class="a home folder whose path needs quoting, with a corrupt CUDA JIT cache index"),
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#just-in-time-compilation (the "
        "compute cache under ~/.nv/ComputeCache)")

    if shutil.which("renice"):
        add(Scenario("s9-lowest-priority", "the shell at the lowest CPU and I/O priority (renice 19, ionice idle), as "
                     "a background batch job", ("CD116",),
                     shell="renice -n 19 -p $$ >/dev/null 2>&1; ionice -c 3 -p $$ >/dev/null 2>&1; true",
                     predicted="works", cause_class="process scheduling priority"),
            "https://man7.org/linux/man-pages/man1/renice.1.html")

    add(Scenario("s9-other-vendor-visibility", "other vendors' device-visibility variables from a shared Slurm "
                 "prolog: HIP_VISIBLE_DEVICES=-1, ROCR_VISIBLE_DEVICES='', GPU_DEVICE_ORDINAL=3, "
                 "ZE_AFFINITY_MASK=1, ONEAPI_DEVICE_SELECTOR=level_zero:1", ("CD113",),
                 env={"HIP_VISIBLE_DEVICES": "-1", "ROCR_VISIBLE_DEVICES": "", "GPU_DEVICE_ORDINAL": "3",
                      "ZE_AFFINITY_MASK": "1", "ONEAPI_DEVICE_SELECTOR": "level_zero:1"}, predicted="works",
                 cause_class="device-visibility variables of AMD and Intel runtimes on an NVIDIA machine"),
        "https://slurm.schedmd.com/gres.html (Slurm sets CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, "
        "GPU_DEVICE_ORDINAL)")

    # ======================================================== library paths that look worse than they are
    if system_libs:
        d = scratch("s9-ld-path-empty-string")
        for name, path in system_libs.items():
            os.symlink(os.path.realpath(path), d / name)
        add(Scenario("s9-ld-path-empty-string", "LD_LIBRARY_PATH set to the empty string (an 'export "
                     "LD_LIBRARY_PATH=$LD_LIBRARY_PATH' of an unset variable), started in a folder holding the "
                     "system's cuDNN 9.14: ld.so ignores an empty LD_LIBRARY_PATH, so the folder is not searched",
                     ("CD305", "CD317", "CD401"), env={"LD_LIBRARY_PATH": ""}, cwd=str(d), predicted="works",
                     cause_class="LD_LIBRARY_PATH present but empty"),
            "https://man7.org/linux/man-pages/man8/ld.so.8.html (LD_LIBRARY_PATH)")

    if has_torch and os.path.isdir(os.path.join(torch_dir, "lib")):
        add(Scenario("s9-ld-path-torch-lib", "LD_LIBRARY_PATH=<torch>/lib (set to build and run a C++ extension "
                     "against libtorch)", ("CD305", "CD409"), env={"LD_LIBRARY_PATH": os.path.join(torch_dir, "lib")},
                     predicted="works", cause_class="a framework's own library folder on LD_LIBRARY_PATH"),
            "https://docs.pytorch.org/tutorials/advanced/cpp_extension.html")

    rel = os.path.relpath(pip_cudnn, site_dir) if pip_cudnn and site_dir else ""
    if system_libs and rel.replace(os.sep, "/") == "nvidia/cudnn/lib":
        d = scratch("s9-pythonpath-nvidia-tree")
        lib = d / "nvidia" / "cudnn" / "lib"
        lib.mkdir(parents=True)
        if os.path.exists(os.path.join(site_dir, "nvidia", "cudnn", "__init__.py")):
            (d / "nvidia" / "cudnn" / "__init__.py").write_text("")
        for name, path in system_libs.items():
            os.symlink(os.path.realpath(path), lib / name)
        add(Scenario("s9-pythonpath-nvidia-tree", "PYTHONPATH names another environment's site-packages whose "
                     "nvidia/cudnn/lib holds cuDNN 9.14 (JAX's CUDA plugin preloads NVIDIA libraries from the first "
                     "nvidia.cudnn package on the Python path)", ("CD305", "CD401", "CD408"),
                     env={"PYTHONPATH": str(d)}, predicted="works",
                     cause_class="a second pip-layout NVIDIA library tree on the Python path"),
            "https://github.com/jax-ml/jax/blob/main/jax_plugins/cuda/__init__.py (_load_nvidia_libraries)")
    return scenarios
