"""What a program started in this environment gets, judged: the CUDA driver it maps and cuInit's answer
(CD110-CD113), CUDA_VISIBLE_DEVICES (CD113, CD114), other processes' GPU memory (CD115), process limits
(CD116), LD_PRELOAD (CD317), the sub-libraries of the cuDNN each framework loads (CD304, CD305, CD308,
CD319), and the frameworks' own settings (CD411-CD414). Pure: the report and compat/process_env.toml."""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import replace
from typing import Any

from cudnn_doctor.codes import CODES, finding
from cudnn_doctor.knowledge import environment, loader_words
from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import HANGS, LOADER_REFUSED, Finding, Framework, LoadedCudnn, ProcessView, Report
from cudnn_doctor.specifiers import InvalidSpecifier, Specifiers
from cudnn_doctor.versions import ascii_digits, release_in_file_name, version_tuple

GIB = 1 << 30
STARVED_MIB = 1024  # less than this of a GPU is no working share for any framework
MEMORY_HELD_SHARE = 0.5  # other processes holding more than this share of a GPU: worth saying


def _data() -> dict[str, Any]:
    return load("process_env")


def _framework(report: Report, name: str) -> Framework | None:
    return next((f for f in report.frameworks if f.name == name and not f.details.get("assumed")), None)


def _has(report: Report, name: str) -> bool:
    framework = _framework(report, name)
    return framework is not None and not framework.details.get("cpu_only")


def _source(rows: list[dict[str, Any]], key: str, value: object) -> tuple[str, ...]:
    return tuple(row["source"] for row in rows if row.get(key) == value)


# --- the CUDA driver a program maps, and cuInit -------------------------------------------------------------------

def driver_library(report: Report) -> list[Finding]:
    view = report.process
    if view is not None and view.probe_failure and view.libcuda_fifo:  # hung on a FIFO where libcuda.so.1 is looked
        written = next((folder for folder in report.ld_library_path  # for first: not the driver's doing, and no
                        if os.path.join(folder or ".", "libcuda.so.1") == view.libcuda_fifo), "")  # reboot cures it
        return [finding("CD110", subject="libcuda.so.1", evidence="seen", entry=written,
                        proof=f"a child started with this environment that loads libcuda.so.1 "
                              f"{_failure_words(view.probe_failure)}, and {view.libcuda_fifo} is a FIFO",
                        detail=f"{view.libcuda_fifo}, the first libcuda.so.1 on LD_LIBRARY_PATH, is a FIFO: the loader "
                               "opens it and waits for a writer for ever, so every program that loads the CUDA "
                               "driver hangs at start, this one's child too; the driver itself was not reached")]
    # a folder of LD_LIBRARY_PATH that holds the libcuda.so.1 the loader takes first without the driver's NVML beside it
    # (not the driver's own folder) is the entry fix takes out
    failed_entry = view.libcuda_entry if view is not None and view.libcuda_via == "LD_LIBRARY_PATH" and \
        view.libcuda_entry and not view.libcuda_with_nvml else ""
    taken_first = (f"; the libcuda.so.1 the loader takes first is {view.libcuda}"
                   + (f" (LD_LIBRARY_PATH entry {view.libcuda_entry})" if view.libcuda_entry else "")
                   if view is not None and view.libcuda else "")
    if view is not None and view.probe_failure:  # the thing itself failed: a program's first CUDA call would too
        return [finding("CD110", subject=view.libcuda or "libcuda.so.1", evidence="seen", entry=failed_entry,
                        proof=f"a child started with this environment that loads libcuda.so.1 "
                              f"{_failure_words(view.probe_failure)}",
                        detail=f"a child started in this environment that loads libcuda.so.1 and calls cuInit, as "
                               f"every CUDA program does first, {_failure_words(view.probe_failure)}{taken_first}")]
    if view is not None and view.load_error and report.driver.version:
        # the driver is here (its kernel module answered), and a program's loader refused the libcuda.so.1 it
        # found first: an empty, foreign or cut-short file earlier on the path
        entry = next((folder for folder in report.ld_library_path
                      if os.path.join(folder, "libcuda.so.1") in view.load_error), None)
        made = finding("CD110", subject="libcuda.so.1", evidence="seen",
                       proof=f"a child started with this environment could not load libcuda.so.1: {view.load_error}",
                       detail=f"a program started here cannot load libcuda.so.1 ({view.load_error}); the loader "
                              "stops at the first file of that name"
                              + (f", in the LD_LIBRARY_PATH folder {entry}" if entry else ""), entry=entry or "")
        return [made]
    if view is not None and view.changed_process:  # seen: what loading the driver, or cuInit, took from the child
        changes = "; ".join(view.changed_process)
        return [finding("CD110", subject=view.libcuda or "libcuda.so.1", evidence="seen", entry=failed_entry,
                        fault="takes from every program that loads it what it took from the doctor's child",
                        proof=f"a child started with this environment that loads libcuda.so.1 saw it: {changes}",
                        detail=f"a child started in this environment that loads libcuda.so.1 and calls cuInit, as every "
                               f"CUDA program does first, lost what every such program loses ({changes}): the "
                               f"program fails there or after, without its variables, output, files or limits"
                               f"{taken_first}")]
    if view is None or view.cuinit in (None, 0):
        return []
    rows = _data().get("cuda_status", [])
    row = next((r for r in rows if r["status"] == view.cuinit), None)
    code = row["code"] if row else "CD110"
    status = view.cuinit_name or (row["name"] if row else f"CUDA error {view.cuinit}")
    via = _via(view)
    refs = (row["source"],) if row else ()
    said = {"evidence": "seen", "proof": f"cuInit answered {status} in a child started with this environment"}
    if code == "CD111":
        return [finding("CD111", subject=view.libcuda, refs=refs, libcuda=view.libcuda or "libcuda.so.1", via=via,
                        **said)]
    if code == "CD112":
        return [finding("CD112", subject=view.libcuda, refs=refs, **said, libcuda=view.libcuda or "libcuda.so.1",
                        libcuda_version=view.libcuda_version, via=via, kernel_driver=view.kernel_driver or
                        report.driver.version, status=status, cause=row["cause"] if row else status)]
    if code == "CD113":
        if not report.gpus and view.cuda_visible_devices is None:
            return []  # the driver itself sees none: CD102's
        return [finding("CD113", subject="CUDA_VISIBLE_DEVICES", refs=refs, **said, status=status, gpus=len(report.gpus),
                        cause=_hidden_cause(view, report))]
    sanitized = _sanitizer_cause(view)
    if sanitized is not None:  # a sanitizer the child had mapped holds what the driver needs (compat [[sanitizer]])
        row, runtime, value = sanitized
        option = f"{row['option']}={row['cure']}"
        wanted = f"{value}:{option}" if value.strip(" ,:\t\r\n") else option
        made = finding("CD110", subject=row["variable"], refs=(row["source"],), evidence="seen",
                       proof=f"cuInit answered {status} in a child started with this environment, which had {runtime} "
                             f"mapped and {row['variable']} " + (f"without {option}" if value else "unset"),
                       detail=f"cuInit answered {status}", set_variable=row["variable"], set_value=wanted,
                       set_why=row["why"], sanitizer_entry=next((e for e in view.preload if os.path.basename(
                           e).startswith(tuple(row["runtime"]))), ""))
        return [replace(made, detail=(
            f"The CUDA driver could not start in a program started here: cuInit answered {status}. {row['name']} "
            f"({runtime}{', through LD_PRELOAD' if view.preload else ''}) is loaded into every program started here, "
            f"and {row['variable']} does not set {option}: {row['effect']}."))]
    if code == "CD116":
        return [finding("CD116", subject="RLIMIT_AS", refs=refs, **said, limit=_limit_text(view, "RLIMIT_AS"),
                        effect=f"cuInit answers {status} under it: CUDA cannot reserve the address space it starts "
                               "with, so torch sees no GPU and JAX runs on the CPU")]
    if code == "CD170":  # an NVSwitch system whose fabric is not ready (issue 42)
        manager = report.multi_gpu.fabric_manager if report.multi_gpu else None
        return [finding("CD170", subject="nvidia-fabricmanager", refs=refs, **said, detail=f"cuInit answers {status}",
                        manager=manager or "not known", fabric_manager=manager)]
    return [finding("CD110", subject=view.libcuda, refs=refs, **said, detail=f"cuInit answered {status}"
                    + (f" ({row['cause']})" if row else ""))]


def _sanitizer_cause(view: ProcessView) -> tuple[dict[str, Any], str, str] | None:
    """The sanitizer whose reservation made cuInit answer as it did: its row, the run-time the child mapped and its
    options' variable's value, where that status is the row's and its option is not already the cure."""
    for runtime, variable, value in view.sanitizers:
        row = next((r for r in _data().get("sanitizer", []) if r["variable"] == variable), None)
        if row is None or row["status"] != view.cuinit:
            continue
        if sanitizer_flag(value, str(row["option"])) not in (row["cure"], *(FALSE_WORDS if row["cure"] == "0" else ())):
            return row, runtime, value
    return None


FALSE_WORDS = ("0", "no", "false")  # compiler-rt sanitizer_flag_parser.h: FlagHandler<bool>::Parse


def sanitizer_flag(options: str, name: str) -> str | None:
    """NAME's value in a sanitizer's OPTIONS as compiler-rt's flag parser reads them (sanitizer_flag_parser.cpp):
    flags separated by whitespace, ',' or ':', NAME=VALUE each, a value quoted with ' or " running to its closing
    quote; the last one of a name wins. None where NAME is not set."""
    found: str | None = None
    i, n = 0, len(options)
    while i < n:
        while i < n and options[i] in " ,:\t\r\n":
            i += 1
        start = i
        while i < n and options[i] not in "= ,:\t\r\n":
            i += 1
        key = options[start:i]
        if i >= n or options[i] != "=":
            continue  # a name without a value: the parser refuses it; nothing of ours
        i += 1
        if i < n and options[i] in "'\"":
            quote = options[i]
            end = options.find(quote, i + 1)
            end = n if end < 0 else end
            value, i = options[i + 1:end], end + 1
        else:
            start = i
            while i < n and options[i] not in " ,:\t\r\n":
                i += 1
            value = options[start:i]
        if key == name:
            found = value
    return found


def _failure_words(failure: str) -> str:
    """The probe's failure as the end of a sentence: 'crashed with SIGSEGV', 'did not answer within 10 s'."""
    return failure if failure.split(" ", 1)[0] in ("crashed", "exited", "did", "ended", "was", "killed") else \
        f"failed: {failure}"


def _via(view: ProcessView) -> str:
    """How the libcuda a program maps came into it, in words."""
    if view.libcuda_via == "LD_PRELOAD":
        return f"LD_PRELOAD's {view.libcuda_entry}"
    if view.libcuda_via == "LD_LIBRARY_PATH":
        return f"the LD_LIBRARY_PATH folder {view.libcuda_entry}"
    return view.libcuda_via or "the loader's search"


def _hidden_cause(view: ProcessView, report: Report) -> str:
    value = view.cuda_visible_devices
    if value is None:
        return "no GPU is usable by this process (device files, permissions or the container's device list)"
    if value.strip() == "":
        return "CUDA_VISIBLE_DEVICES is set and empty, which hides every GPU"
    entries = [e.strip() for e in value.split(",")]
    if len(entries) != len(set(entries)):
        return f"CUDA_VISIBLE_DEVICES={value} names the same GPU twice, which CUDA refuses"
    first = entries[0]
    if ascii_digits(first.lstrip("-")) and int(first) < 0:
        return f"CUDA_VISIBLE_DEVICES={value}: a negative index hides every GPU"
    if ascii_digits(first):
        return (f"CUDA_VISIBLE_DEVICES={value}: index {first} does not exist (this machine's GPUs are "
                f"{', '.join(str(g.index) for g in report.gpus) or 'none'}), and CUDA stops at the first entry it "
                "cannot use")
    if first.upper().startswith(("GPU-", "MIG-")):
        known = ", ".join(g.uuid for g in report.gpus if g.uuid) or "none"
        other_case = [g.uuid for g in report.gpus if g.uuid and g.uuid.upper().startswith(first.upper())]
        if len(other_case) == 1 and not other_case[0].startswith(first):
            return (f"CUDA_VISIBLE_DEVICES={value}: {first} differs from this machine's {other_case[0]} (as "
                    "nvidia-smi prints it) only in letter case, and CUDA did not take it: write the UUID as "
                    "nvidia-smi -L prints it")
        return (f"CUDA_VISIBLE_DEVICES={value}: {first} is not a UUID (or a prefix of exactly one) of this "
                f"machine's GPUs ({known}){' and MIG is off' if first.upper().startswith('MIG-') else ''}")
    return f"CUDA_VISIBLE_DEVICES={value}: its first entry {first!r} is neither an index nor a GPU- or MIG- UUID"


# --- which GPUs, and their memory -------------------------------------------------------------------------------

TORCH_COUNT_SOURCE = ("pytorch/pytorch torch/cuda/__init__.py device_count (the NVML-based count, _device_count_nvml, "
                      "unless negative), _parse_visible_devices (a UUID list only after an exact 'GPU-' or 'MIG-') and "
                      "_transform_uuid_to_ordinals (uuid.startswith(candidate): letters compared as written); "
                      "round eleven's s11-cvd-uuid-uppercase on an H100: cuInit and JAX took the UUID in capitals, "
                      "torch 2.11 failed in _lazy_init ('min() iterable argument is empty')")


def torch_count(report: Report) -> list[Finding]:
    """torch's own count of the GPUs CUDA_VISIBLE_DEVICES selects (its functions run in its Python with this
    environment: ProcessView.torch_visible) is 0 while cuInit, in the same environment, sees GPUs: torch takes CUDA for
    available and then finds no device. A warning read from torch's own code (its failure is --deep's to see), CD113:
    for torch, CUDA_VISIBLE_DEVICES selects no GPU."""
    view = report.process
    if view is None or view.torch_visible is None or view.cuinit != 0 or not view.visible:
        return []
    source, count, parsed = view.torch_visible
    value = view.cuda_visible_devices or ""
    if 0 < count < len(view.visible):  # torch stops earlier than CUDA: its devices past the count are not there
        made = finding("CD114", subject="CUDA_VISIBLE_DEVICES", refs=(TORCH_COUNT_SOURCE,), evidence="read",
                       value=_shown(value), ignored=f"the GPUs past torch's {count}", ignored_verb="are",
                       visible=f"{len(view.visible)} GPU(s) in CUDA and {count} in torch", framework="PyTorch",
                       proof=f"torch's own functions (_parse_visible_devices, _device_count_nvml of {source}), run in "
                             f"torch's Python with this environment, count {count} GPU(s); cuInit in the same "
                             f"environment sees {len(view.visible)}")
        return [replace(made, detail=(
            f"CUDA_VISIBLE_DEVICES={_shown(value)}: CUDA (cuInit) sees {len(view.visible)} GPU(s), but torch counts "
            f"the GPUs it selects itself, from NVML, and its own code counts {count} (its parse: {list(parsed)}; it "
            "compares UUIDs with NVML's as written and stops at the first entry it cannot match): "
            f"torch.cuda.device_count() is {count}, and a program that uses a GPU past it (cuda:{count}, one process "
            "per GPU) fails. Write each UUID as `nvidia-smi -L` prints it (or use indices)."))]
    if count != 0:
        return []
    uuids = [gpu.uuid for gpu in report.gpus if gpu.uuid]
    entries = [e.strip() for e in value.split(",") if e.strip()]
    cased = [e for e in entries if e.upper().startswith(("GPU-", "MIG-")) and any(
        u.upper().startswith(e.upper()) and not u.startswith(e) for u in uuids)]
    why = (f"torch compares a UUID with NVML's as written, and {cased[0]} differs from this machine's "
           f"{next(u for u in uuids if u.upper().startswith(cased[0].upper()))} (as nvidia-smi prints it) only in "
           "letter case" if cased else
           f"torch's parse of the value is {list(parsed)} and none of it names a GPU NVML lists")
    made = finding("CD113", subject="CUDA_VISIBLE_DEVICES", refs=(TORCH_COUNT_SOURCE,), evidence="read",
                   proof=f"torch's own functions (_parse_visible_devices, _device_count_nvml of {source}), run in "
                         f"torch's Python with this environment and the libnvidia-ml.so.1 it loads, count 0 GPUs; "
                         f"cuInit in the same environment sees {len(view.visible)}",
                   status=view.cuinit_name or "CUDA_SUCCESS", gpus=len(report.gpus), cause=why, framework="PyTorch",
                   predicts="torch")
    return [replace(made, severity="warning", detail=(
        f"CUDA_VISIBLE_DEVICES={_shown(value)}: CUDA (cuInit) takes it and sees {len(view.visible)} GPU(s), but torch "
        f"counts the GPUs it selects itself, from NVML, and its own code counts none here: {why}. "
        "torch.cuda.is_available() is then True while torch.cuda.device_count() is 0, and torch's first CUDA work "
        "fails. Write each UUID as `nvidia-smi -L` prints it (or use indices); `cudnn-doctor check --deep` runs torch "
        "here, which proves it."))]


def visibility(report: Report) -> list[Finding]:
    view = report.process
    if view is None or view.visible is None or not view.ignored_entries:
        return []
    ignored = ", ".join(view.ignored_entries)
    visible = ", ".join(f"cuda:{g.ordinal} = nvidia-smi's GPU {g.nvml_index if g.nvml_index is not None else '?'}"
                        for g in view.visible) or "no GPU"
    return [finding("CD114", subject="CUDA_VISIBLE_DEVICES", value=view.cuda_visible_devices, ignored=ignored,
                    ignored_verb="is" if len(view.ignored_entries) == 1 else "are", visible=visible)]


def device_order(report: Report) -> list[Finding]:
    """CUDA's numbers of the GPUs are not nvidia-smi's (the default FASTEST_FIRST order on GPUs of different
    kinds): cuda:0 in a program is not GPU 0 in nvidia-smi, which scripts and schedulers mix up."""
    view = report.process
    if view is None or not view.visible or view.cuda_visible_devices is not None or view.cuda_device_order:
        return []
    order = [g.nvml_index for g in view.visible]
    if None in order or order == sorted(order):  # type: ignore[type-var]
        return []
    pairs = ", ".join(f"cuda:{g.ordinal} = nvidia-smi's GPU {g.nvml_index}" for g in view.visible)
    return [finding("CD117", subject="CUDA_DEVICE_ORDER", pairs=pairs)]


def memory_held(report: Report) -> list[Finding]:
    findings = []
    jax = _has(report, "jax")
    for gpu in report.gpus:
        if not gpu.memory_total_mib or gpu.memory_used_mib is None:
            continue
        if gpu.memory_used_mib < gpu.memory_total_mib * MEMORY_HELD_SHARE:
            continue
        processes = gpu.health.processes if gpu.health and gpu.health.processes else ()
        holders = "; ".join(f"process {p.pid}{f' ({p.name})' if p.name else ''} holds "
                            f"{p.used_memory_mib if p.used_memory_mib is not None else '?'} MiB" for p in processes)
        free = gpu.memory_total_mib - gpu.memory_used_mib
        note = ""
        if jax:
            note = (f"; JAX preallocates {_jax_fraction(report):.0%} of a GPU's memory and takes less where less is "
                    "free")
        findings.append(finding("CD115", subject=f"GPU {gpu.index}", gpu=gpu.index, free_mib=free,
                                total_mib=gpu.memory_total_mib, holders=holders or "processes this user cannot see",
                                jax_note=note, pids=[p.pid for p in processes]))
    return findings


# --- process limits ---------------------------------------------------------------------------------------------

def _limit_row(resource: str) -> dict[str, Any]:
    return next((r for r in _data().get("limit", []) if r["resource"] == resource), {})


def _limit_text(view: ProcessView, resource: str) -> str:
    soft, hard = view.limits.get(resource, (-1, -1))
    option = _limit_row(resource).get("option", "")
    shown = "unlimited" if soft < 0 else (f"{soft // 1024} KiB ({soft / GIB:.1f} GiB)" if resource in ("RLIMIT_AS",
                                                                                                  "RLIMIT_DATA")
                                          else f"{soft // 1024} KiB" if resource == "RLIMIT_STACK"
                                          else f"{soft} s" if resource == "RLIMIT_CPU" else str(soft))
    hard_text = "unlimited" if hard < 0 else (f"{hard // 1024} KiB" if resource in ("RLIMIT_AS", "RLIMIT_STACK",
                                                                                    "RLIMIT_DATA")
                                              else f"{hard} s" if resource == "RLIMIT_CPU" else str(hard))
    return f"ulimit -S {option} is {shown} (hard limit {hard_text})"


