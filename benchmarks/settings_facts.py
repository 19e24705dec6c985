"""The settings' data (compat/process_env.toml, issue 45) against the real things on the GPU machine.

For each variable below, one value its reader cannot use (or a path it cannot use) is set alone, and three answers are
recorded side by side: torch's first GPU work (a cuDNN convolution), JAX's, and what plain `cudnn-doctor check`
says of that variable (its findings' codes, severities and evidence). A row whose data says "ignores" must leave
both frameworks working and check with no error; one whose data says "raises" must make the framework fail.

  alloc-keys    the real torch's libc10_cuda.so and libc10.so: which of the data's allocator keys they hold as
                strings, what probes/settings.py answers for them, and torch refusing a key they lack
  names         which of the data's variables the installed files name, family by family (JAX_, XLA_, NCCL_)
  values        each variable with a value its reader cannot use: torch, JAX and check
  check-time    plain check's seconds with none of these variables set and with twelve set (five runs each)
  round8        issue 45's round-eight classes, each set up alone in a scratch folder (an errata file that is not
                JSON, TORCH_LOGS, JAX_PLATFORMS with a blank, a cuDNN graph library or nvJitLink the loader refuses,
                a sitecustomize that loads the system's cuDNN): torch, JAX and plain check's errors side by side;
                "false_error" where both ran and check said an error, "missed" where one failed and check named none
                of the expected codes

  round12       issue 45's round-twelve classes: XLA_FLAGS' autotune-results files (missing, a folder, an older
                version, a dump that cannot be written, complete results required with none loaded) and JAX's
                persistent cache with JAX_RAISE_PERSISTENT_CACHE_ERRORS, beside their harmless neighbours; plain
                check and check --deep for each ("deep_named_by_error": --deep's error names the expected code)

  python3 benchmarks/settings_facts.py --out DIR      (writes DIR/settings_facts.json)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = ("import torch; x=torch.randn(2,8,16,16,device='cuda'); "
         "torch.nn.functional.conv2d(x, torch.randn(8,8,3,3,device='cuda')); (x.flatten(1)@x.flatten(1).T).sum().item();"
         " torch.cuda.synchronize(); print('torch ok')")
JAX = ("import jax, jax.numpy as j; x=j.ones((2,8,16,16)); "
       "jax.lax.conv_general_dilated(x, j.ones((8,8,3,3)), (1,1), 'SAME').block_until_ready(); "
       "print('jax ok', jax.devices())")
NOT_A_FOLDER = "/etc/hostname/sub"  # a path under a file: no reader can make or use it

# variable -> a value its reader cannot use, as the data describes it
VALUES = {
    "CUDA_MODULE_LOADING": "lazy",
    "CUDA_DEVICE_MAX_CONNECTIONS": "64",
    "CUDA_SCALE_LAUNCH_QUEUES": "3x",
    "CUDA_COREDUMP_GENERATION_FLAGS": "skip_everything",
    "CUDA_CACHE_PATH": NOT_A_FOLDER,
    "CUDA_CACHE_MAXSIZE": "-5",
    "CUDA_FORCE_JIT": "1",
    "CUDA_DISABLE_JIT": "1",
    "CUDA_INJECTION64_PATH": "/nonexistent/libinjection.so",
    "CUDA_MPS_PIPE_DIRECTORY": "/nonexistent/nvidia-mps",
    "CUDA_LOG_FILE": NOT_A_FOLDER,
    "CUBLAS_WORKSPACE_CONFIG": "4096:8",
    "CUBLASLT_LOG_LEVEL": "verbose",
    "CUDNN_LOGLEVEL_DBG": "7",
    "CUDNN_LOGDEST_DBG": NOT_A_FOLDER,
    "CUDNN_FRONTEND_LOG_FILE": NOT_A_FOLDER,
    "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT": "lots",
    "TORCH_NCCL_BLOCKING_WAIT": "maybe",
    "PYTORCH_NVML_BASED_CUDA_CHECK": "yes",
    "JAX_COMPILATION_CACHE_DIR": NOT_A_FOLDER,
    "JAX_ENABLE_X64": "maybe",
    "JAX_TRACEBACK_FILTERING": "none",
    "JAX_PLATFORM": "cuda",
    "JAX_DEFAULT_MATMUL_PRECISION": "fastest",
    "XLA_PYTHON_CLIENT_PREALLOCATE": "nope",
    "NVIDIA_TF32_OVERRIDE": "2",
}


def run(argv: list[str], env: dict[str, str], timeout: float = 180, lines: int = 4) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd="/tmp")
    except subprocess.TimeoutExpired:
        return {"rc": None, "timed_out": True}
    tail = (done.stdout + done.stderr).strip().splitlines()
    return {"rc": done.returncode, "tail": [line[:300] for line in tail[-lines:]],
            "seconds": round(time.monotonic() - started, 2)}


def doctor_env(extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


def check_says(extra: dict[str, str], variable: str) -> object:
    done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                          env=doctor_env(extra), timeout=300, cwd="/tmp")
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return {"rc": done.returncode, "stderr": done.stderr[-600:]}
    return [{"code": f["code"], "severity": f["severity"], "evidence": f.get("evidence"), "detail": f["detail"][:300]}
            for f in report.get("findings", []) if f.get("subject") == variable]


def one_value(variable: str, value: str) -> dict[str, object]:
    """torch's and JAX's first GPU work and plain check, side by side, with VARIABLE=VALUE alone. JAX does not
    preallocate (several run at once) unless the variable is one of its allocator's own."""
    from concurrent.futures import ThreadPoolExecutor

    extra = {variable: value}
    env = {**os.environ, **extra}
    jax_env = env if variable.startswith("XLA_PYTHON_CLIENT") else {**env, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    with ThreadPoolExecutor(3) as pool:
        torch_run = pool.submit(run, [sys.executable, "-c", TORCH], env)
        jax_run = pool.submit(run, [sys.executable, "-c", JAX], jax_env)
        said_run = pool.submit(check_says, extra, variable)
        torch, jax, said = torch_run.result(), jax_run.result(), said_run.result()
    errors = [f for f in said if isinstance(f, dict) and f.get("severity") == "error"] if isinstance(said, list) else []
    return {"value": value, "torch": torch, "jax": jax, "check": said,
            "false_error": bool(errors) and torch.get("rc") == 0 and jax.get("rc") == 0,
            "missed": not said and (torch.get("rc") != 0 or jax.get("rc") != 0)}


def values() -> dict[str, object]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(3) as pool:  # three variables at a time, each with its three children
        futures = {variable: pool.submit(one_value, variable, value) for variable, value in VALUES.items()}
        return {variable: future.result() for variable, future in futures.items()}


def alloc_keys() -> dict[str, object]:
    sys.path.insert(0, str(ROOT))
    import glob

    import torch  # noqa: F401 - where it is installed

    from cudnn_doctor.knowledge.data import load
    from cudnn_doctor.model import Framework
    from cudnn_doctor.probes.process_env import names_in
    from cudnn_doctor.probes.settings import allocator_keys

    site = str(Path(torch.__file__).resolve().parents[1])
    row = next(r for r in load("process_env")["setting"] if r["variable"] == "PYTORCH_CUDA_ALLOC_CONF")
    files = [p for pattern in row["names_from"] for p in glob.glob(os.path.join(site, pattern))]
    keys = [r["key"] for r in load("process_env")["alloc_conf_key"]]
    held = names_in(files, keys) or set()
    framework = Framework("torch", torch.__version__, None, None, None, "site-packages", details={"site_packages": site})
    answer = allocator_keys(",".join(f"{k}:1" for k in keys) + ",max_split_mb:128", row, [framework])
    refused = run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda'); print('ok')"],
                  {**os.environ, "PYTORCH_CUDA_ALLOC_CONF": "max_split_mb:128"})
    return {"files": files, "data_keys_not_in_the_libraries": [k for k in keys if k not in held],
            "answer": answer.values if answer else None, "torch_with_an_unknown_key": refused}


