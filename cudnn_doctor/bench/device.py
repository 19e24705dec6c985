"""The device side of the bench child: select a GPU, create its context and cuDNN handle, describe
it, and hold the device memory a workload allocates."""

from __future__ import annotations

import time
from collections.abc import Callable
from ctypes import c_int, c_void_p
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cudnn_doctor.bench import cudnn as dnn
from cudnn_doctor.bench.cudart import Cudart

MIB = 1 << 20


@dataclass
class GpuSession:
    """The device, its runtime and one cuDNN handle; frees what it allocated."""

    rt: Cudart
    lib: dnn.Cudnn
    device: int
    handle: int = 0
    stream: int = 0
    allocations: list[int] = field(default_factory=list)

    def alloc(self, size: int) -> int:
        pointer = self.rt.malloc(size)
        self.allocations.append(pointer)
        return pointer

    def upload(self, host: np.ndarray) -> int:
        pointer = self.alloc(host.nbytes)
        self.rt.upload(pointer, host)
        return pointer

    def release(self) -> None:
        for pointer in reversed(self.allocations):
            try:
                self.rt.free(pointer)
            except Exception:  # noqa: BLE001 - teardown after a failure: keep the first error
                pass
        self.allocations.clear()


def poisoned_run(rt: Cudart, operation: Callable[[], None], output: int, stored: np.ndarray) -> np.ndarray:
    """Poison OUTPUT (0xFF bytes are NaN in every float format), run OPERATION once more and read
    the output back into STORED: an element the algorithm forgot to write fails the check."""
    rt.synchronize()
    rt.memset(output, 0xFF, stored.nbytes)
    rt.synchronize()
    operation()
    rt.synchronize()
    rt.download(stored, output)
    return stored


def device_info(rt: Cudart, device: int) -> dict[str, Any]:
    from cudnn_doctor.bench import cudart as cr

    major = rt.attribute(cr.ATTR_COMPUTE_CAPABILITY_MAJOR, device)
    minor = rt.attribute(cr.ATTR_COMPUTE_CAPABILITY_MINOR, device)
    free, total = rt.memory_info()
    return {
        "index": device,
        "name": rt.device_name(device),
        "compute_capability": f"{major}.{minor}",
        "multiprocessors": rt.attribute(cr.ATTR_MULTIPROCESSOR_COUNT, device),
        "clock_mhz": rt.attribute(cr.ATTR_CLOCK_RATE_KHZ, device) // 1000,
        "memory_total_mib": total // MIB,
        "memory_free_mib": free // MIB,
    }


def initialise(rt: Cudart, lib: dnn.Cudnn, device: int) -> GpuSession:
    """Select DEVICE, create its context (the first cudaFree) and a cuDNN handle; load cuDNN's
    sub-libraries now (their version checks), so start-up cost is counted as such."""
    rt.set_device(device)
    rt.check("cudaFree", rt.lib.cudaFree(None))
    gpu = GpuSession(rt=rt, lib=lib, device=device)
    gpu.handle = lib.create("")
    if rt.graphs:  # cuDNN works on a stream of its own, which CUDA graphs can capture
        gpu.stream = rt.stream()
        lib.call("cudnnSetStream", c_void_p(gpu.handle), c_void_p(gpu.stream))
    for check in ("cudnnOpsVersionCheck", "cudnnCnnVersionCheck", "cudnnAdvVersionCheck",
                  "cudnnOpsInferVersionCheck", "cudnnOpsTrainVersionCheck", "cudnnCnnInferVersionCheck",
                  "cudnnCnnTrainVersionCheck", "cudnnAdvInferVersionCheck", "cudnnAdvTrainVersionCheck"):
        if lib.has(check):
            function = getattr(lib.lib, check)
            function.argtypes, function.restype = [], c_int
            status = function()
            if status:
                raise dnn.CudnnError(check, status, lib.status_name(status))
    return gpu


def elapsed_ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 1)