def _jax_fraction(report: Report) -> float:
    view = report.process
    text = view.settings.get("XLA_PYTHON_CLIENT_MEM_FRACTION") if view else None
    try:
        value = float(text) if text is not None else 0.75
    except ValueError:
        return 0.75
    return value if math.isfinite(value) and value > 0 else 0.75


def _jax_preallocates(report: Report) -> bool:
    view = report.process
    settings = view.settings if view else {}
    if settings.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").strip().lower() in ("false", "0"):
        return False
    return settings.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default").strip() not in ("platform", "cuda_async")


def limits(report: Report) -> list[Finding]:
    view = report.process
    if view is None or view.cuinit not in (0, None):
        return []
    findings = []
    soft, _hard = view.limits.get("RLIMIT_AS", (-1, -1))
    if soft >= 0 and _has(report, "jax") and _jax_preallocates(report) and view.visible:
        totals = [g.memory_total_mib for g in report.gpus
                  if g.memory_total_mib and any(v.nvml_index == g.index for v in view.visible)]
        share = _jax_fraction(report) * (min(totals) if totals else 0) * (1 << 20)
        row = _limit_row("RLIMIT_AS")
        headroom = float(row.get("jax_host_headroom_gib", 8.0)) * GIB
        if share and len(totals) * share > soft >= share and soft - math.floor(soft / share) * share < headroom:
            findings.append(finding(
                "CD116", subject="RLIMIT_AS", refs=(row.get("source", ""),), limit=_limit_text(view, "RLIMIT_AS"),
                proof="a model of JAX's preallocation fitted to one machine's measurements: `cudnn-doctor check "
                      "--deep` runs JAX here to prove it",
                effect=(f"JAX preallocates {_jax_fraction(report):.0%} of each of the {len(totals)} visible GPUs "
                        f"({share / GIB:.0f} GiB each) inside this address space; the GPUs after the first take what "
                        "is left and JAX's own memory runs out: it aborts with std::bad_alloc"),
                framework="jax"))
    findings += open_files(report, view)
    for resource in ("RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_DATA"):  # read, with the data's bound: --deep proves it
        row = _limit_row(resource)
        soft, _ = view.limits.get(resource, (-1, -1))
        bound = row.get("warn_below")
        if soft < 0 or bound is None or soft / (1024 if row.get("unit_kib") else 1) >= float(bound):
            continue
        findings.append(finding("CD116", subject=resource, refs=(row.get("source", ""),), evidence="read",
                                proof="read from this process's limits, which every program started here inherits: "
                                      "`cudnn-doctor check --deep` runs the frameworks under it to prove it",
                                limit=_limit_text(view, resource), effect=str(row.get("effect", ""))))
    return findings


FRAMEWORK_FILES = (("jax", "JAX", "jax_free_minimum"), ("torch", "PyTorch", "torch_free_minimum"))


def open_files(report: Report, view: ProcessView) -> list[Finding]:
    """The descriptors a program started here may still open: the soft open-files limit less those it holds before
    its first line (the standard streams, and whatever the shell's parent left open: probes/process_start, read
    from this process's own start). Below what a framework was measured to need at start (compat/process_env.toml's
    RLIMIT_NOFILE row), CD116: a rule where it is at most what both frameworks were seen to fail with, else a warning
    that says --deep proves it (its children hold as many). Seen where cuInit itself failed under them and worked
    without (view.cuinit_held: probes/collect.py asked both)."""
    files, _hard = view.limits.get("RLIMIT_NOFILE", (-1, -1))
    row = _limit_row("RLIMIT_NOFILE")
    said_held = (view.shell or {}).get("descriptors", "")
    held = int(said_held) if ascii_digits(said_held) else 3  # not recorded: the three standard streams
    if files < 0:
        return []
    free = max(0, files - held)
    inherited = (view.shell or {}).get("inherited", "")
    holds = (f"a program started here holds {held} descriptors before its first line (the standard streams and "
             f"{held - 3} its shell inherited from its parent: {inherited})" if inherited and held > 3 else "")
    limit = _limit_text(view, "RLIMIT_NOFILE") + (f"; {holds}: {free} are left" if holds else "")
    if view.cuinit_held:
        status = view.cuinit_held
        return [finding("CD116", subject="RLIMIT_NOFILE", refs=(row.get("source", ""),), evidence="seen",
                        proof=(f"cuInit answered {status} in a child started with this environment holding the {held} "
                               f"descriptors a program started here holds, and CUDA_SUCCESS in one without them"),
                        limit=limit, free=free, held=held,
                        effect=(f"with {free} descriptors free CUDA itself cannot start (cuInit answers {status}): "
                                "every CUDA program started here fails"))]
    needs = [(name, shown, int(row[key])) for name, shown, key in FRAMEWORK_FILES
             if key in row and _has(report, name) and free < int(row[key])]
    if not needs:
        return []
    # measured on one machine (an H200 worked a little lower): a rule only at or below what both were seen to fail with
    failing = int(row.get("seen_failing_free", 0))
    rule = free <= failing
    named = ", ".join(f"{shown} needs {minimum}" for _name, shown, minimum in needs)
    proof = (f"PyTorch and JAX both failed their first GPU steps with {failing} descriptors free and fewer where it "
             "was measured (benchmarks/held_out/round10 on an H100; benchmarks/descriptor_floor.py measures each "
             "one's floor)" if rule else
             f"each framework's floor ({named}) was measured on one machine and another may start with less: "
             "`cudnn-doctor check --deep` runs them here holding as many descriptors, which proves it")
    return [finding("CD116", subject="RLIMIT_NOFILE", refs=(row.get("source", ""),),
                    evidence="rule" if rule else "read", proof=proof, limit=limit, free=free, held=held,
                    effect=(("" if holds else f"{free} descriptors are free where a program starts, and ") +
                            "the frameworks open more than that for their imports and first GPU steps "
                            f"({named}, measured): they fail with 'Too many open files' (EMFILE) or a CUDA error"),
                    framework=needs[0][0])]


# --- the cuDNN each framework loads: LD_PRELOAD and the sub-libraries ------------------------------------------

def _cudnn_wanted(framework: Framework) -> str:
    """The cuDNN FRAMEWORK takes, as a specifier: its wheel's requirement ("==9.19.0.56", ">=9.1,<10"; "" where its
    metadata pins none), else, for a requirement without an operator, "==" its expected release."""
    requirement = str(framework.details.get("cudnn_requirement") or "")
    if requirement[:1] in "<>=!~":  # "" is in every string: no requirement is "" too
        return requirement
    return f"=={framework.cudnn_expected}" if framework.cudnn_expected else ""


def preloaded_cudnn(report: Report) -> list[Finding]:
    view = report.process
    if view is None:
        return []
    findings = []
    for loaded in view.cudnn:
        framework = _framework(report, loaded.user)
        if loaded.via != "LD_PRELOAD" or framework is None or not loaded.version:
            continue
        wanted = _cudnn_wanted(framework)
        if not wanted or _satisfies(loaded.version, wanted):
            continue
        findings.append(finding("CD317", subject=loaded.library, library=loaded.library, version=loaded.version,
                                framework=framework.name, expected=wanted.lstrip("=")))
    return findings


def preloaded_cudnn_sublibrary(report: Report) -> list[Finding]:
    """A cuDNN sub-library in LD_PRELOAD (libcudnn_adv.so.9, a forum's workaround for an RNN error): loaded before
    anything, it is what each framework's cuDNN gets for that soname, and its own needed cuDNN libraries come through
    the loader's search, its release's. Its release is its cuDNN's (the copy in its folder, or its file name); where
    that is not what a framework needs, CD317 (on an H100 the system's 9.14 adv preloaded failed torch 2.11:
    "cuDNN version incompatibility", while plain check named only the version it then found)."""
    view = report.process
    if view is None:
        return []
    findings = []
    for entry, folder, named in view.preloaded_cudnn_parts:
        copy = next((i for i in report.cudnn if folder in (i.path, os.path.dirname(i.real_library or "")) and i.version),
                    None)
        version = copy.version if copy is not None else named
        if not version:
            continue
        for framework in report.frameworks:
            wanted = _cudnn_wanted(framework)
            if wanted and not _satisfies(version, wanted):
                findings.append(finding(
                    "CD317", subject=entry, library=entry, version=version, framework=framework.name,
                    expected=wanted.lstrip("="), evidence="rule",
                    proof=f"ld.so(8): LD_PRELOAD's libraries are loaded before any other, so {framework.name}'s "
                          f"cuDNN gets {os.path.basename(entry)} from there; the framework needs cuDNN "
                          f"{wanted.lstrip('=')}"))
    return findings


SLOW_START_MS = 500.0  # a start this much slower with the preload (and SLOW_START_TIMES as slow) is said
SLOW_START_TIMES = 3.0


def slow_preload(report: Report) -> list[Finding]:
    """LD_PRELOAD entries no row knows that made a bare process start slow, seen (probes/start_cost.py: the loader
    asked, a bare Python started with and without them side by side): every program here, and every child the doctor
    starts, pays it (glibc's libmemusage.so with MEMUSAGE_TRACE_MMAP=1: every process crawled on an H100, and the
    frameworks' runs went past the harness's limit). CD412, a warning: the programs start, later."""
    view = report.process
    if view is None or view.preload_start is None:
        return []
    entries, took, bare, seconds = view.preload_start
    findings = _preload_takes(view.preload_takes, entries, loader_variables(view, entries))
    if took >= 0 and (took - bare < SLOW_START_MS or took < SLOW_START_TIMES * bare):
        return findings
    with_them = f"more than {seconds:g} s (cut off there)" if took < 0 else f"{took / 1000:.2f} s"
    variable = loader_variables(view, entries)
    proof = (f"a bare Python (`python -I -S`) started here with {variable} took {with_them}, and "
             f"{bare / 1000:.2f} s without {entries}, side by side")
    effect = (f"{entries} is loaded into every process started here and no row of the data knows it; a bare Python's "
              f"start took {with_them} with it and {bare / 1000:.2f} s without it, so every program here (torch, JAX, "
              "their compilers, and this doctor's own children) starts that much slower, and a long run may go past "
              "the time a job or harness allows it")
    return [*findings, finding("CD412", subject=entries, evidence="seen", proof=proof, variable=variable,
                               value=_shown(entries), effect=effect, slow_preload=entries)]


def loader_variables(view: ProcessView, entries: str) -> str:
    """Which of the loader's variables brought ENTRIES (' '-joined): LD_PRELOAD for those among its entries, LD_AUDIT
    for the others (probes/start_cost.py asks both)."""
    names = entries.split(" ")
    found = (["LD_PRELOAD"] if any(name in view.preload for name in names) else []) + (
        ["LD_AUDIT"] if any(name not in view.preload for name in names) else [])
    return " and ".join(found) or "LD_PRELOAD"


def slowed_by_preload(report: Report, findings: list[Finding]) -> list[Finding]:
    """Where a preload no row knows made a bare start slow (slow_preload's CD412), the doctor's own library children
    that passed their deadline (NVML's, CUDA's, cudart's, cuDNN's: 'did not answer within N s') were slowed by the
    same preload: their findings blame the library for what the preload did, so they are taken out and the CD412
    finding names them. Their question is not answered here; the check without that preload answers it."""
    slow = next((f for f in findings if f.code == "CD412" and f.values.get("slow_preload")), None)
    if slow is None:
        return findings
    hung = [f for f in findings if f is not slow and HANGS in f"{f.detail} {f.proof or ''}"]
    if not hung:
        return findings
    named = ", ".join(dict.fromkeys(f"{f.code} ({os.path.basename(str(f.subject))})" if f.subject else f.code
                                    for f in hung))
    slow = replace(slow, detail=f"{slow.detail} The doctor's own children that load the driver's and CUDA's libraries "
                                f"did not answer within their time either ({named}): the same preload slowed them, "
                                "so what they would say of those libraries is not known here (a check without it "
                                "answers)")
    return [slow if f.code == "CD412" and f.values.get("slow_preload") else f for f in findings if f not in hung]


# what a preload takes that ends or stops every program started here: an error; the rest a warning (the program runs,
# without what it was given)
PRELOAD_STOPS = ("a bare Python started with it", "armed an alarm", "cleared the environment")


def _preload_takes(takes: tuple[str, ...], entries: str, variable: str) -> list[Finding]:
    """LD_PRELOAD entries no row knows whose constructor took something from a bare Python's process, seen against
    the same start without them (probes/start_cost.py): CD116, what it took in words. An error where it stops every
    program (no answer, an alarm armed, the environment cleared), else a warning."""
    if not takes:
        return []
    made = finding("CD116", subject=entries, evidence="seen",
                   proof=f"a bare Python started here with {variable}, beside one started without {entries}: the "
                         f"first {'; '.join(takes)}",
                   limit=f"{variable}: {_shown(entries)} (no row of the data knows it) "
                         + ("is asked of the loader in every process started here, before the program's first line, "
                            "and it" if all(take.startswith(LOADER_REFUSED) for take in takes) else
                            "runs its constructor in every process started here, before the program's first line, "
                            "and it") + f" {'; '.join(takes)}",
                   effect="every program started here (torch, JAX, their compilers, this doctor's own children) "
                          "starts so", slow_preload=entries)
    return [made if any(take.startswith(PRELOAD_STOPS) for take in takes) else replace(made, severity="warning")]


def hook_preloaded_cudnn(report: Report) -> list[Finding]:
    """A GPU library a framework's Python had mapped before its program's first line (a start-up hook loaded it): the
    framework's libraries ask the loader for its soname and get the copy already loaded, not their own. A cuDNN: seen,
    an error where that release is not what the framework needs (CD317); another CUDA library whose soname the
    framework's wheels hold: a warning --deep proves (CD203). The probe resolved the paths (ProcessView)."""
    view = report.process
    if view is None:
        return []
    findings = []
    for name, library, hooks, own_copy, version, is_own, hook_folders in view.python_preloaded:
        framework = _framework(report, name)
        if framework is None or is_own:
            continue
        proof = (f"{_display(name)}'s Python, started in a child as a program is, had {library} mapped when the "
                 f"program's first line ran (/proc/self/maps); its start-up hooks: {hooks}")
        if not os.path.basename(library).startswith("libcudnn.so"):
            if own_copy:  # the framework's wheels hold that soname: its libraries get this one in place of theirs
                made = finding("CD203", subject=library, evidence="seen", library=library, hooks=hooks,
                               hook_folders=hook_folders, error="loaded before the framework", proof=proof)
                findings.append(replace(made, severity="warning", detail=(
                    f"A Python start-up hook ({hooks}) loads {library} into every program of {_display(name)}'s "
                    f"Python before the program's first line; {_display(name)}'s libraries ask for "
                    f"{os.path.basename(own_copy)} by name and get that copy in place of their wheel's {own_copy}"
                    + DEEP_PROVES + ".")))
            continue
        version = version or release_in_file_name(library) or ""
        wanted = _cudnn_wanted(framework)
        refused = bool(version and wanted and not _satisfies(version, wanted))
        made = finding("CD317", subject=library, evidence="seen", library=library, version=version or "unknown",
                       framework=name, expected=wanted.lstrip("=") or "its own copy", hooks=hooks,
                       hook_folders=hook_folders, proof=proof)
        detail = (f"A Python start-up hook ({hooks}) loads {library} (cuDNN {version or 'of unknown release'}) into "
                  f"every program of {_display(name)}'s Python before the program's first line; {_display(name)}'s "
                  "libraries ask the loader for libcudnn by name and get that copy, not their own"
                  + (f": {_display(name)} needs cuDNN {wanted.lstrip('=')}." if refused else "."))
        findings.append(replace(made, detail=detail, severity="error" if refused else "warning"))
    return findings


def _satisfies(version: str, spec: str) -> bool:
    """Is cuDNN VERSION what SPEC asks? A pin of a wheel release (==9.19.0.56) is what the framework was built
    with: it runs with that major at that minor or later (torch/backends/cudnn/__init__.py: runtime_minor >=
    compile_minor for cuDNN 7 and later), and refuses an older minor or another major."""
    if spec.startswith("==") and "," not in spec:
        pinned = version_tuple(spec[2:]) or ()
        found = version_tuple(version) or ()
        return bool(found and pinned) and found[0] == pinned[0] and found[:2] >= pinned[:2]
    try:
        return Specifiers(spec).contains(version)
    except (InvalidSpecifier, ValueError):
        return True


def loaded_sublibraries(report: Report) -> list[Finding]:
    view = report.process
    if view is None:
        return []
    findings: list[Finding] = []
    seen: set[str] = set()
    rows = {row["name"]: row for row in _data().get("sublibrary", [])}
    for loaded in view.cudnn:
        for sub in loaded.sublibraries:
            key = f"{loaded.library}\0{sub.name}"
            if key in seen:
                continue
            # several users of one copy: what a child saw loading it outweighs what its files say
            sharing = [s for c in view.cudnn if c.library == loaded.library for s in c.sublibraries if s.name == sub.name]
            sub = next((s for s in sharing if s.seen), next((s for c in view.cudnn if c.library == loaded.library
                                                             and c.observed for s in c.sublibraries
                                                             if s.name == sub.name), sub))
            if sub.problem is None:
                continue
            seen.add(key)
            users = ", ".join(dict.fromkeys(x.user for x in view.cudnn if x.library == loaded.library))
            made = _sublibrary_finding(loaded, sub.name, sub.path, sub.problem, sub.version,
                                       sub.rarely_used or _goes_on_without(rows, sub.name, sub.problem, sub.seen),
                                       users, rows)
            if sub.seen:  # a child loading it as the framework does saw it fail: the loader's or cuDNN's words
                made = replace(made, evidence="seen", proof=sub.seen)
            intercepted = _sanitizer_preloaded(view)
            if intercepted and sub.seen and made.code in ("CD304", "CD305", "CD308", "CD309") and \
                    _holds(report, loaded.library, sub.name) and not (  # LD_LIBRARY_PATH comes before RUNPATH anyway
                        sub.path and os.path.dirname(sub.path) in report.ld_library_path):
                made = _intercepted(made, loaded, sub.name, sub.problem, *intercepted)
            made = _through_another_graph(made, loaded, sub.name, report)
            if users == "ld.so":
                made = _for_whom(made, "ld.so", _frameworks_ok(view))
            findings.append(made)
    return findings


def _opened_by_graph(name: str) -> bool:
    """Whether cuDNN's graph library, not its front library, opens the sub-library NAME (compat/process_env.toml
    [[version_check]] later): the loader then searches from the graph library's folder ($ORIGIN), not the front's."""
    stem = name.split(".so")[0]
    return any(stem in row.get("later", []) for row in _data().get("version_check", []))


def _through_another_graph(made: Finding, loaded: LoadedCudnn, name: str, report: Report) -> Finding:
    """MADE about a sub-library the graph library opens, where the graph library the loader gave this copy is a file
    in an LD_LIBRARY_PATH folder other than the one that gave the front library (a lone copy first on the path,
    which the loader takes before the one beside the front library): the search that found or missed NAME started
    from that file's folder. That file is the first link of the chain: named (graph_file), and the plan treats it
    with the rest."""
    if made.code not in ("CD304", "CD305", "CD307", "CD308", "CD319") or not _opened_by_graph(name):
        return made
    graph = next((s for s in loaded.sublibraries if s.name.startswith("libcudnn_graph.so") and s.path), None)
    if graph is None or graph.problem is not None or graph.path is None:
        return made
    folder = os.path.dirname(graph.path)
    if "/glibc-hwcaps/" in folder + "/":  # a file in a glibc-hwcaps subfolder is found through the entry above it
        folder = folder[:folder.index("/glibc-hwcaps/")] if "/glibc-hwcaps/" in folder else folder
    given = [entry for entry, real in zip(report.ld_library_path, report.ld_library_path_real, strict=False)
             if folder in (entry.rstrip("/"), real.rstrip("/"))]
    if not given or loaded.entry in given:
        return made
    said = (f"The graph library the loader gives {loaded.library} is {graph.path}, from {given[0]} in "
            f"LD_LIBRARY_PATH, before the one beside it; cuDNN's graph library opens {name} from its own folder "
            "first, then by name, so a graph library away from its release's files takes its engines from wherever "
            "the loader finds them. ")
    return replace(made, detail=said + made.detail, values={**made.values, "graph_file": graph.path})


