"""The parent side of `cudnn-doctor bench`: pick the libraries, run one child per GPU, and
turn the children's answers into results and findings (no printing here)."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudnn_doctor.bench import peaks
from cudnn_doctor.bench.workloads import BenchOptions, peak_key, selected
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.model import ERROR, Finding, Summary
from cudnn_doctor.versions import decode_cuda, decode_cudnn

SCHEMA = "cudnn-doctor/bench/1"
DEFAULT_TIMEOUT_S = 600.0
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass
class BenchReport:
    options: dict[str, Any]
    libraries: dict[str, Any] = field(default_factory=dict)
    devices: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    summary: Summary | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)


def bench_timeout() -> float:
    """Seconds one child may take; CUDNN_DOCTOR_BENCH_TIMEOUT overrides."""
    from cudnn_doctor.child import timeout_from_env

    return timeout_from_env("CUDNN_DOCTOR_BENCH_TIMEOUT", DEFAULT_TIMEOUT_S)


def run_bench(options: BenchOptions, cudnn_path: str | None = None, cudart_path: str | None = None) -> BenchReport:
    from cudnn_doctor.rules import finding

    started = time.perf_counter()
    bench = BenchReport(options=_options_json(options))
    libraries = bench.libraries
    gpu_count: int | None = None
    if cudnn_path and cudart_path:
        libraries.update(cudnn=cudnn_path, cudnn_why="--cudnn", cudart=cudart_path, cudart_why="--cudart")
    else:
        from cudnn_doctor.bench.libraries import choose_cudart, choose_cudnn
        from cudnn_doctor.compat.data import sublibrary_names
        from cudnn_doctor.probes.collect import collect_report
        from cudnn_doctor.probes.context import SearchContext

        report = collect_report(SearchContext.from_environment(), sublibrary_names())
        bench.timings_ms["discovery"] = round((time.perf_counter() - started) * 1000, 1)
        if report.driver.source == "none" and not report.gpus:
            why = "No NVIDIA driver was found"
            if report.driver.error:
                why += f" ({report.driver.error})"
            bench.findings.append(finding("CD601", why=why + ", so there is no GPU to run cuDNN on."))
            return _finish(bench, started)
        gpu_count = len(report.gpus) if report.driver.source == "nvml" else None
        install = None
        if cudnn_path:
            libraries.update(cudnn=cudnn_path, cudnn_why="--cudnn")
        else:
            install, why = choose_cudnn(report)
            if install is None:
                bench.findings.append(finding("CD301", cuda_major=_cuda_major(report)))
                return _finish(bench, started)
            libraries.update(cudnn=install.library, cudnn_why=why, cudnn_source=install.source,
                             cudnn_cuda=install.cuda_version)
        if cudart_path:
            libraries.update(cudart=cudart_path, cudart_why="--cudart")
        else:
            choice = choose_cudart(report, install)
            if choice.path is None:
                bench.findings.append(finding("CD604", why=choice.why.capitalize() + ".",
                                              cuda_major=_major(install.cuda_version if install else None) or 12))
                return _finish(bench, started)
            libraries.update(cudart=choice.path, cudart_why=choice.why)

    devices = _device_list(options.devices, gpu_count)
    cpu = options.cpu
    index = 0
    while index < len(devices):
        device = devices[index]
        answer = run_child(_request(options, libraries, device, cpu))
        stop = _absorb(bench, answer, device, options)
        if answer.get("device_count") and options.devices == "all" and gpu_count is None:
            devices = list(range(int(answer["device_count"])))
            gpu_count = len(devices)
        if stop:
            break
        cpu = False  # the CPU baseline once; other GPUs are checked on slices
        index += 1
    return _finish(bench, started)


def _device_list(devices: str, gpu_count: int | None) -> list[int]:
    if devices == "all":
        return list(range(gpu_count)) if gpu_count else [0]
    index = int(devices)
    if gpu_count is not None and index >= gpu_count:
        raise DoctorError(f"--device {index}: this machine has {gpu_count} GPU{'s' if gpu_count != 1 else ''} "
                          f"(0..{gpu_count - 1})", fix="pass --device N with N < the GPU count, or --device all")
    return [index]


def _request(options: BenchOptions, libraries: dict[str, Any], device: int, cpu: bool) -> dict[str, Any]:
    limit = None if options.workspace_limit_mb is None else int(options.workspace_limit_mb * (1 << 20))
    return {
        "cudnn": libraries["cudnn"], "cudart": libraries["cudart"], "device": device,
        "workloads": list(selected(options.workload)), "dtype": options.dtype, "layout": options.layout,
        "size": options.size, "workspace_limit_bytes": limit, "cpu": cpu, "warmup": options.warmup,
        "repeats": options.repeats, "api": options.api,
    }


def run_child(request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """Run the bench child for one device; a crash or a hang comes back as {'crash': ...}."""
    from cudnn_doctor.bench.libraries import library_folders
    from cudnn_doctor.child import deadline_in, python_module_argv
    from cudnn_doctor.child import run_child as run_one

    timeout = bench_timeout() if timeout is None else timeout
    env = dict(os.environ)
    folders = library_folders(request["cudnn"], request["cudart"])
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*folders, *[p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
                                                          if p]])
    # one BLAS thread per CPU-reference worker: the reference spreads work over its own threads
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[variable] = "1"
    # isolated: this package first, then this interpreter's own path (NumPy where the doctor found it),
    # never the current folder
    here = os.getcwd()
    paths = [PACKAGE_ROOT, *[p for p in sys.path if p and os.path.abspath(p) != here]]
    argv = python_module_argv("cudnn_doctor.bench.child", json.dumps(request), paths=paths)
    answer = run_one(argv, env, deadline_in(timeout), what="the benchmark process")
    if answer.timed_out:
        return {"crash": f"did not finish within {timeout:g} s (it hangs; CUDNN_DOCTOR_BENCH_TIMEOUT sets the limit)",
                "results": []}
    if answer.crashed or answer.values is None:
        if not answer.crashed and answer.error:  # it could not be started
            return {"crash": answer.error, "results": []}
        if answer.exit_code is not None and answer.exit_code < 0:
            how = answer.error or "crashed"
        else:
            how = f"exited with status {answer.exit_code} without an answer" + \
                (f" ({answer.stderr_tail})" if answer.stderr_tail else "")
        return {"crash": how, "results": [], "wall_ms": answer.wall_ms}
    result = dict(answer.values)
    result["wall_ms"] = answer.wall_ms
    return result


def _absorb(bench: BenchReport, answer: dict[str, Any], device: int, options: BenchOptions) -> bool:
    """Add ANSWER's device, results and findings to BENCH; True when no further device can run."""
    from cudnn_doctor.rules import finding

    libraries = bench.libraries
    versions = answer.get("versions") or {}
    if versions.get("cudnn"):
        libraries["cudnn_version"] = decode_cudnn(versions["cudnn"])
    if versions.get("cudart"):
        libraries["cudart_version"] = decode_cuda(versions["cudart"])
    if versions.get("driver_cuda"):
        libraries["driver_cuda_version"] = decode_cuda(versions["driver_cuda"])
    if "crash" in answer:
        bench.findings.append(finding("CD606", subject=f"GPU {device}", device=device, how=answer["crash"]))
        return False
    info = answer.get("device") or {"index": device}
    info = {**info, "startup_ms": answer.get("startup_ms", {}), "child_ms": answer.get("child_ms"),
            "wall_ms": answer.get("wall_ms")}
    row = peaks.lookup(info.get("name"))
    info["peaks_tflops"] = {k: row.get(k) for k in ("fp32", "tf32_tensor", "fp16_tensor", "bf16_tensor")} if row else None
    info["peaks_source"] = row.get("source") if row else None
    if answer.get("device") is not None:
        bench.devices.append(info)
    error = answer.get("error")
    if error:
        if error.get("kind") == "no-such-device":
            count = error.get("count")
            raise DoctorError(f"--device {error.get('device')}: the CUDA runtime sees {count} GPU(s)",
                              fix="pass --device N with N < the GPU count, or --device all")
        bench.findings.append(_error_finding(error, libraries, workload=None, device_info=info))
        return True
    for result in answer.get("results", []):
        _finish_result(bench, result, info, options)
    return False