def names() -> dict[str, object]:
    """Which of the data's variables the installed frameworks' own files name (the files each family's names_from
    globs find): a row whose name they do not hold, or a family whose globs find nothing, is data to look at."""
    sys.path.insert(0, str(ROOT))
    import glob
    import importlib.util

    from cudnn_doctor.knowledge.environment import families, rows
    from cudnn_doctor.model import Framework
    from cudnn_doctor.probes.settings import held_by_libraries, jax_options

    frameworks = []
    for name in ("torch", "jax"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            site = str(Path(spec.origin).resolve().parents[1])
            frameworks.append(Framework(name, None, None, None, None, "site-packages", details={"site_packages": site}))
    out: dict[str, object] = {}
    for family in families():
        if not family.get("names_from"):
            continue
        members = [name for name in rows() if name.startswith(family["prefix"])]
        asked = (jax_options(members, frameworks) if family.get("reader") == "jax_config"
                 else held_by_libraries(members, frameworks))
        out[family["prefix"]] = {"rows_not_named": sorted(n for n, a in asked.items() if a.kind == "unknown"),
                                 "answered": len(asked), "rows": len(members),
                                 "files": sorted({f for a in asked.values() for f in a.files})[:8]}
    # could CUDA's, cuBLAS's and cuDNN's own libraries answer for their families too? (cuDNN 9.19's cannot: no
    # variable's name is plain text in them)
    from cudnn_doctor.elf import ElfError, strings_held

    libraries = {"CUDA_": ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "nvidia/cuda_runtime/lib/libcudart.so.*"],
                 "CUBLAS": ["nvidia/cublas/lib/libcublas.so.*", "nvidia/cublas/lib/libcublasLt.so.*"],
                 "CUDNN_": ["nvidia/cudnn/lib/libcudnn.so.*", "nvidia/cudnn/lib/libcudnn_graph.so.*"]}
    sites = [f.details["site_packages"] for f in frameworks]
    for prefix, patterns in libraries.items():
        members = tuple(name for name in rows() if name.startswith(prefix))
        for pattern in patterns:
            for path in sorted({p for site in sites for p in glob.glob(os.path.join(site, pattern))} |
                               set(glob.glob(pattern) if pattern.startswith("/") else ())):
                try:
                    held = strings_held(os.path.realpath(path), members)
                except ElfError as error:
                    held = {f"ElfError: {error}"}
                out[f"{prefix} in {os.path.basename(path)}"] = {"held": len(held), "rows": len(members),
                                                                "not_held": sorted(set(members) - held)[:40]}
    return out