def _holds(report: Report, library: str, name: str) -> bool:
    """Whether the copy of cuDNN whose front library is LIBRARY holds the sub-library NAME beside it, as the probes
    read its folder (report.cudnn)."""
    return any(name.split(".so")[0] in {n.split(".so")[0] for n, present in install.sublibraries.items() if present}
               for install in report.cudnn if library in (install.library, install.real_library))


def _sanitizer_preloaded(view: ProcessView) -> tuple[str, dict[str, Any]] | None:
    """The LD_PRELOAD entry that is a sanitizer's run-time (compat/process_env.toml [[sanitizer]] runtime), and its
    row."""
    for entry in view.preload:
        for row in _data().get("sanitizer", []):
            if any(os.path.basename(entry).startswith(name) for name in row.get("runtime", [])) and \
                    row.get("intercepts_dlopen"):
                return entry, row
    return None


def _intercepted(made: Finding, loaded: LoadedCudnn, name: str, problem: str, entry: str,
                 row: dict[str, Any]) -> Finding:
    """A sub-library the front library's own folder holds, which a child with a sanitizer preloaded did not get
    from there: the sanitizer's dlopen interceptor makes cuDNN's own dlopen search as if the sanitizer had called it,
    without the front library's RUNPATH ($ORIGIN). Missing where no other folder holds it (not broken: the file in the
    folder was never searched), of another release where the loader's cache or path gives another copy."""
    folder = os.path.dirname(loaded.library)
    said = (f"{made.proof}; " if made.proof else "") + f"LD_PRELOAD holds {entry} ({row['name']})"
    if made.code != "CD305":
        made = finding("CD304", subject=loaded.library, library=loaded.library, missing=name, prefix=folder,
                       version=loaded.version or "unknown", path=folder, folder=folder, via=loaded.via,
                       framework=made.values.get("framework"), loaded_library=loaded.library)
    got = ("finds it elsewhere by name alone (LD_LIBRARY_PATH, the loader's cache): another release"
           if problem == "another release" else "finds it nowhere else (LD_LIBRARY_PATH, the loader's cache)")
    return replace(made, evidence="seen", proof=said, refs=made.refs + (str(row["source"]),),
                   values={**made.values, "sanitizer_entry": entry}, detail=(
                       f"{loaded.library} loads its sub-libraries from its own folder, and {folder} holds {name}; "
                       f"but LD_PRELOAD gives every program {entry} ({row['name']}): {row['intercepts_dlopen']} The "
                       f"child that loaded it as {made.values.get('framework') or 'the framework'} does {got}. "
                       f"{row.get('interceptor_cure', '')}").strip())


def _other_release(release: str | None, version: str | None) -> bool:
    """Whether two cuDNN releases, both known, differ in their first three numbers."""
    if not release or not version:
        return False
    first, second = (version_tuple(release) or ())[:3], (version_tuple(version) or ())[:3]
    return bool(first and second) and first + (0,) * (3 - len(first)) != second + (0,) * (3 - len(second))


def _goes_on_without(rows: dict[str, Any], name: str, problem: str, seen: str | None) -> bool:
    """cuDNN goes on without this sub-library (compat/process_env.toml falls_back) where the loader refused its
    file cleanly, as a child saw; not where it is of another release, nor where loading it killed the child."""
    row = rows.get(name.split(".so")[0], {})
    return bool(row.get("falls_back") and seen and problem != "another release" and " killed by " not in seen
                and "did not finish" not in seen)


def _sublibrary_finding(loaded: LoadedCudnn, name: str, path: str | None, problem: str, release: str | None,
                        rare: bool, users: str, rows: dict[str, Any]) -> Finding:
    what = {"missing": "is not found where the loader looks from there",
            "another release": f"is cuDNN {release} ({path})"}.get(problem, f"at {path} is {problem}")
    if rare:
        row = rows.get(name.split(".so")[0], {})
        return finding("CD319", subject=path or name, refs=(row.get("source", ""),), framework=users,
                       library=loaded.library, version=loaded.version, sublibrary=name, problem=what,
                       why=row.get("why", "only some calls load it"), folder=os.path.dirname(loaded.library),
                       via=loaded.via, loaded_library=loaded.library, sublibrary_file=path or "")
    folder = os.path.dirname(loaded.library)
    common: dict[str, Any] = dict(version=loaded.version or "unknown", path=folder, folder=folder, via=loaded.via, framework=users,
                  loaded_library=loaded.library)
    if problem.startswith("not loadable: "):  # a file there, which the loader itself refused: its words name why
        said = problem[len("not loadable: "):]  # a file that is no library for this machine (an LFS pointer, cut
        kind = loader_words.failure_kind(said)
        if kind in loader_words.NOT_A_LIBRARY:  # short, another architecture): CD308
            return finding("CD308", subject=loaded.library, library=path or name, arch="this machine", error=said,
                           version_hint=(loaded.version or "9").split(".")[0], sublibrary_file=path or "", **common)
        if kind in ("symbol", "version") and _other_release(release, loaded.version):
            # the loader refused a sub-library of another release for a symbol this release's libraries do not
            # define: the words are the consequence, the mix of releases their cause (explain reads them alike)
            made = finding("CD305", subject=loaded.library, library=loaded.library,
                           mismatched=f"{name} (cuDNN {release}, {path})", sublibrary_file=path or "", **common)
            return replace(made, detail=(
                f"{loaded.library} is cuDNN {loaded.version}; the {name} the loader gives it is {path}, cuDNN "
                f"{release}, and the loader refuses it beside this release's libraries: {said}. A sub-library of "
                "another release fails at first use (the cause is the mix of releases, not the file)."))
        return finding("CD307", subject=loaded.library, library=path or name, error=said, sublibrary_file=path or "",
                       **common)
    if problem == "missing":
        return finding("CD304", subject=loaded.library, library=loaded.library, missing=name, prefix=folder, **common)
    if problem == "another release":
        return finding("CD305", subject=loaded.library, library=loaded.library,
                       mismatched=f"{name} (cuDNN {release}, {path})", **common)
    return finding("CD308", subject=loaded.library, library=path or name, arch="this machine",
                   error=f"{problem} ({users} loads it with {loaded.library})",
                   version_hint=(loaded.version or "9").split(".")[0], sublibrary_file=path or "", **common)


# --- the frameworks' own settings -------------------------------------------------------------------------------

def settings(report: Report) -> list[Finding]:
    """Every variable compat/ knows that is set, judged against its grammar as its reader reads it (issue 45): a value
    the reader refuses is an error where the data's source proves the refusal and the reader is here (CD411),
    else a warning that --deep proves (CD414); a path its reader cannot use, a warning that names who writes there
    (CD417); JAX's options as the installed jax defines them."""
    view = report.process
    if view is None:
        return []
    findings = [when_used(_default_place(row, variable, answer), variable, report)
                for variable, answer in view.setting_answers.items()
                if answer.kind == "default_path" and (row := environment.rows().get(variable)) is not None]
    if not view.settings:
        return findings
    known = environment.rows()
    refused = set(view.context_variables) if view.context not in (None, "ok") else set()
    # a misspelling is a name a person typed: the first MAX_SPELLED unknown names are matched against the documented
    # ones, not 60,000 a machine set (each matched with difflib took check past a minute)
    spelled = frozenset([variable for variable in view.settings if variable not in known][:MAX_SPELLED])
    for variable, given in view.settings.items():
        if variable in refused and len(refused) == 1:
            continue  # CUDA itself refused the context with it (context_refused): seen, said there
        start = len(findings)
        _judge_variable(report, view, known, variable, given, findings, variable in spelled)
        findings[start:] = [when_used(made, variable, report) for made in findings[start:]]
    return _unknown_file_flags_together(_unasked_together(findings))


MAX_UNASKED_SAID = 8  # variables of a family no row knows, each said alone; past that, all in one finding


def _unknown_file_flags_together(findings: list[Finding]) -> list[Finding]:
    """XLA flags no row knows that name a regular file, each a warning up to MAX_UNASKED_SAID; more are one: 5,000
    such flags (as many as the 128 KiB exec takes for XLA_FLAGS) were 5,000 findings, 11 MB of JSON and 3.8 MB of text,
    each with the same fix. The one counts them, names the first few and keeps that fix (XLA_FLAGS without them all)."""
    unknown = [f for f in findings if f.values.get("unknown_file_flag")]
    if len(unknown) <= MAX_UNASKED_SAID:
        return findings
    flags = [str(f.values["unknown_file_flag"]) for f in unknown]
    first = unknown[0]
    listed = ", ".join(f"--{flag}" for flag in flags[:MAX_UNASKED_SAID])
    why = (f"{len(flags)} flags no row of the data knows name files that are there, which XLA opens as it compiles "
           f"({listed} and {len(flags) - MAX_UNASKED_SAID} more): the doctor has no reader for them (`cudnn-doctor "
           "check --deep` compiles JAX's first work here with them, which proves what XLA makes of them)")
    together = replace(first, detail=first.detail.replace(str(first.values.get("why")), why),
                       values={**first.values, "why": why, "unknown_file_flags": flags})
    return [*(f for f in findings if not f.values.get("unknown_file_flag")), together]


def _unasked_together(findings: list[Finding]) -> list[Finding]:
    """The warnings about variables of a family no row knows and no file answers for (_unasked), each alone where
    there are at most MAX_UNASKED_SAID of them, else all in one: 30,000 CUDNN_* variables a machine set were 30,000
    findings (80 MB of JSON, a plan step each, and a text report past five minutes). The one names the first few and
    how many more; like any finding of several variables, the plan leaves it to the words (--deep asks which matter)."""
    unasked = [f for f in findings if f.values.get("unasked")]
    if len(unasked) <= MAX_UNASKED_SAID:
        return findings
    names = [str(f.subject) for f in unasked]
    first = unasked[0]
    prefix = str(first.values["unasked"])
    listed = ", ".join(names[:MAX_UNASKED_SAID])
    effect = (f"no row of the data knows these {len(names)} variables of cuDNN's ({prefix}*: {listed} and "
              f"{len(names) - MAX_UNASKED_SAID} more), and cuDNN reads its settings inside its libraries and its "
              "frontend, compiled into torch and XLA, which the doctor cannot ask cheaply: what they do to the GPU work "
              "of every program that loads cuDNN here is not known")
    together = replace(first, subject=f"{listed} and {len(names) - MAX_UNASKED_SAID} more",
                       detail=f"{len(names)} variables {prefix}*: {effect}.",
                       values={**first.values, "variable": f"{len(names)} variables {prefix}*", "value": "",
                               "effect": effect, "why": effect, "unasked_variables": names,
                               "fix": f"Unset those of the {prefix}* variables that you did not set for cuDNN on "
                                      "purpose; `cudnn-doctor check --deep` runs the frameworks here with them, which "
                                      "proves what they do"})
    kept = [f for f in findings if not f.values.get("unasked")]
    return [*kept, together]


def when_used(made: Finding, variable: str, report: Report) -> Finding:
    """MADE about VARIABLE, which its [[feature]] says is read only when a program uses that feature (a collective,
    torch.compile, a GPU exception): never an error (a program that does not use it runs as it would without it), its
    words say when it matters and what proves it (--deep does not use the feature); a feature of several GPUs that
    cannot happen here (one GPU seen, no launcher's count above 1) is said, not warned."""
    feature = environment.feature_of(variable)
    if feature is None:
        return made
    detail = made.detail.replace(DEEP_PROVES, "").replace(USED_PROVES, "").rstrip()
    detail = f"{detail.rstrip('.')}. It matters only {feature['when']}; {feature['proves']}."
    severity = "warning" if made.severity == "error" else made.severity
    view = report.process
    gpus = _gpus_seen(report)
    if feature.get("several_gpus") and gpus is not None and gpus < 2 and view is not None and \
            not environment.launched(feature, view.settings):
        severity = "info" if severity == "warning" else severity
        detail += (f" Here a program sees {gpus} GPU{'' if gpus == 1 else 's'} and no launcher's count of processes "
                   f"({', '.join(feature.get('launcher_variables', ()))}) is above 1: a one-GPU program runs no collective")
        detail += "."
    return replace(made, severity=severity, detail=detail)


def _judge_variable(report: Report, view: ProcessView, known: dict[str, dict[str, Any]], variable: str, given: str,
                    findings: list[Finding], spell: bool = True) -> None:
    """VARIABLE=GIVEN's findings, added to FINDINGS (an unknown name matched for a misspelling where SPELL)."""
    value = _shown(given)
    row = known.get(variable)
    if row is None:
        findings += _family_setting(report, view, variable, given, spell)
        return
    if row["framework"] == "nccl" and row["grammar"] in environment.NCCL_OWN_GRAMMARS:
        return  # rules/multi_gpu.py judges these of NCCL's
    present = row["framework"] in (*environment.CUDA_LIBRARY_READERS, "python") or _has(report, row["framework"])
    if "shadowed_by" in row and (not present or any(view.settings.get(first) and first not in view.settings_skipped
                                                    for first in row["shadowed_by"])):
        return  # its reader takes another variable first (XLA: TEST_TMPDIR, TMPDIR, then TMP), or is not here
    together = view.setting_answers.get(variable)
    if together is not None and together.kind == "conflict":  # the installed reader's own code refuses the pair
        findings.append(_refused_together(row, variable, value, together, present))
        return
    for verdict in _judge_setting(row, given, report):
        kind, why = verdict
        if kind in ("invalid", "off") and row["framework"] == "nccl":
            findings.append(_nccl_setting(row, variable, value, kind, why))
        elif kind == "invalid" and row["kind"] == "path" and row.get("cure_code") == "CD417":
            # a path its reader cannot use, in the class the data gives it (--deep's cure names the same): an error
            # where its reader refuses it and is here, on the row's rule
            made = finding("CD417", subject=variable, refs=(row["source"],), evidence="rule", variable=variable,
                           value=value, problem=why, writer=row["writer"], effect=row["effect"])
            findings.append(replace(made, severity="error") if present else made)
        elif kind == "invalid":
            findings.append(_refused(row, variable, given, why, present, report))
        elif kind == "unnamed":  # a newer torch's key its libraries do not name: read from files, a warning
            findings.append(finding(
                "CD414", subject=variable, refs=(row["source"],), variable=variable, value=value, why=why,
                framework=_display(row["framework"]),
                consequence="raises an error at its first CUDA call if its parser does not know the key (a key "
                            "of newer releases: the installed libraries hold no such name)" + DEEP_PROVES,
                effect=row["effect"], fix_value=_corrected(row, given, report, firm=False)))
        elif kind == "content":  # the reader opens the file and refuses its text, by its source's rule
            findings.append(finding(
                "CD411" if present else "CD414", subject=variable, refs=(row["content_source"], row["source"]),
                variable=variable, value=value, why=f"{given} is read as {row['content'].upper()} and {why}",
                framework=_display(row["framework"]),
                consequence=("fails at its first cuDNN work: " if present else "is not installed in the "
                             "environments looked at; where it runs, it fails at its first cuDNN work: ")
                + f"{row['writer']} ({row['content_source'].split(':', 1)[0]})", effect=row["effect"],
                fix_value=None, proof=row["content_source"] if present else None))
        elif kind == "pjrt parse":  # the installed jax's own parser refuses it, as its GPU backend starts
            parser = _in_package(why["parser"]) if why["parser"] else ""
            made = finding("CD411", subject=variable, refs=(row["source"],), evidence="rule" if parser else "read",
                           proof=(f"{parser}: the installed JAX's own parser refuses it ('{row['parser_text']} "
                                  "...'), in its CUDA plugin's factory") if parser else None,
                           variable=variable, value=value, why=why["why"], framework=_display(row["framework"]),
                           consequence=row["refusal"] + ("" if parser else DEEP_PROVES), effect=row["effect"],
                           fix_value=None)
            findings.append(made if parser else replace(made, severity="warning"))
        elif kind == "pjrt option":  # the CUDA plugin's own check, from XLA's source: a warning --deep proves
            made = finding("CD411", subject=variable, refs=(row["source"],), evidence="read", variable=variable,
                           value=value, why=why["why"], framework=_display(row["framework"]),
                           consequence=row["refusal"] + DEEP_PROVES, effect=row["effect"],
                           fix_value=why["kept"])
            findings.append(replace(made, severity="warning"))
        elif kind == "made":  # the installed framework's own code makes the folder: it raises there
            files = ", ".join(_in_package(path) for path in why["files"])
            findings.append(finding("CD411", subject=variable, refs=(row["source"],), evidence="rule",
                                    proof=f"{files}: the installed {_display(row['framework'])}'s own code makes "
                                          f"the folder ('{row['made_text']}'), and raises where it cannot",
                                    variable=variable, value=value, why=why["why"],
                                    framework=_display(row["framework"]), consequence=row["refusal"],
                                    effect=row["effect"], fix_value=None))
        elif kind == "xla path" and why["flag"] not in environment.xla_path_flags():  # a file no row knows XLA opens
            made = finding("CD411", subject=variable, refs=(row["source"],), evidence="read", variable=variable,
                           value=value, why=why["why"], framework=_display(row["framework"]),
                           consequence="may refuse what it finds there", effect=row["effect"], fix_value=why["kept"],
                           unknown_file_flag=why["flag"])
            findings.append(replace(made, severity="warning"))
        elif kind == "xla path":  # XLA's GPU compiler, from its source: a warning --deep's convolution proves
            flag = environment.xla_path_flags()[why["flag"]]
            made = finding("CD411", subject=variable, refs=(flag["source"],), evidence="read", variable=variable,
                           value=value, why=f"--{why['flag']}: {why['why']} ({flag['writer']})",
                           framework=_display(row["framework"]), consequence=flag["refusal"] + DEEP_PROVES,
                           effect=flag["effect"], fix_value=why["kept"])
            if flag.get("cache_dependent") and environment.CACHED_RESULTS in why["why"]:  # the program's own shapes decide
                made = replace(made, values={**made.values, "own_work_only": True})
            findings.append(replace(made, severity="warning"))
        elif kind == "raised path":  # the reader's switch turns its warning into a raise (its source, a rule)
            made = finding("CD411", subject=variable, refs=(row["raised_source"], row["source"]), evidence="read",
                           variable=variable, value=value,
                           why=f"{why['why']} ({row['writer']}), and {why['switch']} makes its errors fatal",
                           framework=_display(row["framework"]), consequence=row["raised"] + DEEP_PROVES,
                           effect=row["effect"], fix_value=None)
            findings.append(replace(made, severity="warning"))
        elif kind == "path":
            findings.append(finding("CD417", subject=variable, refs=(row["source"],), variable=variable,
                                    value=value, problem=why, writer=row["writer"], effect=row["effect"]))
        elif kind == "starves":
            why.pop("seen", None)  # type: ignore[union-attr]
            made = finding("CD413", subject=variable, refs=(row["source"],), variable=variable,
                           value=value, framework=_display(row["framework"]), **why)  # type: ignore[arg-type]
            # whether it fails is the program's: on an H100, 81 MiB failed JAX 0.11's convolution of
            # (8, 128, 56, 56) and ran a smaller one (benchmarks/settings_facts.py round9): a warning, never an error
            findings.append(replace(made, severity="warning", evidence="read", detail=(
                f"{made.detail} Whether a program fails depends on its first work: on an H100 about "
                f"{row['starved_seen_mib']:g} MiB failed JAX's first convolution of a (8, 128, 56, 56) batch and "
                f"ran a smaller one{DEEP_PROVES}.")))
        elif kind == "breaks":
            findings.append(finding("CD416", subject=variable, refs=(row["source"],), evidence="rule",
                                    proof=row.get("proof"), variable=variable, value=value, effect=row["effect"]))
        elif kind == "unknown flags" and (present or view.xla_flags_said):  # jaxlib itself refused them
            said = view.xla_flags_said
            findings.append(finding("CD411", subject=variable, refs=(row["source"],),
                                    evidence="seen" if said else "rule",
                                    proof=("JAX run on the CPU in a child with this XLA_FLAGS ended: "
                                           + " | ".join(said)) if said else row.get("proof"),
                                    variable=variable, value=value, why=why["why"],
                                    framework=_display(row["framework"]),
                                    consequence=(f"ends at start ('{said[0]}')" if said else
                                                 "ends at start ('Unknown flag in XLA_FLAGS')"),
                                    effect=row["effect"], fix_value=why["kept"]))
        elif kind == "flags file":  # XLA's own reading of the variable, from its source: every JAX program
            findings.append(finding("CD411", subject=variable, refs=(row.get("file_source", row["source"]),),
                                    evidence="rule", proof=row.get("file_source"), variable=variable, value=value,
                                    why=why["why"], framework=_display(row["framework"]),
                                    consequence="stops at start, as every program that imports it does"
                                    + ("" if present else " (it is not installed in the environments looked at)"),
                                    effect=row["effect"], fix_value=None))
        elif kind == "off" and present:
            findings.append(finding("CD412", subject=variable, refs=(row["source"],), variable=variable,
                                    value=value, effect=why))
        elif kind == "fails":  # a value the reader takes, that makes a program's ordinary steps raise
            findings.append(_fails(row, variable, value, why, present))


