"""The records of `cudnn-doctor bench`: plain frozen dataclasses, turned into the
`cudnn-doctor/bench/1` JSON mechanically (field names are the JSON's names)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from cudnn_doctor.bench.workloads import BenchOptions
from cudnn_doctor.model import Finding, Summary

SCHEMA = "cudnn-doctor/bench/1"


@dataclass(frozen=True)
class BenchLibraries:
    """The libcudnn and libcudart the children load, how each was chosen, and the versions they report."""

    cudnn: str | None = None
    cudnn_why: str | None = None
    cudnn_source: str | None = None  # the install's `source` when `check`'s probes found it
    cudnn_cuda: str | None = None  # the CUDA version that cuDNN was built for
    cudart: str | None = None
    cudart_why: str | None = None
    cudnn_version: str | None = None
    cudart_version: str | None = None
    driver_cuda_version: str | None = None


@dataclass(frozen=True)
class DeviceRun:
    """One GPU as its child saw it, with the child's start-up costs, clocks and the GPU's peaks."""

    index: int
    name: str | None = None
    compute_capability: str | None = None
    multiprocessors: int | None = None
    clock_mhz: int | None = None
    memory_total_mib: int | None = None
    memory_free_mib: int | None = None
    startup_ms: dict[str, float] = field(default_factory=dict)  # imports, load, init
    child_ms: float | None = None
    wall_ms: float | None = None
    peaks_tflops: dict[str, float | None] | None = None  # fp32, tf32_tensor, fp16_tensor, bf16_tensor
    peaks_source: str | None = None
    clocks: dict[str, Any] | None = None  # the child's ClockWatch summary


@dataclass(frozen=True)
class WorkloadResult:
    """One workload on one GPU: what ran, how fast, and whether its output matched the CPU reference.

    `ok` is True or False once checked, None when skipped (`skipped` says why); `error` is the
    child's description of a failure (kind, call, code, name, ...), None when it ran.
    """

    workload: str
    device: int | None = None
    shape: str | None = None
    shape_name: str | None = None
    size: str | None = None
    layout: str | None = None
    dtype: str | None = None
    flops: int | None = None
    api: str | None = None  # "graph" | "legacy" (convolutions)
    algo: str | None = None
    math_type: str | None = None
    math_precision: str | None = None  # LSTM
    workspace_bytes: int | None = None
    workspace_available_bytes: int | None = None
    graph_api_error: str | None = None  # why the graph API was passed over for the legacy one
    heuristics: dict[str, int] | None = None  # graph API: configurations each heuristic mode proposed
    candidates: list[dict[str, Any]] | dict[str, Any] | None = None  # what was timed before the choice
    stream_ms: float | None = None
    batch: int | None = None
    graph_ms: float | None = None
    gpu_ms: float | None = None
    timing: str | None = None  # "cuda-graph" | "stream"
    tflops: float | None = None
    peak_tflops: float | None = None
    peak_share: float | None = None
    cpu_ms: float | None = None
    cpu_baseline: str | None = None
    cpu_threads: int | None = None
    speedup: float | None = None
    max_error: float | None = None
    tolerance: float | None = None
    checked: str | None = None  # "full" | "slice"
    ok: bool | None = None
    skipped: str | None = None
    error: dict[str, Any] | None = None
    reference: dict[str, Any] | None = None  # against a healthy GPU of the same model (bench/healthy.py)


RESULT_FIELDS = frozenset(item.name for item in fields(WorkloadResult))


@dataclass(frozen=True)
class WorkloadTally:
    """How the workloads came out, for the summary line."""

    checked: int = 0
    failed: int = 0
    skipped: int = 0


@dataclass(frozen=True)
class BenchReport:
    options: BenchOptions
    libraries: BenchLibraries
    devices: tuple[DeviceRun, ...]
    results: tuple[WorkloadResult, ...]
    findings: tuple[Finding, ...]
    summary: Summary
    timings_ms: dict[str, float]
    tally: WorkloadTally  # not in the JSON: its findings and results say the same


def bench_to_json(bench: BenchReport) -> dict[str, Any]:
    """The `cudnn-doctor/bench/1` JSON object."""
    from cudnn_doctor import __version__
    from cudnn_doctor.model import to_jsonable

    data = to_jsonable(bench)
    data.pop("tally")
    # `libraries` names only what is known (its paths are strings wherever present, as published)
    data["libraries"] = {key: value for key, value in data["libraries"].items() if value is not None}
    return {"schema": SCHEMA, "tool": {"name": "cudnn-doctor", "version": __version__}, **_finite(data)}


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