def check_time() -> dict[str, object]:
    twelve = {name: value for name, value in list(VALUES.items())[:12]}
    out = {}
    for label, extra in (("none", {}), ("twelve", twelve)):
        seconds = []
        for _ in range(5):
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True,
                           env=doctor_env(extra), timeout=300, cwd="/tmp")
            seconds.append(round(time.monotonic() - started, 3))
        out[label] = {"median_s": statistics.median(seconds), "runs": seconds}
    return out


def _bent_copy(source: str, folder: Path, old: bytes, new: bytes) -> str:
    """A copy of SOURCE in FOLDER whose dynamic string OLD is renamed NEW at the same length ("GLIBC": its newest
    GLIBC_2.N need made GLIBC_9.N): the loader refuses the copy. '' where SOURCE has no such string."""
    import re

    data = Path(source).read_bytes()
    if old == b"GLIBC":
        found = set(re.findall(rb"\0(GLIBC_2\.[0-9][0-9.]*)\0", data))
        if not found:
            return ""
        old = max(found, key=lambda n: tuple(int(x) for x in n[6:].split(b".")))
        new = old.replace(b"GLIBC_2.", b"GLIBC_9.", 1)
    if data.count(b"\0" + old + b"\0") != 1:
        return ""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / os.path.basename(source)
    target.write_bytes(data.replace(b"\0" + old + b"\0", b"\0" + new + b"\0"))
    return str(target)