def _default_place(row: dict[str, Any], variable: str, answer: Any) -> Finding:
    """ROW's reader's own place (its variable unset) that it cannot use: CD417, a warning; the fix names a writable
    place instead where one was found (the user's cache folder), else says so."""
    place, problem, other = (list(answer.values) + ["", "", ""])[:3]
    return finding("CD417", subject=variable, refs=(row["source"],), variable=variable,
                   value=f"(unset: its default {row['default_path']}, {place})", problem=problem, writer=row["writer"],
                   effect=row["effect"], fix_value=other or None)


def _fails(row: dict[str, Any], variable: str, value: str, failure: str, present: bool) -> Finding:
    """ROW's fails_when: CD411, an error with its rule where the data names where it was proven on the real
    framework (proof), else a warning that says --deep proves it."""
    name = _display(row["framework"])
    made = finding("CD411", subject=variable, refs=(row["source"],), evidence="rule" if row.get("proof") else "read",
                   proof=row.get("proof"), variable=variable, value=value,
                   why=f"{name} takes this value, and with it {failure}", framework=name,
                   consequence=("stops the program there" if present else "is not installed in the environments "
                                "looked at; where it runs, it stops the program there")
                   + ("" if row.get("proof") else DEEP_PROVES),
                   effect=row["effect"], fix_value=None)
    return made if row.get("proof") and present else replace(made, severity="warning")


def _refused_together(row: dict[str, Any], variable: str, value: str, answer: Any, present: bool) -> Finding:
    """ROW's variable set beside the one its reader refuses it with (conflicts_with), where the installed reader's own
    file holds that refusal (the probe asked it): CD411, its rule that file."""
    other, files = answer.values[0], ", ".join(_in_package(path) for path in answer.files)
    return finding("CD411", subject=variable, refs=(row["source"],), evidence="rule",
                   proof=f"{files}: the installed {_display(row['framework'])}'s own code refuses the two together "
                         f"('{row['conflict_text']}')",
                   variable=variable, value=value,
                   why=f"{other} is set too, and the installed {_display(row['framework'])}'s {files} refuses the two "
                       f"together ('... {row['conflict_text']} ...': ValueError)",
                   framework=_display(row["framework"]), consequence=REFUSES.get(row["on_error"], "raises"),
                   effect=row["effect"], fix_value=None)


def _nccl_setting(row: dict[str, Any], variable: str, value: str, kind: str, why: str) -> Finding:
    """An NCCL setting of a grammar this module judges, in NCCL's own classes: a value it cannot use (CD176, it
    warns and keeps its default) or one that changes how GPUs talk (CD181)."""
    if kind == "off":
        return finding("CD181", subject=variable, refs=(row["source"],), variable=variable, value=value, effect=why)
    read: Any = environment.enum_reading(row, value)[0] if row.get("reader") and row["grammar"] == "enum" else None
    if row["grammar"] == "integer" and row.get("reader"):  # ncclLoadParam keeps what strtoll read: 'abc' is 0
        read = environment.read_whole(environment.value_reader(row), value)[0]
    then = f"NCCL takes it as {read}" if read is not None else "NCCL warns and keeps its default"  # '1abc' is 1
    return finding("CD176", subject=variable, refs=(row["source"],), variable=variable, value=value,
                   why=f"{why}; {then} ({row['effect']})")


REFUSES = {"raises": "raises an error at its first CUDA call", "falls back to CPU":
           "does not use the GPU (it falls back to the CPU)", "aborts": "ends at start"}


def _refused(row: dict[str, Any], variable: str, value: str, why: str, present: bool, report: Report) -> Finding:
    """A value ROW's reader cannot use: an error where the data's source proves it refuses it and it is here
    (CD411, a rule); a warning where the refusal is only read from the reader's own files (refusal_read: a check
    its binary holds, not run here) or the reader is not here, which says what it does and that --deep proves it
    (CD411 read, CD414)."""
    refuses = row["on_error"] in REFUSES
    consequence = row.get("refusal") or REFUSES.get(row["on_error"],
                                                    f"ignores it and keeps its default ({row['effect']})")
    if refuses and present and row.get("refusal_read"):  # read from its own files (a binary's check), not run here
        made = finding("CD411", subject=variable, refs=(row["source"],), evidence="read", variable=variable,
                       value=_shown(value), why=why, framework=_display(row["framework"]),
                       consequence=consequence + DEEP_PROVES, effect=row["effect"],
                       fix_value=_corrected(row, value, report))
        return replace(made, severity="warning")
    if refuses and present and row["framework"] in environment.CUDA_LIBRARY_READERS:
        # CUDA's (cuDNN's, cuBLAS's) own setting: every framework's GPU work is hit, the class --deep's cure names too
        # (knowledge.environment.cure_code), on the data's rule (its source, its proof where one is named)
        return finding("CD416", subject=variable, refs=(row["source"],), proof=row.get("proof"), variable=variable,
                       value=_shown(value), effect=f"{why}; every program's CUDA {consequence} ({row['effect']})",
                       fix_value=_corrected(row, value, report))
    if refuses and present:
        return finding("CD411", subject=variable, refs=(row["source"],), variable=variable, value=_shown(value), why=why,
                       framework=_display(row["framework"]), consequence=consequence, effect=row["effect"],
                       fix_value=_corrected(row, value, report))
    if refuses:
        consequence = f"is not installed in the environments looked at; where it runs, it {consequence}"
    proves = USED_PROVES if row["on_error"] == "raises when used" else DEEP_PROVES  # --deep never uses it
    return finding("CD414", subject=variable, refs=(row["source"],), variable=variable, value=_shown(value), why=why,
                   framework=_display(row["framework"]), consequence=consequence + proves, effect=row["effect"],
                   fix_value=_corrected(row, value, report))


DEEP_PROVES = "; `cudnn-doctor check --deep` runs the frameworks here with it, which proves what it does"
USED_PROVES = "; read from the data, not tried here: a program of yours that uses it proves what it does"


def _family_setting(report: Report, view: ProcessView, variable: str, value: str, spell: bool = True) -> list[Finding]:
    """A variable of a family (JAX_*, TORCH_*, ...) that no row knows: judged where the installed framework's own
    files answered for it (view.setting_answers), else not at all."""
    answer = view.setting_answers.get(variable)
    family = environment.family_of(variable)
    if family is None:
        return []
    name = _display(family["framework"])
    if answer is None:
        return (_misspelt(variable, value, family, name) if spell else []) or _unasked(variable, value, family, name)
    if answer.kind == "unknown":
        return [finding("CD418", subject=variable, refs=(family["source"],), variable=variable, value=_shown(value),
                        why=f"{name} reads no variable of this name (no file of the installed {name} names it: "
                            f"{', '.join(family.get('names_from', ()))})", framework=name,
                        consequence="ignores it" + DEEP_PROVES, effect=family["effect"], fix_value=None)]
    files = ", ".join(_in_package(path) for path in answer.files)
    if answer.kind == "compared":
        return _compared(variable, value, answer.values, family, name, files, answer.files)
    row = {"kind": answer.kind, "values": list(answer.values), "effect": family["effect"], "ignore_case": False}
    if answer.kind == "bool":
        row.update(values=[*environment.TRUE_WORDS, *environment.FALSE_WORDS], ignore_case=True)
    if answer.kind in ("string",) or (answer.kind == "enum" and not answer.values):
        return []
    used = "when used" in answer.values  # read inside a function (jax.distributed.initialize): a program that calls it
    if used and not value:
        return []  # such readers test the text before they parse it (`if (ids := os.environ.get(...))`)
    separator = next((v[5:] for v in answer.values if v.startswith("list:")), None)
    if answer.kind in ("integer", "float"):  # JAX reads them with Python's own int() and float()
        try:
            for entry in value.split(separator) if separator else [value]:
                (int if answer.kind == "integer" else float)(entry)
            problem = None
        except ValueError:
            problem = (f"{value!r} is not a list of whole numbers separated by {separator!r}" if separator else
                       f"{value!r} is not {'a whole number' if answer.kind == 'integer' else 'a number'}")
    else:
        problem = environment.grammar_problem(row, value)
    if not problem:
        return []
    words = {"bool": f"invalid truth value {value.lower()!r} for environment {variable!r}"}.get(
        answer.kind, f'Invalid value "{value}" for JAX flag {variable.lower()}')
    if "int()" in answer.values:  # read with int() or float(): Python's own words
        words = "invalid literal for int() with base 10"
    if "float()" in answer.values:
        words = "could not convert string to float"
    if used and "at start" in answer.values:  # the function is the GPU plugin's, called as JAX's backends start
        plugin = _in_package(answer.files[-1])
        return [finding("CD411", subject=variable, refs=(family["source"], *answer.files), variable=variable,
                        value=_shown(value), why=f"{problem} (the installed {name}'s {files}: the function that reads "
                                                 f"it with Python's {'float' if 'float()' in answer.values else 'int'}"
                                                 f"() is called by {plugin}'s initialize(): '{words}')",
                        framework=name, consequence="does not use the GPU: its CUDA plugin's initialize() raises "
                                                    "ValueError as the backends start, JAX logs 'Jax plugin "
                                                    "configuration error' and runs on the CPU (with JAX_PLATFORMS="
                                                    "cuda it refuses to start)",
                        effect=family["effect"], fix_value=None, evidence="rule",
                        proof=f"{', '.join(answer.files)}: the installed {name}'s GPU plugin calls that function "
                              "in initialize(), which raises ValueError for such a value; jax/_src/xla_bridge.py "
                              "discover_pjrt_plugins logs the exception and registers no CUDA backend")]
    if used:  # its reader is a function a program calls: a warning, which that program proves
        return [finding("CD414", subject=variable, refs=(family["source"], *answer.files), variable=variable,
                        value=_shown(value), why=f"{problem} (the installed {name}'s {files} reads it with Python's "
                                                 f"{'float' if 'float()' in answer.values else 'int'}() inside a "
                                                 f"function: '{words}')", framework=name,
                        consequence=f"raises ValueError where a program calls that function of {files} (not "
                                    "at import)" + USED_PROVES, effect=family["effect"], fix_value=None)]
    made = finding("CD411", subject=variable, refs=(family["source"], *answer.files), variable=variable, value=_shown(value),
                   why=f"{problem} (the installed {name}'s {files} defines it so: '{words}')", framework=name,
                   consequence="raises ValueError when it is imported", effect=family["effect"], fix_value=None,
                   evidence="rule", proof=f"{', '.join(answer.files)}, the installed {name}'s own definition of this "
                                          "option, raises ValueError for such a value while it is imported")
    return [made]


def _compared(variable: str, value: str, compared: tuple[str, ...], family: dict[str, Any], name: str, files: str,
              paths: tuple[str, ...]) -> list[Finding]:
    """A switch the installed framework's file reads by comparing its text with on or off words (the probe's
    "compared": operator, case, default, words; torch/_inductor/config.py's os.environ.get(NAME, '0') == '1'): a
    value read otherwise than it means ('true' where only '1' is on), or one that means neither ('2'), is a warning,
    with the word that means it; an empty one that reads as the default is nothing (as if unset)."""
    operator, case, default, *words = compared

    def reads_on(text: str | None) -> bool:
        if text is None:  # unset: os.environ.get returns None, equal to no word
            return operator in ("!=", "not in")
        said = text.lower() if case == "lower" else text
        return {"==": said == words[0], "!=": said != words[0], "in": said in words,
                "not in": said not in words}[operator]

    on, meant = reads_on(value), environment.truth(value)
    if meant is not None and meant == on:
        return []
    unset = None if default == "default?" else reads_on(None if default == "unset" else default[len("default="):])
    if meant is None and not value.strip() and unset is not None and on == unset:
        return []  # empty, read as its default: as if unset
    rule = {"==": f"only {words[0]!r} is on", "!=": f"only {words[0]!r} is off",
            "in": f"only {', '.join(repr(w) for w in words)} {'is' if len(words) == 1 else 'are'} on",
            "not in": f"only {', '.join(repr(w) for w in words)} {'is' if len(words) == 1 else 'are'} off"}[operator]
    fix = next((w for w in (*words, "1", "0") if reads_on(w) == meant and environment.truth(w) == meant), None) \
        if meant is not None else None
    means = f", where it means {'on' if meant else 'off'}" if meant is not None else ""
    return [finding("CD414", subject=variable, refs=(family["source"], *paths), variable=variable, value=_shown(value),
                    why=f"the installed {name}'s {files} compares it with words{' in any case' if case == 'lower' else ''}"
                        f" ({rule}), so {_shown(value)!r} is read as {'on' if on else 'off'}{means}",
                    framework=name, consequence="takes it so without a word" + USED_PROVES, effect=family["effect"],
                    fix_value=fix)]


def _misspelt(variable: str, value: str, family: dict[str, Any], name: str) -> list[Finding]:
    """A member of a family no installed file answered for, a letter or two from a variable the data documents for
    that reader (CUDA_VISBLE_DEVICES): nobody reads it, and the one meant keeps its default. Any other name is left
    alone (other programs use the prefixes too)."""
    import difflib

    # only names whose length lets difflib's ratio reach MISSPELT (2 * matches / both lengths: within a tenth of each
    # other), from an index made once: 60,000 unknown CUDA variables each listed every documented name and matched it
    # (64 s of check; a second now)
    documented = _documented(family["prefix"]).get(len(variable), ())
    meant = difflib.get_close_matches(variable, documented, n=1, cutoff=MISSPELT)
    if not meant:
        return []
    return [finding("CD418", subject=variable, refs=(environment.rows()[meant[0]]["source"],), variable=variable,
                    value=_shown(value), why=f"no reader documents this name, and it is a letter or two from "
                                             f"{meant[0]}, which {name} reads", framework=name,
                    consequence=f"reads {meant[0]}: where that was meant, it stays unset" + DEEP_PROVES,
                    effect=family["effect"], fix_value=None)]


MISSPELT = 0.9  # difflib's ratio: a letter or two off a documented name of 20 characters
MAX_SPELLED = 1000  # unknown names of a family matched for a misspelling, at most (settings)


@functools.cache
def _documented(prefix: str) -> dict[int, tuple[str, ...]]:
    """The names the data documents that begin with PREFIX, by each length of a name they could be a misspelling of:
    difflib's ratio 2M / (a + b), M at most the shorter length, reaches MISSPELT only where the lengths are that close."""
    by_length: dict[int, list[str]] = {}
    for known in environment.rows():
        if known.startswith(prefix):
            size = len(known)
            low = math.ceil(size * MISSPELT / (2 - MISSPELT) - 1e-9)  # 11 * 0.9 / 1.1 is 9.000000000000002
            high = math.floor(size * (2 - MISSPELT) / MISSPELT + 1e-9)
            for length in range(low, high + 1):
                by_length.setdefault(length, []).append(known)
    return {length: tuple(names) for length, names in by_length.items()}
# the readers whose variables are read inside their own libraries, where no cheap question reaches them: cuDNN (and
# its frontend, compiled into torch and XLA). CUDA's own family is asked instead (a first context is made:
# knowledge.environment.read_at_context); the frameworks' families are asked of their files (names_from) or left alone,
# as cuBLAS's are (its emulation and debugging switches, read only where used: tests/test_settings_when_used.py SILENT)
UNASKED_READERS = ("cudnn",)


def _unasked(variable: str, value: str, family: dict[str, Any], name: str) -> list[Finding]:
    """A variable of cuDNN's own family that no row knows and no file answered for: a warning that names its reader
    and says --deep proves it (CD416's class, as --deep's cure would name it). Nothing for other readers."""
    if family["framework"] not in UNASKED_READERS or family.get("names_from"):
        return []
    effect = (f"no row of the data knows this variable of cuDNN's ({family['prefix']}*), and cuDNN reads its settings "
              "inside its libraries and its frontend, compiled into torch and XLA, which the doctor cannot ask cheaply: "
              "what it does to the GPU work of every program that loads cuDNN here is not known" + DEEP_PROVES)
    made = finding(environment.cure_code(variable), subject=variable, refs=(family["source"],), evidence="read",
                   variable=variable, value=_shown(value), effect=effect, why=effect, framework=name,
                   consequence="", fix_value=None, unasked=family["prefix"])
    return [replace(made, severity="warning")]


def _in_package(path: str) -> str:
    """A framework's file as its package names it: .../site-packages/jax/_src/config.py -> jax/_src/config.py."""
    parts = path.replace(os.sep, "/").split("/")
    return "/".join(parts[parts.index("site-packages") + 1:]) if "site-packages" in parts else path


def _shown(value: str) -> str:
    """A setting's value as a finding quotes it: a hostile one of thousands of characters, cut."""
    return value if len(value) <= 240 else f"{value[:240]}... ({len(value)} characters)"


def _display(name: str) -> str:
    return {"torch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow", "cuda": "Every CUDA program",
            "cudnn": "cuDNN (in every program that loads it)", "cublas": "cuBLAS (in every program that loads it)",
            "nccl": "NCCL", "python": "Every Python program", "cupy": "CuPy",
            "onnxruntime": "ONNX Runtime",
            "ld.so": "programs that open libcudnn by name"}.get(name, name)


def _gpus_seen(report: Report) -> int | None:
    """How many GPUs a program started here sees: CUDA's or NVML's answer for CUDA_VISIBLE_DEVICES where it is set,
    else the GPUs of the machine; None where nothing says."""
    view = report.process
    if view is not None and view.cuda_visible_devices is not None:
        return len(view.visible) if view.visible is not None else None
    return len(report.gpus) if report.gpus else None


def _judge_setting(row: dict[str, Any], value: str, report: Report) -> list[tuple[str, Any]]:
    kind = row["kind"]
    if kind == "string" and ((row.get("slow_when_set") and value.strip()) or environment.slow(row, value)):
        return [("off", row["effect"])]  # a mode its reader turns on for any value (PYTHONDEVMODE), or these words
    if kind in ("devices", "string"):
        return []  # CUDA_VISIBLE_DEVICES: cuInit's own answer judges it (CD113, CD114); text: anything goes
    if kind == "path":
        view = report.process
        problem = view.setting_paths.get(row["variable"]) if view else None
        if problem and row.get("content") and problem.startswith(environment.CONTENT):  # the file is there; its text is refused
            return [("content", problem[len(environment.CONTENT):])]
        if problem and row.get("made_in"):  # a folder its framework makes: an error where its own code is seen to
            answer = view.setting_answers.get(row["variable"]) if view else None
            if answer is not None and answer.kind == "made":
                return [("made", {"why": f"{problem} ({row['writer']})", "files": answer.files})]
            return [("path", problem)]
        if problem and row["on_error"] in REFUSES:  # its reader opens it when it starts and raises (TORCH_LOGS_OUT)
            return [("invalid", f"{problem} ({row['writer']})")]
        switch = row.get("raises_with")
        if problem and switch and view is not None and environment.truth(view.settings.get(switch, "")):
            return [("raised path", {"why": problem, "switch": f"{switch}={_shown(view.settings[switch])}"})]
        return [("path", problem)] if problem else []
    if kind == "pjrt_options":
        return _pjrt_options(row, value, report)
    if kind == "logging_format":  # Python's own logging module asked by the probe
        view = report.process
        answer = view.setting_answers.get(row["variable"]) if view else None
        if answer is None or not answer.values:
            return []
        return [("invalid", f"Python's logging.Formatter refuses it ({answer.values[0]})")]
    if kind in ("bool", "enum", "list", "pattern", "regex") or (kind == "integer" and "hides_from" not in row) or \
            (kind == "float" and "maximum" in row):
        problem = environment.grammar_problem(row, value)
        view = report.process
        answer = view.setting_answers.get(row["variable"]) if view else None
        if problem and answer is not None and answer.kind == "enum" and value in answer.values:
            problem = None  # a word the installed reader's own files hold (a newer release's), taken as it takes it
        if problem:
            return [("invalid", problem)]
        if kind == "integer" and view is not None:
            related = environment.relation_problem(row, value, view.settings, _gpus_seen(report))
            if related:
                return [("invalid", related)]
        if environment.fails(row, value):
            return [("fails", row["failure"])]
        return [("off", row["effect"])] if environment.slow(row, value) else []
    if kind == "breaks":
        return [("breaks", row["effect"])] if value.strip() in row.get("breaks_when", []) else []
    if kind == "xla_flags":
        return _xla_flags(row, value, report) + _xla_paths(value, report)
    return _judge_more(row, kind, value, report)


