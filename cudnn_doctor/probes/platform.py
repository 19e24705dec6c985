"""Where the doctor runs: plain Linux, WSL 2, a container, a Jetson (Windows is the OS probe's), and what showed it.

Every signal is a row of compat/platforms.toml (a path, a variable, a word in a /proc file) read through the
SearchContext, so a prefix (CUDNN_DOCTOR_SYSTEM_PREFIX) stands in for the machine in tests and for a mounted
image. A strong signal decides alone; markers (files a copied image keeps, such as /.dockerenv) count only two
together; hints are recorded and never decide. No verdict here: the rules judge (rules/platform.py).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.knowledge.platforms import jetpack_row
from cudnn_doctor.model import Platform
from cudnn_doctor.probes.context import SearchContext
from cudnn_doctor.probes.loader import resolve_like_loader
from cudnn_doctor.user_files import UnreadableFile, read_user_file

PROC_LIMIT = 256 << 10  # /proc/self/mountinfo of a busy host: tens of kilobytes
NVIDIA_VARIABLES = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
                    "NVIDIA_DISABLE_REQUIRE", "CUDA_VERSION", "NV_CUDNN_VERSION", "NV_CUDA_CUDART_VERSION")
DRIVER_SONAMES = ("libcuda.so.1", "libnvidia-ml.so.1")
DEVICE_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm")
# engines that bind the host's /dev into every container (apptainer/apptainer@917d66577
# pkg/util/apptainerconf/config.go: `mount dev` defaults to yes), GPU devices included, with or without --nv
HOST_DEV_ENGINES = ("apptainer", "singularity")
WSL_LIB = "/usr/lib/wsl/lib"


@functools.cache
def soname_file_pattern() -> re.Pattern[str]:
    return re.compile(r"^lib[\w+-]+\.so\.\d+$")


@functools.cache
def l4t_line_pattern() -> re.Pattern[str]:
    return re.compile(r"#\s*R(\d{1,4})\s*\(release\),\s*REVISION:\s*(\d{1,4}(?:\.\d{1,4}){0,2})")


ENGINES = (("kubepods", "kubernetes"), ("libpod", "podman"), ("podman", "podman"), ("docker", "docker"),
           ("containerd", "containerd"), ("crio", "cri-o"), ("lxc", "lxc"), ("buildkit", "buildkit"),
           ("garden", "garden"))


def platform_here() -> Platform:
    """The platform of the machine the doctor runs on, as `check` sees it (for `explain CODE`, which probes nothing
    else)."""
    from cudnn_doctor.probes.loader import ldconfig_cache

    ctx = SearchContext.from_environment()
    return detect_platform(ctx, ldconfig_cache(ctx))


def detect_platform(ctx: SearchContext, cache: dict[str, list[str]]) -> Platform:
    """The platform of the machine under CTX (its prefix and environment), with the evidence."""
    if ctx.os_name == "windows":
        return Platform("windows", evidence=("the operating system is Windows",))
    hits: dict[str, list[tuple[str, str]]] = {"wsl2": [], "container": [], "jetson": []}
    named_engine = None  # the engine the first signal found that names one names (Apptainer's variables)
    for row in load("platforms").get("signal", []):
        seen = _read_signal(ctx, row)
        if seen is not None:
            hits.setdefault(row["platform"], []).append((row["weight"], seen))
            named_engine = named_engine or row.get("engine")
    decided = {name: _decides(found) for name, found in hits.items()}
    evidence: list[str] = []
    ignored: list[str] = []
    for name, found in hits.items():
        for weight, text in found:
            (evidence if decided[name] and weight != "hint" else ignored).append(text)
    kind = next((name for name in ("jetson", "wsl2", "container") if decided[name]), "linux")
    facts: dict[str, Any] = {"nvidia_env": {v: ctx.env[v] for v in NVIDIA_VARIABLES if v in ctx.env}}
    if decided["container"]:
        facts["container"] = _engine(ctx, [text for _, text in hits["container"]], named_engine)
        facts["driver_injected"] = _driver_injected(ctx, cache, facts["container"])
    if decided["wsl2"]:
        facts.update(_wsl_facts(ctx, cache))
    if decided["jetson"]:
        facts.update(_jetson_facts(ctx, cache))
    if not decided["container"]:
        facts.update(_container_host_facts(ctx))
    facts["nvidia_devices"] = nvidia_devices(ctx, kind, facts.get("board"))
    return Platform(kind, evidence=tuple(evidence), ignored=tuple(ignored), **facts)


TOOLKIT_PROGRAMS = ("nvidia-ctk", "nvidia-container-runtime-hook", "nvidia-container-runtime", "nvidia-container-cli")
BIN_DIRS = ("/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin")
CDI_DIRS = ("/etc/cdi", "/var/run/cdi", "/run/cdi")


@functools.cache
def cdi_driver_pattern() -> re.Pattern[str]:
    return re.compile(r"lib(?:cuda|nvidia-ml)\.so\.(\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)")


def _container_host_facts(ctx: SearchContext) -> dict[str, Any]:
    """A host's Docker, NVIDIA Container Toolkit and CDI specs (the driver version each spec's libraries carry)."""
    found = tuple(name for name in TOOLKIT_PROGRAMS
                  if any(os.path.exists(ctx.system(os.path.join(folder, name))) for folder in BIN_DIRS))
    docker = any(os.path.exists(ctx.system(os.path.join(folder, "dockerd"))) for folder in BIN_DIRS)
    specs: dict[str, str | None] = {}
    for folder in CDI_DIRS:
        real = ctx.system(folder)
        try:
            names = sorted(os.listdir(real))[:100]
        except OSError:
            continue
        for name in names:
            if not name.endswith((".yaml", ".yml", ".json")) or os.path.realpath(os.path.join(real, name)) in \
                    {os.path.realpath(p) for p in specs}:
                continue
            text = _read_small(os.path.join(real, name))
            if "nvidia.com/gpu" in text:
                versions = cdi_driver_pattern().findall(text)
                specs[os.path.join(real, name)] = max(versions, key=_padded_version) if versions else None
    return {"docker": docker, "container_toolkit": found, "cdi_specs": specs}


def _padded_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _decides(found: list[tuple[str, str]]) -> bool:
    weights = [weight for weight, _ in found]
    return "strong" in weights or weights.count("marker") >= 2


def _read_signal(ctx: SearchContext, row: dict[str, Any]) -> str | None:
    """The signal of ROW as it reads here, in words, or None where it is not there."""
    kind, what, words = row["kind"], row["what"], [w.lower() for w in row.get("words", [])]
    if kind == "env":
        value = ctx.env.get(what)
        return f"{what}={_short(value)}" if value else None
    if kind == "path":
        return f"{what} exists" if os.path.lexists(ctx.system(what)) else None
    text = _read_small(ctx.system(what)).replace("\0", "")  # a device tree's strings end in NUL
    if not text:
        return None
    if kind == "proc":
        found = next((w for w in words if w in text.lower()), None)
        return f"{what} says {_short(text.strip().splitlines()[0] if text.strip() else text)!r}" if found else None
    if kind == "cgroup":
        for line in text.splitlines():
            path = line.split(":", 2)[-1]
            if any(w in path.lower() for w in words):
                return f"{what}: {_short(line.strip())}"
        return None
    if kind == "mount":
        root = _root_mount(text)
        return f"{what}: / is {root[0]} ({_short(root[1])})" if root and root[0] in words else None
    if kind == "pid1":
        name = text.strip()
        return f"PID 1 is {name!r}, not an init system" if name and name.lower() not in words else None
    return None


def _root_mount(mountinfo: str) -> tuple[str, str] | None:
    """(file system type, source) of the last mount on / in MOUNTINFO (proc(5) format), or None."""
    found = None
    for line in mountinfo.splitlines():
        left, dash, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if dash and len(fields) >= 5 and fields[4] == "/" and after:
            found = (after[0].lower(), after[1] if len(after) > 1 else "")
    return found


def _engine(ctx: SearchContext, seen: list[str], named: str | None = None) -> str:
    if ctx.env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if named:
        return named
    engine = ctx.env.get("container", "").strip().lower()
    if engine:
        return engine
    text = " ".join(seen).lower()
    for word, name in ENGINES:
        if word in text:
            return name
    if os.path.lexists(ctx.system("/run/.containerenv")):
        return "podman"
    if os.path.lexists(ctx.system("/.dockerenv")):
        return "docker"
    return "unknown"


def _driver_injected(ctx: SearchContext, cache: dict[str, list[str]], engine: str | None = None) -> bool:
    """Did the NVIDIA runtime put the driver into this container: its device files, or its libraries where the
    loader finds them? In Apptainer's containers the node's /dev is there whatever the flags (its 'mount dev'
    defaults to yes): only the libraries, which --nv binds, tell."""
    if engine not in HOST_DEV_ENGINES and any(os.path.exists(ctx.system(device)) for device in DEVICE_FILES):
        return True
    return any(resolve_like_loader(soname, [], ctx, cache) for soname in DRIVER_SONAMES)


def _wsl_facts(ctx: SearchContext, cache: dict[str, list[str]]) -> dict[str, Any]:
    folder = ctx.system(WSL_LIB)
    if not os.path.isdir(folder):
        return {}
    copies = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(folder, name)
        if soname_file_pattern().match(name) and not os.path.islink(path) and os.path.isfile(path):
            copies.append(path)
    real_folder = os.path.realpath(folder)
    shadowing = []
    for soname in DRIVER_SONAMES:
        picked = resolve_like_loader(soname, [], ctx, cache)
        if picked and os.path.dirname(os.path.realpath(picked)) != real_folder:
            shadowing.append(picked)
    return {"wsl_lib": folder, "wsl_copies": tuple(copies), "shadowing": tuple(shadowing)}


def _jetson_facts(ctx: SearchContext, cache: dict[str, list[str]]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    release = _read_small(ctx.system("/etc/nv_tegra_release"))
    match = l4t_line_pattern().search(release)
    if match:
        facts["l4t"] = f"{match.group(1)}.{match.group(2)}"
        row = jetpack_row(facts["l4t"])
        if row is not None:
            facts["jetpack"], facts["sbsa"] = row["jetpack"], bool(row["sbsa"])
    model = _read_small(ctx.system("/proc/device-tree/model")).replace("\0", "").strip()
    if model:
        facts["board"] = _short(model)
    for signal in load("platforms").get("signal", []):
        if signal["platform"] == "jetson" and signal["what"].endswith("libcuda.so.1") and \
                os.path.lexists(ctx.system(signal["what"])):
            facts["tegra_libcuda"] = ctx.system(signal["what"])
            break
    return facts


PCI_DEVICES = "/sys/bus/pci/devices"
NVIDIA_VENDOR = "0x10de"  # the PCI ID Repository's vendor 10de, NVIDIA Corporation
MAX_PCI_DEVICES = 4096  # a large server lists a few hundred functions


def nvidia_devices(ctx: SearchContext, kind: str, board: str | None) -> tuple[str, ...] | None:
    """What shows an NVIDIA GPU in this machine, in words: a PCI display controller (class 0x03xxxx, Linux's
    sysfs-bus-pci ABI) of vendor 0x10de, WSL 2's /dev/dxg, a Jetson's integrated GPU. () when the PCI bus lists
    devices and none is one (a laptop, a CI runner, a build box); None when nothing could be asked (no PCI bus to
    read: a sandbox, a board without PCI), where no verdict is drawn from it."""
    if ctx.os_name == "windows":
        return None
    found = []
    if kind == "jetson":
        found.append(f"the Jetson's integrated GPU ({board or 'Jetson Linux'})")
    if os.path.exists(ctx.system("/dev/dxg")):
        found.append("/dev/dxg (WSL 2's GPU paravirtualisation)")
    folder = ctx.system(PCI_DEVICES)
    try:
        names = sorted(os.listdir(folder))[:MAX_PCI_DEVICES]
    except OSError:
        names = []
    for name in names:
        vendor = _read_small(os.path.join(folder, name, "vendor"), 4096).strip().lower()
        device_class = _read_small(os.path.join(folder, name, "class"), 4096).strip().lower()
        if vendor == NVIDIA_VENDOR and device_class.startswith("0x03"):
            found.append(_short(f"PCI {name}: NVIDIA display controller (class {device_class})"))
    if found:
        return tuple(found)
    return () if names else None


def _read_small(path: str, limit: int = PROC_LIMIT) -> str:
    try:
        return read_user_file(path, limit).decode("utf-8", "replace")
    except UnreadableFile:
        return ""


def _short(text: str, limit: int = 160) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def libcuda_target(ctx: SearchContext, cache: dict[str, list[str]]) -> str:
    """What a child should dlopen for libcuda.so.1: the soname, as every program does; under a prefix, the file that
    system's loader picks where only the prefix's cache or folders lead to it (the host's loader knows nothing of the
    prefix), never where LD_PRELOAD or LD_LIBRARY_PATH decide (those the child's loader applies itself)."""
    soname = ctx.layout.libcuda  # libcuda.so.1; nvcuda.dll on Windows
    if ctx.prefix in ("", "/") or ctx.env.get("LD_PRELOAD", "").strip():
        return soname
    picked = resolve_like_loader(soname, [], ctx, cache)
    if picked is None or os.path.abspath(os.path.dirname(picked)) in \
            {os.path.abspath(folder) for folder in ctx.env_paths("LD_LIBRARY_PATH")}:
        return soname
    return picked


def node_driver(ctx: SearchContext) -> tuple[Any, list[Any], str | None]:
    """(driver, GPUs, why NVML failed) of this node, as `check` reads them: NVML in a child, libcuda where NVML
    cannot answer; the loader's cache read for where they are (`image` needs nothing else of the machine)."""
    from cudnn_doctor.probes.driver import NVML_NOT_FOUND, read_driver
    from cudnn_doctor.probes.library_jobs import LIBCUDA_JOB, NVML_JOB, NVML_SONAME, Job, run_jobs
    from cudnn_doctor.probes.loader import ldconfig_cache

    cache = ldconfig_cache(ctx)
    nvml = (run_jobs([NVML_JOB], env=ctx.env)[NVML_JOB] if resolve_like_loader(NVML_SONAME, [], ctx, cache)
            else NVML_NOT_FOUND)
    libcuda = None
    if not nvml.values.get("ok") and resolve_like_loader("libcuda.so.1", [], ctx, cache):
        target = libcuda_target(ctx, cache)
        job = LIBCUDA_JOB if target == LIBCUDA_JOB.target else Job("libcuda", target)
        libcuda = run_jobs([job], env=ctx.env)[job]
    return read_driver(nvml, libcuda)
