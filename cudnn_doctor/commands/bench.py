"""`cudnn-doctor bench`: choose the libraries through `check`'s probes, run one child per GPU,
hand the answers to the rules (rules/bench.py). Nothing is printed here."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from cudnn_doctor.bench.records import RESULT_FIELDS, BenchLibraries, BenchReport, DeviceRun, WorkloadResult
from cudnn_doctor.bench.workloads import BenchOptions, peak_key, selected
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.model import Finding
from cudnn_doctor.quoting import command_line
from cudnn_doctor.rules import bench as rules
from cudnn_doctor.rules import sort_findings, summarize
from cudnn_doctor.versions import major

Progress = Callable[[int, dict[str, Any]], None]  # (device, the child's event: {"now": ...} or {"done": ...})
PEAK_KEYS = ("fp32", "tf32_tensor", "fp16_tensor", "bf16_tensor")
# a result's fields that the parent sets, never the child
PARENT_FIELDS = frozenset({"device", "peak_tflops", "peak_share", "reference", "ok", "skipped"})


@dataclass(frozen=True)
class BenchCommandOptions:
    """What `bench` was asked: the workloads (BenchOptions, echoed in the JSON) and, optionally,
    the libraries to load instead of those `check`'s probes find."""

    bench: BenchOptions
    cudnn_path: str | None = None
    cudart_path: str | None = None


@dataclass
class _Collected:
    """What the children's answers have added up to so far."""

    libraries: BenchLibraries
    devices: list[DeviceRun]
    results: list[WorkloadResult]
    findings: list[Finding]


def run(options: BenchCommandOptions, progress: Progress | None = None) -> BenchReport:
    """Run the bench and judge it: the report that `render/bench_text.py` and the JSON show.
    PROGRESS, if given, hears each child's events as they come."""
    started = time.perf_counter()
    timings_ms: dict[str, float] = {}
    libraries, gpu_count, findings = _choose_libraries(options, started, timings_ms)
    collected = _Collected(libraries, [], [], findings)
    if not findings:  # no GPU (CD601) or no library is said first; NumPy matters only to what runs on one
        require_numpy()
        _run_devices(options.bench, gpu_count, collected, progress)
    return _report(options.bench, collected, started, timings_ms)


def _choose_libraries(options: BenchCommandOptions, started: float,
                      timings_ms: dict[str, float]) -> tuple[BenchLibraries, int | None, list[Finding]]:
    """The libraries the children load, the GPU count NVML gives (None: unknown), and the finding
    that stops the bench before any child runs (no driver, no cuDNN, no CUDA runtime)."""
    cudnn_path, cudart_path = options.cudnn_path, options.cudart_path
    if cudnn_path and cudart_path:
        chosen = BenchLibraries(cudnn=cudnn_path, cudnn_why="--cudnn", cudart=cudart_path, cudart_why="--cudart")
        return chosen, None, []
    from cudnn_doctor.bench.libraries import choose_cudart, choose_cudnn
    from cudnn_doctor.knowledge.data import sublibrary_names
    from cudnn_doctor.probes.collect import collect_report
    from cudnn_doctor.probes.context import SearchContext

    report = collect_report(SearchContext.from_environment(), sublibrary_names())
    timings_ms["discovery"] = round((time.perf_counter() - started) * 1000, 1)
    libraries = BenchLibraries()
    stop = rules.no_gpu(report)
    if stop:
        return libraries, None, stop
    gpu_count = len(report.gpus) if report.driver.source == "nvml" else None
    install = None
    if cudnn_path:
        libraries = replace(libraries, cudnn=cudnn_path, cudnn_why="--cudnn")
    else:
        install, why = choose_cudnn(report)
        if install is None:
            return libraries, gpu_count, [rules.no_cudnn(report)]
        libraries = replace(libraries, cudnn=install.library, cudnn_why=why, cudnn_source=install.source,
                            cudnn_cuda=install.cuda_version)
    if cudart_path:
        return replace(libraries, cudart=cudart_path, cudart_why="--cudart"), gpu_count, []
    choice = choose_cudart(report, install)
    if choice.path is None:
        return libraries, gpu_count, [rules.no_cudart(choice.why, install.cuda_version if install else None)]
    return replace(libraries, cudart=choice.path, cudart_why=choice.why), gpu_count, []


