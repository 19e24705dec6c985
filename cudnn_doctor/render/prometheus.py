"""`check --format prometheus`: the report in Prometheus' text exposition format, for
node_exporter's textfile collector (write it with `--output FILE.prom`: atomically, so a scrape
never sees half a file).

Conventions followed (prometheus.io, "Metric and label naming", "Writing exporters"): one prefix,
base units (bytes, seconds, celsius), `_info` gauges of value 1 carry text as labels, every value a
gauge with HELP and TYPE, label values escaped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PREFIX = "cudnn_doctor"
SEVERITIES = ("error", "warning", "info")
STATUSES = ("ok", "warning", "error")


def _escape(value: Any) -> str:
    """VALUE as a label value: Prometheus' own escapes (backslash, quote, newline) over printable()'s, by which
    every other control or invisible character (a terminal escape, a CR, U+0085, U+2028/2029, a bidi control) and
    a path's byte that is not UTF-8 is written as an escape: the format allows them raw, but the file is also
    printed (a terminal runs an escape) and read by lines (a CR, a U+2028 ends one for many readers)."""
    from cudnn_doctor.streams import printable

    text = printable("" if value is None else str(value))
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _labels(labels: dict[str, Any]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


class _Metrics:
    """Metric families, each declared once, each series (name and label values) once: node_exporter's
    textfile collector refuses a whole file with a duplicate series, so samples that share their labels
    (two --require of one subject, one framework found twice) are one series: their count where SUM
    (findings), else the first."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._declared: set[str] = set()

    def add(self, name: str, help_text: str, samples: Iterable[tuple[dict[str, Any], float | int]],
            sum_duplicates: bool = False) -> None:
        series: dict[str, float] = {}
        for labels, value in samples:
            key = _labels(labels)
            if key not in series:
                series[key] = float(value)
            elif sum_duplicates:
                series[key] += float(value)
        if not series:
            return
        full = f"{PREFIX}_{name}"
        if full not in self._declared:
            self._declared.add(full)
            self.lines.append(f"# HELP {full} {help_text}")
            self.lines.append(f"# TYPE {full} gauge")
        for key, number in series.items():
            shown = str(int(number)) if number.is_integer() else repr(number)
            self.lines.append(f"{full}{key} {shown}")


def render_prometheus(report: dict[str, Any], now: float | None = None) -> str:
    """The `check --json` object REPORT as Prometheus text."""
    metrics = _Metrics()
    summary = report.get("summary") or {}
    status = summary.get("status")
    metrics.add("status", "1 for the check's overall status (ok, warning, error), 0 for the others.",
                [({"status": name}, int(name == status)) for name in STATUSES])
    metrics.add("exit_code", "The exit code of `cudnn-doctor check` (0 healthy, 1 problems found).",
                [({}, summary.get("exit_code", 3))])
    counts = summary.get("counts") or {}
    metrics.add("findings_count", "Findings of the check, by severity.",
                [({"severity": severity}, counts.get(severity, 0)) for severity in SEVERITIES])
    metrics.add("finding", "Findings by stable code, severity, title and subject: how many of each (usually 1).",
                [({"code": f.get("code"), "severity": f.get("severity"), "title": f.get("title"),
                   "subject": f.get("subject") or ""}, 1) for f in report.get("findings") or []], sum_duplicates=True)
    driver = report.get("driver") or {}
    if driver.get("version"):
        metrics.add("driver_info", "The NVIDIA driver and the CUDA version it supports.",
                    [({"version": driver.get("version"), "cuda_version": driver.get("cuda_driver_version") or "",
                       "source": driver.get("source") or ""}, 1)])
    gpus = report.get("gpus") or []
    metrics.add("gpus", "Number of GPUs the driver reports.", [({}, len(gpus))])
    metrics.add("gpu_info", "One series per GPU: model, UUID, compute capability.",
                [({"gpu": gpu.get("index"), "name": gpu.get("name"), "uuid": gpu.get("uuid") or "",
                   "compute_capability": gpu.get("compute_capability") or ""}, 1) for gpu in gpus])
    metrics.add("gpu_memory_total_bytes", "GPU memory, in bytes.",
                [({"gpu": gpu.get("index"), "uuid": gpu.get("uuid") or ""}, int(gpu["memory_total_mib"]) * 1024 * 1024)
                 for gpu in gpus if isinstance(gpu.get("memory_total_mib"), (int, float))])
    _health(metrics, gpus)
    multi = report.get("multi_gpu")
    _links(metrics, multi if isinstance(multi, dict) else {})
    metrics.add("toolkit_info", "One series per CUDA toolkit found.",
                [({"version": t.get("version") or "", "path": t.get("path"), "source": t.get("source") or ""}, 1)
                 for t in report.get("toolkits") or []])
    metrics.add("cudnn_info", "One series per copy of cuDNN: version, file, where it came from, who loads it.",
                [({"version": c.get("version") or "", "library": c.get("library") or c.get("path"),
                   "source": c.get("source") or "", "cuda_version": c.get("cuda_version") or "",
                   "loaded_by": ",".join(c.get("loaded_by") or [])}, 1) for c in report.get("cudnn") or []])
    metrics.add("framework_info", "One series per framework: version, CUDA it was built for, the cuDNN it loads.",
                [({"name": f.get("name"), "version": f.get("version") or "",
                   "cuda_built_for": f.get("cuda_built_for") or "", "cudnn_used": f.get("cudnn_used") or ""}, 1)
                 for f in report.get("frameworks") or []])
    timings = report.get("timings_ms") or {}
    if isinstance(timings.get("total"), (int, float)):
        metrics.add("check_duration_seconds", "How long the check took.", [({}, timings["total"] / 1000)])
    if now is not None:
        metrics.add("check_timestamp_seconds", "When the check ran (Unix time).", [({}, round(now, 3))])
    return "\n".join(metrics.lines) + "\n"