def _xla_paths(value: str, report: Report) -> list[tuple[str, Any]]:
    """The flags of XLA_FLAGS naming a file or folder XLA's GPU compiler cannot use at the first compilation (the
    probe's answer, compat [[xla_path_flag]]): ("xla path", the flag, what is wrong, XLA_FLAGS without them)."""
    view = report.process
    answer = view.setting_answers.get("XLA_FLAGS") if view else None
    if answer is None or answer.kind != "xla_paths":
        return []
    refused = set(answer.values)
    # a flag that requires a refused flag's results goes with it (complete results required, the load taken out)
    refused |= {flag for flag, row in environment.xla_path_flags().items() if row.get("needs") in refused}
    refused |= set(view.xla_flags_unknown or ()) if view else set()  # one fix for XLA_FLAGS: without those too
    kept = _xla_flags_without(value, refused)
    return [("xla path", {"flag": flag, "why": why, "kept": kept or None})
            for flag, why in zip(answer.values, answer.files, strict=False)]


def _xla_flags_without(value: str, names: set[str]) -> str:
    """XLA_FLAGS (VALUE) without the flags NAMES, each other entry as written (a quoted value whole, its blanks
    kept), as XLA splits it (variables.xla_flag_values): what XLA never reads (after an entry that is not a flag) is
    left out with them."""
    from cudnn_doctor.variables import xla_flag_values

    return " ".join(written for name, written, _value in xla_flag_values(value) if name not in names)


def _xla_flags(row: dict[str, Any], value: str, report: Report) -> list[tuple[str, Any]]:
    """XLA_FLAGS as a whole: a file of flags XLA cannot read, or flags the installed jaxlib does not define."""
    view = report.process
    if view is not None and view.xla_flags_file is not None:
        path, wrong = view.xla_flags_file
        return [("flags file", {"why": f"XLA reads it as the name of a file of flags (it does not start with "
                                       f"'-'), and {path} is {wrong}", "kept": None})]
    undefined = view.xla_flags_unknown if view else None
    if not undefined:
        return []
    files = ", ".join(os.path.basename(path) for path in (view.xla_flag_files if view else ()))
    paths = view.setting_answers.get("XLA_FLAGS") if view else None  # one fix for XLA_FLAGS: its refused paths out
    out = set(undefined) | (set(paths.values) if paths is not None and paths.kind == "xla_paths" else set())
    kept = _xla_flags_without(value, out)
    flags = ", ".join("--" + name for name in undefined)
    if view is not None and view.xla_flags_said:
        return [("unknown flags", {"why": f"the installed jaxlib refuses {flags}", "kept": kept or None})]
    return [("unknown flags", {"why": f"{flags} {'is' if len(undefined) == 1 else 'are'} defined by none of the "
                                      f"installed jaxlib's libraries ({files})", "kept": kept or None})]


def _judge_more(row: dict[str, Any], kind: str, value: str, report: Report) -> list[tuple[str, Any]]:
    if kind == "torch_logs":  # the installed torch's own registry of names, asked by the probe
        view = report.process
        answer = view.setting_answers.get(row["variable"]) if view else None
        if answer is None or answer.kind != "torch_logs" or not answer.values:
            return []
        files = ", ".join(_in_package(path) for path in answer.files)
        if answer.values == ("",):
            return [("invalid", f"an empty value: the installed PyTorch's {files} parses it into a plain dict, stores "
                                "that as its log state and asks it for get_log_level_pairs() ('AttributeError: 'dict' "
                                "object has no attribute 'get_log_level_pairs'')")]
        wrong = ", ".join(environment.shown_entry(entry) for entry in answer.values)
        return [("invalid", f"{wrong} {'is' if len(answer.values) == 1 else 'are'} not a log, artifact or module name "
                            f"the installed PyTorch takes (its {files} registers the names; 'help' prints them "
                            "and raises)")]
    if kind == "alloc_conf":
        parsers = _alloc_parsers(row, report)
        if not parsers:
            return []  # another of the names is set, and each parser reads that one instead
        accepted = _allocator_keys(report, row)
        firm = alloc_conf_problems(value, accepted, parsers, names_absent=False)
        unnamed = [problem for problem in alloc_conf_problems(value, accepted, parsers) if problem not in firm]
        # a newer torch's key the installed libraries do not name: read from files (a compiler may leave no string)
        return ([("invalid", "; ".join(firm))] if firm else []) + ([("unnamed", "; ".join(unnamed))] if unnamed else [])
    if kind == "platforms":
        # split as the reader splits (JAX: at each ',' and nothing stripped, so a CRLF file's '\r' stays in a name)
        # and compares each name as written: 'CUDA' and the empty name a trailing ',' leaves are backends of those
        # names, unknown (seen with JAX 0.11.2 on an H100: "Unable to initialize backend 'CUDA'", "... backend ''")
        if value == "":  # set and empty: JAX reads it as unset and chooses its backends itself (`if not platforms`;
            return []  # its own error says "set JAX_PLATFORMS='' to automatically choose"; round sixteen's GPU set)
        exact = bool(row.get("entries_exact"))
        entries = value.split(",") if exact else [e.strip() for e in value.split(",") if e.strip()]
        unknown = [e for e in entries if (e if exact else e.lower()) not in row.get("values", [])]
        if unknown:
            shown = [environment.shown_entry(e) if e else "'' (an empty name: a ',' with nothing after or before it)"
                     for e in unknown]
            return [("invalid", f"{', '.join(shown)} {'is' if len(unknown) == 1 else 'are'} not a JAX backend "
                                f"({', '.join(row.get('values', []))}, as written: JAX compares the names exactly)")]
        framework = _framework(report, row["framework"])
        release = version_tuple(framework.version or "") if framework is not None else None
        refused = [e for e in entries if release and (version_tuple(row.get("refused_from", {}).get(e.lower(), ""))
                                                      or (999,)) <= release]
        if refused:
            return [("invalid", f"{', '.join(refused)} is refused by JAX {framework.version if framework else ''} "
                                "(it names cuda and rocm together, and no ROCm plugin is installed): use cuda")]
        if entries and not any(e.lower() in ("cuda", "gpu") for e in entries):
            return [("off", f"JAX will use only {', '.join(entries)}, never the GPU")]
        if entries and entries[0].lower() not in ("cuda", "gpu"):
            return [("off", f"JAX puts its arrays on {entries[0]}, the first backend listed, not on the GPU")]
        return []
    if kind == "integer":  # one that hides what a framework logs
        problem = environment.grammar_problem(row, value)
        if problem:
            return [("invalid", problem)]
        number = environment.read_whole(environment.value_reader(row), value)[0]
        if number is not None and number >= row["hides_from"] and _has(report, row["framework"]):
            return [("off", row["effect"])]
        return []
    if kind == "float":
        try:
            share = float(value)
        except ValueError:
            return [("invalid", f"{value!r} is not a number")]
        if not math.isfinite(share) or share <= row.get("minimum", -math.inf):
            return [("invalid", f"{value} is not above {row.get('minimum')}")]
        view = report.process
        if view is not None and environment.ignored(row, view.settings):
            return []  # its reader does not use it beside that setting
        visible = [g for g in report.gpus if view and view.visible and any(v.nvml_index == g.index for v in view.visible)]
        smallest = min(visible or report.gpus, key=lambda g: g.memory_total_mib or 0, default=None)
        if smallest is not None and smallest.memory_total_mib and share * smallest.memory_total_mib < STARVED_MIB:
            share_mib = int(share * smallest.memory_total_mib)
            return [("starves", {"share_mib": share_mib, "gpu": smallest.index, "total_mib": smallest.memory_total_mib,
                                 "seen": share_mib < row.get("starved_seen_mib", STARVED_MIB),
                                 "effect": "too little for any model: its first convolution fails for lack of memory "
                                           "(RESOURCE_EXHAUSTED)"})]
        if share > 1 and view is not None and environment.oversubscribed(row, view.settings):
            return []  # unified memory asked for: XLA spills past the GPU's memory to the host's, on purpose
        if share > 1:
            return [("off", f"more than the whole GPU ({share:g} of its memory): {row['effect']}")]
        return []
    return []


PJRT_TYPES = {"int64": "a whole number", "int64_list": "a list of whole numbers", "float": "a number",
              "bool": "a boolean", "string": "text"}


def _pjrt_options(row: dict[str, Any], value: str, report: Report) -> list[tuple[str, Any]]:
    """JAX_PJRT_CLIENT_CREATE_OPTIONS where the installed jax has a CUDA plugin to pass them to (the probe's
    answer): entries its parser refuses ("pjrt parse"), else the options the plugin refuses as text ("pjrt option":
    a name it does not take, one it takes with another type, a string of another value)."""
    view = report.process
    answer = view.setting_answers.get(row["variable"]) if view else None
    if answer is None or answer.kind != "pjrt_options" or len(answer.files) < 2 or not answer.files[1]:
        return []  # no CUDA plugin here: no GPU client gets them
    if len(value) > environment.MAX_VALUE:  # no reader takes such a value, and nothing is split of it
        return [("pjrt parse", {"why": f"a value of {len(value)} characters", "parser": ""})]
    refused, pairs = environment.pjrt_entries(value)
    if refused:
        shown = ", ".join(environment.shown_entry(entry) for entry in refused[:8])
        return [("pjrt parse", {"why": f"{shown} {'is' if len(refused) == 1 else 'are'} not of the form key:value "
                                       "(exactly one ':'; an empty entry after a last ';' is one too)",
                                "parser": answer.files[0]})]
    known = environment.pjrt_option_rows()
    problems, kept = [], []
    for key, text in pairs:
        option = known.get(key)
        if option is None and key in answer.values:
            kept.append(f"{key}:{text}")  # a newer plugin's option, which its library names: its type is its own
        elif option is None:
            problems.append(f"{environment.shown_entry(key)} is not an option the CUDA plugin takes ('Unexpected "
                            f"option name passed to PJRT_Client_Create: {key}')")
        elif option["type"] != "string":
            problems.append(f"{key} takes {PJRT_TYPES[option['type']]} and this variable gives every value as text "
                            f"('Option passed to PJRT_Client_Create with name {key} has type index 0 but expected "
                            f"type index is {option['type_index']}')"
                            + (f"; {option['instead']} sets it" if option.get("instead") else ""))
        elif option.get("values") and text not in option["values"]:
            problems.append(f"{key}:{environment.shown_entry(text)} is not one of {', '.join(option['values'])}")
        else:
            kept.append(f"{key}:{text}")
    if not problems:
        return []
    why = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
    return [("pjrt option", {"why": why, "kept": ";".join(kept) or None})]


def _corrected(row: dict[str, Any], value: str, report: Report, firm: bool = True) -> str | None:
    """The value with what the framework refuses left out (PYTORCH_CUDA_ALLOC_CONF), or the one value of an enum that
    VALUE was written for (environment.intended_value), else None: unset it. FIRM: only
    what is proven refused is left out (not a newer torch's key that the installed libraries do not name)."""
    if row["kind"] == "enum":  # the value meant, written in another case or cut short: kept as the user chose it
        return environment.intended_value(row, value)
    if row["kind"] != "alloc_conf":
        return None
    accepted, parsers = _allocator_keys(report, row), _alloc_parsers(row, report)
    kept = [item for item in environment.allocator_items(value)
            if not alloc_conf_problems(item, accepted, parsers, names_absent=not firm)]
    return ",".join(kept) or None


def _allocator_keys(report: Report, row: dict[str, Any]) -> tuple[str, ...] | None:
    """The keys of the set allocator configuration that the installed torch's c10 libraries know (None: not asked)."""
    view = report.process
    answer = view.setting_answers.get(row["variable"]) if view else None
    return answer.values if answer is not None and answer.kind == "alloc_conf" else None


ALL_PARSERS = ("common", "cuda")


def _alloc_parsers(row: dict[str, Any], report: Report) -> tuple[str, ...]:
    """Which of torch's two allocator parsers read ROW's variable in this environment (its read_by: c10's common
    AcceleratorAllocatorConfig and the CUDA build's CUDAAllocatorConfig each take the first of their names that is
    set)."""
    view = report.process
    settings = view.settings if view is not None else {}
    return tuple(entry["parser"] for entry in row.get("alloc_parsers", [{"parser": name} for name in ALL_PARSERS])
                 if not any(other in settings for other in entry.get("unless", [])))


def alloc_conf_problems(value: str, accepted: tuple[str, ...] | None = None,
                        parsers: tuple[str, ...] = ALL_PARSERS, names_absent: bool = True) -> list[str]:
    """What torch would refuse in the allocator configuration VALUE, in torch's own words where known (c10's
    ConfigTokenizer: key:value items separated by commas). PARSERS: which of its parsers read this variable here:
    "common" (c10/core AcceleratorAllocatorConfig: checks the values of its own keys, skips every other key) and
    "cuda" (c10/cuda CUDAAllocatorConfig: checks the values of its keys, skips the common ones' values, and refuses
    a key neither knows). ACCEPTED, where the installed torch's libraries were asked: the keys they name, taken
    beside the data's (a newer torch's key). A key the data knows is never refused for want of its string there: a
    compiler may build a short literal from immediates, leaving no string; a newer torch's key (requires_name) is
    refused where they do not name it only with NAMES_ABSENT (what the files say, not proven)."""
    keys = {row["key"]: row for row in _data().get("alloc_conf_key", [])}
    problems = []
    for item in environment.allocator_items(value):
        tokens = environment.allocator_tokens(item)
        key = tokens[0]
        row = keys.get(key)
        if row is not None and row.get("requires_name") and names_absent and accepted is not None and key not in accepted:
            row = None  # a newer torch's key, which the installed torch's libraries do not name
        if row is None and accepted is not None and key in accepted:
            continue  # a key this torch's libraries know and the data does not (a newer torch): its value is torch's
        if row is None:
            if "cuda" in parsers:
                problems.append(f"Unrecognized key '{key}' in CUDA allocator config" + (
                    " (the installed torch's c10 libraries do not name it either)" if accepted is not None else ""))
            elif len(tokens) < 3 or tokens[1] != ":":  # the common parser skips it, if it can find its value
                problems.append(f"{key}: no ':value' after it (torch's tokenizer runs past the end: 'Index out of "
                                "bounds in ConfigTokenizer')")
            continue
        if row.get("parser", "common") not in parsers:
            continue  # read only by a parser that does not read this variable here
        if row.get("check_text") and accepted is not None and row["check_text"] not in accepted:
            continue  # a newer torch's check, which the installed torch's libraries do not hold
        problem = _alloc_item_problem(row, tokens)
        if problem:
            problems.append(problem)
    return problems


def _alloc_item_problem(row: dict[str, Any], tokens: list[str]) -> str | None:
    """The refusal of one key:value item (TOKENS, as c10's tokenizer splits it) by the parser of ROW's key, or None."""
    key = row["key"]
    if len(tokens) < 3 or tokens[1] != ":" or tokens[2] in (",", ":", "]"):
        return f"{key} has no value (key:value; torch: 'Index out of bounds in ConfigTokenizer' or the next token " \
               "read as its value)"
    if row["kind"] == "roundup" and tokens[2] == "[":
        return _roundup_list_problem(row, tokens[3:])
    if len(tokens) > 3:
        return f"{key}: more than one value ({''.join(tokens[2:])!r}: torch reads what follows its first value as " \
               "the next key)"
    return _alloc_value_problem(row, tokens[2])


def _roundup_list_problem(row: dict[str, Any], tokens: list[str]) -> str | None:
    """roundup_power2_divisions:[BOUNDARY:DIVISIONS,...,>:DIVISIONS], TOKENS after its '[': each boundary a power of
    two (stoull) or '>', each division 0 or a power of two, and the list closed by ']'."""
    key, message = row["key"], row.get("message", "")
    if "]" not in tokens:
        return f"{key}: no closing ']' ('Expected closing bracket ']' in ConfigTokenizer but reached end of config')"
    entries = [entry for entry in " ".join(tokens[:tokens.index("]")]).split(",")]
    if tokens.index("]") != len(tokens) - 1:
        return f"{key}: more after its ']' (torch reads {tokens[tokens.index(']') + 1]!r} as the next key)"
    for entry in (entry.split() for entry in entries if entry.strip()):
        if len(entry) != 3 or entry[1] != ":":
            return f"{key}: {''.join(entry)!r} is not BOUNDARY:DIVISIONS"
        divisions, thrown = environment.c_stoull(entry[2])
        if divisions is None:
            return f"{key}: {entry[2]!r} is not a number torch reads ({thrown})"
        if divisions & (divisions - 1):
            return f"{key}: {message} or 0 to disable roundup, got {entry[2]}"
        if entry[0] != ">":
            boundary, thrown = environment.c_stoull(entry[0])
            if boundary is None:
                return f"{key}: the boundary {entry[0]!r} is not a number torch reads ({thrown})"
            if boundary == 0 or boundary & (boundary - 1):
                return f"{key}: For roundups, the intervals have to be power of 2, got {entry[0]}"
    return None


def _alloc_value_problem(row: dict[str, Any], text: str) -> str | None:
    """TEXT, one value token, as the parser of ROW's key reads it: std::stoull for whole numbers and std::stod for
    fractions (a prefix is read and the rest ignored), and each key's bound as its TORCH_CHECK states it."""
    key, kind, message = row["key"], row["kind"], row.get("message")
    if kind == "any":
        return None
    if kind == "bool":
        return None if text in ("True", "False") else f"{key}: {message or 'Expected True or False'}, got {text!r}"
    if kind == "enum":
        return None if text in row["values"] else f"{key}: {message or 'one of ' + ', '.join(row['values'])}"
    if kind in ("size", "power_of_two", "roundup"):
        number, thrown = environment.c_stoull(text)
        if number is None:
            return f"{key}: {text!r} is not a number torch reads ({thrown})"
        if kind in ("power_of_two", "roundup") and (number & (number - 1) or number == 0):
            return f"{key}: {message}, got {number}"
        if "maximum" in row and number > row["maximum"]:
            return f"{key}: {row.get('above', 'at most')} {row['maximum']:g}, got {number}"
        if "minimum" in row and (number <= row["minimum"] if row.get("exclusive") else number < row["minimum"]):
            return f"{key}: {message or 'too small'}, got {number}" + (
                f" (torch reads {text!r} as {number})" if str(number) != text else "")
        return None
    if kind == "fraction":
        fraction, thrown = environment.c_stod(text)
        if fraction is None:
            return f"{key}: {text!r} is not a number torch reads ({thrown})"
        low, high = row.get("minimum", 0.0), row.get("maximum", 1.0)
        inside = low < fraction < high if row.get("exclusive") else low <= fraction <= high
        return None if inside else f"{key}: {message}, got {text}"
    return None