def _run_devices(options: BenchOptions, gpu_count: int | None, collected: _Collected,
                 progress: Progress | None) -> None:
    """One child per GPU in turn, each answer judged as it comes; the CPU baseline on the first only."""
    from cudnn_doctor.bench.run import run_child

    devices = _device_list(options.devices, gpu_count)
    cpu = options.cpu
    index = 0
    while index < len(devices):
        device = devices[index]
        answer = run_child(_request(options, collected.libraries, device, cpu, progress is not None),
                           on_progress=_for_device(progress, device))
        stop = _absorb(collected, answer, device, options)
        if answer.get("device_count") and options.devices == "all" and gpu_count is None:
            devices = list(range(int(answer["device_count"])))
            gpu_count = len(devices)
        if stop:
            break
        cpu = False  # the CPU baseline once; other GPUs are checked on slices
        index += 1


def _for_device(progress: Progress | None, device: int) -> Callable[[dict[str, Any]], None] | None:
    if progress is None:
        return None

    def report(event: dict[str, Any]) -> None:
        progress(device, event)

    return report


def _device_list(devices: str, gpu_count: int | None) -> list[int]:
    if devices == "all":
        return list(range(gpu_count)) if gpu_count else [0]
    index = int(devices)
    if gpu_count is not None and index >= gpu_count:
        raise DoctorError(f"--device {index}: this machine has {gpu_count} GPU{'s' if gpu_count != 1 else ''} "
                          f"(0..{gpu_count - 1})", fix="pass --device N with N < the GPU count, or --device all", code="CD008")
    return [index]


def _request(options: BenchOptions, libraries: BenchLibraries, device: int, cpu: bool,
             progress: bool) -> dict[str, Any]:
    limit = None if options.workspace_limit_mb is None else int(options.workspace_limit_mb * (1 << 20))
    return {
        "cudnn": libraries.cudnn, "cudart": libraries.cudart, "device": device,
        "workloads": list(selected(options.workload)), "dtype": options.dtype, "layout": options.layout,
        "size": options.size, "workspace_limit_bytes": limit, "cpu": cpu, "warmup": options.warmup,
        "repeats": options.repeats, "api": options.api, "progress": progress,
    }


def _absorb(collected: _Collected, answer: dict[str, Any], device: int, options: BenchOptions) -> bool:
    """Add ANSWER's versions, device, results and findings to COLLECTED; True when no further device can run."""
    from cudnn_doctor.bench import healthy

    collected.libraries = libraries = _with_versions(collected.libraries, answer.get("versions") or {})
    if "crash" in answer:
        collected.findings.append(rules.crashed(device, answer["crash"]))
        return False
    gpu = _device_run(answer)
    collected.findings.extend(rules.slowdowns(device, answer.get("clocks")))
    if gpu is not None:
        collected.devices.append(gpu)
    index, name, free = (gpu.index, gpu.name, gpu.memory_free_mib) if gpu else (device, None, None)
    error = answer.get("error")
    if error:
        if error.get("kind") == "no-such-device":
            raise DoctorError(f"--device {error.get('device')}: the CUDA runtime sees {error.get('count')} GPU(s)",
                              fix="pass --device N with N < the GPU count, or --device all", code="CD008")
        collected.findings.append(rules.failed(error, libraries, None, index, free))
        return True
    slow_ratio = healthy.slow_ratio()
    shared = rules.shared_gpu(index, name, answer.get("clocks"))
    collected.findings.extend(shared)
    for raw in answer.get("results", []):
        result = _workload_result(raw, index, name, libraries)
        if shared and not result.error:  # a healthy GPU's figures are for an idle one
            result = rules.not_compared(result, f"GPU {index} was shared with other processes (CD610)")
        if result.error and result.error.get("kind") == "api-unavailable":
            raise DoctorError(f"--api {options.api}: cuDNN {libraries.cudnn_version or ''} at "
                              f"{libraries.cudnn}: {result.error.get('message')}",
                              fix="pass --api legacy or --api auto", code="CD008")
        judged, findings = rules.judge_result(result, libraries, name, free, slow_ratio)
        collected.results.append(judged)
        collected.findings.extend(findings)
    return False


