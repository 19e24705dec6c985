"""How fast a healthy GPU of the same model runs the same workload: compat/gpu_reference.toml.

The figures were measured on healthy machines with benchmarks/gpu_reference.py (the method is in
benchmarks/README.md); a result is compared only with a row of the same GPU model, workload, dtype,
layout, size and cuDNN major, and is "unknown" otherwise, never a guess from another GPU.
"""

from __future__ import annotations

from typing import Any

from cudnn_doctor.knowledge.data import load

DEFAULT_SLOW_RATIO = 0.75


def _table() -> dict[str, Any]:
    return load("gpu_reference")


def slow_ratio() -> float:
    return float(_table().get("slow_ratio", DEFAULT_SLOW_RATIO))


def compare(gpu_name: str | None, result: dict[str, Any], cudnn_major: int | None) -> dict[str, Any]:
    """{"gpu_ms", "ratio" (reference time / this time: 1.0 is as fast, 0.5 half as fast), "source"},
    or {"unknown": why}."""
    rows = _table().get("reference", [])
    if not gpu_name:
        return {"unknown": "the GPU's name is not known"}
    same_gpu = [row for row in rows if row.get("gpu", "").lower() == gpu_name.strip().lower()]
    if not same_gpu:
        return {"unknown": f"no reference for {gpu_name}"}
    key = ("workload", "dtype", "layout", "size")
    for row in same_gpu:
        if all(row.get(name) == result.get(name) for name in key) and row.get("cudnn_major") == cudnn_major:
            ours = result.get("gpu_ms")
            ratio = row["gpu_ms"] / ours if isinstance(ours, (int, float)) and ours > 0 else None
            return {"gpu_ms": row["gpu_ms"], "ratio": ratio, "measured": row.get("measured"),
                    "source": row.get("source")}
    return {"unknown": f"no reference for {gpu_name} with this workload, dtype, layout, size and cuDNN {cudnn_major}"}