def nvml_library(report: Report) -> list[Finding]:
    """NVML refused in a child with this environment, and the libnvidia-ml.so.1 it loaded is not the driver's (the
    toolkit's link stub, another release's copy): JAX refuses to start (seen on JAX 0.11: 'No visible GPU
    devices'), nvidia-smi and every NVML user fail; torch warns and runs."""
    view = report.process
    jax = _has(report, "jax")
    if view is not None and view.nvml_library and view.nvml_changed:  # seen: what loading it took from the child
        changes = "; ".join(view.nvml_changed)
        return [finding("CD118", subject=view.nvml_library, refs=(NVML_SOURCE,), evidence="seen",
                        proof=f"a child started with this environment that loads libnvidia-ml.so.1 saw it: {changes}",
                        library=view.nvml_library, error=f"{view.nvml_error or 'success'}, and the process that "
                        f"loaded it lost what every program that loads it loses ({changes})", via=_nvml_via(view),
                        consequence="every program that loads NVML (nvidia-smi, JAX, torch's memory queries) fails "
                                    "there or after, without its variables, output, files or limits",
                        framework="JAX" if jax else "")]
    if view is None or not view.nvml_library or not view.nvml_error:
        return []
    kernel = view.kernel_driver or report.driver.version
    release = view.nvml_release or release_in_file_name(os.path.basename(view.nvml_library))
    # a file without nvmlInit (pynvml: 'Function Not Found') is no NVML at all, whatever its name
    foreign = "function not found" in view.nvml_error.lower() or "not found" in view.nvml_error.lower()
    # a file that ends the program that loads it, and is not named for the kernel module's release: not the driver's
    died = bool(view.nvml_died) and not (kernel and release == kernel)
    # the loader refused the copy LD_LIBRARY_PATH or LD_PRELOAD put first (its own words, said by the child)
    refused = view.nvml_error.startswith("the loader refused") and view.nvml_via in ("LD_LIBRARY_PATH", "LD_PRELOAD")
    if not view.nvml_stub and not foreign and not view.nvml_fifo and not died and not refused and \
            not (kernel and release and release != kernel):
        return []  # the driver's own NVML refusing is the driver's problem (CD104/CD105), not the loader's
    if view.nvml_fifo:  # the loader waits on it for ever: nvmlInit is never reached
        return [finding("CD118", subject=view.nvml_library, refs=(NVML_SOURCE,), evidence="seen",
                        proof=f"a child started with this environment that loads libnvidia-ml.so.1 {view.nvml_error}, "
                              f"and {view.nvml_library} is a FIFO", library=view.nvml_library,
                        error=f"nothing: {view.nvml_error}, as the loader opens that FIFO and waits for a writer for "
                              "ever", via=_nvml_via(view),
                        consequence="every program that loads NVML (nvidia-smi, JAX, torch's memory queries) hangs "
                                    "there; the driver itself was not reached", framework="JAX" if jax else "")]
    if died:
        return [finding("CD118", subject=view.nvml_library, refs=(NVML_SOURCE,), evidence="seen",
                        proof=f"a child started with this environment that loads libnvidia-ml.so.1 {view.nvml_died}",
                        library=view.nvml_library, error=f"nothing: the program {view.nvml_died}", via=_nvml_via(view),
                        consequence="every program that loads NVML (nvidia-smi, JAX, torch's memory queries) ends or "
                                    "hangs there", framework="JAX" if jax else "")]
    made = finding("CD118", subject=view.nvml_library, refs=(NVML_SOURCE,), evidence="seen",
                   proof=f"{view.nvml_error}, in a child started with this environment (the first it finds: "
                         f"{view.nvml_library})" if refused else
                         f"nvmlInit answered '{view.nvml_error}' with {view.nvml_library} in a child started with this "
                         "environment", library=view.nvml_library, error=view.nvml_error, via=_nvml_via(view),
                   consequence=("JAX finds no GPU and refuses to start, nvidia-smi and every NVML user fail, torch "
                                "warns" if jax else "nvidia-smi and every NVML user fail (JAX would refuse to start; "
                                "torch warns)"), framework="JAX" if jax else "")
    return [made if jax else replace(made, severity="warning")]


NVML_SOURCE = ("benchmarks/evidence_facts.py on an H100 (driver 580, torch 2.11, JAX 0.11): the CUDA toolkit's "
               "lib64/stubs/libnvidia-ml.so as libnvidia-ml.so.1 first on LD_LIBRARY_PATH: nvmlInit 'Driver Not "
               "Loaded', nvidia-smi exits 9 naming the stub, JAX 'Unable to initialize backend cuda: No visible GPU "
               "devices', torch runs with 'Can't initialize NVML'")


def _nvml_via(view: ProcessView) -> str:
    if view.nvml_via == "LD_PRELOAD":
        return f"LD_PRELOAD's {view.nvml_entry}"
    if view.nvml_via == "LD_LIBRARY_PATH":
        return f"the LD_LIBRARY_PATH folder {view.nvml_entry}"
    return view.nvml_via or "the loader's search"


def observed_loads(report: Report) -> list[Finding]:
    """What the loading children saw that no sub-library finding says: a framework's own loading code failing
    (CD409), the front library refused (CD307), a child that died outside a sub-library (CD309), and what a program
    that asks the loader by name gets where that differs from what the frameworks get (a warning where every
    framework here loads its own copy, an error where nothing else uses cuDNN)."""
    view = report.process
    if view is None:
        return []
    findings: list[Finding] = []
    frameworks_ok = _frameworks_ok(view)
    for seen_load in view.loads:
        who = "a program that opens libcudnn by name" if seen_load.user == "ld.so" else _display(seen_load.user)
        for step in seen_load.steps:
            if step.ok:
                continue
            said = f"{who}: {step.step} -> {step.said}"
            if step.step == "recipe" and seen_load.user != "ld.so":
                findings.append(finding("CD409", subject=seen_load.user, evidence="seen", proof=said, framework=who,
                                        library=seen_load.recipe or "its loading code", error=step.said))
            elif step.step == "open" and seen_load.user == "ld.so" and "no such file" in step.said.lower():
                continue  # no cuDNN where the loader looks by name: CD310's information, not a failure
            elif step.step == "open" and loader_words.failure_kind(step.said) in loader_words.NOT_A_LIBRARY:
                made = finding("CD308", subject=seen_load.user, evidence="seen", proof=said, framework=who,
                               library=f"libcudnn (as {who} opens it)", arch="this machine", error=step.said)
                findings.append(_for_whom(made, seen_load.user, frameworks_ok))
            elif step.step == "open":
                made = finding("CD307", subject=seen_load.user, evidence="seen", proof=said, framework=who,
                               library=f"libcudnn (as {who} opens it)", error=step.said)
                findings.append(_for_whom(made, seen_load.user, frameworks_ok))
        if seen_load.died and seen_load.user != "ld.so" and not any(seen_load.died in step.said for step in seen_load.steps):
            findings.append(_for_whom(finding("CD309", subject=seen_load.front or seen_load.user, evidence="seen",
                                              proof=f"{who}: {seen_load.died}", library=seen_load.front or "libcudnn",
                                              how=seen_load.died, framework=who), seen_load.user, frameworks_ok))
    return findings


def _frameworks_ok(view: ProcessView) -> list[str]:
    """The frameworks whose own loading of cuDNN a child saw succeed, every step."""
    return [load.user for load in view.loads if load.user != "ld.so" and load.front and not load.died
            and all(step.ok for step in load.steps)]


def _for_whom(made: Finding, user: str, frameworks_ok: list[str]) -> Finding:
    """What the loader by name refuses breaks the programs that ask it so; where every framework here loads its own
    copy and works, they are not those programs: a warning that names who is hit."""
    if user == "ld.so" and frameworks_ok:
        return replace(made, severity="warning", detail=made.detail + (
            f" This hits programs that open cuDNN by name (C and C++ programs, TensorFlow); "
            f"{', '.join(_display(name) for name in frameworks_ok)} load their own copy, which loads."))
    return made


def jax_ptxas(report: Report) -> list[Finding]:
    """The ptxas on PATH, which XLA runs before its own, knows no PTX ISA that has this GPU's target: JAX fails
    to compile its first kernel (compat/process_env.toml [[xla_ptx_target]], compat/errors.toml [[ptx_isa]])."""
    view = report.process
    if view is None or not view.ptxas or not view.ptxas_release or not _has(report, "jax"):
        return []
    xla = report.first_use.xla if report.first_use else None
    if xla is not None and xla.ptxas_used and not xla.path_ptxas_used:
        return []  # XLA takes another ptxas before PATH's (JAX's CUDA data folder): rules/first_use judges that one
    from cudnn_doctor.versions import version_tuple

    release = version_tuple(view.ptxas_release) or ()
    isa_rows = load("errors").get("ptx_isa", [])
    known = [row["version"] for row in isa_rows if (version_tuple(row["cuda"]) or ()) <= release]
    if not known:
        return []
    isa = max(known, key=lambda v: version_tuple(v) or ())
    targets = {row["compute_capability"]: row for row in _data().get("xla_ptx_target", [])}
    short = []
    for gpu in report.gpus:
        row = targets.get(gpu.compute_capability or "")
        if row and (version_tuple(isa) or ()) < (version_tuple(row["minimum_ptx"]) or ()):
            short.append(row)
    if not short:
        return []
    row = short[0]
    folder = os.path.dirname(view.ptxas)
    return [finding("CD206", subject=view.ptxas, refs=(row["source"],), evidence="rule",
                    proof=f"{view.ptxas} is CUDA {view.ptxas_release}'s (PTX ISA up to {isa}); XLA "
                          f"compiles this GPU's kernels for {row['target']}, which needs PTX ISA {row['minimum_ptx']}",
                    detail=f"{view.ptxas}, CUDA {view.ptxas_release}, first on PATH: JAX's XLA runs the ptxas on "
                           f"PATH before its own, and that one knows PTX ISA up to {isa} while this GPU's target "
                           f"{row['target']} needs {row['minimum_ptx']}; JAX fails at its first compilation",
                    folder=folder, framework="jax")]


def preloaded_cuda(report: Report) -> list[Finding]:
    """LD_PRELOAD puts a CUDA library of another release before the one the framework's wheels hold under the same
    soname: its libraries bind to the preloaded one. Read from files (a newer minor may still serve): a warning
    that --deep proves."""
    view = report.process
    if view is None:
        return []
    out = []
    for entry, soname, release, framework, wheel_release in view.preloaded_cuda:
        if _observed(view, framework, soname):  # what its loading child saw it get outweighs: cuda_libraries
            continue
        made = finding("CD203", subject=entry, evidence="read", framework=framework, library=entry,
                       error=f"LD_PRELOAD loads it ({soname}, release {release}) into every program before the "
                             f"{soname} of release {wheel_release} that {_display(framework)}'s wheels hold: its "
                             "libraries bind to the preloaded one")
        out.append(replace(made, severity="warning", detail=(
            f"LD_PRELOAD loads {entry} ({soname}, release {release}) into every program, before the {soname} of "
            f"release {wheel_release} that {_display(framework)} was installed with: {_display(framework)}'s "
            "libraries bind to the preloaded one, and where it lacks what they call they fail to load or at their "
            "first call.")))
    return out


def broken_cuda(report: Report) -> list[Finding]:
    """A CUDA library on LD_LIBRARY_PATH the loader cannot use as its name says (not ELF, cut short, another
    library's soname): programs that open it by name stop at it. Read from the file: a warning --deep proves."""
    from cudnn_doctor.model import STUB_SOURCE, STUB_WORDS

    view = report.process
    if view is None:
        return []
    out = []
    refused = {lib.path for load in view.loads if load.user != LOADER_USER for lib in load.libraries
               if not lib.ok and lib.path}
    for path, problem, *said in view.broken_cuda:
        if path in refused:  # a framework's loading child saw the loader refuse it: cuda_libraries says it, seen
            continue
        if said:  # the loader itself refused it, opened by name in a child as such a program opens it
            made = finding("CD203", subject=path, evidence="seen", proof=f"the loader, opening "
                           f"{os.path.basename(path)} by name in a child with this environment: {said[0]}",
                           library=path, error=f"{said[0]} ({problem}). Programs that open it by name (JAX's XLA "
                           "opens cuBLASLt and nvJitLink so, when work first needs them) fail there; one that loads "
                           "its own copy by full path first is not hit")
            own = said[1] if len(said) > 1 else ""
            if own:  # those frameworks' wheels hold the soname: their own loading code may load it first
                made = replace(made, severity="warning", detail=made.detail + (
                    f" {', '.join(_display(n) for n in own.split(', '))} hold a copy of their own in their wheels, "
                    "which their loading code may load by full path first; `cudnn-doctor check --deep` runs them here "
                    "with it, which proves whether they are hit."))
            out.append(made)
            continue
        made = finding("CD203", subject=path, evidence="read", library=path, error=problem)
        companion = next((row for row in load("process_env").get("driver_companion", [])
                          if row["soname"] == os.path.basename(path)), None)
        if companion is not None:  # the driver opens it by name, and only when work needs it
            out.append(replace(made, severity="warning", detail=(
                f"{path}, on LD_LIBRARY_PATH, is not a library the loader can use ({problem}), and the loader stops "
                f"at it when {companion['opened_by']} opens {companion['soname']} ({companion['name']}) by name "
                f"{companion['when']}: that work then fails with {companion['failure']}. "
                + (companion.get("not_hit", "")[:1].upper() + companion.get("not_hit", "")[1:] + ". "
                   if companion.get("not_hit") else "")
                + "Programs start and run other work as before; `cudnn-doctor check --deep` runs the frameworks' "
                "work here, which proves whether it is hit.")))
            continue
        if problem.startswith(STUB_WORDS):  # loadable, and it does no work: what a program does then, --deep shows
            out.append(replace(made, severity="warning", refs=(STUB_SOURCE,), detail=(
                f"{path}, on LD_LIBRARY_PATH, {problem[len('it is '):]}: a file to link against, whose functions do "
                "no work. A program that opens that soname by name gets it there (JAX's XLA opens cuBLASLt and "
                "nvJitLink so) and its GPU work fails; one that loads its own copy by full path first (torch's "
                "wheels) is not hit. `cudnn-doctor check --deep` runs the frameworks here with it, which proves "
                "whether they are hit.")))
            continue
        out.append(replace(made, severity="warning", detail=(
            f"{path}, on LD_LIBRARY_PATH, is not a library the loader can use as its name says ({problem}): a program "
            "that opens it by name stops at it (JAX's XLA opens cuBLASLt and nvJitLink so and then finds no GPU); one "
            "that loads its own copy by full path (torch's wheels) is not hit.")))
    return out


def cuda_libraries(report: Report) -> list[Finding]:
    """The CUDA libraries other than cuDNN as each framework, and a program that opens them by name, got them in a
    loading child with this environment (issue 45; probes/loading.py): its own preloading code run, then each library
    opened as its libraries open it. Refused by the loader (or the copy opening it died) is seen: an error for a
    framework that needs that library at start ([[library_loading]] at_start), a warning otherwise and for programs
    that open it by name. Loaded, but the toolkit's link stub, a copy without functions the frameworks call, or a
    copy of another release than the framework's metadata pins: seen mapped, inferred to fail: a warning that --deep
    proves. A framework that mapped its own wheel's copy is not hit, whatever the path holds: nothing is said."""
    view = report.process
    if view is None:
        return []
    found: dict[tuple[str, str], Finding] = {}  # (the file, what is wrong) -> one finding, each user who gets it named
    for seen_load in sorted(view.loads, key=lambda load: load.user == LOADER_USER):  # the frameworks first
        user = seen_load.user
        who = "a program that opens it by name" if user == LOADER_USER else _display(user)
        for library in seen_load.libraries:
            made = _library_finding(report, view, user, who, library, seen_load.library_recipe, seen_load.needed)
            if made is None:
                continue
            key = (str(made.subject), str(made.values.get("kind")))
            first = found.get(key)
            if first is None:
                found[key] = made
            elif first.severity != "error" and made.severity == "error":
                found[key] = replace(made, detail=made.detail + f" ({first.values.get('who')} gets it too.)")
            elif str(made.values.get("who")) not in first.detail:
                found[key] = replace(first, detail=first.detail + f" ({made.values.get('who')} gets it too.)")
    return [*_preloading_died(report, view), *found.values()]


def _preloading_died(report: Report, view: ProcessView) -> list[Finding]:
    """A framework's own preloading code (torch's _load_global_deps, which opens its wheels' CUDA libraries by full
    path as `import torch` starts) killed in the loading child while it opened a file (a library cut short, whose
    pages past the file's end the loader touches: SIGBUS): seen. Every `import` of it dies the same way, whatever
    the path holds, since its code opens that file by full path; the wheel that owns the file is named."""
    out = []
    for seen_load in view.loads:
        path = seen_load.library_recipe_died_at
        if seen_load.user == LOADER_USER or not path:
            continue
        who = _display(seen_load.user)
        how = str(seen_load.library_recipe or "").split(": ", 2)[-1]
        wheel = seen_load.library_recipe_died_wheel
        owner = f" (a file of the wheel {wheel}, damaged since pip installed it)" if wheel else ""
        # a PYTHONPATH folder's nvidia/*/lib: its code globs sys.path, PYTHONPATH first (probes/process_env)
        entry = next((shadow[0] for shadow in view.python_shadows if shadow[3:4] == ("PYTHONPATH",) and
                      path.startswith(shadow[0].rstrip("/") + "/")), "")
        if entry:
            owner = f" (in the PYTHONPATH folder {entry}, which its code searches before site-packages)"
        folder = seen_load.library_recipe_died_folder or ""
        if folder:
            owner = (f" (in the working folder {folder}, which `python -c`, the REPL, notebooks and scripts kept there "
                     "put first on sys.path; a script started from elsewhere is not hit)")
        out.append(finding("CD409", subject=path, evidence="seen",
                           proof=f"{who}'s own loading code ({seen_load.library_recipe}) in a child with this "
                                 "environment", framework=who, library=path,
                           error=f"{who}'s own loading code opens it by full path as its import starts, and the "
                                 f"child that ran that code {how}{owner}; `import {seen_load.user}` dies there, "
                                 "whatever LD_LIBRARY_PATH holds",
                           wheel=wheel or "", died_opening=path, user=seen_load.user, entry=entry,
                           working_folder=folder))
    return out


LOADER_USER = "ld.so"


