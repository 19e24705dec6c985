"""How a --dtype maps onto cuDNN (storage, math and compute types) and onto host arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cudnn_doctor.bench import cudnn as dnn
from cudnn_doctor.bench.reference import from_bfloat16_bits, to_bfloat16_bits


@dataclass(frozen=True)
class DtypePlan:
    """How a --dtype maps onto cuDNN: storage type, math type, convolution compute type."""

    storage: int
    math: int
    compute: int
    rnn_math_precisions: tuple[int, ...]


PLANS = {
    # fp32 on the CUDA cores only (FMA_MATH forbids TF32), as PyTorch with allow_tf32 = False
    "fp32": DtypePlan(dnn.DATA_FLOAT, dnn.FMA_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT,)),
    # TF32 tensor cores for float32 data: DEFAULT_MATH, as PyTorch with allow_tf32 = True
    "tf32": DtypePlan(dnn.DATA_FLOAT, dnn.DEFAULT_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT,)),
    # half storage, float accumulation (PyTorch's choice for both convolutions and RNNs)
    "fp16": DtypePlan(dnn.DATA_HALF, dnn.TENSOR_OP_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT, dnn.DATA_HALF)),
    "bf16": DtypePlan(dnn.DATA_BFLOAT16, dnn.TENSOR_OP_MATH, dnn.DATA_FLOAT, (dnn.DATA_FLOAT, dnn.DATA_BFLOAT16)),
}


def to_storage(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values in the dtype's storage format (bf16 as uint16 bit patterns)."""
    if dtype == "fp16":
        return np.ascontiguousarray(values, dtype=np.float16)
    if dtype == "bf16":
        return to_bfloat16_bits(values)
    return np.ascontiguousarray(values, dtype=np.float32)


def from_storage(stored: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return from_bfloat16_bits(stored)
    return np.asarray(stored, dtype=np.float32)


def storage_dtype(dtype: str) -> Any:
    return {"fp16": np.float16, "bf16": np.uint16}.get(dtype, np.float32)
