"""ctypes bindings to libcudnn: the legacy convolution API and the v8 RNN API.

The enum values used here are the same in cuDNN 8 and 9 (read off cudnn_ops_infer_v8.h,
cudnn_cnn_infer_v8.h, cudnn_adv_infer_v8.h of 8.9.7 and cudnn_graph.h, cudnn_ops.h,
cudnn_cnn.h, cudnn_adv.h of 9.19.0). The status codes are NOT: cuDNN 9 renumbered
cudnnStatus_t (NOT_INITIALIZED is 1 in cuDNN 8, 1001 in cuDNN 9), so a status is named
by cudnnGetErrorString and, for the meaning, by the table for its major version.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    POINTER,
    Structure,
    byref,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int64,
    c_size_t,
    c_uint,
    c_ulonglong,
    c_void_p,
)

# cudnnDataType_t
DATA_FLOAT, DATA_DOUBLE, DATA_HALF, DATA_INT32, DATA_BFLOAT16 = 0, 1, 2, 4, 9
# cudnnMathType_t
DEFAULT_MATH, TENSOR_OP_MATH, TENSOR_OP_MATH_ALLOW_CONVERSION, FMA_MATH = 0, 1, 2, 3
MATH_NAMES = {0: "default", 1: "tensor-op", 2: "tensor-op-conversion", 3: "fma"}
# cudnnTensorFormat_t
TENSOR_NCHW, TENSOR_NHWC = 0, 1
CROSS_CORRELATION = 1
# RNN (cudnn_adv)
RNN_ALGO_STANDARD, RNN_ALGO_PERSIST_STATIC = 0, 1
RNN_ALGO_NAMES = {0: "STANDARD", 1: "PERSIST_STATIC"}
LSTM, RNN_DOUBLE_BIAS, UNIDIRECTIONAL, LINEAR_INPUT = 2, 2, 0, 0
RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED = 1
RNN_PADDED_IO_DISABLED = 0
FWD_MODE_INFERENCE = 0

FWD_ALGO_NAMES = ("IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD",
                  "WINOGRAD_NONFUSED")
BWD_DATA_ALGO_NAMES = ("ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED")
BWD_FILTER_ALGO_NAMES = ("ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING")

# What a status usually means, by name (names are stable across majors; numbers are not).
STATUS_MEANINGS: dict[str, tuple[str, str]] = {
    "CUDNN_STATUS_NOT_INITIALIZED": (
        "cuDNN could not initialise the GPU: no GPU or driver, or a CUDA runtime that the driver is too old for",
        "Check `nvidia-smi` and `cudnn-doctor check`; install a driver that supports cuDNN's CUDA version."),
    "CUDNN_STATUS_ALLOC_FAILED": (
        "out of memory", "Free GPU memory, use `--size small` or a `--workspace-limit`."),
    "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED": (
        "out of host memory", "Free memory on the host."),
    "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED": (
        "out of GPU memory", "Free GPU memory, use `--size small` or a `--workspace-limit`."),
    "CUDNN_STATUS_BAD_PARAM": (
        "cuDNN rejected an argument (a bug in the caller, or a shape this cuDNN does not accept)",
        "Report it with `cudnn-doctor bench --json` output."),
    "CUDNN_STATUS_ARCH_MISMATCH": (
        "the GPU is too old for this cuDNN (its compute capability is not supported)",
        "Use a cuDNN release that supports this GPU (`cudnn-doctor check` names one)."),
    "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH": (
        "the GPU is too old for this cuDNN (its compute capability is not supported)",
        "Use a cuDNN release that supports this GPU (`cudnn-doctor check` names one)."),
    "CUDNN_STATUS_NOT_SUPPORTED": (
        "this cuDNN has no implementation for this operation, dtype and layout on this GPU",
        "Try another --dtype or layout; fp16/bf16 need a GPU with tensor cores, bf16 compute capability 8.0+."),
    "CUDNN_STATUS_EXECUTION_FAILED": (
        "a GPU kernel failed to launch or run (driver problem, GPU fault, or a CUDA runtime mismatch)",
        "Check `nvidia-smi` and the kernel log (`dmesg`) for Xid errors; update the driver."),
    "CUDNN_STATUS_VERSION_MISMATCH": (
        "cuDNN's sub-libraries are of another version than libcudnn (a partial upgrade)",
        "Reinstall cuDNN from one archive (`cudnn-doctor check` names the stale files)."),
    "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH": (
        "cuDNN's sub-libraries are of another version than libcudnn (a partial upgrade)",
        "Reinstall cuDNN from one archive (`cudnn-doctor check` names the stale files)."),
    "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED": (
        "a cuDNN sub-library (libcudnn_cnn/ops/adv/graph...) could not be loaded",
        "Reinstall cuDNN completely, and check `ldd` on its sub-libraries (libz is needed by cuDNN 9)."),
    "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE": (
        "a cuDNN sub-library (libcudnn_cnn/ops/adv...) is missing",
        "Reinstall cuDNN completely."),
    "CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING": (
        "a library cuDNN needs at run time (cuBLAS, NVRTC) is missing",
        "Install the CUDA libraries of cuDNN's CUDA major (cuBLAS, NVRTC), e.g. the nvidia-cublas pip wheel."),
    "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING": (
        "a library cuDNN needs at run time (cuBLAS, NVRTC) is missing",
        "Install the CUDA libraries of cuDNN's CUDA major (cuBLAS, NVRTC), e.g. the nvidia-cublas pip wheel."),
    "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER": (
        "the driver is too old for the CUDA version this cuDNN was built for",
        "Upgrade the NVIDIA driver, or install the cuDNN build for an older CUDA major."),
    "CUDNN_STATUS_INTERNAL_ERROR": (
        "cuDNN failed inside (often an out-of-memory or a driver problem in disguise)",
        "Retry with `--size small`; update the driver and cuDNN."),
    "CUDNN_STATUS_MAPPING_ERROR": (
        "a GPU memory mapping failed (driver problem)", "Update or reinstall the driver."),
    "CUDNN_STATUS_LICENSE_ERROR": ("cuDNN's licence check failed", "Reinstall cuDNN."),
}


def status_meaning(name: str) -> tuple[str, str]:
    """(plain meaning, fix) for a CUDNN_STATUS_* name; falls back on its category."""
    if name in STATUS_MEANINGS:
        return STATUS_MEANINGS[name]
    for prefix in ("CUDNN_STATUS_NOT_SUPPORTED", "CUDNN_STATUS_BAD_PARAM", "CUDNN_STATUS_EXECUTION_FAILED",
                   "CUDNN_STATUS_INTERNAL_ERROR"):
        if name.startswith(prefix):
            return STATUS_MEANINGS[prefix]
    return ("an error cuDNN did not explain", "Run `cudnn-doctor check` and update cuDNN and the driver.")


class CudnnError(Exception):
    """A cuDNN call returned a status other than CUDNN_STATUS_SUCCESS."""

    def __init__(self, call: str, code: int, name: str) -> None:
        meaning, fix = status_meaning(name)
        super().__init__(f"{call} returned {name} ({code}): {meaning}")
        self.call, self.code, self.name, self.meaning, self.fix = call, code, name, meaning, fix


class ConvolutionPerf(Structure):
    """cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: one layout for all three."""

    _fields_ = [("algo", c_int), ("status", c_int), ("time", c_float), ("memory", c_size_t),
                ("determinism", c_int), ("mathType", c_int), ("reserved", c_int * 3)]


P = c_void_p
_SIGNATURES: dict[str, list[object]] = {
    "cudnnCreate": [POINTER(c_void_p)],
    "cudnnDestroy": [P],
    "cudnnSetStream": [P, P],
    "cudnnCreateTensorDescriptor": [POINTER(c_void_p)],
    "cudnnDestroyTensorDescriptor": [P],
    "cudnnSetTensor4dDescriptor": [P, c_int, c_int, c_int, c_int, c_int, c_int],
    "cudnnSetTensorNdDescriptor": [P, c_int, c_int, POINTER(c_int), POINTER(c_int)],
    "cudnnGetTensorNdDescriptor": [P, c_int, POINTER(c_int), POINTER(c_int), POINTER(c_int), POINTER(c_int)],
    "cudnnCreateFilterDescriptor": [POINTER(c_void_p)],
    "cudnnDestroyFilterDescriptor": [P],
    "cudnnSetFilter4dDescriptor": [P, c_int, c_int, c_int, c_int, c_int, c_int],
    "cudnnCreateConvolutionDescriptor": [POINTER(c_void_p)],
    "cudnnDestroyConvolutionDescriptor": [P],
    "cudnnSetConvolution2dDescriptor": [P, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int],
    "cudnnSetConvolutionMathType": [P, c_int],
    "cudnnGetConvolution2dForwardOutputDim": [P, P, P, POINTER(c_int), POINTER(c_int), POINTER(c_int), POINTER(c_int)],
    "cudnnGetConvolutionForwardAlgorithmMaxCount": [P, POINTER(c_int)],
    "cudnnGetConvolutionBackwardDataAlgorithmMaxCount": [P, POINTER(c_int)],
    "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount": [P, POINTER(c_int)],
    # (handle, desc_a, desc_b, conv, desc_out, requested, returned, perf)
    "cudnnGetConvolutionForwardAlgorithm_v7": [P, P, P, P, P, c_int, POINTER(c_int), POINTER(ConvolutionPerf)],
    "cudnnGetConvolutionBackwardDataAlgorithm_v7": [P, P, P, P, P, c_int, POINTER(c_int), POINTER(ConvolutionPerf)],
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7": [P, P, P, P, P, c_int, POINTER(c_int), POINTER(ConvolutionPerf)],
    # (handle, descA, a, descB, b, conv, descOut, out, requested, returned, perf, workspace, size)
    "cudnnFindConvolutionForwardAlgorithmEx": [P, P, P, P, P, P, P, P, c_int, POINTER(c_int),
                                               POINTER(ConvolutionPerf), P, c_size_t],
    "cudnnFindConvolutionBackwardDataAlgorithmEx": [P, P, P, P, P, P, P, P, c_int, POINTER(c_int),
                                                    POINTER(ConvolutionPerf), P, c_size_t],
    "cudnnFindConvolutionBackwardFilterAlgorithmEx": [P, P, P, P, P, P, P, P, c_int, POINTER(c_int),
                                                      POINTER(ConvolutionPerf), P, c_size_t],
    # (handle, alpha, descA, a, descB, b, conv, algo, workspace, size, beta, descOut, out)
    "cudnnConvolutionForward": [P, P, P, P, P, P, P, c_int, P, c_size_t, P, P, P],
    "cudnnConvolutionBackwardData": [P, P, P, P, P, P, P, c_int, P, c_size_t, P, P, P],
    "cudnnConvolutionBackwardFilter": [P, P, P, P, P, P, P, c_int, P, c_size_t, P, P, P],
    # v8 RNN API
    "cudnnCreateRNNDescriptor": [POINTER(c_void_p)],
    "cudnnDestroyRNNDescriptor": [P],
    "cudnnSetRNNDescriptor_v8": [P, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int,
                                 c_int, P, c_uint],
    "cudnnCreateDropoutDescriptor": [POINTER(c_void_p)],
    "cudnnDestroyDropoutDescriptor": [P],
    "cudnnDropoutGetStatesSize": [P, POINTER(c_size_t)],
    "cudnnSetDropoutDescriptor": [P, P, c_float, P, c_size_t, c_ulonglong],
    "cudnnCreateRNNDataDescriptor": [POINTER(c_void_p)],
    "cudnnDestroyRNNDataDescriptor": [P],
    "cudnnSetRNNDataDescriptor": [P, c_int, c_int, c_int, c_int, c_int, POINTER(c_int), P],
    "cudnnGetRNNWeightSpaceSize": [P, P, POINTER(c_size_t)],
    "cudnnGetRNNTempSpaceSizes": [P, P, c_int, P, POINTER(c_size_t), POINTER(c_size_t)],
    "cudnnGetRNNWeightParams": [P, P, c_int, c_size_t, P, c_int, P, POINTER(c_void_p), P, POINTER(c_void_p)],
    # backend (graph) API
    "cudnnBackendCreateDescriptor": [c_int, POINTER(c_void_p)],
    "cudnnBackendDestroyDescriptor": [P],
    "cudnnBackendFinalize": [P],
    "cudnnBackendSetAttribute": [P, c_int, c_int, c_int64, P],
    "cudnnBackendGetAttribute": [P, c_int, c_int, c_int64, POINTER(c_int64), P],
    "cudnnBackendExecute": [P, P, P],
    "cudnnRNNForward": [P, P, c_int, P, P, P, P, P, P, P, P, P, P, P, c_size_t, P, c_size_t, P, c_size_t, P],
}


class Cudnn:
    """One loaded libcudnn; call(name, *args) checks the status and raises CudnnError."""

    def __init__(self, path: str) -> None:
        mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_GLOBAL", 0x100)
        self.path = path
        self.lib = ctypes.CDLL(path, mode=mode)
        self.lib.cudnnGetVersion.restype = c_size_t
        self.lib.cudnnGetVersion.argtypes = []
        self.lib.cudnnGetErrorString.restype = c_char_p
        self.lib.cudnnGetErrorString.argtypes = [c_int]
        self._bound: set[str] = set()

    def version(self) -> int:
        return int(self.lib.cudnnGetVersion())

    def status_name(self, code: int) -> str:
        raw = self.lib.cudnnGetErrorString(code)
        return raw.decode(errors="replace") if raw else f"cudnnStatus {code}"

    def function(self, name: str):  # type: ignore[no-untyped-def]
        function = getattr(self.lib, name)  # AttributeError: an older cuDNN without it
        if name not in self._bound:
            function.argtypes = _SIGNATURES[name]
            function.restype = c_int
            self._bound.add(name)
        return function

    def has(self, name: str) -> bool:
        return hasattr(self.lib, name)

    def call(self, name: str, *args: object) -> None:
        status = self.function(name)(*args)
        if status != 0:
            raise CudnnError(name, status, self.status_name(status))

    def create(self, kind: str) -> int:
        """cudnnCreate<KIND> (a descriptor, or the handle for kind ''): the new pointer."""
        pointer = c_void_p(0)
        self.call(f"cudnnCreate{kind}", byref(pointer))
        return int(pointer.value or 0)

    def destroy(self, kind: str, pointer: int) -> None:
        if pointer:
            self.function(f"cudnnDestroy{kind}")(c_void_p(pointer))  # errors on teardown are not findings


def scalars(data_type: int) -> tuple[c_float | c_double, c_float | c_double]:
    """alpha = 1 and beta = 0, in the host type cuDNN expects for DATA_TYPE (double only for double)."""
    if data_type == DATA_DOUBLE:
        return c_double(1.0), c_double(0.0)
    return c_float(1.0), c_float(0.0)


def int_array(values: list[int]):  # type: ignore[no-untyped-def]
    return (c_int * len(values))(*values)