def _library_finding(report: Report, view: ProcessView, user: str, who: str, library: Any,
                     recipe: str | None, needed: tuple[str, ...] = ()) -> Finding | None:
    import os as _os

    path = library.path or ""
    via, entry = _library_via(report, view, library)
    how = {"mapped": "already mapped when its libraries ask for it", "LD_LIBRARY_PATH": "found on LD_LIBRARY_PATH",
           "RUNPATH": "found through its own libraries' RUNPATH", "by name": "found by the loader's cache",
           "died": "opened"}.get(library.how, library.how)
    ran = f" after its own preloading code ({recipe})" if recipe and user != LOADER_USER else ""
    proof = f"{who}'s loading child{ran}: {library.soname} {how}: {path or 'no file'} -> {library.said}"
    if not library.ok:
        if library.path is None and library.own and library.own_problem and user != LOADER_USER:
            return _own_copy_skipped(user, who, library, proof, needed)
        if library.path is None and "no such file" in library.said.lower():
            return None  # nowhere to be found: not installed for it (what needs it says so itself)
        if user == LOADER_USER and any(broken[0] == path for broken in view.broken_cuda):
            return None  # broken_cuda says it for programs that open it by name, with the loader's words
        made = finding("CD203", subject=entry or path or library.soname, evidence="seen", proof=proof,
                       library=path or library.soname, error=f"{library.said} ({who}, {library.soname} {how})",
                       via=via, framework="" if user == LOADER_USER else user, kind="refused", who=who)
        if user != LOADER_USER and library.own_wheel and library.real and library.real == library.own_real:
            # the file refused is the framework's own wheel's copy (its own code and RUNPATH take it by full path)
            made = replace(made, values={**made.values, "wheel": library.own_wheel, "user": user})
        if user != LOADER_USER and library.soname in needed:  # its own libraries' DT_NEEDED: the loader's rule
            return replace(made, detail=made.detail + (
                f". {who}'s own libraries need {library.soname} (their DT_NEEDED), and this is the copy the loader "
                "gives them here: its import fails there."))
        if user != LOADER_USER and _stem(library.soname) in _at_start(user):
            return replace(made, detail=made.detail + (
                f". {who} needs {library.soname} at start, and this is the copy it gets here: it fails there."))
        return replace(made, severity="warning", detail=made.detail + "." + (
            f" {who} opens {library.soname} when work first needs it, and gets this copy; `cudnn-doctor check --deep` "
            "runs the frameworks here, which proves whether their work is hit." if user != LOADER_USER else
            " Programs that open it by name fail there; a framework whose own code maps its own copy first is not hit."))
    if user != LOADER_USER and library.unbound:
        return _unbound_finding(user, who, library, path, via, entry, proof)
    if user != LOADER_USER and library.own_replaced and library.real and library.real == library.own_real:
        return _own_copy_replaced(user, who, library, proof)
    if user == LOADER_USER and (not (library.stub or library.missing) or any(
            broken[0] == path for broken in view.broken_cuda)):
        return None  # a program that opens it by name and gets a whole library: no more than that is known
    if library.stub:
        problem, kind = f"it is the CUDA toolkit's link stub {library.stub}, whose functions do no work", "stub"
    elif library.missing:
        problem, kind = f"it lacks {', '.join(library.missing)}, which the frameworks call", "missing"
    elif library.own and path and library.real != library.own_real and (
            expected := _expected(library)) and _release_differs(
                have := library.version or release_in_file_name(_os.path.basename(library.real or path)),
                expected) and not _newer_and_whole(library, have, expected):
        asked = (f"{who}'s metadata asks {library.pinned}" if expected == library.pinned else
                 f"{who}'s own wheel holds release {library.own_release}, which the rest of its CUDA libraries come "
                 "with")
        problem = f"it is release {library.version or 'unknown'}, and {asked} (its own copy: {library.own})"
        kind = "release"
    elif not library.own and user != LOADER_USER and path and library.pinned and _release_differs(
            have := library.version or release_in_file_name(_os.path.basename(library.real or path)),
            str(library.pinned)) and not _newer_and_whole(library, have, str(library.pinned)):
        # its own wheel is not installed (p17): the copy it gets still answers to what its metadata asks of that wheel
        problem = (f"it is release {have or 'unknown'}, and {who}'s metadata asks {library.pinned}, whose wheel is "
                   "not installed here: it loads, and the first call into it may fail with a status code (the "
                   "framework was built against that release), not its import")
        kind = "release"
    else:
        return None
    made = finding("CD203", subject=entry or path, evidence="read", proof=proof, library=path,
                   error=f"{who} gets it for {library.soname} ({via}): {problem}", via=via,
                   framework="" if user == LOADER_USER else user, kind=kind, who=who)
    proven = _stub_proven(user, library.soname) if kind == "stub" else None
    if proven:  # seen mapped in its process, and that a stub of this library fails its first work proven on a GPU
        return replace(made, severity="error", evidence="rule", proof=f"{proof}; proven against {who}: {proven}",
                       detail=(f"{who} gets {path} for {library.soname} here ({via}; seen in a child that loads as it "
                               f"does): {problem}. A stub of {library.soname} in {who}'s process fails its first GPU "
                               "work (proven against the real framework: the proof is named in this finding's "
                               "evidence)."))
    return replace(made, severity="warning", detail=(
        f"{who} gets {path} for {library.soname} here ({via}; seen in a child that loads as it does): {problem}. "
        "It loads, so whether the work that calls it fails is inferred: `cudnn-doctor check --deep` runs the "
        "frameworks here, which proves it."))


def _own_copy_skipped(user: str, who: str, library: Any, proof: str, needed: tuple[str, ...]) -> Finding:
    """The framework's own wheel holds a copy of the soname the loader found nowhere for it: it skipped that copy
    (another machine's, a link to nothing) or refused it, as its headers say (library.own_problem). Seen: the loading
    child found no usable copy where the framework's libraries look. An error where its import needs it (DT_NEEDED,
    [[library_loading]] at_start); the wheel that owns the copy is named for the plan."""
    at_start = library.soname in needed or _stem(library.soname) in _at_start(user)
    made = finding("CD203", subject=library.own, evidence="seen", proof=f"{proof}; its own copy {library.own}: "
                   f"{library.own_problem}", library=library.own,
                   error=f"{library.said} ({who}, {library.soname}: its own wheel's copy is {library.own_problem}, "
                         "which the loader skips or refuses, and no other copy is where its libraries look)",
                   via="its own wheel", framework=user, kind="refused", who=who,
                   **({"wheel": library.own_wheel, "user": user} if library.own_wheel else {}))
    if at_start:
        return replace(made, detail=made.detail + f". {who} needs {library.soname} at start: its import fails there.")
    return replace(made, severity="warning", detail=made.detail + (
        f". {who} opens {library.soname} when work first needs it; `cudnn-doctor check --deep` runs the frameworks "
        "here, which proves whether their work is hit."))


def _own_copy_replaced(user: str, who: str, library: Any, proof: str) -> Finding:
    """The framework maps its own wheel's copy (seen), and that file is not the one pip wrote: its size is not the one
    its wheel's RECORD gives (read). It loads, so whether work fails is inferred: a warning that --deep proves, with
    the release it answered and the wheel to put back."""
    answered = f", and it answers release {library.version}" if library.version else ""
    made = finding("CD203", subject=library.own, evidence="read", proof=f"{proof}; its wheel's RECORD: "
                   f"{library.own_replaced}", library=library.own,
                   error=f"{who} maps its own wheel's copy of {library.soname}, which is not the file its wheel "
                         f"{library.own_wheel or ''} installed ({library.own_replaced}{answered}): another release "
                         "copied over it, or a damaged file",
                   via="its own wheel", framework=user, kind="replaced", who=who,
                   **({"wheel": library.own_wheel, "user": user} if library.own_wheel else {}))
    return replace(made, severity="warning", detail=made.detail + (
        ". It loads, so whether its work fails is inferred: `cudnn-doctor check --deep` runs the frameworks here, "
        "which proves it."))


def _unbound_finding(user: str, who: str, library: Any, path: str, via: str, entry: str | None,
                     proof: str) -> Finding:
    """The copy USER gets for a soname lacks symbols (with their version node) that its own library (the binder:
    libtorch_cuda.so) takes from it, and no other object of the program's scope defines them: the loading child asked
    the loader (dlvsym on the copy, then on the global scope) and it bound none: seen. Where the framework's
    libraries are bound as they load ([[library_loading]] binding = now: Python's RTLD_NOW), the loader refuses them
    there, its import fails: an error. Bound lazily (JAX's plugin through XLA's dlsym), the work that first calls one
    fails: a warning that --deep proves."""
    names = [name for name in library.unbound if not name.startswith("+")]
    more = next((name[1:] for name in library.unbound if name.startswith("+")), "")
    listed = ", ".join(names) + (f" and {more} more" if more else "")
    first, _, node = names[0].partition("@") if names else ("?", "", "")
    words = f"{library.binder}: undefined symbol: {first}" + (f", version {node}" if node else "")
    release = f" (release {library.version})" if library.version else ""
    made = finding("CD203", subject=entry or path, evidence="seen",
                   proof=f"{proof}; asked (dlvsym) for the {library.bound} symbols {_os_base(library.binder)} takes "
                         f"from it, the loader bound none of {listed} in it or elsewhere in the program",
                   library=path, error=f"{who} gets {path}{release} for {library.soname} ({via}), which lacks "
                                       f"{listed} that its {_os_base(library.binder)} takes from it",
                   via=via, framework=user, kind="unbound", who=who)
    if _binding(user) == "now":
        return replace(made, detail=made.detail + (
            f". {who}'s libraries are bound as they load (RTLD_NOW): the loader refuses {library.binder} there "
            f"('{words}'), and its import fails."))
    said = words if node else f"{words}', or where it looks it up by name (XLA's stubs): 'Could not load symbol {first}"
    return replace(made, severity="warning", detail=made.detail + (
        f". {who} binds them when they are first called: the work that calls one fails there ('{said}'); "
        "`cudnn-doctor check --deep` "
        "runs the frameworks here, which proves whether it is hit."))


def _os_base(path: str | None) -> str:
    return os.path.basename(path or "") or "its own library"


def _binding(user: str) -> str:
    return next((str(row.get("binding", "now")) for row in _data().get("library_loading", [])
                 if row["framework"] == user), "now")


def _library_via(report: Report, view: ProcessView, library: Any) -> tuple[str, str | None]:
    """How the copy LIBRARY names came into the program, and the entry as the user wrote it, as the probe resolved
    them (probes/origin, one answer for every library): LD_PRELOAD (the entry), an LD_LIBRARY_PATH folder, the framework's own
    wheel, its RUNPATH, or the loader's cache."""
    return library.via or "the loader's cache or a system folder", library.via_entry


def _observed(view: ProcessView, user: str, soname: str) -> bool:
    """Whether USER's loading child asked SONAME (issue 45): what it got is then seen, not read."""
    return any(load.user == user and any(lib.soname == soname for lib in load.libraries) for load in view.loads)


def _stem(soname: str) -> str:
    return soname.split(".so")[0]


def _stub_proven(user: str, soname: str) -> str | None:
    """The proof ([[library_loading]] stub_proven) that USER fails its first work with the toolkit's link stub of
    SONAME mapped in its process, where that library is among its stub_fails; None where it was not proven."""
    return next((str(row.get("stub_proven")) for row in _data().get("library_loading", [])
                 if row["framework"] == user and _stem(soname) in row.get("stub_fails", [])
                 and row.get("stub_proven")), None)


def _at_start(user: str) -> set[str]:
    return {stem for row in _data().get("library_loading", []) if row["framework"] == user
            for stem in row.get("at_start", [])}


def _expected(library: Any) -> str | None:
    """What a framework's copy of LIBRARY should be: its metadata's exact pin, else its own wheel's release (a floor,
    such as JAX's plugin asks, says nothing of which release its other libraries were installed with)."""
    if library.pinned and "==" in library.pinned:
        return str(library.pinned)
    return f"=={library.own_release}" if library.own_release else library.pinned


def _newer_and_whole(library: Any, release: str | None, pinned: str) -> bool:
    """Whether the copy is a later release than PINNED under the same soname (which promises the older ABI) and its
    loading child found in it every function the frameworks call and each symbol the framework's own libraries take
    from it (none unbound): the program gets all it binds, so nothing is said."""
    spec = re.search(r"(==|>=|~=)\s*([0-9][0-9.]*)", pinned)
    have, want = version_tuple(release or "") or (), version_tuple(spec.group(2) if spec else "") or ()
    width = min(len(have), len(want))
    return bool(width and not library.unbound and not library.missing and have[:width] > want[:width])


def _release_differs(release: str | None, pinned: str) -> bool:
    """Whether RELEASE falls outside PINNED ("nvidia-cublas==13.1.0.3", "...>=13.0"), compared on the parts both
    name (a library's own answer says major.minor.patch, a wheel four parts); unknown releases do not differ."""
    spec = re.search(r"(==|>=|~=)\s*([0-9][0-9.]*)", pinned)
    have = version_tuple(release or "") or ()
    if spec is None or not have:
        return False
    want = version_tuple(spec.group(2)) or ()
    width = min(len(have), len(want))
    if spec.group(1) == ">=":
        return have[:width] < want[:width]
    return have[:width] != want[:width]


def cxx_runtime(report: Report) -> list[Finding]:
    """A C++ runtime (libstdc++.so.6, libgcc_s.so.1) that LD_PRELOAD or an LD_LIBRARY_PATH folder gives before the
    system's, which the loader refuses for a framework's own library (a needed GLIBCXX_, CXXABI_ or GCC_ version it
    lacks, or no library of this machine): seen, `ld.so --list` of that library in a child with this environment
    (probes/loader_runtime.py). The framework's import fails there."""
    view = report.process
    if view is None:
        return []
    out = []
    for runtime, via, entry, framework, library, missing, said in view.cxx_runtime:
        lacks = f", which lacks {missing}" if missing else ""
        out.append(finding("CD409", subject=library, evidence="seen",
                           proof=f"the loader (ld.so --list {library}, in a child with this environment): {said}",
                           framework=_display(framework), library=library,
                           error=f"{said} ({via} gives {runtime}{lacks}, before the system's C++ runtime; "
                                 f"{_display(framework)}'s import fails there)",
                           runtime=runtime, runtime_via=via, runtime_entry=entry))
    return out


def python_refused(report: Report) -> list[Finding]:
    """The frameworks' Python did not start with this environment (probes/python_start.py): seen. The variable without
    which it started is named; where none alone did, the Python variables that are set."""
    view = report.process
    if view is None:
        return []
    out = []
    for python, said, variable, value, names in view.python_refused:
        users = ", ".join(_display(f.name) for f in report.frameworks if f.name in ("torch", "jax", "tensorflow"))
        out.append(finding("CD411", subject=variable or names, evidence="seen",
                           proof=f"{python} was started in a child with this environment and stopped: {said}"
                                 + (f"; it started with {variable} unset" if variable else ""),
                           variable=variable or names, value=value[:200] if variable else "(as set)",
                           why=f"{python} does not start with it ({said})", framework=users or "A program of it",
                           consequence="cannot start: Python stops before a program's first line"))
    return out


def cpu_kernels(report: Report) -> list[Finding]:
    """numpy, asked in a framework's Python with this environment, failed with a CPU-kernel variable set and worked
    without it (probes/cpu_kernels.py): seen. Every program of the frameworks that imports numpy stops there."""
    view = report.process
    if view is None:
        return []
    rows = {row["variable"]: row for row in _data().get("cpu_kernel", [])}
    users = ", ".join(_display(f.name) for f in report.frameworks if f.name in ("torch", "jax", "tensorflow"))
    out = []
    for python, said, variable, value in view.cpu_kernels:
        row = rows.get(variable, {})
        out.append(finding("CD411", subject=variable, refs=(row.get("source", ""),), evidence="seen",
                           proof=f"{python} ran `import numpy` and a matrix product in a child with this environment: "
                                 f"{said}; it worked with {variable} unset",
                           variable=variable, value=_shown(value)[:200],
                           why=f"{row.get('reader', 'numpy')} refuses it ({said})",
                           framework=users or "A program of it", effect=row.get("effect", ""),
                           consequence="stops at its first import of numpy (torch and JAX import it as they load)",
                           fix_value=None))
    return out


def python_shadows(report: Report) -> list[Finding]:
    """A folder on PYTHONPATH holds a package the framework imports (its GPU plugin's namespace, the nvidia wheels'
    namespace, the framework itself): Python takes it first. Read from files, so a warning --deep proves."""
    view = report.process
    if view is None:
        return []
    out = []
    for entry, package, framework, how, *seen in view.python_shadows:
        made = finding("CD419", subject=os.path.join(entry, package), evidence="read", framework=_display(framework),
                       library=package, error="", entry=entry if how == "PYTHONPATH" else "", how=how)
        asked = (f"seen: {_display(framework)}'s Python, started with this environment, finds {package} there "
                 "(importlib.util.find_spec)")
        if how == "user site":
            out.append(replace(made, severity="warning", evidence="seen", proof=asked, subject=entry, detail=(
                f"Your user site {entry} holds {package}, and {_display(framework)}'s Python takes it from there, "
                f"before the copy installed with {_display(framework)} in site-packages: a stale or other release "
                f"there makes `import {framework}` fail or misbehave (`python -c 'import {package}; print("
                f"{package}.__file__)'` shows which is used). PYTHONNOUSERSITE=1 makes Python skip the user site.")))
            continue
        if how == "stale bytecode":
            out.append(replace(made, severity="warning", evidence="seen", subject=entry, proof=(
                f"seen: {_display(framework)}'s Python compared {entry}'s hash with its source "
                "(importlib.util.source_hash): they differ"), detail=(
                f"{entry} is {package}'s cached bytecode, marked to be used without checking its source (an "
                f"'unchecked hash' .pyc, PEP 552), and it was compiled from another source than the {package} "
                f"installed: Python runs the old code. Delete it (Python writes it again from the source).")))
            continue
        if how == "sys.path":
            out.append(replace(made, severity="warning", evidence="seen", proof=asked, detail=(
                f"{_display(framework)}'s Python takes {package} from {entry} (a folder a .pth file or the "
                f"interpreter puts on sys.path), before the copy installed with {_display(framework)}: it may be "
                f"another release (`python -c 'import {package}; print({package}.__file__)'` shows it).")))
            continue
        if how != "PYTHONPATH":  # the working folder: first on sys.path for python -c, the REPL and scripts kept there
            out.append(replace(made, severity="warning", proof=(
                "read from the working folder: `python -c 'import " + package + "'` here proves it"), detail=(
                f"The working folder {entry} holds {package} (a file or package of that name), which "
                f"{_display(framework)} imports as it starts: `python -c`, the REPL, notebooks and scripts kept in this "
                f"folder put it first on sys.path, so they import it instead and {_display(framework)} fails to "
                f"import or misbehaves. Rename it, or start programs from another folder.")))
            continue
        if seen:  # Python's finder answered it: that is the copy programs import
            made = replace(made, evidence="seen", proof=asked)
        if len(seen) >= 3 and seen[1]:  # and every compiled module of it is for another Python: built elsewhere
            out.append(_built_for_another_python(made, entry, package, framework, seen[1], seen[2]))
            continue
        out.append(replace(made, severity="warning", detail=(
            f"The PYTHONPATH folder {entry} holds {package}, which {_display(framework)} imports: Python takes it "
            f"from there before site-packages, so {_display(framework)} may load another {package} than it was "
            "installed with, or none of its GPU plugin (it then runs on the CPU or fails to import).")))
    return out


def _built_for_another_python(made: Finding, entry: str, package: str, framework: str, tags: str,
                               suffixes: str) -> Finding:
    """A PYTHONPATH copy of PACKAGE whose compiled modules are all tagged TAGS, none of the SUFFIXES the framework's
    Python imports (its own importlib.machinery.EXTENSION_SUFFIXES): built for another Python version or platform
    (`pip install --target` run by another interpreter, a home shared with nodes of another architecture). Python
    takes the copy and then finds none of its compiled modules: the import fails. Seen (Python's finder, Python's
    own suffixes against the files' names); --deep proves the failure."""
    shown = _display(framework)
    ours = next((s for s in suffixes.split() if s.count(".") >= 2), suffixes.split()[0] if suffixes else "")
    return replace(finding("CD410", subject=made.subject, evidence="seen", framework=shown, library=package,
                           entry=entry, how="PYTHONPATH", what=f"{package} in {entry}",
                           built=f"another Python or platform (its compiled modules are {tags})",
                           found=f"{shown}'s Python, which imports {ours} modules"),
                   severity="warning", proof=(
                       f"seen: {shown}'s Python finds {package} in {entry}, and every compiled module there is tagged "
                       f"{tags}, none of the suffixes it imports ({suffixes}); `check --deep` runs {shown} and proves "
                       "the import failing"), detail=(
                       f"The PYTHONPATH folder {entry} holds a {package} built for another Python or platform: its "
                       f"compiled modules are {tags}, and {shown}'s Python imports only {suffixes} ones "
                       "(importlib.machinery.EXTENSION_SUFFIXES). PYTHONPATH comes before site-packages, so "
                       f"`import {package}` takes that copy and then finds none of its compiled modules: {shown} fails "
                       f"to import. Take {entry} out of PYTHONPATH (or install {package} there with this Python: "
                       f"`python -m pip install --target {entry} {package}`)."))


def environment_cure(report: Report) -> list[Finding]:
    """--deep: the frameworks failed in children with this environment and worked in one that differed in one part
    only (doctor/bisect.py): that part is the cause, seen. Its code is the class of what was taken out."""
    view = report.process
    cure = view.cured_by if view is not None else None
    if cure is None:
        return []
    names = ", ".join(_display(name) for name in cure.frameworks)
    code = _sanitizer_cure_code(view, cure) if view is not None else None
    code = code or _cure_code(cure)
    made = finding(code, subject=f"environment: {cure.kind}", evidence="seen",
                   proof=f"{names} failed in a child started with this environment and worked in one with {cure.words} "
                         f"(it said: {cure.said[:300]})",
                   framework=names, cure=cure.words)
    detail = (f"{names} failed its first GPU steps in a child started with this environment, and worked in one that "
              f"differed only in this: {cure.words}. " + _CURE_WHY.get(cure.kind, "") +
              (f" Taken out: {', '.join(cure.removed)}." if cure.removed else ""))
    return [replace(made, severity="error", detail=detail.strip())]


def _sanitizer_cure_code(view: ProcessView, cure: Any) -> str | None:
    """A cure that took a sanitizer's run-time out of LD_PRELOAD: the class of what the run-time broke, as the children
    saw it: cuInit's answer (CD110), else cuDNN's sub-libraries not found beside it (CD304) or found elsewhere of
    another release (CD305)."""
    if cure.kind != "preload":
        return None
    runtimes = [name for row in _data().get("sanitizer", []) for name in row.get("runtime", [])]
    if not any(os.path.basename(entry).startswith(tuple(runtimes)) for entry in cure.removed):
        return None
    if view.cuinit not in (None, 0):
        return "CD110"
    problems = [sub.problem for loaded in view.cudnn for sub in loaded.sublibraries if sub.seen and sub.problem]
    return "CD305" if "another release" in problems else "CD304" if problems else None