def round8_cases(scratch: Path) -> dict[str, tuple[dict[str, str], tuple[str, ...]]]:
    """label -> (the environment's changes, the codes that name the cause)."""
    import glob

    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "errata-bad.json").write_text('// block an engine\n{"version": 1, "rules": [{"rule_id": "x", '
                                             '"operation": "ConvFwd", "engine": 42},]}\n')
    (scratch / "errata-good.json").write_text('{"version": 1, "rules": [{"rule_id": "x", "operation": "ConvFwd", '
                                              '"engine": 999, "knob": [], "cudnn_version_start": 8000, '
                                              '"cudnn_version_end": -1}]}\n')
    cases: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
        "errata-not-json": ({"CUDNN_ERRATA_JSON_FILE": str(scratch / "errata-bad.json")}, ("CD411", "CD416")),
        "errata-valid": ({"CUDNN_ERRATA_JSON_FILE": str(scratch / "errata-good.json")}, ("CD411", "CD416")),
        # not judged an error yet: does the frontend's ifstream open a folder and throw, or skip it?
        "errata-folder": ({"CUDNN_ERRATA_JSON_FILE": str(scratch)}, ("CD411", "CD417")),
        "torch-logs-level": ({"TORCH_LOGS": "INFO"}, ("CD411",)),
        "torch-logs-names": ({"TORCH_LOGS": "+dynamo,recompiles"}, ("CD411",)),
        "torch-logs-crlf": ({"TORCH_LOGS": "dynamo\r"}, ("CD411",)),
        "jax-platforms-crlf": ({"JAX_PLATFORMS": "cuda\r"}, ("CD411",)),
        "jax-platforms-space": ({"JAX_PLATFORMS": "cuda, cpu"}, ("CD411",)),
        "jax-x64-crlf": ({"JAX_ENABLE_X64": "1\r"}, ("CD411",)),
        "torch-logs-out-no-folder": ({"TORCH_LOGS_OUT": str(scratch / "no-such-folder" / "torch.log")}, ("CD411",)),
        "torch-logs-format-braces": ({"TORCH_LOGS_FORMAT": "{levelname}: {message}"}, ("CD411",)),
    }
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec else []
    graph = next(iter(sorted(p for r in roots for p in glob.glob(os.path.join(r, "cudnn", "lib", "libcudnn_graph.so.9")))), "")
    jitlink = next(iter(sorted(p for r in roots for p in glob.glob(os.path.join(r, "*", "lib", "libnvJitLink.so.*")))), "")
    if graph and _bent_copy(graph, scratch / "graph-dep", b"libdl.so.2", b"liqdl.so.2"):
        cases["graph-missing-dependency"] = ({"LD_LIBRARY_PATH": str(scratch / "graph-dep")}, ("CD307",))
    if graph and _bent_copy(graph, scratch / "graph-glibc", b"GLIBC", b""):
        cases["graph-newer-glibc"] = ({"LD_LIBRARY_PATH": str(scratch / "graph-glibc")}, ("CD307",))
    if jitlink and _bent_copy(jitlink, scratch / "jitlink-glibc", b"GLIBC", b""):
        cases["nvjitlink-newer-glibc"] = ({"LD_LIBRARY_PATH": str(scratch / "jitlink-glibc")}, ("CD203",))
    system = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    cudnn = next((line.split(" => ")[-1].strip() for line in system.splitlines()
                  if line.strip().startswith("libcudnn.so.9 ") and "x86-64" in line), "")
    if cudnn:
        (scratch / "hook").mkdir(exist_ok=True)
        (scratch / "hook" / "sitecustomize.py").write_text(
            f"import ctypes\nctypes.CDLL({os.path.realpath(cudnn)!r}, mode=ctypes.RTLD_GLOBAL)\n")
        cases["sitecustomize-preloads-cudnn"] = ({"PYTHONPATH": str(scratch / "hook")}, ("CD317", "CD408"))
    return cases