def _with_versions(libraries: BenchLibraries, versions: dict[str, Any]) -> BenchLibraries:
    """LIBRARIES with the versions a child read off the loaded libraries (NVIDIA's integer encodings)."""
    from cudnn_doctor.versions import decode_cuda, decode_cudnn

    if versions.get("cudnn"):
        libraries = replace(libraries, cudnn_version=decode_cudnn(versions["cudnn"]))
    if versions.get("cudart"):
        libraries = replace(libraries, cudart_version=decode_cuda(versions["cudart"]))
    if versions.get("driver_cuda"):
        libraries = replace(libraries, driver_cuda_version=decode_cuda(versions["driver_cuda"]))
    return libraries


def _device_run(answer: dict[str, Any]) -> DeviceRun | None:
    """The GPU the child describes, with its start-up costs, clocks and published peaks; None when
    the child got no GPU."""
    from cudnn_doctor.bench import peaks

    info = answer.get("device")
    if info is None:
        return None
    row = peaks.lookup(info.get("name"))
    return DeviceRun(
        index=info["index"], name=info.get("name"), compute_capability=info.get("compute_capability"),
        multiprocessors=info.get("multiprocessors"), clock_mhz=info.get("clock_mhz"),
        memory_total_mib=info.get("memory_total_mib"), memory_free_mib=info.get("memory_free_mib"),
        startup_ms=answer.get("startup_ms", {}), child_ms=answer.get("child_ms"), wall_ms=answer.get("wall_ms"),
        peaks_tflops={key: row.get(key) for key in PEAK_KEYS} if row else None,
        peaks_source=row.get("source") if row else None, clocks=answer.get("clocks"))


def _workload_result(raw: dict[str, Any], device: int, gpu_name: str | None,
                     libraries: BenchLibraries) -> WorkloadResult:
    """A child's result as a record, with the GPU's peak and, when it ran, a healthy GPU's time."""
    from cudnn_doctor.bench import healthy, peaks

    peak = peaks.peak_tflops(gpu_name, peak_key(raw["dtype"]))
    tflops = raw.get("tflops")
    reference = None if raw.get("error") else healthy.compare(gpu_name, raw, major(libraries.cudnn_version))
    return WorkloadResult(**{key: value for key, value in raw.items() if key in RESULT_FIELDS - PARENT_FIELDS},
                          device=device, peak_tflops=peak, peak_share=tflops / peak if peak and tflops else None,
                          reference=reference)


def _report(options: BenchOptions, collected: _Collected, started: float,
            timings_ms: dict[str, float]) -> BenchReport:
    from cudnn_doctor.plan.fixes import advised

    findings = advised(sort_findings(collected.findings))
    timings_ms["total"] = round((time.perf_counter() - started) * 1000, 1)
    return BenchReport(options=options, libraries=collected.libraries, devices=tuple(collected.devices),
                       results=tuple(collected.results), findings=tuple(findings), summary=summarize(findings),
                       timings_ms=timings_ms, tally=rules.tally(collected.results))


def require_numpy() -> None:
    """bench computes its inputs and the CPU reference with NumPy, a dependency of the package: a Python that lacks
    it (a copy of the package without its dependencies) is told how to add it to itself, and nothing else."""
    import importlib.util

    try:
        found = importlib.util.find_spec("numpy") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise DoctorError(f"bench needs NumPy (a dependency of cudnn-doctor) and this Python ({sys.executable}) "
                          "has none; nothing was run on the GPU",
                          fix=command_line((sys.executable, "-m", "pip", "install", "numpy>=1.24")), code="CD008")


def selected_workloads(workload: str) -> tuple[str, ...]:
    return tuple(selected(workload))