_CURE_WHY = {
    "preload": "LD_PRELOAD loads its libraries into every program, before the framework's own.",
    "library_path": "LD_LIBRARY_PATH is searched before each library's own RUNPATH, so those folders' CUDA and cuDNN "
                    "libraries are what the framework gets for the ones it opens by name.",
    "path": "XLA runs the first ptxas on PATH before its own.",
    "pythonpath": "PYTHONPATH comes before site-packages: a package on it shadows the installed one.",
    "working_folder": "Python puts the working folder first on sys.path for `python -c`, the REPL and a script kept "
                      "there: a module there named like one the framework imports is imported in its place. "
                      "PYTHONSAFEPATH=1 (Python 3.11 and later) leaves it off; a script that imports a module kept "
                      "beside it then needs that folder on PYTHONPATH, or rename the module.",
    "limits": "A process limit below what the framework needs stops it.",
    "shell": "The shell passes its umask and the signals it ignores to every program it starts (execve(2)).",
    "descriptors": "The descriptors the shell inherited from its parent pass to every program it starts and count "
                   "against its open-files limit: the frameworks ran once they were closed.",
    "variable": "The framework, CUDA or a library they load reads that variable at start.",
    "variables": "The framework, CUDA or a library they load reads those variables at start; the frameworks worked "
                 "only with all of them unset.",
}


def _cure_code(cure: Any) -> str:
    """The registry's class of what the cure took out: which libraries a preload or folder brought, which
    variable (its row or family in compat/ names the class: knowledge.environment.cure_code)."""
    if cure.cause and cure.kind in ("pythonpath", "working_folder"):  # a place Python imports from, taken out:
        return str(cure.cause)  # what raised it there, from its frames (a plugin declared there, another copy)
    removed = " ".join(os.path.basename(entry) for entry in cure.removed)
    if cure.kind == "library_path" or (cure.kind == "preload" and cure.libraries):  # by file, and by the SONAME
        removed = " ".join(cure.libraries)
    if cure.kind in ("preload", "library_path"):
        if "libcudnn" in removed:
            return "CD317" if cure.kind == "preload" else "CD305"
        if "libnvidia-ml" in removed:
            return "CD118"
        if "libcuda.so" in removed:
            return "CD112"
        if "libnccl" in removed:
            return "CD180"
        if any(lib in removed for lib in ("libcublas", "libcudart", "libnvrtc", "libcufft", "libcusparse",
                                          "libnvJitLink", "libcusolver", "libcurand")):
            return "CD203"
        return "CD409"
    if cure.kind == "path":
        return "CD206"
    if cure.kind in ("limits", "shell", "descriptors"):
        return "CD116"
    if cure.kind in ("pythonpath", "working_folder"):  # a package there is imported in place of the installed one
        return "CD419"
    if cure.kind == "variables":  # several variables together: one class where their rows all name it (TMPDIR and
        named = {environment.cure_code(name) for name in cure.removed}  # TMP: CD417), else whose they are
        if len(named) == 1 and cure.removed:
            return named.pop()
        return "CD416" if all(name.startswith("CUDA_") for name in cure.removed) else "CD411"
    return environment.cure_code(cure.variable or "")


def context_refused(report: Report) -> list[Finding]:
    """The first context a program's first CUDA work makes (primary context, 1 MiB allocated, synchronized), refused
    by CUDA itself in a child with this environment (_probe_jobs.probe_cuda_context: made only where a CUDA variable
    set here is one no row of the data vouches for). CD416, seen: every CUDA program's first GPU call fails here. One
    such variable: it is named, and the plan unsets it; several: named together, and --deep (which unsets each alone
    and runs the frameworks) names the one."""
    view = report.process
    if view is None or not view.context or view.context == "ok" or not view.context_variables \
            or (view.context_without != "ok" and _cuda_answered(view.context_without)):
        return []  # refused without them too: another cause (a full GPU, a busy one) the other rules say
    names = view.context_blamed or view.context_variables
    one = names[0] if len(names) == 1 else None
    without = view.context_without_unset or names
    said = (f"seen: CUDA refused it in a child started with this environment ({view.context}), as the first GPU call of "
            f"torch, JAX or any CUDA program makes it, and made it in a child without {', '.join(without)}")
    unproven = view.context_without != "ok"
    if unproven:  # the child started without them to tell gave no CUDA answer (it hung, crashed, said nothing)
        said = (f"seen: CUDA refused it in a child started with this environment ({view.context}), as the first GPU "
                f"call of torch, JAX or any CUDA program makes it; the child started without {', '.join(without)}, "
                f"to tell whether {'it is' if len(without) == 1 else 'they are'} the cause, gave no answer of CUDA's "
                f"({view.context_without or 'none'}); `cudnn-doctor check --deep` unsets "
                f"{'it' if len(without) == 1 else 'each alone'} and runs the frameworks, which tells")
    effect = (f"CUDA refuses the first context on the first visible GPU ({view.context}), so every program's first GPU "
              "call fails here (torch: a CUDA error; JAX: no CUDA device)")
    if one is not None and len(without) > 1:
        effect += f"; made in a child without {one} alone (each of {', '.join(without)} was left out alone): {one} is the cause"
    elif one is not None:
        effect += f"; {one} is the one CUDA variable set here that no row of the data vouches for"
    else:
        effect += (f"; the CUDA variables set here that no row of the data vouches for are {', '.join(names)}: "
                   "`cudnn-doctor check --deep` unsets each alone and names the one")
    made = finding("CD416", subject=one or ", ".join(names), evidence="seen", proof=said,
                   variable=one or ", ".join(names), value=_shown(view.settings.get(one, "")) if one else "(several)",
                   effect=effect)
    return [replace(made, severity="warning") if unproven else made]


def _cuda_answered(said: str | None) -> bool:
    """Whether SAID (process.context_without) is CUDA's own answer ("STEP: CUDA_ERROR_NAME (text)"), not a child that
    failed to give one."""
    return said is not None and re.match(r"\w+: CUDA_ERROR_\w+", said) is not None


RULES = (driver_library, nvml_library, visibility, torch_count, device_order, memory_held, limits, preloaded_cudnn, preloaded_cudnn_sublibrary, slow_preload, hook_preloaded_cudnn,
         loaded_sublibraries, observed_loads, settings, context_refused, jax_ptxas, environment_cure, preloaded_cuda,
         python_shadows, broken_cuda, cxx_runtime, python_refused, cpu_kernels, cuda_libraries)

# errors of a setting that name no framework of their own (CUDA's, cuDNN's, cuBLAS's settings: CD416): every
# framework's GPU work run under --deep with it set outweighs them
SETTING_ERRORS = ("CD416",)
CUDA_READERS_SHOWN = ("CUDA", "cuDNN", "cuBLAS", "cuda", "cudnn", "cublas")

# errors that stop every program in this environment (no framework named): a framework's failure under --deep is
# their evidence
AFFECTS_EVERY_PROGRAM = ("CD101", "CD102", "CD104", "CD110", "CD111", "CD112", "CD113", "CD116")


def with_evidence(report: Report, findings: list[Finding],
                  named: dict[str, tuple[str, ...]] | None = None) -> list[Finding]:
    """`check --deep`: what each framework said when it ran a tiny cuDNN convolution (and, torch, an LSTM) in a
    child with this environment. The findings it explains become errors that quote it ("seen" evidence): those
    whose code its words name (NAMED: framework -> codes, read from its words by explain's reader), those about
    that framework, and those that stop every program; on a machine with no NVIDIA GPU, CD159 explains it and stays
    a warning (read from /sys, and no program here can use the GPU anyway); where none does, CD415 carries its
    words."""
    out = _settings_tried(report, _ran_outweighs(report, list(findings)))
    for framework in report.frameworks:
        deep = framework.details.get("deep")
        if not isinstance(deep, dict) or not isinstance(deep.get("error"), str) or deep.get("not_run"):
            continue  # not run (JAX with an XLA_FLAGS it would hang on): nothing was seen
        name = _display(framework.name)
        said = f"{name} under --deep: {deep['error'][:400]}"
        codes = set((named or {}).get(framework.name, ()))
        codes |= {related for code in list(codes) for related in RELATED.get(code, ())}
        text = _failure_text(deep)
        own = set((named or {}).get(framework.name, ()))  # the codes its words name themselves, not their kin
        explaining = [i for i, f in enumerate(out) if (f.code in codes and _of(f, framework.name, name)) or
                      _named_by(f, text) or (
            f.severity == "error" and (_about(f, framework.name, name) or (
                f.code in AFFECTS_EVERY_PROGRAM and not f.values.get("framework")))) or (
            f.values.get("predicts") == framework.name)]  # read from this framework's own code: it said it would fail
        explaining, behind = _first_met(out, explaining, own, text, framework.name)
        for index in behind:  # read of the files, while its words name another cause: not what it met first
            first = out[explaining[0]] if explaining else None
            out[index] = replace(out[index], proof=(f"{out[index].proof}; " if out[index].proof else "") + (
                f"behind what {name} met first under --deep ({first.code if first else 'its own words'}: "
                f"{first.title if first else deep['error'][:200]}); read from files, not seen failing"))
        for index in explaining:
            if out[index].values.get("own_work_only"):  # what failed is --deep's own work, which the cache never tuned
                out[index] = replace(out[index], evidence="seen", refs=out[index].refs + (said,), proof=(
                    f"{said}; seen for --deep's own convolution, whose shapes the cache never tuned: a program whose "
                    "shapes were tuned there runs"))
                continue
            out[index] = replace(_refused_by_words(out[index], text), severity="error", evidence="seen", proof=said,
                                 refs=out[index].refs + (said,))
        no_gpu = [i for i, f in enumerate(out) if f.code == "CD159"]
        for index in no_gpu:  # what the framework said quoted, its class kept
            out[index] = replace(out[index], refs=out[index].refs + (said,))
        ordered = [CHECK_CLASS.get(code, code) for code in (named or {}).get(framework.name, ()) if code in CODES
                   and CODES[code].severity == "error" and code[2] in "1234"]
        if not explaining and not no_gpu and ordered:
            # no finding of the class its words name: that class, seen, in its words (explain's reading of them)
            code = ordered[0]
            made = finding(code, subject=framework.name, evidence="seen", proof=said, framework=name)
            out.append(replace(made, severity="error", detail=(
                f"{name} failed its first GPU steps in a child started with this environment (check --deep), and "
                f"its words are those of this class ({CODES[code].title}); nothing the doctor read here says more. "
                f"It said: {deep['error'][:400]}")))
        elif not explaining and not no_gpu:
            out.append(finding("CD415", subject=framework.name, framework=name, error=deep["error"][:600],
                               proof=said, explained_as=", ".join(sorted(codes)) or "nothing the doctor knows"))
    return _own_work_cure(report, out)


def _first_met(out: list[Finding], explaining: list[int], own: set[str], text: str,
               framework: str) -> tuple[list[int], list[int]]:
    """Of the findings (indices into OUT) that EXPLAINING says a failing framework's words explain, the ones its
    words show it met first, and those behind them (issue 45, round twenty-one: the first refusal is the error).
    A finding that follows from a loader's refusal (rules/chains.py) is explained through that refusal: the refusal
    is what the program met first, the finding stays its follower. Where the words name a finding themselves (its
    code as they read, its file or its variable) or a finding was seen refusing on its own, a finding only read
    from files and tied to the failure by kinship or by whom it is about is behind it, not an error of its own."""
    from cudnn_doctor.rules.chains import FOLLOWS, files_of

    chosen: list[int] = []
    for index in explaining:
        root = str(out[index].values.get(FOLLOWS) or "")
        if not root:
            chosen.append(index)
            continue
        code, _, file = root.partition(" ")
        at = next((i for i, f in enumerate(out) if f.code == code and file in files_of(f)), index)
        if at not in chosen:  # its root, or itself where the root is not among the findings
            chosen.append(at)
    direct = [i for i in chosen if (out[i].code in own and _of(out[i], framework, _display(framework)))
              or _named_by(out[i], text) or out[i].evidence == "seen"]
    if not direct:
        return chosen, []
    behind = [i for i in chosen if i not in direct and out[i].evidence == "read"]
    return [i for i in chosen if i not in behind], behind


def _own_work_cure(report: Report, out: list[Finding]) -> list[Finding]:
    """--deep's bisection cured the frameworks by taking out only settings whose failure is of --deep's own work
    (own_work_only: XLA's complete-AOT requirement beside a JAX cache that tuned the program's shapes, not the
    doctor's): the cure proves it of that work alone, a warning (round eighteen's published GPU set on 35fb20f, H100:
    the one --deep false error came from the cure after the setting's own finding was kept a warning)."""
    cure = report.process.cured_by if report.process is not None else None
    own = {str(f.subject) for f in out if f.values.get("own_work_only")}
    if cure is None or not own or not cure.removed or not set(cure.removed) <= own:
        return out
    return [replace(f, severity="warning", proof=(
        f"{f.proof}; proven of --deep's own convolution, whose shapes the cache never tuned: a program whose shapes "
        "were tuned there runs")) if f.severity == "error" and f.subject == f"environment: {cure.kind}" else f
        for f in out]


def _of(f: Finding, framework: str, display: str) -> bool:
    """Whether F may be explained by FRAMEWORK's failure words by its code alone: a finding about no framework in
    particular, or about this one (p17: another framework's NVRTC warning of the same class is not this one's
    cause)."""
    about = f.values.get("framework")
    if not about or not isinstance(about, str):
        return True
    named = {part.strip() for part in re.split(r",|\band\b", about)}  # "torch, jax": each user of a copy
    return any(part in (framework, display) or part.startswith((f"{framework} ", f"{display} ", "A program", "ld.so"))
               for part in named)


def _failure_text(deep: dict[str, Any]) -> str:
    """A framework's --deep failure as one text: its words, the frames it was raised through, and the files of the
    modules its Python took from another copy than the installed one."""
    listed, found = deep.get("traceback"), deep.get("elsewhere")
    frames = [str(f) for f in listed if f] if isinstance(listed, list) else []
    files = [str(v) for v in found.values()] if isinstance(found, dict) else []
    return "\n".join([str(deep.get("error") or ""), *frames, *files])


@functools.cache
def _variable_pattern() -> re.Pattern[str]:
    return re.compile(r"[A-Z][A-Z0-9_]{3,}")


def _named_by(f: Finding, text: str) -> bool:
    """Does a failure's TEXT name what finding F is about: its file or folder (a path of 4 characters or more), or
    its variable (a setting's finding, its name as a word)? What the failure names is its cause (issue 45)."""
    if f.severity not in ("error", "warning") or f.code == "CD159" or not f.subject:
        return False
    subject = str(f.subject)
    if subject.startswith(os.sep) and len(subject) > 4:  # the file, the module's file, or a file under the folder
        return any(re.search(re.escape(subject + end) + r"(?![\w.-])", text) for end in ("", ".py", os.sep))
    if f.code.startswith("CD41") and _variable_pattern().fullmatch(subject):
        return re.search(r"(?<![A-Za-z0-9_])" + re.escape(subject) + r"(?![A-Za-z0-9_])", text) is not None
    return False


def _refused_by_words(f: Finding, text: str) -> Finding:
    """A setting read as one its framework does not take (CD414) whose framework, run with it, failed naming it:
    the framework refuses it (CD411, whose text takes the same values)."""
    if f.code == "CD414" and _named_by(f, text):
        return replace(f, code="CD411", title=CODES["CD411"].title)
    return f


# explain's class of a message -> check's class of the same cause, where check names it from the framework's side:
# a framework that loaded another cuDNN than it was built with is CD408 in check (CD321 is explain's cuDNN-side word)
CHECK_CLASS = {"CD321": "CD408"}

# a framework's words name the class on the left; the findings on the right are what the files show of the same
# cause (out of GPU memory: other processes hold it, or a setting leaves too little)
RELATED = {"CD109": ("CD115", "CD413"), "CD104": ("CD118",), "CD110": ("CD111", "CD112", "CD116"),
           "CD321": ("CD408", "CD401", "CD302", "CD317", "CD305"), "CD113": ("CD114",),
           "CD102": ("CD113", "CD114", "CD118", "CD104"), "CD404": ("CD206",)}


def _ran_under_deep(report: Report) -> set[str]:
    """The frameworks that ran their first GPU steps in a child with this environment (--deep)."""
    return {f.name for f in report.frameworks if isinstance(f.details.get("deep"), dict)
            and not f.details["deep"].get("error") and (f.details["deep"].get("conv_ran")
                                                       or f.details["deep"].get("seconds") is not None)}


SETTING_WARNINGS = ("CD412", "CD414", "CD417", "CD418")  # a setting's value read from the data alone, which --deep proves


def _settings_tried(report: Report, findings: list[Finding]) -> list[Finding]:
    """Under --deep, a warning about a setting says which frameworks ran their first GPU steps with it set: what
    --deep was to prove is then proven for them."""
    view = report.process
    ran = sorted(_display(name) for name in _ran_under_deep(report))
    if view is None or not ran:
        return findings
    said = f"under --deep {', '.join(ran)} ran {'its' if len(ran) == 1 else 'their'} first GPU steps in a child " \
           "with it set"
    return [replace(f, proof=(f.proof + "; " if f.proof else "") + said)
            if (f.code in SETTING_WARNINGS or (f.code == "CD411" and f.severity == "warning")) and
            f.subject in view.settings else f for f in findings]


def _ran_outweighs(report: Report, findings: list[Finding]) -> list[Finding]:
    """Under --deep, a framework that ran its first GPU steps in a child with this environment proved them: an error
    about it alone (its copy of cuDNN, its settings) is a warning that says so. Errors that name no framework, or
    one that failed or was not run, stand."""
    ran = _ran_under_deep(report)
    if not ran:
        return findings
    asked = [f for f in report.frameworks if isinstance(f.details.get("deep"), dict)]
    # every framework run did its GPU work here (its child ends in an error where it has no GPU): an error that says
    # every program started here fails is contradicted by programs that did not
    every_ran = bool(asked) and all(f.details["deep"].get("conv_ran") and not f.details["deep"].get("error")
                                    for f in asked)
    out = []
    for f in findings:
        if every_ran and f.severity == "error" and f.code in AFFECTS_EVERY_PROGRAM and not f.values.get("framework"):
            shown = ", ".join(_display(x.name) for x in asked)
            f = replace(f, severity="warning", proof=(f.proof + "; " if f.proof else "") +
                        f"but under --deep {shown} ran its first GPU steps in a child with this environment: programs "
                        "that load the driver as the frameworks do work; one that loads it otherwise may still fail")
            out.append(f)
            continue
        about = [part.strip() for part in str(f.values.get("framework", "")).split(",") if part.strip()]
        names = {name for name in ran for part in about if part in (name, _display(name))}
        view = report.process
        if every_ran and f.severity == "error" and f.code in SETTING_ERRORS and view is not None and \
                f.subject in view.settings and all(part in CUDA_READERS_SHOWN for part in about):
            # a CUDA setting said to break every framework's GPU work (CD416), while every framework did that work
            # with it set: contradicted by the frameworks themselves
            shown = ", ".join(_display(x.name) for x in asked)
            out.append(replace(f, severity="warning", proof=(f.proof + "; " if f.proof else "") +
                               f"but under --deep {shown} ran its first GPU steps in a child with it set: a program "
                               "whose first work differs may still fail"))
            continue
        if f.severity == "error" and about and len(names) == len(about) and f.code not in AFFECTS_EVERY_PROGRAM:
            shown = ", ".join(_display(name) for name in sorted(names))
            f = replace(f, severity="warning", proof=(f.proof + "; " if f.proof else "") +
                        f"under --deep {shown} ran its first GPU steps in a child with this environment: a program "
                        "that loads the libraries otherwise may still fail")
        out.append(f)
    return out


def _about(f: Finding, *names: str) -> bool:
    """Is finding F about one of the frameworks NAMES (its values name it, alone or in a list)?"""
    about = str(f.values.get("framework", ""))
    return any(part.strip() in names for part in about.split(",") if part.strip())