def round8() -> dict[str, object]:
    """Each case alone: torch's and JAX's first GPU work and plain check's errors, side by side."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    scratch = Path(tempfile.mkdtemp(prefix="cudnn-doctor-round8-"))

    def one(extra: dict[str, str], causes: tuple[str, ...]) -> dict[str, object]:
        env = {**os.environ, **extra}
        jax_env = {**env, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
        done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                              env={**doctor_env(extra), **({"PYTHONPATH": os.pathsep.join([extra["PYTHONPATH"], str(ROOT)])}
                                                           if "PYTHONPATH" in extra else {})}, timeout=300, cwd="/tmp")
        try:
            said = [(f["code"], f["severity"], f.get("evidence")) for f in json.loads(done.stdout)["findings"]]
        except (ValueError, KeyError):
            said = [("unreadable", done.stderr[-300:], None)]
        torch, jax = run([sys.executable, "-c", TORCH], env), run([sys.executable, "-c", JAX], jax_env)
        failed = torch.get("rc") != 0 or jax.get("rc") != 0
        named = [s for s in said if s[0] in causes]
        return {"env": {k: repr(v) for k, v in extra.items()}, "torch": torch, "jax": jax, "check": said,
                "false_error": not failed and any(s[1] == "error" for s in said),
                "missed": failed and not named, "named_by_error": failed and any(s[1] == "error" for s in named)}

    cases = round8_cases(scratch)
    with ThreadPoolExecutor(2) as pool:
        futures = {label: pool.submit(one, extra, causes) for label, (extra, causes) in cases.items()}
        return {label: future.result() for label, future in futures.items()}


JAX_READBACK = ("import jax, jax.numpy as j, numpy; x=j.ones((2,8,16,16)); "
                "y=jax.lax.conv_general_dilated(x, j.ones((8,8,3,3)), (1,1), 'SAME'); "
                "print('jax readback ok', float(y.sum()), numpy.asarray(y).shape, jax.devices())")
TORCH_COMPILE = ("import torch; f=torch.compile(lambda x: torch.sin(x) * 2 + 1); "
                 "print('compiled ok', f(torch.randn(64, device='cuda')).sum().item())")
TORCHRUN_LIKE = ("import os, torch; torch.cuda.set_device(int(os.environ.get('LOCAL_RANK', '0'))); "
                 "print('rank device ok', torch.zeros(1, device='cuda').device)")
EXTRA = {"jax_readback": JAX_READBACK, "torch_compile": TORCH_COMPILE, "torchrun_like": TORCHRUN_LIKE}


def round9_cases(scratch: Path) -> dict[str, tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]]:
    """label -> (the environment's changes, the codes that name the cause, the extra programs that judge it beside
    torch's and JAX's first GPU work: a JAX program that reads its result back, torch.compile, a torchrun worker's
    torch.cuda.set_device(LOCAL_RANK))."""
    import shutil

    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "a-file").write_text("a file\n")
    noexec = ""
    if shutil.which("findmnt"):
        found = subprocess.run(["findmnt", "-rn", "-O", "noexec", "-o", "TARGET"], capture_output=True, text=True)
        noexec = next((line for line in found.stdout.split() if os.access(line, os.W_OK)), "")
    cases: dict[str, tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]] = {}
    for share in ("0.001", "0.002", "0.005", "0.01", "0.02", "0.05"):  # where JAX's first convolution starts working
        cases[f"xla-client-share-{share}"] = ({"XLA_CLIENT_MEM_FRACTION": share}, ("CD413",), ("jax_readback",))
    cases.update({
        "share-0.001-platform-allocator": ({"XLA_CLIENT_MEM_FRACTION": "0.001", "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"},
                                           ("CD413",), ("jax_readback",)),
        "xla-client-percent": ({"XLA_CLIENT_MEM_FRACTION": "75%"}, ("CD411",), ()),
        "xla-both-names": ({"XLA_CLIENT_MEM_FRACTION": ".5", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}, ("CD411",), ()),
        "share-2-unified": ({"XLA_CLIENT_MEM_FRACTION": "2.0", "TF_FORCE_UNIFIED_MEMORY": "1"}, ("CD412", "CD413"),
                            ("jax_readback",)),
        "share-2-alone": ({"XLA_CLIENT_MEM_FRACTION": "2.0"}, ("CD412", "CD413"), ("jax_readback",)),
        "old-share-2-unified": ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "2.0", "TF_FORCE_UNIFIED_MEMORY": "1"},
                                ("CD412", "CD413"), ("jax_readback",)),
        "allocator-vmm": ({"XLA_PYTHON_CLIENT_ALLOCATOR": "vmm"}, ("CD411",), ()),
        # jaxlib's float() takes these (no ValueError at the plugin's start); check calls them CD411 errors by the row's
        # minimum: is JAX on the GPU then? (round fifteen's red-team: false_error here means the verdict is wrong)
        "share-nan": ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "nan"}, ("CD411",), ("jax_readback",)),
        "share-minus-inf": ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "-inf"}, ("CD411",), ("jax_readback",)),
        "share-5000-digits": ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "9" * 5000}, ("CD411",), ("jax_readback",)),
        "share-arabic-indic-half": ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "\u0660.\u0665"}, (), ("jax_readback",)),
        "transfer-guard-disallow": ({"JAX_TRANSFER_GUARD": "disallow"}, ("CD411",), ("jax_readback",)),
        "transfer-guard-h2d": ({"JAX_TRANSFER_GUARD_HOST_TO_DEVICE": "disallow"}, ("CD411",), ("jax_readback",)),
        "transfer-guard-d2h": ({"JAX_TRANSFER_GUARD_DEVICE_TO_HOST": "disallow"}, ("CD411",), ("jax_readback",)),
        "transfer-guard-log": ({"JAX_TRANSFER_GUARD": "log"}, ("CD411",), ("jax_readback",)),
        "debug-infs": ({"JAX_DEBUG_INFS": "1"}, ("CD412",), ("jax_readback",)),
        "enable-checks": ({"JAX_ENABLE_CHECKS": "1"}, ("CD412",), ("jax_readback",)),
        "inductor-under-a-file": ({"TORCHINDUCTOR_CACHE_DIR": str(scratch / "a-file" / "inductor")}, ("CD417",),
                                  ("torch_compile",)),
        "triton-under-a-file": ({"TRITON_CACHE_DIR": str(scratch / "a-file" / "triton")}, ("CD417",),
                                ("torch_compile",)),
        "rtld-global-1": ({"TORCH_USE_RTLD_GLOBAL": "1"}, (), ()),
        "launcher-consistent": ({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                                 "MASTER_PORT": "29500"}, ("CD414",), ("torchrun_like",)),
        "local-rank-past-the-gpus": ({"LOCAL_RANK": "7", "CUDA_VISIBLE_DEVICES": "0"}, ("CD414",), ("torchrun_like",)),
    })
    cases["triton-libcuda-missing"] = ({"TRITON_LIBCUDA_PATH": str(scratch / "no-libcuda")}, ("CD417",),
                                       ("torch_compile",))
    (scratch / "no-libcuda").mkdir(exist_ok=True)
    cases["triton-ptxas-missing"] = ({"TRITON_PTXAS_PATH": str(scratch / "no-ptxas")}, ("CD417",), ("torch_compile",))
    if noexec:
        cases["tmpdir-on-noexec"] = ({"TMPDIR": noexec}, ("CD417",), ("torch_compile",))
        cases["inductor-on-noexec"] = ({"TORCHINDUCTOR_CACHE_DIR": os.path.join(noexec, "cudnn-doctor-inductor"),
                                        "TRITON_CACHE_DIR": os.path.join(noexec, "cudnn-doctor-triton")}, ("CD417",),
                                       ("torch_compile",))
    return cases


DEEP_CASES = ("transfer-guard-disallow", "xla-both-names", "xla-client-share-0.01")


def round12_cases(scratch: Path) -> dict[str, tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]]:
    """Round twelve's classes (compat [[xla_path_flag]], JAX_COMPILATION_CACHE_DIR raises_with): the files and
    folders XLA's GPU compiler and JAX's strict persistent cache read or write at the first compilation, and their
    harmless neighbours (expected codes empty: nothing may be an error)."""
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "a-file").write_text("a file\n")
    (scratch / "folder").mkdir(exist_ok=True)
    (scratch / "old.textproto").write_text("version: 2\n")
    load, dump = "--xla_gpu_load_autotune_results_from=", "--xla_gpu_dump_autotune_results_to="
    strict = {"JAX_RAISE_PERSISTENT_CACHE_ERRORS": "1"}
    return {
        "autotune-load-missing": ({"XLA_FLAGS": load + str(scratch / "missing.txt")}, ("CD411",), ()),
        "autotune-load-folder": ({"XLA_FLAGS": load + str(scratch / "folder")}, ("CD411",), ()),
        "autotune-load-old-version": ({"XLA_FLAGS": load + str(scratch / "old.textproto")}, ("CD411",), ()),
        "autotune-dump-unwritable": ({"XLA_FLAGS": dump + NOT_A_FOLDER + "/results.txt"}, ("CD411",), ()),
        "autotune-dump-no-folder": ({"XLA_FLAGS": dump + str(scratch / "none" / "results.txt")}, ("CD411",), ()),
        "autotune-dump-writable": ({"XLA_FLAGS": dump + str(scratch / "results.txt")}, (), ()),
        "require-complete-none-loaded": ({"XLA_FLAGS": "--xla_gpu_require_complete_aot_autotune_results=true"},
                                         ("CD411",), ()),
        "deterministic-ops": ({"XLA_FLAGS": "--xla_gpu_deterministic_ops=true"}, (), ()),
        "exclude-nondeterministic": ({"XLA_FLAGS": "--xla_gpu_exclude_nondeterministic_ops=true"}, (), ()),
        "cache-strict-a-file": ({"JAX_COMPILATION_CACHE_DIR": str(scratch / "a-file"), **strict}, ("CD411",),
                                ("jax_readback",)),
        "cache-strict-unmakeable": ({"JAX_COMPILATION_CACHE_DIR": NOT_A_FOLDER, **strict}, ("CD411",), ()),
        "cache-unusable-no-switch": ({"JAX_COMPILATION_CACHE_DIR": str(scratch / "a-file")}, ("CD417",), ()),
        "cache-writable-strict": ({"JAX_COMPILATION_CACHE_DIR": str(scratch / "jax-cache"), **strict}, (), ()),
        "disable-most-optimizations": ({"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}, (), ()),
    }


def round12() -> dict[str, object]:
    """round9's judgement over round12_cases, each with check --deep beside plain check."""
    import tempfile

    return round9(round12_cases(Path(tempfile.mkdtemp(prefix="cudnn-doctor-round12-"))), deep_all=True)


