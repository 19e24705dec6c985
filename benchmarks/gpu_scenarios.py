"""Does `check` predict what a program gets on a real GPU, and does `fix` make it work? (issues 30 and 45)

Each scenario breaks (or only bends) the environment of one shell on the GPU machine the way users do:
variables, copies of libraries in /tmp, a process limit, another process holding GPU memory. Nothing of
the GPU's own settings is changed. For every scenario, in that environment:

  1. the judges: real PyTorch (a cuDNN convolution and a cuDNN LSTM on the GPU) and real JAX (a
     convolution on the GPU), each in its own process;
  2. `cudnn-doctor check --json` and `cudnn-doctor check --deep --json`: the findings each reports;
  3. `cudnn-doctor fix --json`: the plan; its env lines are sourced in a real bash before each judge runs
     again, and the actions the doctor can run are run. Manual steps are not applied (they count as not fixed).
     Where the plan says of an action whether it was verified, that is recorded beside the judges' answer.

Scoring (issue 45). A setup where a judge fails is a *failing* setup: plain `check` has *named* it when an
error OR a warning carries one of the scenario's cause codes; `check --deep` has named it only with an error
of one of them. A setup where both judges work must get no error, from either. A setup where the user's own
setting moves a framework off the GPU on purpose (JAX_PLATFORMS=cpu) is scored apart: a warning is due. A
failing scenario with no cause code (no current code fits; its `cause_class` says the class in words) is
counted apart as "unmapped", not in the named figures.

  python3 benchmarks/gpu_scenarios.py --out DIR [--scenarios FILE] [--quiet-cases] [--only NAME,...]
      [--judges FILE] [--no-fix] [--no-deep] [--doctor-tree DIR] [--parallel N] [--budget-s S]

--scenarios FILE loads the scenarios from a Python file that defines `build_scenarios(machine) -> list[Scenario]`
(it may `from gpu_scenarios import Scenario, scratch`) instead of the built-in ones. --quiet-cases prints no
scenario's name or row, only the figures (DIR/summary.json holds the same; DIR/scenarios.json holds every case).
--judges FILE reuses the first judges' verdicts of an earlier run (they do not depend on the doctor);
--doctor-tree runs another checkout of the doctor (the "before" figure). --budget-s bounds the whole run (default
510 s): no scenario starts after it, every step's timeout is cut to what is left, and a scenario not reached is
"not run". Results are written after every scenario, so a run that is killed still leaves them. Needs: the GPU
machine's python3 with torch and jax, nvidia-smi.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path("/tmp/cudnn-doctor-scenarios")
GB = 1 << 30

TORCH_JUDGE = r"""
import torch
assert torch.cuda.is_available(), "torch.cuda.is_available() is False (device_count %d)" % torch.cuda.device_count()
x = torch.randn(8, 64, 56, 56, device="cuda"); w = torch.randn(128, 64, 3, 3, device="cuda")
y = torch.nn.functional.conv2d(x, w, padding=1)
lstm = torch.nn.LSTM(64, 128, num_layers=2, batch_first=True).cuda()
out, _ = lstm(torch.randn(4, 20, 64, device="cuda"))
torch.cuda.synchronize()
print("torch ok: cuDNN", torch.backends.cudnn.version(), "on", torch.cuda.get_device_name(0))
"""

JAX_JUDGE = r"""
import jax, jax.numpy as jnp
gpus = [d for d in jax.devices() if d.platform == "gpu"]
assert gpus, "JAX has no GPU: %s" % jax.devices()
x = jnp.ones((8, 64, 56, 56)); w = jnp.ones((128, 64, 3, 3))
y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"); y.block_until_ready()
print("jax ok:", y.shape, gpus[0].device_kind)
"""

HOG = r"""
import sys, time, torch
held = torch.empty(int(float(sys.argv[1]) * (1 << 30)), dtype=torch.uint8, device="cuda")
print("holding", held.numel() >> 30, "GiB", flush=True)
time.sleep(3600)
"""


@dataclass
class Scenario:
    name: str
    why: str  # what a user did
    causes: tuple[str, ...] = ()  # finding codes that name the cause, where it fails
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    shell: str = ""  # run before the program in the same bash (ulimit)
    hog_gib: float = 0.0  # another process holds this much GPU memory meanwhile
    on_purpose: bool = False  # the user's own choice moves a framework off the GPU: a warning is due, not an error
    files: dict[str, str | bytes] = field(default_factory=dict)  # files written before the run (path: content)
    setup: str = ""  # a bash snippet run once before the scenario (in SCRATCH, the harness's own environment)
    cwd: str = ""  # the folder every program of the scenario starts in (default SCRATCH)
    alone: bool | None = None  # judged with nothing else on the GPU; None: the rule of runs_alone()
    cause_class: str = ""  # where no current code fits (causes empty): the class of the cause, in words
    predicted: str = ""  # "fails" or "works": what the scenario's author expected before any run


@dataclass
class Outcome:
    name: str
    torch: str = ""
    jax: str = ""
    fails: bool = False
    codes: list[str] = field(default_factory=list)  # error findings of plain check
    warnings: list[str] = field(default_factory=list)
    check_exit: int | None = None
    check_s: float = 0.0
    deep_codes: list[str] = field(default_factory=list)  # error findings of check --deep
    deep_warnings: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # each error and warning of plain check: 'CODE: message' (why a code came)
    deep_exit: int | None = None
    deep_s: float = 0.0
    plan: list[dict[str, object]] = field(default_factory=list)
    plan_verified: bool | None = None  # some action of the plan says it was verified here; None: the plan says nothing
    probe: object = None
    after_torch: str = ""
    after_jax: str = ""
    fixed: bool | None = None
    verdict: str = ""
    deep_verdict: str = ""
    setup_error: str = ""
    wall_s: float = 0.0


def facts() -> dict[str, object]:
    """What this machine has, for the scenarios to use."""
    found: dict[str, object] = {}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,memory.total,memory.used",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout
    except OSError:
        smi = ""
    found["gpus"] = [line.split(", ") for line in smi.strip().splitlines()]
    torch_site = subprocess.run([sys.executable, "-c", "import torch, os; print(os.path.dirname(torch.__file__))"],
                                capture_output=True, text=True).stdout.strip()
    site = os.path.dirname(torch_site)
    found["site"] = site
    found["pip_cudnn"] = os.path.join(site, "nvidia", "cudnn", "lib")
    if not os.path.isdir(str(found["pip_cudnn"])):
        found["pip_cudnn"] = next(iter(glob.glob(os.path.join(site, "nvidia", "cu*", "lib", "libcudnn.so.9"))), "")
        found["pip_cudnn"] = os.path.dirname(str(found["pip_cudnn"]))
    found["system_cudnn"] = next(iter(sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libcudnn.so.9*"))), None)
    found["stub"] = next(iter(sorted(glob.glob("/usr/local/cuda*/targets/*/lib/stubs/libcuda.so")
                                     + glob.glob("/usr/local/cuda*/lib64/stubs/libcuda.so"))), None)
    found["kernel_driver"] = Path("/proc/driver/nvidia/version").read_text() if Path(
        "/proc/driver/nvidia/version").exists() else None
    ldconfig = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    found["libcuda_cache"] = [line.strip() for line in ldconfig.splitlines() if "libcuda.so" in line]
    found["libcudnn_cache"] = [line.strip() for line in ldconfig.splitlines() if "libcudnn" in line]
    found["debs"] = sorted(glob.glob(str(ROOT / ".devcache" / "*.deb")))
    return found


def scratch(name: str) -> Path:
    """A fresh, empty SCRATCH/NAME (for a scenario's own copies of libraries and files)."""
    path = SCRATCH / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    uuid = str(machine["gpus"][0][1]) if machine["gpus"] else "GPU-unknown"  # type: ignore[index]
    pip_cudnn = str(machine["pip_cudnn"])
    system_cudnn = machine["system_cudnn"]
    stub = machine["stub"]

    folder = scratch

    def copy_of_pip_cudnn(name: str) -> Path:
        path = folder(name)
        for library in glob.glob(os.path.join(pip_cudnn, "libcudnn*.so*")):
            shutil.copy2(library, path)
        return path

    stub_dir = folder("stub")
    if stub:
        os.symlink(str(stub), stub_dir / "libcuda.so.1")
    drv = folder("driver-535")
    for deb in list(machine["debs"]):  # type: ignore[call-overload]
        subprocess.run(["dpkg-deb", "-x", deb, str(drv / "root")], check=True)
    old_driver = next(iter(glob.glob(str(drv / "root/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.5*"))), None)
    driver_dir = drv / "lib"
    driver_dir.mkdir()
    compat_dir = folder("cuda-12.2/compat")
    if old_driver:
        for target in (driver_dir, compat_dir):
            shutil.copy2(old_driver, target)
            os.symlink(os.path.basename(old_driver), target / "libcuda.so.1")
        for jit in glob.glob(str(drv / "root/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ptxjitcompiler.so.5*")):
            shutil.copy2(jit, compat_dir)
    dangling = folder("dangling")
    for name in ("libcudnn.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9"):
        os.symlink("/nonexistent/" + name, dangling / name)
    truncated = copy_of_pip_cudnn("truncated")
    truncated_cnn = copy_of_pip_cudnn("truncated-cnn")
    for target_dir, name in ((truncated, "libcudnn_engines_precompiled.so.9"), (truncated_cnn, "libcudnn_cnn.so.9")):
        truncated_dir = target_dir
        target = truncated_dir / name
        if not target.exists():
            continue
        size = target.stat().st_size
        with open(target, "r+b") as handle:
            handle.truncate(size // 2)
    mixed = copy_of_pip_cudnn("mixed")
    if system_cudnn:
        for name in ("libcudnn_ops.so.9",):
            source = os.path.join(os.path.dirname(str(system_cudnn)), name)
            if os.path.exists(source) and (mixed / name).exists():
                os.remove(mixed / name)
                shutil.copy2(os.path.realpath(source), mixed / name)
    missing = copy_of_pip_cudnn("missing-cnn")
    if (missing / "libcudnn_cnn.so.9").exists():
        os.remove(missing / "libcudnn_cnn.so.9")
    missing_engines = copy_of_pip_cudnn("missing-engines")
    for library in glob.glob(str(missing_engines / "libcudnn_engines_*")):
        os.remove(library)
    system_dir = os.path.dirname(str(system_cudnn)) if system_cudnn else "/usr/lib/x86_64-linux-gnu"

    no_gpu = ("CD113",)
    several = []
    if len(machine["gpus"]) > 1:  # type: ignore[arg-type]
        second = str(machine["gpus"][1][1])  # type: ignore[index]
        several = [
            Scenario("cvd-reversed", "CUDA_VISIBLE_DEVICES=1,0", env={"CUDA_VISIBLE_DEVICES": "1,0"}),
            Scenario("cvd-second-uuid", "the second GPU by UUID", env={"CUDA_VISIBLE_DEVICES": second}),
            Scenario("cvd-ambiguous-prefix", "a UUID prefix of 'GPU-' alone", no_gpu,
                     env={"CUDA_VISIBLE_DEVICES": "GPU-"}),
        ]
    return several + [
        # setups that work (some with warnings due)
        Scenario("baseline", "nothing changed"),
        Scenario("cvd-0", "CUDA_VISIBLE_DEVICES=0", env={"CUDA_VISIBLE_DEVICES": "0"}),
        Scenario("cvd-uuid", "the GPU's full UUID", env={"CUDA_VISIBLE_DEVICES": uuid}),
        Scenario("cvd-uuid-prefix", "a prefix of the GPU's UUID", env={"CUDA_VISIBLE_DEVICES": uuid[:12]}),
        Scenario("cvd-trailing-invalid", "0 then an invalid entry (parsing stops after the GPU)",
                 env={"CUDA_VISIBLE_DEVICES": "0,x"}),
        Scenario("device-order-pci", "CUDA_DEVICE_ORDER=PCI_BUS_ID", env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
        Scenario("alloc-conf-valid", "valid allocator settings for torch and JAX",
                 env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:128",
                      "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}),
        Scenario("dangling-links", "LD_LIBRARY_PATH with dangling cuDNN links (the loader skips them)",
                 env={"LD_LIBRARY_PATH": str(dangling)}),
        Scenario("preload-same-cudnn", "LD_PRELOAD of the pip cuDNN torch loads anyway",
                 env={"LD_PRELOAD": os.path.join(pip_cudnn, "libcudnn.so.9")}),
        Scenario("module-loading-eager", "CUDA_MODULE_LOADING=EAGER", env={"CUDA_MODULE_LOADING": "EAGER"}),
        Scenario("launch-blocking", "CUDA_LAUNCH_BLOCKING=1 left on (slow, works)",
                 env={"CUDA_LAUNCH_BLOCKING": "1"}),
        Scenario("hog-8g", "another process holds 8 GiB", hog_gib=8),
        Scenario("preload-missing-file", "LD_PRELOAD of a file that does not exist (ld.so ignores it)",
                 env={"LD_PRELOAD": "/nonexistent/libfoo.so"}),
        Scenario("nofile-1024", "ulimit -n 1024", shell="ulimit -S -n 1024"),
        Scenario("nofile-64", "ulimit -n 64", ("CD116",), shell="ulimit -S -n 64"),
        Scenario("xla-fraction-small", "XLA_PYTHON_CLIENT_MEM_FRACTION=.001 (starves JAX)", ("CD413",),
                 env={"XLA_PYTHON_CLIENT_MEM_FRACTION": ".001"}),
        # the CUDA driver a program loads
        Scenario("stub-ld-path", "the toolkit's stubs/libcuda.so linked onto LD_LIBRARY_PATH",
                 ("CD111",), env={"LD_LIBRARY_PATH": str(stub_dir)}),
        Scenario("stub-preload", "the toolkit's stub libcuda in LD_PRELOAD", ("CD111",),
                 env={"LD_PRELOAD": str(stub or "")}),
        Scenario("old-driver-ld-path", "a user-space driver 535 on LD_LIBRARY_PATH, kernel module 580",
                 ("CD112",), env={"LD_LIBRARY_PATH": str(driver_dir)}),
        Scenario("old-compat-package", "a CUDA 12.2 forward-compatibility package (535) older than the driver",
                 ("CD112",), env={"LD_LIBRARY_PATH": str(compat_dir)}),
        # the GPUs a program sees
        Scenario("cvd-empty", "CUDA_VISIBLE_DEVICES set but empty", no_gpu, env={"CUDA_VISIBLE_DEVICES": ""}),
        Scenario("cvd-minus-1", "CUDA_VISIBLE_DEVICES=-1", no_gpu, env={"CUDA_VISIBLE_DEVICES": "-1"}),
        Scenario("cvd-index-1", "CUDA_VISIBLE_DEVICES=1 on a one-GPU machine", no_gpu,
                 env={"CUDA_VISIBLE_DEVICES": "1"}),
        Scenario("cvd-bad-uuid", "a UUID of another machine's GPU", no_gpu,
                 env={"CUDA_VISIBLE_DEVICES": "GPU-0badc0de-0000-0000-0000-000000000000"}),
        Scenario("cvd-invalid-first", "an invalid entry first (parsing stops there)", no_gpu,
                 env={"CUDA_VISIBLE_DEVICES": "x,0"}),
        Scenario("cvd-mig", "a MIG UUID on a GPU without MIG", no_gpu,
                 env={"CUDA_VISIBLE_DEVICES": "MIG-0badc0de-0000-0000-0000-000000000000"}),
        Scenario("cvd-repeated", "the same GPU twice", ("CD113", "CD114"), env={"CUDA_VISIBLE_DEVICES": "0,0"}),
        # every library a framework loads
        Scenario("preload-older-cudnn", "LD_PRELOAD of the system cuDNN (another release than torch's)",
                 ("CD317",), env={"LD_PRELOAD": str(system_cudnn or "")}),
        Scenario("system-cudnn-first", "LD_LIBRARY_PATH puts the system cuDNN ahead of torch's",
                 ("CD305", "CD317", "CD408", "CD401"), env={"LD_LIBRARY_PATH": system_dir}),
        Scenario("truncated-sublibrary", "a copy with a truncated libcudnn_engines_precompiled.so.9 first on "
                 "LD_LIBRARY_PATH", ("CD308",), env={"LD_LIBRARY_PATH": str(truncated)}),
        Scenario("truncated-cnn", "a copy with a truncated libcudnn_cnn.so.9 (cuDNN's legacy convolution API) "
                 "first on LD_LIBRARY_PATH", ("CD308",), env={"LD_LIBRARY_PATH": str(truncated_cnn)}),
        Scenario("mixed-sublibrary", "a copy with libcudnn_ops.so.9 of another release first on the path",
                 ("CD305",), env={"LD_LIBRARY_PATH": str(mixed)}),
        Scenario("missing-sublibrary", "a copy without libcudnn_cnn.so.9 first on the path",
                 ("CD304",), env={"LD_LIBRARY_PATH": str(missing)}),
        Scenario("missing-engines", "a copy without the engine sub-libraries first on the path",
                 ("CD304", "CD305"), env={"LD_LIBRARY_PATH": str(missing_engines)}),
        # the frameworks' own settings
        Scenario("alloc-conf-bad-value", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:maybe", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:maybe"}),
        Scenario("alloc-conf-bad-key", "PYTORCH_CUDA_ALLOC_CONF with a misspelt key", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_mb:128"}),
        Scenario("alloc-conf-backend-typo", "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsyn", ("CD411",),
                 env={"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsyn"}),
        Scenario("xla-fraction-above-1", "XLA_PYTHON_CLIENT_MEM_FRACTION=1.5", ("CD411",),
                 env={"XLA_PYTHON_CLIENT_MEM_FRACTION": "1.5"}),
        Scenario("xla-fraction-percent", "XLA_PYTHON_CLIENT_MEM_FRACTION=75%", ("CD411",),
                 env={"XLA_PYTHON_CLIENT_MEM_FRACTION": "75%"}),
        Scenario("xla-allocator-typo", "XLA_PYTHON_CLIENT_ALLOCATOR=cuda", ("CD411",),
                 env={"XLA_PYTHON_CLIENT_ALLOCATOR": "cuda"}),
        Scenario("jax-platforms-typo", "JAX_PLATFORMS=gpuu", ("CD411",), env={"JAX_PLATFORMS": "gpuu"}),
        Scenario("jax-platforms-cpu", "JAX_PLATFORMS=cpu (on purpose)", ("CD412",),
                 env={"JAX_PLATFORMS": "cpu"}, on_purpose=True),
        # resources
        Scenario("ulimit-v-16g", "ulimit -v of 16 GB (a site's or a .bashrc's)", ("CD116",),
                 shell="ulimit -S -v 16000000"),
        Scenario("ulimit-v-64g", "ulimit -v of 64 GB", ("CD116",), shell="ulimit -S -v 64000000"),
        Scenario("ulimit-v-64g-one-gpu", "ulimit -v of 64 GB, one GPU visible", ("CD116",),
                 shell="ulimit -S -v 64000000", env={"CUDA_VISIBLE_DEVICES": "0"}),
        Scenario("ulimit-v-100g", "ulimit -v of 100 GB", ("CD116",), shell="ulimit -S -v 100000000"),
        Scenario("ulimit-v-200g", "ulimit -v of 200 GB", ("CD116",), shell="ulimit -S -v 200000000"),
        Scenario("ulimit-v-8g", "ulimit -v of 8 GB", ("CD116",), shell="ulimit -S -v 8000000"),
        Scenario("ulimit-v-64g-no-prealloc", "ulimit -v of 64 GB, JAX told not to preallocate", ("CD116",),
                 shell="ulimit -S -v 64000000", env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}),
        Scenario("hog-66g", "another process holds 66 GiB of 80", ("CD115", "CD412"), hog_gib=66),
        Scenario("hog-78g", "another process holds 78 GiB of 80", ("CD115",), hog_gib=78),
    ]


def load_scenarios(path: str, machine: dict[str, object]) -> list[Scenario]:
    """The scenarios of the Python file PATH: its build_scenarios(machine). The file imports Scenario (and
    scratch) from this module as `gpu_scenarios` or `benchmarks.gpu_scenarios`: both names are this module."""
    this = sys.modules[__name__]
    sys.modules["gpu_scenarios"] = this
    sys.modules["benchmarks.gpu_scenarios"] = this
    for folder in (str(ROOT), str(ROOT / "benchmarks")):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("scenarios_file", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--scenarios {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    build = getattr(module, "build_scenarios", None)
    if not callable(build):
        raise SystemExit(f"--scenarios {path}: defines no build_scenarios(machine)")
    scenarios = list(build(machine))
    names = [s.name for s in scenarios]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SystemExit(f"--scenarios {path}: {len(twice)} scenario name(s) used twice")
    for scenario in scenarios:
        if not all(hasattr(scenario, f) for f in ("name", "why", "causes", "env", "shell")):
            raise SystemExit(f"--scenarios {path}: build_scenarios returned something that is not a Scenario")
    return scenarios


def runs_alone(scenario: Scenario) -> bool:
    """Memory held by another process, a process limit, JAX's own memory settings: judged with nothing else
    on the GPUs, in the environment exactly as the scenario makes it. A scenario's `alone` overrides the rule."""
    alone = getattr(scenario, "alone", None)
    if alone is not None:
        return bool(alone)
    return bool(scenario.hog_gib or scenario.shell.startswith("ulimit -S -v")
                or any(name.startswith("XLA_PYTHON_CLIENT_") for name in scenario.env))


class Deadline:
    """The whole run's budget: every step's timeout is cut to what is left of it."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def cap(self, timeout: float) -> float:
        return max(1.0, min(timeout, self.left()))


DEADLINE = Deadline(510)


def bash_line(scenario: Scenario, program: list[str], extra: list[str] | None = None) -> str:
    parts = [scenario.shell] if scenario.shell else []
    parts += extra or []
    parts.append("exec " + " ".join(shlex.quote(arg) for arg in program))
    return "; ".join(parts)


def scenario_env(scenario: Scenario, base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    for name in scenario.unset:
        env.pop(name, None)
    env.update(scenario.env)
    return env


def scenario_cwd(scenario: Scenario) -> str:
    return getattr(scenario, "cwd", "") or str(SCRATCH)


# Found on the harness's own PATH: a scenario's PATH (one without the system's folders) must not stop its bash.
BASH = shutil.which("bash") or "/bin/bash"


def run_bash(line: str, env: dict[str, str], timeout: float = 240, cwd: str | None = None) -> tuple[int, str]:
    try:
        process = subprocess.run([BASH, "-c", line], env=env, capture_output=True, text=True,
                                 timeout=DEADLINE.cap(timeout), cwd=cwd or str(SCRATCH), errors="replace",
                                 start_new_session=True)
    except subprocess.TimeoutExpired:
        return 124, "timed out"
    except OSError as error:
        return 127, f"could not start: {error}"
    return process.returncode, (process.stdout + process.stderr).strip()


def shared_env(scenario: Scenario, env: dict[str, str]) -> dict[str, str]:
    """Judges of other scenarios run beside a shared one: JAX must not take 75 % of every GPU meanwhile (the
    doctor's own --deep and fix children get the same environment as the judges)."""
    if runs_alone(scenario) or any(name.startswith("XLA_PYTHON_CLIENT_") for name in scenario.env):
        return env
    return dict(env, XLA_PYTHON_CLIENT_PREALLOCATE="false")


def judge(scenario: Scenario, env: dict[str, str], extra: list[str] | None = None) -> tuple[str, str]:
    results = []
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(run_bash, bash_line(scenario, [sys.executable, "-c", code], extra), env, 180,
                            scenario_cwd(scenario))
                for code in (TORCH_JUDGE, JAX_JUDGE)]
        for job in jobs:
            code, out = job.result()
            lines = [line for line in out.splitlines() if line.strip()]
            ok = code == 0 and any(line.startswith(("torch ok", "jax ok")) for line in lines)
            results.append(("ok: " if ok else "FAIL: ") + " | ".join(lines[-3:])[-600:])
    return results[0], results[1]


def doctor(tree: Path, *args: str) -> list[str]:
    """The doctor of TREE, started as its console script starts it."""
    start = (f"import sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'cudnn-doctor'; "
             "from cudnn_doctor.entry import main; main()")
    return [sys.executable, "-c", start, *args]


def probe(scenario: Scenario, env: dict[str, str], tree: Path) -> dict[str, object] | str:
    """The doctor's own probe child for CUDA, in the scenario's environment (what it saw, for the record)."""
    child, jobs = tree / "cudnn_doctor" / "_job_child.py", ["_probe_jobs"]
    if not child.exists():  # a tree from before the one job child
        child, jobs = tree / "cudnn_doctor" / "_probe_child.py", []
    if not child.exists():
        return "-"
    code, out = run_bash(bash_line(scenario, [sys.executable, "-I", "-S", str(child), *jobs, "cuda", "libcuda.so.1"]), env,
                         timeout=60, cwd=scenario_cwd(scenario))
    return last_json(out) or f"exit {code}: {out[-300:]}"


def findings(scenario: Scenario, env: dict[str, str], tree: Path, args: tuple[str, ...],
             timeout: float, said: list[str] | None = None) -> tuple[int, float, list[str], list[str]]:
    """The exit status, seconds, error codes and warning codes of `cudnn-doctor ARGS` in the scenario's shell; SAID
    gets each error's and warning's 'CODE: message' (what made a code come, to read when a count moves)."""
    started = time.perf_counter()
    code, out = run_bash(bash_line(scenario, doctor(tree, *args)), env, timeout=timeout, cwd=scenario_cwd(scenario))
    seconds = round(time.perf_counter() - started, 2)
    report = last_json(out)
    if report is None:
        return code, seconds, [f"no JSON (exit {code}): {out[-300:]}"], []
    errors, warnings = [], []
    listed = report.get("findings")
    for finding in listed if isinstance(listed, list) else []:
        if not isinstance(finding, dict):
            continue
        if finding.get("severity") == "error":
            errors.append(str(finding.get("code")))
        elif finding.get("severity") == "warning":
            warnings.append(str(finding.get("code")))
        else:
            continue
        if said is not None:
            said.append(f"{finding.get('code')}: {str(finding.get('detail'))[:240]} ({str(finding.get('subject'))[:120]})")
    return code, seconds, errors, warnings


def check(scenario: Scenario, env: dict[str, str], tree: Path, outcome: Outcome) -> None:
    outcome.check_exit, outcome.check_s, outcome.codes, outcome.warnings = findings(
        scenario, env, tree, ("check", "--json"), 120, outcome.said)


def deep_check(scenario: Scenario, env: dict[str, str], tree: Path, outcome: Outcome) -> None:
    outcome.deep_exit, outcome.deep_s, outcome.deep_codes, outcome.deep_warnings = findings(
        scenario, env, tree, ("check", "--deep", "--json"), 240)


def last_json(text: str) -> dict[str, object] | None:
    """The first JSON object in TEXT (stdout and stderr together: ld.so's own lines may follow it)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _end = decoder.raw_decode(text, start)
            return value if isinstance(value, dict) else None
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
    return None


def verified_mark(action: dict[str, object]) -> object:
    """What an action of the plan says of its own verification, whatever the key: True/False, or its words
    ('verified here', or why it could not be verified); None where it says nothing."""
    for key in ("verified", "verification", "verify", "proof"):
        if key in action:
            return action[key]
    outcome = action.get("outcome")
    if isinstance(outcome, dict):
        for key in ("verified", "verification"):
            if key in outcome:
                return outcome[key]
    return None


def is_verified(mark: object) -> bool:
    if isinstance(mark, bool):
        return mark
    if isinstance(mark, dict):
        return bool(mark.get("verified")) or str(mark.get("status", "")).lower().startswith("verified")
    return isinstance(mark, str) and mark.strip().lower().startswith("verified")


def plan_and_apply(scenario: Scenario, env: dict[str, str], tree: Path, outcome: Outcome) -> list[str]:
    """The plan's env lines for bash, after its runnable actions ran."""
    code, out = run_bash(bash_line(scenario, doctor(tree, "fix", "--json")), env, timeout=240,
                         cwd=scenario_cwd(scenario))
    plan = last_json(out) or {}
    lines: list[str] = []
    marks = []
    actions = [a for a in plan.get("actions") or [] if isinstance(a, dict)] if isinstance(plan.get("actions"), list) \
        else []
    refused = preflight(scenario, env, actions)  # as `fix --yes` does: nothing changes where a package cannot be had
    stopped = refused
    for action in actions:
        mark = verified_mark(action)
        entry = {"kind": action.get("kind"), "resolves": action.get("resolves"), "text": action.get("text"),
                 "argv": action.get("argv"), "verified": mark}
        if mark is not None:
            marks.append(is_verified(mark))
        if action.get("kind") == "env":
            lines += action.get("env", {}).get("bash", [])
        elif action.get("argv") and stopped:
            entry["ran"] = f"not run: {stopped}"
        elif action.get("argv"):
            argv = list(action["argv"])
            if argv and argv[0] == "cudnn-doctor":
                argv = doctor(tree, *argv[1:])
            done, said = run_bash(bash_line(scenario, argv, lines), env, timeout=300, cwd=scenario_cwd(scenario))
            entry["ran"] = f"exit {done}: {said[-300:]}"
            if done != 0:  # `fix --yes` stops at the first step that fails
                stopped = f"an earlier step failed (exit {done})"
        outcome.plan.append(entry)
    if not plan:
        outcome.plan.append({"kind": "no plan", "text": f"exit {code}: {out[-300:]}"})
    outcome.plan_verified = any(marks) if marks else None
    return lines


def preflight(scenario: Scenario, env: dict[str, str], actions: list[dict[str, object]]) -> str:
    """Each pip install of the plan tried with --dry-run first, as `fix --yes` does (doctor/treatment._preflight):
    '' where all can be had, else why, and then no step runs. Round fourteen's runs sourced an `uninstall
    onnxruntime` whose `install onnxruntime-gpu` then failed offline: the machine's own package was gone for every
    later scenario and run on that machine."""
    for action in actions:
        argv = [str(a) for a in action.get("argv") or []] if isinstance(action.get("argv"), list) else []
        if action.get("kind") != "pip" or "install" not in argv:
            continue
        at = argv.index("install") + 1
        trial = [*argv[:at], "--dry-run", "--quiet", *(a for a in argv[at:] if a != "--force-reinstall")]
        done, said = run_bash(bash_line(scenario, trial, []), env, timeout=120, cwd=scenario_cwd(scenario))
        if done != 0:
            return f"pip cannot install it here ({' '.join(argv[at:])}): {said[-200:]}"
    return ""


def start_hog(gib: float, env: dict[str, str]) -> subprocess.Popen[str]:
    hog = subprocess.Popen([sys.executable, "-c", HOG, str(gib)], env=env, stdout=subprocess.PIPE, text=True,
                           start_new_session=True)
    line = hog.stdout.readline() if hog.stdout else ""
    if not line.startswith("holding"):
        raise RuntimeError(f"the memory hog did not start: {line!r}")
    return hog


def prepare(scenario: Scenario, base: dict[str, str]) -> str:
    """Write the scenario's files and run its setup snippet, once; '' or what went wrong."""
    try:
        for path, content in (getattr(scenario, "files", None) or {}).items():
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
    except OSError as error:
        return f"files: {error}"
    setup = getattr(scenario, "setup", "")
    if setup:
        code, out = run_bash(setup, base, timeout=120)
        if code != 0:
            return f"setup exit {code}: {out[-300:]}"
    return ""


def run_scenario(scenario: Scenario, base: dict[str, str], tree: Path, judges: dict[str, dict[str, str]],
                 fix: bool, deep: bool, setup_error: str = "") -> Outcome:
    outcome = Outcome(scenario.name)
    started = time.perf_counter()
    if setup_error or DEADLINE.left() < 30:
        outcome.setup_error = setup_error
        outcome.verdict = outcome.deep_verdict = "not run" if not setup_error else "setup failed"
        return outcome
    env = shared_env(scenario, scenario_env(scenario, base))
    hog = start_hog(scenario.hog_gib, base) if scenario.hog_gib else None
    try:
        if scenario.name in judges:
            outcome.torch, outcome.jax = judges[scenario.name]["torch"], judges[scenario.name]["jax"]
        else:
            outcome.torch, outcome.jax = judge(scenario, env)
        outcome.fails = not (outcome.torch.startswith("ok") and outcome.jax.startswith("ok"))
        with concurrent.futures.ThreadPoolExecutor(3) as pool:  # the doctor's answers do not depend on each other
            jobs = [pool.submit(check, scenario, env, tree, outcome),
                    pool.submit(lambda: setattr(outcome, "probe", probe(scenario, env, tree)))]
            if deep:
                jobs.append(pool.submit(deep_check, scenario, env, tree, outcome))
            for job in jobs:
                job.result()
        if fix and outcome.fails and DEADLINE.left() > 30:
            lines = plan_and_apply(scenario, env, tree, outcome)
            outcome.after_torch, outcome.after_jax = judge(scenario, env, lines)
            outcome.fixed = outcome.after_torch.startswith("ok") and outcome.after_jax.startswith("ok")
    finally:
        if hog is not None:
            os.killpg(hog.pid, signal.SIGKILL)
            hog.wait()
    outcome.wall_s = round(time.perf_counter() - started, 1)
    if DEADLINE.left() < 2:  # a step was cut short by the run's budget: its answer is not the program's
        outcome.verdict = outcome.deep_verdict = "not run"
        return outcome
    outcome.verdict, outcome.deep_verdict = verdicts(scenario, outcome, deep)
    return outcome


def verdicts(scenario: Scenario, outcome: Outcome, deep: bool) -> tuple[str, str]:
    """Plain check: named by an error or a warning of a cause code. check --deep: named by an error only."""
    causes = set(scenario.causes)
    if scenario.on_purpose:
        plain = "warned" if causes & set(outcome.warnings) and not outcome.codes else "not warned"
        deep_word = ("warned" if causes & set(outcome.deep_warnings) and not outcome.deep_codes
                     else "not warned") if deep else "-"
        return plain, deep_word
    if not outcome.fails:
        plain = "clean" if not outcome.codes else "FALSE ERROR"
        deep_word = ("clean" if not outcome.deep_codes else "FALSE ERROR") if deep else "-"
        return plain, deep_word
    if not causes:
        return "unmapped", "unmapped" if deep else "-"
    if causes & set(outcome.codes) or causes & set(outcome.warnings):
        plain = "named"
    else:
        plain = "error, other cause" if outcome.codes else "MISSED"
    if not deep:
        return plain, "-"
    if causes & set(outcome.deep_codes):
        return plain, "named"
    return plain, "error, other cause" if outcome.deep_codes else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--scenarios", help="a Python file defining build_scenarios(machine) -> list[Scenario]")
    parser.add_argument("--quiet-cases", action="store_true",
                        help="print no scenario's name or row: the figures only")
    parser.add_argument("--only", default="")
    parser.add_argument("--judges", help="scenarios.json of an earlier run: reuse its first judges")
    parser.add_argument("--doctor-tree", default=str(ROOT))
    parser.add_argument("--no-fix", action="store_true")
    parser.add_argument("--no-deep", action="store_true", help="do not run check --deep")
    parser.add_argument("--parallel", type=int, default=6)
    parser.add_argument("--budget-s", type=float, default=510,
                        help="no scenario starts after this many seconds; each step's timeout is cut to fit")
    parser.add_argument("--rescore", type=Path,
                        help="an earlier run's scenarios.json: its outcomes judged again against --scenarios' causes "
                             "(as that run's machine built them), nothing run; the figures only")
    options = parser.parse_args()
    if options.rescore:
        return rescore(options)
    global DEADLINE
    DEADLINE = Deadline(options.budget_s)
    quiet = options.quiet_cases
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    machine = facts()
    if not quiet:
        print(json.dumps(machine, indent=1), flush=True)
    scenarios = load_scenarios(options.scenarios, machine) if options.scenarios else build_scenarios(machine)
    if options.only:
        wanted = set(options.only.split(","))
        scenarios = [s for s in scenarios if s.name in wanted]
    judges: dict[str, dict[str, str]] = {}
    if options.judges:
        for entry in json.loads(Path(options.judges).read_text())["outcomes"]:
            judges[entry["name"]] = {"torch": entry["torch"], "jax": entry["jax"]}
    base = dict(os.environ, PIP_RETRIES="0", PIP_TIMEOUT="5")  # no index can be reached from the GPU machine
    tree = Path(options.doctor_tree).resolve()  # the scenarios run in their own folders: a relative tree would not be found
    setup_errors = {s.name: prepare(s, base) for s in scenarios}
    shared = [s for s in scenarios if not runs_alone(s)]
    alone = [s for s in scenarios if s not in shared]
    outcomes: dict[str, Outcome] = {}
    lock = threading.Lock()
    started = time.perf_counter()
    fix, deep = not options.no_fix, not options.no_deep

    def done(outcome: Outcome) -> None:
        with lock:
            outcomes[outcome.name] = outcome
            if not quiet:
                print(f"{outcome.name:28} {outcome.verdict:18} deep={outcome.deep_verdict:18} {outcome.codes} "
                      f"fixed={outcome.fixed} verified={outcome.plan_verified}", flush=True)
            else:
                print(f"{len(outcomes)} of {len(scenarios)} done", flush=True)
            write_results(out, machine, scenarios, outcomes, started, options)

    def one(scenario: Scenario) -> None:
        done(run_scenario(scenario, base, tree, judges, fix, deep, setup_errors[scenario.name]))

    # the scenarios alone first, one at a time (another process's memory or a limit: nothing else on the GPU
    # meanwhile), then the shared ones side by side
    for scenario in alone:
        one(scenario)
    with concurrent.futures.ThreadPoolExecutor(options.parallel) as pool:
        for job in [pool.submit(one, s) for s in shared]:
            job.result()
    score = write_results(out, machine, scenarios, outcomes, started, options)
    if not quiet:
        print_table([outcomes[s.name] for s in scenarios if s.name in outcomes])
    print("\n" + summary_line(score))
    print(json.dumps(score))
    return 0


def write_results(out: Path, machine: dict[str, object], scenarios: list[Scenario], outcomes: dict[str, Outcome],
                  started: float, options: argparse.Namespace) -> dict[str, object]:
    """DIR/scenarios.json (every case) and DIR/summary.json (the figures only), rewritten after each scenario."""
    ordered = [outcomes.get(s.name) or Outcome(s.name, verdict="not run", deep_verdict="not run") for s in scenarios]
    score = summarise(scenarios, ordered)
    score["wall_s"] = round(time.perf_counter() - started, 1)
    score["scenarios_file"] = bool(options.scenarios)
    score["deep"] = not options.no_deep
    score["fix"] = not options.no_fix
    cases = [dict(asdict(o), predicted=getattr(s, "predicted", ""), causes=list(s.causes),
                  cause_class=getattr(s, "cause_class", "")) for s, o in zip(scenarios, ordered, strict=True)]
    (out / "scenarios.json.tmp").write_text(json.dumps({"machine": machine, "score": score, "outcomes": cases},
                                                       indent=1))
    os.replace(out / "scenarios.json.tmp", out / "scenarios.json")
    (out / "summary.json.tmp").write_text(json.dumps(score, indent=1) + "\n")
    os.replace(out / "summary.json.tmp", out / "summary.json")
    return score


def rescore(options: argparse.Namespace) -> int:
    """An earlier run's outcomes, their verdicts given again by the causes of --scenarios as they are now (a
    sealed set whose causes were mapped onto codes added since): the same outputs, judged by the same rule."""
    saved = json.loads(Path(options.rescore).read_text())
    scenarios = load_scenarios(options.scenarios, saved["machine"]) if options.scenarios else \
        build_scenarios(saved["machine"])
    by_name = {s.name: s for s in scenarios}
    known = {f.name for f in fields(Outcome)}
    outcomes = []
    for entry in saved["outcomes"]:
        outcome = Outcome(**{key: value for key, value in entry.items() if key in known})
        if outcome.name in by_name and outcome.verdict not in ("not run", "setup failed"):
            outcome.verdict, outcome.deep_verdict = verdicts(by_name[outcome.name], outcome, bool(outcome.deep_exit is not None))
        outcomes.append(outcome)
    score = {**summarise([by_name[o.name] for o in outcomes if o.name in by_name],
                         [o for o in outcomes if o.name in by_name]), "wall_s": saved["score"].get("wall_s")}
    print(summary_line(score))
    print(json.dumps(score))
    return 0


def summarise(scenarios: list[Scenario], outcomes: list[Outcome]) -> dict[str, object]:
    by_name = {s.name: s for s in scenarios}
    ran = [o for o in outcomes if o.verdict not in ("not run", "setup failed")]
    failing = [o for o in ran if o.fails and not by_name[o.name].on_purpose]
    mapped = [o for o in failing if by_name[o.name].causes]
    working = [o for o in ran if not o.fails]
    purpose = [o for o in ran if by_name[o.name].on_purpose]
    tried = [o for o in failing if o.fixed is not None]
    predicted = [o for o in ran if getattr(by_name[o.name], "predicted", "") in ("fails", "works")]
    return {
        "scenarios": len(outcomes), "ran": len(ran),
        "not_run": sum(o.verdict == "not run" for o in outcomes),
        "setup_failed": sum(o.verdict == "setup failed" for o in outcomes),
        "failing": len(failing), "failing_mapped": len(mapped),
        "failing_unmapped": len(failing) - len(mapped),
        "named": sum(o.verdict == "named" for o in mapped),
        "named_by_error": sum(bool(set(by_name[o.name].causes) & set(o.codes)) for o in mapped),
        "error_other_cause": sum(o.verdict == "error, other cause" for o in mapped),
        "missed": sum(o.verdict == "MISSED" for o in mapped),
        "unmapped_with_error": sum(bool(o.codes) for o in failing if not by_name[o.name].causes),
        "unmapped_with_warning": sum(bool(o.warnings) for o in failing if not by_name[o.name].causes),
        "deep_named": sum(o.deep_verdict == "named" for o in mapped),
        "deep_error_other_cause": sum(o.deep_verdict == "error, other cause" for o in mapped),
        "deep_missed": sum(o.deep_verdict == "MISSED" for o in mapped),
        "unmapped_deep_error": sum(bool(o.deep_codes) for o in failing if not by_name[o.name].causes),
        "working": len(working), "false_errors": sum(o.verdict == "FALSE ERROR" for o in working),
        "deep_false_errors": sum(o.deep_verdict == "FALSE ERROR" for o in working),
        "working_with_warning": sum(bool(o.warnings) for o in working if not by_name[o.name].on_purpose),
        "on_purpose": len(purpose), "warned": sum(o.verdict == "warned" for o in purpose),
        "fix_tried": len(tried), "fixed": sum(bool(o.fixed) for o in tried),
        "plan_says_verified": sum(o.plan_verified is True for o in tried),
        "plan_says_not_verified": sum(o.plan_verified is False for o in tried),
        "plan_silent_on_verification": sum(o.plan_verified is None for o in tried),
        "verified_and_cured": sum(o.plan_verified is True and bool(o.fixed) for o in tried),
        "verified_not_cured": sum(o.plan_verified is True and not o.fixed for o in tried),
        "predicted": len(predicted),
        "prediction_right": sum((by_name[o.name].predicted == "fails") == o.fails for o in predicted),
        "median_check_s": median([o.check_s for o in ran if o.check_s]),
        "median_deep_s": median([o.deep_s for o in ran if o.deep_s]),
    }


def median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else round((ordered[middle - 1] + ordered[middle]) / 2, 2)


def summary_line(score: dict[str, object]) -> str:
    """The figures only: no scenario's name."""
    return (f"scenarios {score['ran']} run of {score['scenarios']} ({score['not_run']} not run, "
            f"{score['setup_failed']} setup failed) in {score['wall_s']} s | failing {score['failing']} "
            f"({score['failing_unmapped']} with no cause code) | check named {score['named']} of "
            f"{score['failing_mapped']} ({score['named_by_error']} by an error; {score['error_other_cause']} error of "
            f"another cause, {score['missed']} missed) | check --deep named {score['deep_named']} of "
            f"{score['failing_mapped']} | working {score['working']}: false errors {score['false_errors']} "
            f"(--deep {score['deep_false_errors']}) | on purpose warned {score['warned']} of {score['on_purpose']} | "
            f"cured {score['fixed']} of {score['fix_tried']} (plan says verified: {score['plan_says_verified']}, "
            f"of them cured {score['verified_and_cured']}) | predictions right {score['prediction_right']} of "
            f"{score['predicted']}")


def print_table(outcomes: list[Outcome]) -> None:
    print("\n| scenario | torch | JAX | check: errors | verdict | --deep: errors | verdict | plan | verified | "
          "fixed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for o in outcomes:
        plan = ", ".join(f"{a['kind']}" for a in o.plan) or "-"
        print(f"| {o.name} | {o.torch[:70]} | {o.jax[:70]} | {' '.join(o.codes) or '-'} | {o.verdict} | "
              f"{' '.join(o.deep_codes) or '-'} | {o.deep_verdict} | {plan} | "
              f"{'-' if o.plan_verified is None else ('yes' if o.plan_verified else 'no')} | "
              f"{'-' if o.fixed is None else ('yes' if o.fixed else 'no')} |")


if __name__ == "__main__":
    sys.exit(main())
