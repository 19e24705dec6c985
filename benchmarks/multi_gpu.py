"""Nodes with several GPUs (issue 42): does `check` see the links, NCCL and /dev/shm as the tools and real
torch.distributed do, and does the plan make a broken all-reduce work?

Three parts, in one command, within 8 minutes:

  1. topology: the report's `multi_gpu` part against `nvidia-smi topo -m` (the path of every pair, NV# / PIX /
     PXB / PHB / NODE / SYS) and `nvidia-smi nvlink -s` (the active links of each GPU), and each GPU's PCIe link
     against `nvidia-smi --query-gpu=pcie.link.*`;
  2. bandwidth: `bench --p2p` (per pair and direction; on one GPU the device-to-device copy of that GPU) within
     10 % of the same copy timed in torch side by side; `check --deep`'s all-reduce bus bandwidth within 10 % of
     the same all-reduce (same size, same iterations, one process per GPU as torchrun starts them) timed in torch;
  3. scenarios: the environment bent as users bend it (nothing of the GPUs' own settings), each judged by real
     torch.distributed (an NCCL all-reduce over every GPU, one process each, under a deadline) and a torch
     DataLoader with worker processes (what /dev/shm is for besides NCCL); then `check --deep --json` must name
     the cause of each that fails (an error of one of its codes) and raise no error on those that work; the env
     lines of the plan in that report are sourced and the judges run again (manual steps and container flags
     are not applied: they count as not fixed here).

The scenarios were written before the code that judges them (issue 42's rule); what each is expected to do is
written beside it, and the judges, not the expectation, decide.

  python3 benchmarks/multi_gpu.py OUT_DIR [--only NAME,...] [--skip-scenarios] [--doctor-tree DIR]

Writes OUT_DIR/topology.json, OUT_DIR/bandwidth.json, OUT_DIR/scenarios.json and prints a table of each. Needs:
the GPU machine's python3 with torch, nvidia-smi; gcc (only for the old-libnccl scenario where no other libnccl is
on the machine); unshare (util-linux) for the small /dev/shm.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpu_scenarios import last_json  # the first JSON object of a doctor's output, read one way

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path("/tmp/cudnn-doctor-multigpu")
ALLREDUCE_MIB = 256
ITERATIONS = 20

# One rank of the judge: what torchrun starts once per GPU (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT).
RANK = r"""
import os, sys, time, torch, torch.distributed as dist
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
size = int(sys.argv[1]) * (1 << 20) // 4
x = torch.full((size,), float(rank + 1), device="cuda")
dist.all_reduce(x); torch.cuda.synchronize()
expected = world * (world + 1) / 2
assert float(x[0]) == expected and float(x[-1]) == expected, (float(x[0]), expected)
iterations = int(sys.argv[2])
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
dist.barrier(); start.record()
for _ in range(iterations):
    dist.all_reduce(x)
end.record(); torch.cuda.synchronize()
ms = start.elapsed_time(end) / iterations
algbw = size * 4 / (ms / 1000) / 1e9
busbw = algbw * 2 * (world - 1) / world  # nccl-tests' formula: 0 on one GPU, where algbw is compared
if rank == 0:
    print("allreduce ok: world %d, %.3f ms, algbw %.2f GB/s, busbw %.2f GB/s, nccl %s"
          % (world, ms, algbw, busbw, ".".join(map(str, torch.cuda.nccl.version()))), flush=True)