P2P_MIB = {"tiny": 16, "small": 64, "medium": 256, "large": 1024}  # bytes of each copy, by --size


def p2p(cudart: str | None, size: str = "medium") -> dict[str, Any]:
    """`bench --p2p`: copies between every pair of GPUs (on one GPU, its device-to-device copy), judged against the
    links check reads from NVML; the `cudnn-doctor/p2p/1` object."""
    from cudnn_doctor.bench.libraries import choose_cudart
    from cudnn_doctor.bench.p2p import run_p2p
    from cudnn_doctor.knowledge.data import sublibrary_names
    from cudnn_doctor.model import to_jsonable
    from cudnn_doctor.probes.collect import collect_report
    from cudnn_doctor.probes.context import SearchContext
    from cudnn_doctor.rules import summarize
    from cudnn_doctor.rules.multi_gpu import p2p_copies

    report = collect_report(SearchContext.from_environment(), sublibrary_names())
    findings = rules.no_gpu(report)
    answer: dict[str, Any] = {"copies": [], "error": None}
    path = cudart
    if not findings and path is None:
        choice = choose_cudart(report, None)
        path = choice.path
        if path is None:
            findings = [rules.no_cudart(choice.why, None)]
    if not findings and path:
        answer = run_p2p(path, mib=P2P_MIB.get(size, 256))
    copies, judged = p2p_copies(list(answer.get("copies") or []), report.multi_gpu)
    findings += judged
    if answer.get("error"):  # CUDA refused the copies (its own words)
        from cudnn_doctor.codes import finding

        findings.append(finding("CD604", why=f"peer copies: {answer['error']}"))
    from cudnn_doctor.plan.fixes import advised

    findings = advised(sort_findings(findings))
    summary = summarize(findings)
    multi = report.multi_gpu
    return {"schema": "cudnn-doctor/p2p/1", "cudart": path, "device_count": answer.get("device_count"),
            "pairs": to_jsonable(multi.pairs) if multi else [], "copies": copies, "error": answer.get("error"),
            "findings": to_jsonable(findings), "summary": to_jsonable(summary)}


def main(workload: str, dtype: str, layout: str, size: str, workspace_limit: float | None, device: str,
         no_cpu: bool, cudnn: str | None, cudart: str | None, api: str, repeats: int, json_output: bool,
         verbose: bool, peer_copies: bool = False) -> None:
    """The command: options checked, the workloads run (a progress line on a terminal), the report rendered;
    ends with SystemExit(status)."""
    import sys

    if peer_copies:
        from cudnn_doctor.render.p2p_text import render_p2p

        result = p2p(cudart, size.lower())
        if json_output:
            from cudnn_doctor.render.json_out import write_json

            write_json(result)
        else:
            from cudnn_doctor.render.console import console

            render_p2p(result, console())
        raise SystemExit(result["summary"]["exit_code"])

    from cudnn_doctor.bench.workloads import BenchOptions, validate_options

    options = validate_options(BenchOptions(
        workload=workload.lower(), dtype=dtype.lower(), layout=layout.lower(), size=size.lower(),
        workspace_limit_mb=workspace_limit, devices=device.lower(), cpu=not no_cpu, repeats=repeats,
        api=api.lower()))
    from cudnn_doctor.bench.records import bench_to_json

    command = BenchCommandOptions(options, cudnn_path=cudnn, cudart_path=cudart)
    if json_output or not (sys.stdout.isatty() and sys.stderr.isatty()):
        report = run(command)
    else:
        from cudnn_doctor.render.bench_progress import WorkloadProgress

        with WorkloadProgress(len(selected_workloads(options.workload)), device) as shown:
            report = run(command, progress=shown.update)
    if json_output:
        from cudnn_doctor.render.json_out import write_json

        write_json(bench_to_json(report))
    else:
        from cudnn_doctor.render.bench_text import render_bench
        from cudnn_doctor.render.console import console

        render_bench(report, console(), verbose)
    raise SystemExit(report.summary.exit_code if report.summary else 3)
