"""Round 10's sealed GPU scenarios for issue 45: classes neither the built-in suite nor rounds 5-9 have.

SEALED: not to be read by whoever builds the code for issue 45. Run it with the harness, on the GPU machine:

    timeout 590 python3 benchmarks/gpu_scenarios.py --scenarios .sealed/round10/scenarios45/scenarios.py \
        --out "$OUT/s10" --quiet-cases --budget-s 540

Every scenario bends ONE shell's environment: variables, soft limits, descriptors and standard streams of the shell,
files it writes under /tmp/cudnn-doctor-scenarios/s10-* (copies of pure and compiled Python packages with their file
names changed, small text files, links), the working folder. Sources are found on the machine at build time (the
judges' Python and its site-packages: numpy, ml_dtypes; the loader's cache: libgomp); a scenario whose source is
missing is left out. No installed file is written, nothing outside /tmp, no network, no GPU setting is touched.

`causes` are codes of cudnn_doctor/codes.py (names and one-line meanings only) that a right answer names if the setup
fails. Where no code fits, `causes` is empty and `cause_class` says the class in words; where a code fits only partly,
both are given. `predicted` is the author's guess before any run; the judges decide. Each scenario also carries
`source` (an attribute the harness ignores): where the class comes from real users or the documentation.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from gpu_scenarios import Scenario, scratch

NOWHERE = "/proc/cudnn-doctor-s10-nowhere"  # a folder nobody (root included) can create


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


def _open_fds(first: int, last: int) -> str:
    """Bash that opens descriptors FIRST..LAST on /dev/null in the shell itself (inherited by what it execs, as a
    parent that forgot close_fds leaves them)."""
    return f'for i in $(seq {first} {last}); do eval "exec $i</dev/null"; done'


def _other_abi_copy(site_dir: str, packages: list[str], target: Path, replace: tuple[str, str]) -> int:
    """Copy PACKAGES (folders of SITE_DIR, with their .libs folders) into TARGET, renaming each compiled module's
    tag REPLACE[0] to REPLACE[1] (the file names another interpreter's or platform's build has). Returns how many
    compiled modules were renamed; 0 if nothing was there."""
    renamed = 0
    for name in packages:
        source = os.path.join(site_dir, name)
        if not os.path.isdir(source):
            return 0
        shutil.copytree(source, target / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "tests", "*.pyc"))
        libs = source + ".libs"
        if os.path.isdir(libs):
            shutil.copytree(libs, target / (name + ".libs"), symlinks=True)
    for path in list(target.rglob("*" + replace[0] + "*.so")):
        path.rename(path.with_name(path.name.replace(replace[0], replace[1])))
        renamed += 1
    return renamed


SHADOW = 'raise ImportError("{name}.py in the working folder: a user\'s script named like the package")\n'

GARBAGE_ZONE = b"TZif-not-really\x00\x01\x02 this is not a compiled zone file \xff\xfe\n"


# ------------------------------------------------------------------------------------------------ the set
def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    site_dir = str(machine.get("site") or "")
    cache = _ldconfig()
    system_main = cache.get("libcudnn.so.9") or str(machine.get("system_cudnn") or "")
    system_dir = os.path.dirname(system_main) if system_main else ""
    ext_suffix = str(sysconfig.get_config_var("EXT_SUFFIX") or "")  # .cpython-3XY-x86_64-linux-gnu.so
    tag = re.match(r"\.(cpython-3\d+)", ext_suffix)
    other_tag = f"cpython-3{sys.version_info.minor + 1}" if tag else ""
    path_now = os.environ.get("PATH", "/usr/bin:/bin")
    soft_nofile, hard_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    roomy = 65536 if hard_nofile == resource.RLIM_INFINITY else min(hard_nofile, 65536)
    scenarios: list[Scenario] = []

    def add(scenario: Scenario, source: str) -> None:
        scenario.source = source  # type: ignore[attr-defined]
        scenarios.append(scenario)

    # ======================================================== 1. descriptors the shell leaves open (new)
    # A parent that started the shell without close_fds (an old daemon, a Jupyter kernel's subprocess with
    # close_fds=False, a batch wrapper) leaves descriptors open: they count against RLIMIT_NOFILE in every program.
    fd_source = ("https://man7.org/linux/man-pages/man2/getrlimit.2.html (RLIMIT_NOFILE: one greater than the "
                 "largest descriptor a process may open; inherited descriptors count) and "
                 "https://docs.python.org/3/library/subprocess.html#subprocess.Popen (close_fds)")
    add(Scenario("s10-fds-inherited-jax", "soft open-files limit 1024 (a usual default) but the shell inherited "
                 "descriptors 3..983 from its parent: about 40 remain for each program",
                 ("CD116",), shell=f"ulimit -S -n 1024; {_open_fds(3, 983)}", predicted="fails",
                 cause_class="descriptors inherited from the parent eat the open-files limit (the limit itself looks "
                             "ordinary); raising the soft limit cures it"),
        fd_source)
    add(Scenario("s10-fds-inherited-both", "soft open-files limit 1024, descriptors 3..1015 inherited: about 8 "
                 "remain, fewer than CUDA's own initialisation opens", ("CD116",),
                 shell=f"ulimit -S -n 1024; {_open_fds(3, 1015)}", predicted="fails",
                 cause_class="descriptors inherited from the parent eat the open-files limit"),
        fd_source)
    if roomy >= 8192:
        add(Scenario("s10-fds-inherited-roomy", f"the same ~980 inherited descriptors, soft limit {roomy}",
                     ("CD116",), shell=f"ulimit -S -n {roomy}; {_open_fds(3, 983)}", predicted="works",
                     cause_class="many inherited descriptors under a high open-files limit"),
            fd_source)

    # ======================================================== 2. standard streams a daemon or cron leaves (new)
    add(Scenario("s10-stdin-closed", "standard input closed (`exec 0<&-`, as a daemon or `cmd <&-` leaves it): "
                 "Python's sys.stdin is None and the first file CUDA opens gets descriptor 0", (),
                 shell="exec 0<&-", predicted="works",
                 cause_class="standard input closed in every program"),
        "https://docs.python.org/3/library/sys.html#sys.__stdin__ (stdin/stdout/stderr can be None) and "
        "https://man7.org/linux/man-pages/man2/open.2.html (the lowest-numbered free descriptor)")
    add(Scenario("s10-stderr-dev-full", "standard error sent to /dev/full (a cron job logging to a full disk): every "
                 "write to stderr fails with ENOSPC; stdout is fine", (), shell="exec 2>/dev/full",
                 predicted="works", cause_class="standard error that refuses every write"),
        "https://man7.org/linux/man-pages/man4/full.4.html")
    add(Scenario("s10-stderr-closed", "standard error closed (`exec 2>&-`): Python's sys.stderr is None and the C "
                 "libraries' log lines go to whatever descriptor 2 is reused for", (), shell="exec 2>&-",
                 predicted="works", cause_class="standard error closed in every program"),
        "https://docs.python.org/3/library/sys.html#sys.__stdin__")

    # ======================================================== 3. Python packages built for another interpreter (new)
    abi_source = ("https://peps.python.org/pep-3149/ (ABI-tagged extension file names: an interpreter imports only "
                  "its own tag) and https://numpy.org/devdocs/user/troubleshooting-importerror.html")
    if site_dir and tag and other_tag:
        d = scratch("s10-numpy-other-cpython")
        if _other_abi_copy(site_dir, ["numpy"], d, (tag.group(1), other_tag)):
            add(Scenario("s10-numpy-other-cpython", f"PYTHONPATH names another environment's site-packages (made for "
                         f"Python 3.{sys.version_info.minor + 1}) holding numpy: its compiled modules are tagged "
                         f"{other_tag}, which this Python never imports", ("CD410", "CD415"),
                         env={"PYTHONPATH": str(d)}, predicted="fails",
                         cause_class="a dependency's compiled modules built for another Python version shadow the "
                                     "installed ones (PYTHONPATH precedes site-packages)"),
                abi_source)
        d = scratch("s10-ml-dtypes-other-cpython")
        if _other_abi_copy(site_dir, ["ml_dtypes"], d, (tag.group(1), other_tag)):
            add(Scenario("s10-ml-dtypes-other-cpython", "PYTHONPATH names another Python version's site-packages "
                         "holding ml_dtypes (a dependency of jaxlib): its extension is tagged for that version",
                         ("CD410", "CD415"), env={"PYTHONPATH": str(d)}, predicted="fails",
                         cause_class="a dependency's compiled modules built for another Python version shadow the "
                                     "installed ones"),
                abi_source)
        d = scratch("s10-numpy-other-arch")
        if _other_abi_copy(site_dir, ["numpy"], d, ("x86_64-linux-gnu", "aarch64-linux-gnu")):
            add(Scenario("s10-numpy-other-arch", "PYTHONPATH names a folder in a home shared with ARM nodes "
                         "(`pip install --target` run on an aarch64 node) holding numpy: its compiled modules are "
                         "tagged aarch64-linux-gnu", ("CD410", "CD415"), env={"PYTHONPATH": str(d)},
                         predicted="fails",
                         cause_class="a dependency's compiled modules built for another platform shadow the "
                                     "installed ones"),
                "https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/ and "
                "https://numpy.org/devdocs/user/troubleshooting-importerror.html")
    if site_dir and os.path.isdir(os.path.join(site_dir, "numpy")):
        add(Scenario("s10-pythonpath-own-site", "PYTHONPATH names the judges' own site-packages (a leftover "
                     "`export PYTHONPATH=$(python -c 'import site; print(site.getsitepackages()[0])')`): it now "
                     "comes before the standard library", (), env={"PYTHONPATH": site_dir}, predicted="works",
                     cause_class="the environment's own site-packages on PYTHONPATH (nothing in it shadows the "
                                 "standard library)"),
            "https://docs.python.org/3/library/sys_path_init.html (PYTHONPATH entries precede the standard library)")

    # ======================================================== 4. Python's inspect and safe-path switches (new)
    add(Scenario("s10-python-inspect", "PYTHONINSPECT=1 left in the environment (from a debugging session), standard "
                 "input /dev/null: every Python enters the interactive prompt after its script, reads end-of-file "
                 "and exits; a child that calls sys.exit(0) then exits with status 1", (),
                 env={"PYTHONINSPECT": "1"}, shell="exec 0</dev/null", predicted="works",
                 cause_class="Python's inspect mode in every Python (exit statuses of sys.exit are lost)"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONINSPECT")
    shadow = scratch("s10-safepath-shadow")
    for name in ("numpy", "jax", "torch"):
        (shadow / f"{name}.py").write_text(SHADOW.format(name=name))
    safe = sys.version_info >= (3, 11)
    add(Scenario("s10-safepath-shadow", "a working folder holding numpy.py, jax.py and torch.py that raise (a "
                 "user's scripts named like the packages), with PYTHONSAFEPATH=1: `python -c` then does not put the "
                 "working folder on sys.path (Python 3.11 and later)", ("CD415",) if not safe else (),
                 env={"PYTHONSAFEPATH": "1"}, cwd=str(shadow), predicted="works" if safe else "fails",
                 cause_class="modules in the working folder named like a framework, made harmless by "
                             "PYTHONSAFEPATH"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONSAFEPATH")

    # ======================================================== 5. JAX's PJRT client-create options (new variable)
    pjrt_source = ("https://github.com/jax-ml/jax/blob/main/jax/_src/xla_bridge.py (_options_from_jax_configs: "
                   "'k1:v1;k2:v2', values stay strings; the cuda plugin is registered with fail_quietly=False) and "
                   "https://github.com/openxla/xla/blob/main/xla/pjrt/c/pjrt_c_api_helpers.cc (ValidateCreateOptions: "
                   "'Unexpected option name passed to PJRT_Client_Create', 'has type index ... but expected')")
    add(Scenario("s10-pjrt-options-typed", "JAX_PJRT_CLIENT_CREATE_OPTIONS=preallocate:false (a bool option given "
                 "as text: the variable's values are strings)", ("CD411",),
                 env={"JAX_PJRT_CLIENT_CREATE_OPTIONS": "preallocate:false"}, predicted="fails"),
        pjrt_source)
    add(Scenario("s10-pjrt-options-unknown", "JAX_PJRT_CLIENT_CREATE_OPTIONS=allocater:cuda_async (a misspelt "
                 "option name)", ("CD411",), env={"JAX_PJRT_CLIENT_CREATE_OPTIONS": "allocater:cuda_async"},
                 predicted="fails"),
        pjrt_source + "; https://github.com/marin-community/marin (an 'allocator' option refused by another "
                      "plugin: 'Unexpected option name passed to PJRT_Client_Create: allocator')")
    add(Scenario("s10-pjrt-options-two-colons", "JAX_PJRT_CLIENT_CREATE_OPTIONS=platform_name:cuda:0 (a device "
                 "string as the value: two ':' in one option)", ("CD411",),
                 env={"JAX_PJRT_CLIENT_CREATE_OPTIONS": "platform_name:cuda:0"}, predicted="fails"),
        pjrt_source)
    add(Scenario("s10-pjrt-options-visible-devices", "JAX_PJRT_CLIENT_CREATE_OPTIONS=visible_devices:0 (meant to "
                 "keep JAX on GPU 0; the option takes a list of integers, the variable gives text)", ("CD411",),
                 env={"JAX_PJRT_CLIENT_CREATE_OPTIONS": "visible_devices:0"}, predicted="fails"),
        pjrt_source)
    add(Scenario("s10-pjrt-options-string", "JAX_PJRT_CLIENT_CREATE_OPTIONS=allocator:cuda_async (a string option "
                 "the CUDA plugin knows)", ("CD411",), env={"JAX_PJRT_CLIENT_CREATE_OPTIONS": "allocator:cuda_async"},
                 predicted="works"),
        pjrt_source)
    add(Scenario("s10-pjrt-options-empty", "JAX_PJRT_CLIENT_CREATE_OPTIONS set but empty (an `export` of an unset "
                 "shell variable)", ("CD411",), env={"JAX_PJRT_CLIENT_CREATE_OPTIONS": ""}, predicted="works"),
        pjrt_source)

    # ======================================================== 6. JAX's IR dump folder (new variable)
    dump_source = ("https://github.com/jax-ml/jax/blob/main/jax/_src/path.py (make_jax_dump_dir: mkdir, or "
                   "TEST_UNDECLARED_OUTPUTS_DIR for 'sponge') and jax/_src/compiler.py (dump_module_to_file on every "
                   "compilation)")
    dump = scratch("s10-jax-dump-ir")
    (dump / "dump.mlir").write_text("// an earlier dump, one file\n")
    add(Scenario("s10-jax-dump-ir-file", "JAX_DUMP_IR_TO names an existing regular file (dump.mlir) where a folder is "
                 "made", ("CD417", "CD411"), env={"JAX_DUMP_IR_TO": str(dump / "dump.mlir")}, predicted="fails"),
        dump_source)
    add(Scenario("s10-jax-dump-ir-sponge", "JAX_DUMP_IR_TO=sponge copied from a Bazel test setup, without "
                 "TEST_UNDECLARED_OUTPUTS_DIR", ("CD417", "CD411"), env={"JAX_DUMP_IR_TO": "sponge"},
                 unset=("TEST_UNDECLARED_OUTPUTS_DIR",), predicted="fails"),
        dump_source)
    add(Scenario("s10-jax-dump-ir-jaxpr-only", "JAX_DUMP_IR_TO names a folder that cannot be made, with "
                 "JAX_DUMP_IR_MODES=jaxpr (the folder is made before the modes are read)", ("CD417", "CD411"),
                 env={"JAX_DUMP_IR_TO": NOWHERE + "/ir", "JAX_DUMP_IR_MODES": "jaxpr"}, predicted="fails"),
        dump_source)
    add(Scenario("s10-jax-dump-ir-writable", "JAX_DUMP_IR_TO names a writable folder, JAX_DUMP_IR_MODES="
                 "stablehlo,jaxpr", ("CD417",), env={"JAX_DUMP_IR_TO": str(dump / "out"),
                                                    "JAX_DUMP_IR_MODES": "stablehlo,jaxpr"}, predicted="works"),
        dump_source)
    add(Scenario("s10-jax-dump-ir-empty", "JAX_DUMP_IR_TO set but empty (no dump)", ("CD417",),
                 env={"JAX_DUMP_IR_TO": ""}, predicted="works"),
        dump_source)

    # ======================================================== 7. JAX's integer flags from the environment (new variables)
    int_source = ("https://github.com/jax-ml/jax/blob/main/jax/_src/config.py (int_state: 'Invalid value ... for JAX "
                  "flag', raised at import) and jax/_src/xla_bridge.py (jax_num_cpu_devices)")
    add(Scenario("s10-jax-int-empty", "JAX_NUM_CPU_DEVICES set but empty (`export JAX_NUM_CPU_DEVICES=$NCPU` with "
                 "NCPU unset)", ("CD411",), env={"JAX_NUM_CPU_DEVICES": ""}, predicted="fails"),
        int_source)
    add(Scenario("s10-jax-int-units", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=64k (a size with a unit)",
                 ("CD411",), env={"JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "64k"}, predicted="fails"),
        int_source)
    add(Scenario("s10-jax-int-valid", "JAX_NUM_CPU_DEVICES=2, JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1, "
                 "JAX_RANDOM_SEED_OFFSET=7 (valid integers)", ("CD411",),
                 env={"JAX_NUM_CPU_DEVICES": "2", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
                      "JAX_RANDOM_SEED_OFFSET": "7"}, predicted="works"),
        int_source)

    # ======================================================== 8. torch variables no round touched
    add(Scenario("s10-torch-no-caching-zero", "PYTORCH_NO_CUDA_MEMORY_CACHING=0 (meant as 'off'; torch tests only "
                 "that it is set, so caching is off: slower, works)", ("CD411", "CD412"),
                 env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "0"}, predicted="works"),
        "https://docs.pytorch.org/docs/stable/cuda_environment_variables.html (PYTORCH_NO_CUDA_MEMORY_CACHING)")
    add(Scenario("s10-torch-compile-and-lt-off", "torch.compile, TorchScript and cuBLASLt switches: "
                 "TORCH_COMPILE_DISABLE=1, TORCHDYNAMO_DISABLE=1, PYTORCH_JIT=0, TORCH_BLAS_PREFER_CUBLASLT=1, "
                 "DISABLE_ADDMM_CUDA_LT=1", ("CD411", "CD412"),
                 env={"TORCH_COMPILE_DISABLE": "1", "TORCHDYNAMO_DISABLE": "1", "PYTORCH_JIT": "0",
                      "TORCH_BLAS_PREFER_CUBLASLT": "1", "DISABLE_ADDMM_CUDA_LT": "1"}, predicted="works"),
        "https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html (TORCH_COMPILE_DISABLE), "
        "https://docs.pytorch.org/docs/stable/jit.html (PYTORCH_JIT=0) and "
        "https://docs.pytorch.org/docs/stable/cuda_environment_variables.html (TORCH_BLAS_PREFER_CUBLASLT)")

    # ======================================================== 9. limits Linux does not enforce, and a rare one (new)
    add(Scenario("s10-unenforced-limits", "soft limits that look fatal but Linux ignores or programs never reach: "
                 "resident set 1 MiB (ulimit -m 1024), file locks 0 (-x), POSIX message-queue bytes 0 (-q)",
                 ("CD116",), shell="ulimit -S -m 1024; ulimit -S -x 0; ulimit -S -q 0", predicted="works",
                 cause_class="RLIMIT_RSS / RLIMIT_LOCKS (not enforced since Linux 2.4) and RLIMIT_MSGQUEUE"),
        "https://man7.org/linux/man-pages/man2/getrlimit.2.html (RLIMIT_RSS: no effect since Linux 2.4.30; "
        "RLIMIT_LOCKS: Linux 2.4 only)")
    add(Scenario("s10-sigpending-zero", "ulimit -i 0 (no queued signals: sigqueue and POSIX timers refused; ordinary "
                 "kill() signals still pass)", ("CD116",), shell="ulimit -S -i 0", predicted="works",
                 cause_class="RLIMIT_SIGPENDING at zero"),
        "https://man7.org/linux/man-pages/man2/getrlimit.2.html (RLIMIT_SIGPENDING)")

    # ======================================================== 10. another environment's activation left behind (new)
    old = scratch("s10-stale-venv")
    (old / "bin").mkdir()
    (old / "lib" / "python3.8" / "site-packages").mkdir(parents=True)
    (old / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.8.10\n")
    os.symlink("/usr/bin/python3.8-removed", old / "bin" / "python")
    os.symlink("python", old / "bin" / "python3")
    (old / "bin" / "activate").write_text(f'VIRTUAL_ENV="{old}"\nexport VIRTUAL_ENV\n')
    add(Scenario("s10-stale-venv-activation", "VIRTUAL_ENV, VIRTUAL_ENV_PROMPT and a PATH entry left by activating "
                 "a removed Python 3.8 environment without torch or JAX (its python is a dangling link); the judges "
                 "run their own interpreter by its full path", (),
                 env={"VIRTUAL_ENV": str(old), "VIRTUAL_ENV_PROMPT": "(old-env) ",
                      "PATH": f"{old / 'bin'}:{path_now}"}, predicted="works",
                 cause_class="a stale virtual-environment activation (VIRTUAL_ENV is informational only)"),
        "https://docs.python.org/3/library/venv.html (how venvs work: activation is not required, VIRTUAL_ENV)")

    # ======================================================== 11. names that look like settings but are not (new)
    lower = {"cuda_visible_devices": "-1", "jax_platforms": "cpu", "ld_preload": "/nonexistent/libfoo.so",
             "xla_python_client_mem_fraction": ".001"}
    if system_dir:
        lower["Ld_Library_Path"] = system_dir
    add(Scenario("s10-lowercase-names", "settings written in lower or mixed case (cuda_visible_devices=-1, "
                 "jax_platforms=cpu, ld_preload, Ld_Library_Path naming the system cuDNN 9.14 folder): environment "
                 "names are case-sensitive, so nothing reads them", ("CD113", "CD418"), env=lower, predicted="works",
                 cause_class="variables that differ from a real setting only by case"),
        "https://pubs.opengroup.org/onlinepubs/9799919799/basedefs/V1_chap08.html (environment variable names; "
        "case matters) and https://docs.nvidia.com/cuda/cuda-c-programming-guide/#cuda-environment-variables")
    add(Scenario("s10-names-with-spaces", "'CUDA_VISIBLE_DEVICES ' and ' JAX_PLATFORMS' (names with a stray space, "
                 "as `KEY = value` in an env file leaves them): bash passes them on, nothing reads them",
                 ("CD113", "CD418"), env={"CUDA_VISIBLE_DEVICES ": "-1", " JAX_PLATFORMS": "cpu"},
                 predicted="works", cause_class="variables whose names carry white space"),
        "https://docs.docker.com/reference/cli/docker/container/run/#env (env files: one VAR=value per line)")

    # ======================================================== 12. time zone (new)
    tz = scratch("s10-tz")
    (tz / "Garbage").mkdir()
    (tz / "Garbage" / "Zone").write_bytes(GARBAGE_ZONE)
    add(Scenario("s10-tz-garbage", "TZ names a zone file that is garbage and TZDIR a folder that does not exist "
                 "(glibc falls back to UTC)", (), env={"TZ": f":{tz / 'Garbage' / 'Zone'}", "TZDIR": NOWHERE},
                 predicted="works", cause_class="an unreadable time-zone setting"),
        "https://man7.org/linux/man-pages/man3/tzset.3.html")

    # ======================================================== 13. a second OpenMP runtime in every program (new)
    gomp = cache.get("libgomp.so.1")
    if gomp:
        add(Scenario("s10-preload-system-libgomp", "LD_PRELOAD of the system's libgomp.so.1 (advice for 'cannot "
                     "allocate memory in static TLS block'), while torch brings its own renamed libgomp: two GNU "
                     "OpenMP runtimes in one process", ("CD409",), env={"LD_PRELOAD": gomp}, predicted="works",
                     cause_class="a second OpenMP runtime preloaded"),
            "https://github.com/pypa/auditwheel (vendored libraries renamed with a hash, e.g. torch's "
            "libgomp-<hash>.so.1) and https://gcc.gnu.org/onlinedocs/libgomp/")

    # ======================================================== 14. Python's tracing and hashing switches (new)
    add(Scenario("s10-python-import-tracing", "PYTHONVERBOSE=1 and PYTHONPROFILEIMPORTTIME=1 left on: thousands of "
                 "lines on stderr from every Python", (), env={"PYTHONVERBOSE": "1", "PYTHONPROFILEIMPORTTIME": "1"},
                 predicted="works", cause_class="Python's import tracing on stderr"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONVERBOSE and #envvar-PYTHONPROFILEIMPORTTIME")
    add(Scenario("s10-python-hash-int", "PYTHONHASHSEED=0, PYTHONINTMAXSTRDIGITS=0 (no limit) and "
                 "PYTHONDONTWRITEBYTECODE=1", (), env={"PYTHONHASHSEED": "0", "PYTHONINTMAXSTRDIGITS": "0",
                                                       "PYTHONDONTWRITEBYTECODE": "1"}, predicted="works",
                 cause_class="Python's hash, integer-digit and bytecode switches"),
        "https://docs.python.org/3/using/cmdline.html#envvar-PYTHONHASHSEED and #envvar-PYTHONINTMAXSTRDIGITS")
    return scenarios