def round9(cases: dict[str, tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]] | None = None,
           deep_all: bool = False) -> dict[str, object]:
    """Each case alone: torch's and JAX's first GPU work, the case's extra programs, and plain check's findings side
    by side (and check --deep's for DEEP_CASES, or every case with DEEP_ALL): "false_error" where every program ran
    and check said an error, "missed" where one failed and check named none of the case's codes."""
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    scratch = Path(tempfile.mkdtemp(prefix="cudnn-doctor-round9-"))

    def said(extra: dict[str, str], *args: str) -> list[tuple[str, str, str | None, str | None]]:
        done = subprocess.run([sys.executable, "-m", "cudnn_doctor", "check", "--json", *args], capture_output=True,
                              text=True, env=doctor_env(extra), timeout=300, cwd="/tmp")
        try:
            return [(f["code"], f["severity"], f.get("evidence"), f.get("subject"))
                    for f in json.loads(done.stdout)["findings"]]
        except (ValueError, KeyError):
            return [("unreadable", done.stderr[-300:], None, None)]

    def one(label: str, extra: dict[str, str], causes: tuple[str, ...], extras: tuple[str, ...]) -> dict[str, object]:
        env = {**os.environ, **extra}
        preallocating = any(name.endswith("MEM_FRACTION") or name == "TF_FORCE_UNIFIED_MEMORY" for name in extra)
        jax_env = env if preallocating else {**env, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
        programs = {"torch": run([sys.executable, "-c", TORCH], env), "jax": run([sys.executable, "-c", JAX], jax_env)}
        for name in extras:
            programs[name] = run([sys.executable, "-c", EXTRA[name]], jax_env if name.startswith("jax") else env,
                                 timeout=300)
        plain = said(extra)
        failed = [name for name, result in programs.items() if result.get("rc") != 0]
        named = [s for s in plain if s[0] in causes and s[3] in extra]
        out: dict[str, object] = {
            "env": {k: repr(v) for k, v in extra.items()}, "programs": programs, "check": plain, "failed": failed,
            "false_error": not failed and any(s[1] == "error" for s in plain),
            "missed": bool(failed) and not named, "named_by_error": bool(failed) and any(s[1] == "error" for s in named)}
        if label in DEEP_CASES or deep_all:
            out["deep"] = [s for s in said(extra, "--deep") if s[3] in extra or s[0] == "CD415"]
            out["deep_named_by_error"] = bool(failed) and any(s[0] in causes and s[1] == "error" for s in out["deep"])
        return out

    cases = cases if cases is not None else round9_cases(scratch)
    with ThreadPoolExecutor(2) as pool:
        futures = {label: pool.submit(one, label, *case) for label, case in cases.items()}
        return {label: future.result() for label, future in futures.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", help="comma-separated facts to gather (default: all)")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    facts: dict[str, object] = {}
    for name, gather in (("alloc-keys", alloc_keys), ("names", names), ("values", values), ("check-time", check_time),
                         ("round8", round8), ("round9", round9), ("round12", round12)):
        if only is not None and name not in only:
            continue
        try:
            facts[name] = gather()
        except Exception as error:  # a fact that could not be gathered says why
            facts[name] = {"error": f"{type(error).__name__}: {error}"}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "settings_facts.json").write_text(json.dumps(facts, indent=1, default=str))
    for fact in ("values", "round8", "round9", "round12"):
        summary = facts.get(fact)
        if isinstance(summary, dict):
            print(fact, "false errors:", [v for v, r in summary.items() if isinstance(r, dict) and r.get("false_error")])
            print(fact, "missed:", [v for v, r in summary.items() if isinstance(r, dict) and r.get("missed")])
    print(json.dumps({k: v for k, v in facts.items() if k not in ("values", "round8")}, indent=1, default=str)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