def _finish_result(bench: BenchReport, result: dict[str, Any], device: dict[str, Any], options: BenchOptions) -> None:
    from cudnn_doctor.rules import finding

    result = {"device": device.get("index"), **result}
    result.pop("gpu_ms_samples", None)
    peak = peaks.peak_tflops(device.get("name"), peak_key(result["dtype"]))
    result["peak_tflops"] = peak
    result["peak_share"] = result["tflops"] / peak if peak and result.get("tflops") else None
    error = result.get("error")
    if error and error.get("kind") == "api-unavailable":
        raise DoctorError(f"--api {options.api}: cuDNN {bench.libraries.get('cudnn_version') or ''} at "
                          f"{bench.libraries.get('cudnn')}: {error.get('message')}", fix="pass --api legacy or --api auto")
    if error and error.get("kind") == "workload-unavailable":
        result.pop("error")
        result["ok"], result["skipped"] = None, error.get("message")
        bench.findings.append(finding("CD607", subject=f"GPU {device.get('index')}", workload=result["workload"],
                                      why=error.get("message")))
    elif error:
        result["ok"] = False
        bench.findings.append(_error_finding(error, bench.libraries, workload=result["workload"], device_info=device))
    else:
        max_error = result.get("max_error")
        result["ok"] = max_error is not None and max_error <= result["tolerance"]
        if not result["ok"]:
            bench.findings.append(finding(
                "CD603", subject=f"GPU {device.get('index')}",
                workload=f"{result['workload']} ({result['dtype']}, {result['layout']}, {result['shape']}, "
                         f"algorithm {result.get('algo')}) on GPU {device.get('index')}",
                error=_format_error(max_error), tolerance=f"{result['tolerance']:.0e}"))
    bench.results.append(result)