def _health(metrics: _Metrics, gpus: list[dict[str, Any]]) -> None:
    """GPU health readings (`gpus[].health`), where the report has them; unsupported ones are absent."""
    readings = (
        ("ecc_errors_uncorrected_volatile", "Uncorrectable ECC errors since the driver loaded."),
        ("ecc_errors_uncorrected_aggregate", "Uncorrectable ECC errors over the GPU's life."),
        ("retired_pages_pending", "1 when retired pages wait for a GPU reset."),
        ("remapped_rows_pending", "1 when remapped rows wait for a GPU reset."),
        ("remapped_rows_failed", "1 when a row remapping failed (the GPU needs service)."),
        ("temperature_celsius", "GPU temperature."),
        ("temperature_slowdown_celsius", "Temperature at which the GPU slows down."),
        ("pcie_link_generation", "PCIe link generation now."),
        ("pcie_link_generation_max", "Highest PCIe link generation the GPU and slot support."),
        ("pcie_link_width", "PCIe link width now (lanes)."),
        ("pcie_link_width_max", "Widest PCIe link the GPU and slot support (lanes)."),
        ("persistence_mode", "1 when persistence mode is on."),
        ("other_processes", "Compute processes of others on the GPU."),
    )
    for key, help_text in readings:
        metrics.add(f"gpu_{key}", help_text,
                    [({"gpu": gpu.get("index"), "uuid": gpu.get("uuid") or ""}, _number(gpu["health"][key]))
                     for gpu in gpus if isinstance(gpu.get("health"), dict) and _is_number(gpu["health"].get(key))])
    metrics.add("gpu_throttle_reason", "1 for each clock-throttle reason active now.",
                [({"gpu": gpu.get("index"), "uuid": gpu.get("uuid") or "", "reason": reason}, 1)
                 for gpu in gpus if isinstance(gpu.get("health"), dict)
                 for reason in gpu["health"].get("throttle_reasons") or []])


def _links(metrics: _Metrics, multi: dict[str, Any]) -> None:
    """Several GPUs (issue 42): each GPU's NVLinks up and expected, each pair's path, the all-reduce of --deep."""
    gpus = [g for g in multi.get("gpus") or [] if isinstance(g, dict)]
    metrics.add("gpu_nvlinks_active", "NVLinks of the GPU that are up.",
                [({"gpu": g.get("index")}, g["nvlinks_active"]) for g in gpus
                 if g.get("nvlinks") and _is_number(g.get("nvlinks_active"))])
    metrics.add("gpu_nvlinks_expected", "NVLinks a GPU of this model has (compat/multi_gpu.toml).",
                [({"gpu": g.get("index")}, g["nvlinks_expected"]) for g in gpus if _is_number(g.get("nvlinks_expected"))])
    metrics.add("gpu_pair_info", "One series per pair of GPUs: their path as nvidia-smi topo -m writes it.",
                [({"gpus": "-".join(str(i) for i in p.get("gpus") or []), "path": p.get("path") or ""}, 1)
                 for p in multi.get("pairs") or [] if isinstance(p, dict)])
    result = multi.get("allreduce") if isinstance(multi.get("allreduce"), dict) else None
    if result is not None:
        metrics.add("allreduce_ok", "1 when check --deep's NCCL all-reduce over the GPUs worked.",
                    [({"world_size": result.get("world_size")}, int(bool(result.get("ok"))))])
        if _is_number(result.get("busbw_gbs")) and result.get("ok"):
            metrics.add("allreduce_bus_bandwidth_bytes_per_second", "The all-reduce's bus bandwidth (nccl-tests).",
                        [({"world_size": result.get("world_size")}, _number(result["busbw_gbs"]) * 1e9)])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) or isinstance(value, bool)


def _number(value: Any) -> float:
    return float(value)