dist.destroy_process_group()
"""

# torchrun's part: one process per GPU, a free port on 127.0.0.1, every rank under one deadline
LAUNCH = r"""
import os, socket, subprocess, sys, time
world = int(sys.argv[1]); rank_code = sys.argv[2]; mib = sys.argv[3]; iterations = sys.argv[4]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
ranks = []
for rank in range(world):
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port))
    ranks.append(subprocess.Popen([sys.executable, "-c", rank_code, mib, iterations], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"))
deadline = time.monotonic() + float(os.environ.get("JUDGE_DEADLINE_S", "60"))
codes = []
for process in ranks:
    try:
        codes.append(process.wait(timeout=max(0.1, deadline - time.monotonic())))
    except subprocess.TimeoutExpired:
        codes.append(None)
for process in ranks:
    if process.poll() is None:
        process.kill(); process.wait()
out = "".join(process.stdout.read() for process in ranks)
print(out[-3000:])
if None in codes:
    print("HANG: a rank did not finish within the deadline"); sys.exit(124)
sys.exit(max(abs(c) for c in codes))
"""

DATALOADER = r"""
import torch
from torch.utils.data import DataLoader, Dataset
class Big(Dataset):
    def __len__(self): return 8
    def __getitem__(self, i): return torch.full((4 << 20,), float(i))  # 16 MiB: passed through /dev/shm
total = sum(float(batch.sum()) for batch in DataLoader(Big(), batch_size=2, num_workers=2))
print("dataloader ok:", total)
"""

TORCH_COPY = r"""
import json, sys, torch
mib, repeats = int(sys.argv[1]), int(sys.argv[2])
n = torch.cuda.device_count(); out = []
def timed(src, dst):
    for _ in range(3): dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
    with torch.cuda.device(src.device):
        start.record()
        for _ in range(repeats): dst.copy_(src, non_blocking=True)
        end.record()
    torch.cuda.synchronize()
    return src.numel() * repeats / (start.elapsed_time(end) / 1000) / 1e9
for a in range(n):
    src = torch.empty(mib << 20, dtype=torch.uint8, device=f"cuda:{a}")
    if n == 1:
        out.append({"src": 0, "dst": 0, "gbs": timed(src, torch.empty_like(src))})
    for b in range(n):
        if a != b:
            out.append({"src": a, "dst": b, "gbs": timed(src, torch.empty(mib << 20, dtype=torch.uint8,
                                                                              device=f"cuda:{b}"))})
print(json.dumps(out))
"""


@dataclass
class Scenario:
    name: str
    why: str  # what a user did
    expect: str  # "fails" | "works" | "unknown": written before the code; the judges decide
    causes: tuple[str, ...] = ()  # the finding codes that name the cause where it fails
    env: dict[str, str] = field(default_factory=dict)
    wrap: tuple[str, ...] = ()  # argv prefix the judges and check run under (a mount namespace)


@dataclass
class Outcome:
    name: str
    allreduce: str = ""
    dataloader: str = ""
    fails: bool = False
    codes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    check_exit: int | None = None
    check_s: float = 0.0
    allreduce_in_report: object = None
    plan: list[dict[str, object]] = field(default_factory=list)
    after_allreduce: str = ""
    after_dataloader: str = ""
    fixed: bool | None = None
    verdict: str = ""


# Codes (the registry's): CD170 fabric manager, CD171 NVLinks down, CD173 P2P far below its link, CD175 NCCL
# setting names no interface here, CD176 NCCL setting NCCL does not accept, CD177 /dev/shm too small, CD178 another
# libnccl than the framework's, CD179 the all-reduce failed or hung (NCCL's own last words quoted).
SHM_CAUSES = ("CD177", "CD179")


def build_scenarios(machine: dict[str, object]) -> list[Scenario]:
    interfaces = list(machine.get("interfaces") or [])
    every_interface = "^" + ",".join(f"={name}" for name in interfaces) if interfaces else "^lo"
    small_shm = _small_shm_wrap()
    old = str(machine.get("old_libnccl") or "")
    return [
        Scenario("baseline", "nothing bent", "works"),
        Scenario("socket_ifname_none", "NCCL_SOCKET_IFNAME names an interface this node does not have",
                 "fails", ("CD175", "CD179"), {"NCCL_SOCKET_IFNAME": "nonexistent0"}),
        Scenario("socket_ifname_excludes_all", "NCCL_SOCKET_IFNAME excludes every interface of the node",
                 "fails", ("CD175", "CD179"), {"NCCL_SOCKET_IFNAME": every_interface}),
        Scenario("socket_ifname_exact_lo", "NCCL_SOCKET_IFNAME==lo (exact match, loopback: fine on one node)",
                 "works", (), {"NCCL_SOCKET_IFNAME": "=lo"}),
        Scenario("p2p_disable", "NCCL_P2P_DISABLE=1 (slower between GPUs, never broken)", "works", (),
                 {"NCCL_P2P_DISABLE": "1"}),
        Scenario("p2p_level_bogus", "NCCL_P2P_LEVEL=FAST, not one of NCCL's levels", "unknown",
                 ("CD176", "CD179"), {"NCCL_P2P_LEVEL": "FAST"}),
        Scenario("shm_disable", "NCCL_SHM_DISABLE=1", "works", (), {"NCCL_SHM_DISABLE": "1"}),
        Scenario("debug_info", "NCCL_DEBUG=INFO (chatty, not broken)", "works", (), {"NCCL_DEBUG": "INFO"}),
        Scenario("debug_bogus", "NCCL_DEBUG=LOUD, not one of NCCL's levels", "works", (), {"NCCL_DEBUG": "LOUD"}),
        Scenario("ib_hca_missing", "NCCL_IB_HCA names an adapter this node does not have (one node: sockets)",
                 "works", (), {"NCCL_IB_HCA": "mlx5_99"}),
        Scenario("net_gdr_level_bogus", "NCCL_NET_GDR_LEVEL=FAST, not one of NCCL's levels", "unknown",
                 ("CD176", "CD179"), {"NCCL_NET_GDR_LEVEL": "FAST"}),
        *([Scenario("tiny_shm", "/dev/shm of 1 MiB (a container's --shm-size too small), in a mount namespace",
                    "fails", SHM_CAUSES, {}, small_shm)] if small_shm else []),
        Scenario("old_libnccl_first", "an older libnccl.so.2 first on LD_LIBRARY_PATH", "fails", ("CD178", "CD179"),
                 {"LD_LIBRARY_PATH": f"{old}:{os.environ.get('LD_LIBRARY_PATH', '')}".rstrip(":")} if old else {}),
    ]


def _small_shm_wrap() -> tuple[str, ...]:
    """A private mount namespace with a 1 MiB tmpfs on /dev/shm: as root, else as a mapped root user; () where
    neither may be made here (the scenario is then skipped, not judged)."""
    mount = "mount -t tmpfs -o size=1m tmpfs /dev/shm && exec \"$@\""
    for flags in (("-m",), ("-r", "-m")):
        wrap = ("unshare", *flags, "--propagation", "private", "sh", "-c", mount, "sh")
        try:
            if subprocess.run([*wrap, "true"], capture_output=True, timeout=30).returncode == 0:
                return wrap
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ()


def facts() -> dict[str, object]:
    """What this machine has, for the scenarios and the comparisons."""
    found: dict[str, object] = {}
    found["interfaces"] = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []
    found["gpus"] = _smi(["--query-gpu=index,name,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,"
                          "pcie.link.width.current,pcie.link.width.max", "--format=csv,noheader"]).strip().splitlines()
    found["world"] = len(found["gpus"]) or 1  # type: ignore[arg-type]
    found["torch"] = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, "
                                     "torch.cuda.nccl.version())"], capture_output=True, text=True).stdout.strip()
    found["shm"] = _shm()
    found["old_libnccl"], found["old_libnccl_how"] = _old_libnccl()
    return found


def _smi(args: list[str]) -> str:
    try:
        return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _shm() -> dict[str, int] | None:
    try:
        stat = os.statvfs("/dev/shm")
    except OSError:
        return None
    return {"size_mib": stat.f_blocks * stat.f_frsize >> 20, "free_mib": stat.f_bavail * stat.f_frsize >> 20}


def _old_libnccl() -> tuple[str | None, str]:
    """A folder holding a libnccl.so.2 older than torch's: a real one found on the machine if there is one
    (another environment's wheel, a system package), else one built here with gcc that answers ncclGetVersion
    2.18.3 and has nothing else (what an old, partial library does to torch: its loader refuses it)."""
    torch_nccl = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.nccl.version())"],
                                capture_output=True, text=True).stdout.strip()
    candidates = sorted(set(glob.glob("/usr/lib/x86_64-linux-gnu/libnccl.so.2*")
                            + glob.glob("/usr/local/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2")
                            + glob.glob("/usr/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2")
                            + glob.glob("/opt/*/lib*/libnccl.so.2*")
                            + glob.glob("/opt/*/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2")))
    for path in candidates:
        version = subprocess.run([sys.executable, "-c", VERSION_OF, path], capture_output=True, text=True).stdout
        if version.strip() and version.strip() != torch_nccl.replace(" ", "") and "torch" not in path:
            return os.path.dirname(path), f"found: {path} ({version.strip()})"
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        return None, "no older libnccl on this machine and no gcc to build one"
    folder = SCRATCH / "old-nccl"
    folder.mkdir(parents=True, exist_ok=True)
    source = ROOT / "tests" / "fakes" / "fake_nccl.c"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(folder / "libnccl.so.2"), str(source),
                    "-DFAKE_NCCL_VERSION=21803", "-Wl,-soname,libnccl.so.2"], check=True)
    return str(folder), "built with gcc from tests/fakes/fake_nccl.c (ncclGetVersion 2.18.3, no other symbol)"


VERSION_OF = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); v = ctypes.c_int(0)
if lib.ncclGetVersion(ctypes.byref(v)) == 0:
    code = v.value
    print(f"({code // 10000}, {code % 10000 // 100}, {code % 100})" if code >= 20900 else
          f"({code // 1000}, {code % 1000 // 100}, {code % 100})")
"""


# ----------------------------------------------------------------------------------------------------- running
def doctor(tree: Path, *args: str) -> list[str]:
    start = (f"import sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'cudnn-doctor'; "
             "from cudnn_doctor.entry import main; main()")
    return [sys.executable, "-c", start, *args]


def run(argv: list[str], env: dict[str, str], timeout: float = 180, wrap: tuple[str, ...] = (),
        lines: list[str] | None = None) -> tuple[int, str]:
    """ARGV under WRAP, after the bash LINES (a plan's env lines) are sourced."""
    command = " ".join(shlex.quote(a) for a in argv)
    if lines:
        command = "; ".join([*lines, "exec " + command])
        argv = ["bash", "-c", command]
    try:
        done = subprocess.run([*wrap, *argv], env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=str(SCRATCH), errors="replace")
    except subprocess.TimeoutExpired:
        return 124, "timed out"
    return done.returncode, (done.stdout + done.stderr).strip()


def judge(scenario: Scenario, env: dict[str, str], world: int, lines: list[str] | None = None) -> tuple[str, str]:
    results = []
    programs = ([sys.executable, "-c", LAUNCH, str(world), RANK, "64", "5"], [sys.executable, "-c", DATALOADER])
    for program, token in zip(programs, ("allreduce ok", "dataloader ok"), strict=True):
        code, out = run(program, env, timeout=150, wrap=scenario.wrap, lines=lines)
        kept = [line for line in out.splitlines() if line.strip()]
        ok = code == 0 and any(line.startswith(token) for line in kept)
        warn = [line for line in kept if "NCCL WARN" in line][-2:]
        results.append(("ok: " if ok else f"FAIL (exit {code}): ") + " / ".join(warn + kept[-2:])[-700:])
    return results[0], results[1]


def run_scenario(scenario: Scenario, base: dict[str, str], tree: Path, world: int, fix: bool) -> Outcome:
    env = dict(base, **scenario.env)
    outcome = Outcome(scenario.name)
    outcome.allreduce, outcome.dataloader = judge(scenario, env, world)
    outcome.fails = not (outcome.allreduce.startswith("ok") and outcome.dataloader.startswith("ok"))
    started = time.perf_counter()
    code, out = run(doctor(tree, "check", "--deep", "--json"), env, timeout=240, wrap=scenario.wrap)
    outcome.check_s = round(time.perf_counter() - started, 1)
    outcome.check_exit = code
    report = last_json(out)
    if report is None:
        outcome.codes = [f"no JSON (exit {code}): {out[-300:]}"]
    else:
        for finding in report.get("findings", []):  # type: ignore[union-attr]
            (outcome.codes if finding.get("severity") == "error" else outcome.warnings).append(finding["code"])
        outcome.allreduce_in_report = (report.get("multi_gpu") or {}).get("allreduce")  # type: ignore[union-attr]
    if fix and outcome.fails:
        plan = (report or {}).get("plan") or {}  # the plan `check --deep` made: the all-reduce's own finding in it
        lines: list[str] = []
        for action in plan.get("actions", []):  # type: ignore[union-attr]
            outcome.plan.append({"kind": action.get("kind"), "resolves": action.get("resolves"),
                                 "text": action.get("text"), "env": action.get("env")})
            if action.get("kind") == "env":
                lines += (action.get("env") or {}).get("bash", [])
        outcome.after_allreduce, outcome.after_dataloader = judge(scenario, env, world, lines)
        outcome.fixed = outcome.after_allreduce.startswith("ok") and outcome.after_dataloader.startswith("ok")
    named = any(code in scenario.causes for code in outcome.codes)
    if outcome.fails:
        outcome.verdict = "caught" if named else ("error, other cause" if outcome.codes else "MISSED")
    else:
        outcome.verdict = "clean" if not outcome.codes else "FALSE ERROR"
    return outcome


# ----------------------------------------------------------------------------------------------------- topology
def topology(report: dict[str, object]) -> dict[str, object]:
    """The report's pairs, links and PCIe against nvidia-smi's own words."""
    ours = report.get("multi_gpu") or {}
    matrix = _smi(["topo", "-m"])
    nvlink = _smi(["nvlink", "-s"])
    smi_paths = _topo_paths(matrix)
    smi_links = _nvlink_counts(nvlink)
    pairs = []
    for pair in ours.get("pairs", []):  # type: ignore[union-attr]
        a, b = pair["gpus"]
        pairs.append({"gpus": [a, b], "ours": pair.get("path"), "nvidia_smi": smi_paths.get((a, b)),
                      "agree": pair.get("path") == smi_paths.get((a, b))})
    gpus = []
    for gpu in ours.get("gpus", []):  # type: ignore[union-attr]
        index = gpu["index"]
        smi_row = _pcie_row(index)
        gpus.append({"index": index, "nvlinks_active": gpu.get("nvlinks_active"),
                     "nvidia_smi_nvlinks_active": smi_links.get(index, 0),
                     "links_agree": (gpu.get("nvlinks_active") or 0) == smi_links.get(index, 0),
                     "pcie_ours": [gpu.get("pcie_generation"), gpu.get("pcie_generation_max"), gpu.get("pcie_width"),
                                   gpu.get("pcie_width_max")],
                     "pcie_nvidia_smi": smi_row,
                     "pcie_max_agree": smi_row is not None and [gpu.get("pcie_generation_max"),
                                                                gpu.get("pcie_width_max")] == [smi_row[1], smi_row[3]]})
    return {"pairs": pairs, "gpus": gpus, "nvidia_smi_topo_m": matrix, "nvidia_smi_nvlink_s": nvlink,
            "all_agree": bool(gpus) and all(p["agree"] for p in pairs) and all(g["links_agree"] and g["pcie_max_agree"]
                                                                 for g in gpus)}


def _topo_paths(matrix: str) -> dict[tuple[int, int], str]:
    rows = [line.split() for line in matrix.splitlines() if re.match(r"^GPU\d+\s", line)]
    paths = {}
    for row in rows:
        a = int(row[0][3:])
        for b, cell in enumerate(row[1:1 + len(rows)]):
            if a != b:
                paths[(a, b)] = cell
    return paths


def _nvlink_counts(text: str) -> dict[int, int]:
    counts: dict[int, int] = {}
    current = None
    for line in text.splitlines():
        found = re.match(r"^GPU (\d+):", line)
        if found:
            current = int(found.group(1))
            counts[current] = 0
        elif current is not None and re.search(r"Link \d+: [\d.]+ GB/s", line):
            counts[current] += 1
    return counts


def _pcie_row(index: int) -> list[int] | None:
    out = _smi([f"--id={index}", "--query-gpu=pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,"
                "pcie.link.width.max", "--format=csv,noheader,nounits"]).strip()
    try:
        return [int(part) for part in out.split(", ")]
    except ValueError:
        return None


# ----------------------------------------------------------------------------------------------------- bandwidth
def bandwidth(tree: Path, env: dict[str, str], world: int) -> dict[str, object]:
    code, out = run(doctor(tree, "bench", "--p2p", "--json"), env, timeout=240)
    p2p = last_json(out) or {"error": out[-500:], "exit": code}
    code, out = run([sys.executable, "-c", TORCH_COPY, "256", "20"], env, timeout=240)
    copies = json.loads(out.splitlines()[-1]) if code == 0 else []
    compared = []
    for torch_row in copies:
        ours = next((r for r in p2p.get("copies", []) if (r.get("src"), r.get("dst")) ==  # type: ignore[union-attr]
                     (torch_row["src"], torch_row["dst"])), None)
        gbs = ours.get("gbs") if ours else None
        compared.append({"src": torch_row["src"], "dst": torch_row["dst"], "bench_p2p_gbs": gbs,
                         "torch_gbs": round(torch_row["gbs"], 1),
                         "within_10_percent": gbs is not None and abs(gbs / torch_row["gbs"] - 1) <= 0.10})
    code, out = run(doctor(tree, "check", "--deep", "--json"), env, timeout=300)
    report = last_json(out) or {}
    ours_allreduce = (report.get("multi_gpu") or {}).get("allreduce") or {}  # type: ignore[union-attr]
    code, direct = run([sys.executable, "-c", LAUNCH, str(world), RANK, str(ALLREDUCE_MIB), str(ITERATIONS)], env,
                       timeout=240)
    # on one GPU the bus bandwidth is 0 by nccl-tests' formula (2 (n - 1) / n): the algorithm bandwidth is compared
    measure = "busbw" if world > 1 else "algbw"
    found = re.search(measure + r" ([\d.]+) GB/s", direct)
    torch_figure = float(found.group(1)) if found else None
    ours = ours_allreduce.get(f"{measure}_gbs") if isinstance(ours_allreduce, dict) else None
    return {"copies": compared, "bench_p2p": p2p, "allreduce_doctor": ours_allreduce, "allreduce_torch": direct[-600:],
            "compared": measure, "busbw_doctor_gbs": ours, "busbw_torch_gbs": torch_figure,
            "busbw_within_10_percent": bool(ours and torch_figure and abs(ours / torch_figure - 1) <= 0.10),
            "report": report}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--only", default="")
    parser.add_argument("--doctor-tree", default=str(ROOT))
    parser.add_argument("--skip-scenarios", action="store_true")
    parser.add_argument("--parallel", type=int, default=3)
    options = parser.parse_args()
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    machine = facts()
    print(json.dumps(machine, indent=1), flush=True)
    world = int(machine["world"])  # type: ignore[call-overload]
    tree = Path(options.doctor_tree)
    # scenarios run side by side on the GPU(s): JAX (imported by check --deep) must not take 75 % of each meanwhile
    base = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    measured = bandwidth(tree, base, world)
    topo = topology(measured.pop("report"))  # type: ignore[arg-type]
    (out / "topology.json").write_text(json.dumps(topo, indent=1))
    (out / "bandwidth.json").write_text(json.dumps(measured, indent=1))
    print(json.dumps({k: topo[k] for k in ("pairs", "gpus", "all_agree")}, indent=1))
    print(json.dumps({k: measured[k] for k in ("copies", "compared", "busbw_doctor_gbs", "busbw_torch_gbs",
                                               "busbw_within_10_percent")}, indent=1), flush=True)
    if options.skip_scenarios:
        return 0
    scenarios = build_scenarios(machine)
    if options.only:
        scenarios = [s for s in scenarios if s.name in set(options.only.split(","))]
    with concurrent.futures.ThreadPoolExecutor(options.parallel) as pool:
        outcomes = list(pool.map(lambda s: run_scenario(s, base, tree, world, True), scenarios))
    score = {
        "scenarios": len(outcomes), "failing": sum(o.fails for o in outcomes),
        "caught": sum(o.verdict == "caught" for o in outcomes),
        "error_other_cause": sum(o.verdict == "error, other cause" for o in outcomes),
        "missed": sum(o.verdict == "MISSED" for o in outcomes),
        "working": sum(not o.fails for o in outcomes), "false_errors": sum(o.verdict == "FALSE ERROR" for o in outcomes),
        "fixed": sum(bool(o.fixed) for o in outcomes), "wall_s": round(time.perf_counter() - started, 1),
        "world_size": world,
    }
    expectations = {s.name: s.expect for s in scenarios}
    (out / "scenarios.json").write_text(json.dumps({"machine": machine, "score": score, "expected": expectations,
                                                    "outcomes": [asdict(o) for o in outcomes]}, indent=1))
    print("\n| scenario | expected | all-reduce | DataLoader | check: errors | verdict | plan | fixed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for o in outcomes:
        plan = ", ".join(str(a["kind"]) for a in o.plan) or "-"
        print(f"| {o.name} | {expectations[o.name]} | {o.allreduce[:90]} | {o.dataloader[:50]} | "
              f"{' '.join(o.codes) or '-'} | {o.verdict} | {plan} | {'-' if o.fixed is None else o.fixed} |")
    print("\n" + json.dumps(score))
    return 0


if __name__ == "__main__":
    sys.exit(main())