def _error_finding(error: dict[str, Any], libraries: dict[str, Any], workload: str | None,
                   device_info: dict[str, Any]) -> Finding:
    from cudnn_doctor.rules import finding

    where = f" ({workload})" if workload else ""
    kind = error.get("kind")
    if kind == "load":
        library = error.get("library", "")
        if library == libraries.get("cudart"):
            return finding("CD604", why=f"{library} failed to load: {error.get('message')}",
                           cuda_major=_major(libraries.get("cudnn_cuda")) or 12)
        return finding("CD307", library=library, error=error.get("message"))
    if kind == "cuda":
        code, name = error.get("code"), error.get("name")
        call = f"{error.get('call')}{where} returned {name} ({code}): {error.get('text')}"
        if code == 100:
            return finding("CD601", why=f"The CUDA runtime sees no GPU: {call}.")
        if code == 2:
            return finding("CD605", workload=workload or "the benchmark", needed=_needed(error.get("call")),
                           free=_mib(device_info.get("memory_free_mib")))
        if code == 35:
            return finding("CD604", why=f"The driver is too old for this CUDA runtime "
                                        f"({libraries.get('cudart')}, CUDA {libraries.get('cudart_version')}): {call}.",
                           cuda_major=_major(libraries.get("driver_cuda_version")) or 12)
        return finding("CD604", why=f"{call}.", cuda_major=_major(libraries.get("cudnn_cuda")) or 12)
    if kind == "cudnn":
        name = error.get("name", "")
        if "ALLOC_FAILED" in name:
            return finding("CD605", workload=workload or "the benchmark", needed="more than it could get",
                           free=_mib(device_info.get("memory_free_mib")))
        return finding("CD602", call=f"{error.get('call')}{where}", status=f"{name} ({error.get('code')})",
                       meaning=error.get("meaning"), fix=error.get("fix"))
    return finding("CD606", device=device_info.get("index"), how=f"failed{where}: {error.get('message')}")


def _finish(bench: BenchReport, started: float) -> BenchReport:
    from cudnn_doctor.rules import summarize

    order = {ERROR: 0, "warning": 1, "info": 2}
    bench.findings.sort(key=lambda f: (order.get(f.severity, 3), f.code))
    bench.summary = summarize(bench.findings)
    bench.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 1)
    return bench


def bench_to_json(bench: BenchReport) -> dict[str, Any]:
    """The `cudnn-doctor/bench/1` JSON object."""
    from cudnn_doctor import __version__
    from cudnn_doctor.model import to_jsonable

    return {"schema": SCHEMA, "tool": {"name": "cudnn-doctor", "version": __version__},
            **_finite(to_jsonable(bench))}


def _finite(value: Any) -> Any:
    """inf and NaN (an unusable GPU result) as the strings "inf" / "nan": JSON has no such numbers."""
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf"
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _options_json(options: BenchOptions) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(options)


def _needed(call: str | None) -> str:
    # "cudaMalloc(123456 bytes)"
    if call and "(" in call and "bytes" in call:
        try:
            return _mib(int(call.split("(")[1].split()[0]) / (1 << 20))
        except (ValueError, IndexError):
            pass
    return "more than was free"


def _mib(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.0f} MiB"


def _format_error(value: float | None) -> str:
    if value is None:
        return "unknown"
    return "NaN/inf or missing values" if value == float("inf") else f"{value:.2e} of the output's scale"


def _cuda_major(report: Any) -> int:
    for toolkit in report.toolkits:
        major = _major(toolkit.version)
        if major:
            return major
    return _major(report.driver.cuda_driver_version) or 12


def _major(version: Any) -> int | None:
    try:
        return int(str(version).split(".")[0]) if version else None
    except ValueError:
        return None
