"""ctypes bindings to the CUDA runtime (libcudart): just what the bench needs.

Every call is checked; a non-zero cudaError_t raises CudaError with the error's
name (cudaGetErrorName) and text (cudaGetErrorString).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_void_p

MEMCPY_HOST_TO_DEVICE = 1
MEMCPY_DEVICE_TO_HOST = 2

# cudaDeviceAttr values (driver_types.h; unchanged from CUDA 9 to 13)
ATTR_CLOCK_RATE_KHZ = 13
ATTR_MULTIPROCESSOR_COUNT = 16
ATTR_COMPUTE_CAPABILITY_MAJOR = 75
ATTR_COMPUTE_CAPABILITY_MINOR = 76

# cudaError_t values the bench reacts to (driver_types.h)
ERROR_MEMORY_ALLOCATION = 2
ERROR_INSUFFICIENT_DRIVER = 35
ERROR_NO_DEVICE = 100
ERROR_INVALID_DEVICE = 101
ERROR_STUB_LIBRARY = 34


class CudaError(Exception):
    """A CUDA runtime call failed."""

    def __init__(self, call: str, code: int, name: str, text: str) -> None:
        super().__init__(f"{call} returned {code} ({name}: {text})")
        self.call, self.code, self.name, self.text = call, code, name, text


_SIGNATURES: dict[str, list[object]] = {
    "cudaRuntimeGetVersion": [POINTER(c_int)],
    "cudaDriverGetVersion": [POINTER(c_int)],
    "cudaGetDeviceCount": [POINTER(c_int)],
    "cudaSetDevice": [c_int],
    "cudaDeviceGetAttribute": [POINTER(c_int), c_int, c_int],
    "cudaMemGetInfo": [POINTER(c_size_t), POINTER(c_size_t)],
    "cudaMalloc": [POINTER(c_void_p), c_size_t],
    "cudaFree": [c_void_p],
    "cudaMemcpy": [c_void_p, c_void_p, c_size_t, c_int],
    "cudaMemset": [c_void_p, c_int, c_size_t],
    "cudaDeviceSynchronize": [],
    "cudaGetLastError": [],
    "cudaEventCreate": [POINTER(c_void_p)],
    "cudaEventDestroy": [c_void_p],
    "cudaEventRecord": [c_void_p, c_void_p],
    "cudaEventSynchronize": [c_void_p],
    "cudaEventElapsedTime": [POINTER(c_float), c_void_p, c_void_p],
}
# CUDA graphs, for timing without the host's launch gaps (optional: a runtime without them
# is timed on the stream)
_GRAPH_SIGNATURES: dict[str, list[object]] = {
    "cudaStreamCreate": [POINTER(c_void_p)],
    "cudaStreamDestroy": [c_void_p],
    "cudaStreamSynchronize": [c_void_p],
    "cudaStreamBeginCapture": [c_void_p, c_int],
    "cudaStreamEndCapture": [c_void_p, POINTER(c_void_p)],
    "cudaGraphLaunch": [c_void_p, c_void_p],
    "cudaGraphDestroy": [c_void_p],
    "cudaGraphExecDestroy": [c_void_p],
}
CAPTURE_MODE_THREAD_LOCAL = 1


class Cudart:
    """One loaded libcudart; methods raise CudaError on failure."""

    def __init__(self, path: str) -> None:
        mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_GLOBAL", 0x100)
        self.path = path
        self.lib = ctypes.CDLL(path, mode=mode)
        for name, argtypes in _SIGNATURES.items():
            function = getattr(self.lib, name)
            function.argtypes = argtypes
            function.restype = c_int
        self.graphs = all(hasattr(self.lib, name) for name in _GRAPH_SIGNATURES)
        if self.graphs:
            for name, argtypes in _GRAPH_SIGNATURES.items():
                function = getattr(self.lib, name)
                function.argtypes = argtypes
                function.restype = c_int
            # cudaGraphInstantiateWithFlags (11.4+) has one signature everywhere; cudaGraphInstantiate
            # changed its in CUDA 12
            self._instantiate = getattr(self.lib, "cudaGraphInstantiateWithFlags", None)
            if self._instantiate is None:
                self.graphs = False
            else:
                self._instantiate.argtypes = [POINTER(c_void_p), c_void_p, ctypes.c_ulonglong]
                self._instantiate.restype = c_int
        for name in ("cudaGetErrorName", "cudaGetErrorString"):
            function = getattr(self.lib, name)
            function.argtypes = [c_int]
            function.restype = c_char_p
        # cudaGetDeviceProperties became cudaGetDeviceProperties_v2 in CUDA 12; the name is the
        # struct's first member (char[256]) in every version, which is all we read.
        self._properties = getattr(self.lib, "cudaGetDeviceProperties_v2", None) or \
            getattr(self.lib, "cudaGetDeviceProperties", None)
        if self._properties is not None:
            self._properties.argtypes = [c_void_p, c_int]
            self._properties.restype = c_int

    def error_name(self, code: int) -> str:
        raw = self.lib.cudaGetErrorName(code)
        return raw.decode(errors="replace") if raw else f"cudaError {code}"

    def error_text(self, code: int) -> str:
        raw = self.lib.cudaGetErrorString(code)
        return raw.decode(errors="replace") if raw else ""

    def check(self, call: str, code: int) -> None:
        if code != 0:
            raise CudaError(call, code, self.error_name(code), self.error_text(code))

    def _int_out(self, name: str, *args: int) -> int:
        value = c_int(0)
        self.check(name, getattr(self.lib, name)(byref(value), *args))
        return value.value

    def runtime_version(self) -> int:
        return self._int_out("cudaRuntimeGetVersion")

    def driver_version(self) -> int:
        return self._int_out("cudaDriverGetVersion")

    def device_count(self) -> int:
        return self._int_out("cudaGetDeviceCount")

    def set_device(self, index: int) -> None:
        self.check("cudaSetDevice", self.lib.cudaSetDevice(index))

    def attribute(self, attribute: int, device: int) -> int:
        return self._int_out("cudaDeviceGetAttribute", attribute, device)

    def device_name(self, device: int) -> str | None:
        if self._properties is None:
            return None
        buffer = ctypes.create_string_buffer(64 * 1024)  # larger than any cudaDeviceProp so far
        if self._properties(buffer, device) != 0:
            return None
        return buffer.raw[:256].split(b"\0", 1)[0].decode(errors="replace") or None

    def pci_bus_id(self, device: int) -> str | None:
        """"0000:3B:00.0": how NVML finds the same GPU whatever order CUDA numbers them in."""
        function = getattr(self.lib, "cudaDeviceGetPCIBusId", None)
        if function is None:
            return None
        buffer = ctypes.create_string_buffer(64)
        if function(buffer, c_int(64), c_int(device)) != 0:
            return None
        return buffer.value.decode(errors="replace") or None

    def memory_info(self) -> tuple[int, int]:
        free, total = c_size_t(0), c_size_t(0)
        self.check("cudaMemGetInfo", self.lib.cudaMemGetInfo(byref(free), byref(total)))
        return free.value, total.value

    def malloc(self, size: int) -> int:
        pointer = c_void_p(0)
        self.check(f"cudaMalloc({size} bytes)", self.lib.cudaMalloc(byref(pointer), max(1, size)))
        return int(pointer.value or 0)

    def free(self, pointer: int) -> None:
        if pointer:
            self.check("cudaFree", self.lib.cudaFree(c_void_p(pointer)))

    def upload(self, device_pointer: int, host: object) -> None:
        """Copy a C-contiguous NumPy array to device memory."""
        array = host  # numpy.ndarray; typed loosely so this module needs no numpy
        self.check("cudaMemcpy", self.lib.cudaMemcpy(c_void_p(device_pointer), c_void_p(array.ctypes.data),  # type: ignore[attr-defined]
                                                     array.nbytes, MEMCPY_HOST_TO_DEVICE))  # type: ignore[attr-defined]

    def download(self, host: object, device_pointer: int) -> None:
        array = host
        self.check("cudaMemcpy", self.lib.cudaMemcpy(c_void_p(array.ctypes.data), c_void_p(device_pointer),  # type: ignore[attr-defined]
                                                     array.nbytes, MEMCPY_DEVICE_TO_HOST))  # type: ignore[attr-defined]

    def memset(self, device_pointer: int, value: int, size: int) -> None:
        self.check("cudaMemset", self.lib.cudaMemset(c_void_p(device_pointer), value, size))

    def synchronize(self) -> None:
        self.check("cudaDeviceSynchronize", self.lib.cudaDeviceSynchronize())

    def event(self) -> int:
        event = c_void_p(0)
        self.check("cudaEventCreate", self.lib.cudaEventCreate(byref(event)))
        return int(event.value or 0)

    def destroy_event(self, event: int) -> None:
        self.check("cudaEventDestroy", self.lib.cudaEventDestroy(c_void_p(event)))

    def record(self, event: int, stream: int = 0) -> None:
        self.check("cudaEventRecord", self.lib.cudaEventRecord(c_void_p(event), c_void_p(stream) if stream else None))

    def stream(self) -> int:
        stream = c_void_p(0)
        self.check("cudaStreamCreate", self.lib.cudaStreamCreate(byref(stream)))
        return int(stream.value or 0)

    def destroy_stream(self, stream: int) -> None:
        self.check("cudaStreamDestroy", self.lib.cudaStreamDestroy(c_void_p(stream)))

    def stream_synchronize(self, stream: int) -> None:
        self.check("cudaStreamSynchronize", self.lib.cudaStreamSynchronize(c_void_p(stream)))

    def begin_capture(self, stream: int) -> None:
        self.check("cudaStreamBeginCapture",
                   self.lib.cudaStreamBeginCapture(c_void_p(stream), CAPTURE_MODE_THREAD_LOCAL))

    def end_capture(self, stream: int) -> int:
        """The captured graph; raises if the capture was invalidated."""
        graph = c_void_p(0)
        self.check("cudaStreamEndCapture", self.lib.cudaStreamEndCapture(c_void_p(stream), byref(graph)))
        return int(graph.value or 0)

    def instantiate(self, graph: int) -> int:
        executable = c_void_p(0)
        if self._instantiate is None:  # a runtime before 11.4: time_ms never captures there
            raise CudaError("cudaGraphInstantiateWithFlags", 500, "cudaErrorNotFound", "not in this CUDA runtime")
        self.check("cudaGraphInstantiateWithFlags", self._instantiate(byref(executable), c_void_p(graph), 0))
        return int(executable.value or 0)

    def launch_graph(self, executable: int, stream: int) -> None:
        self.check("cudaGraphLaunch", self.lib.cudaGraphLaunch(c_void_p(executable), c_void_p(stream)))

    def destroy_graph(self, graph: int, executable: int) -> None:
        if executable:
            self.lib.cudaGraphExecDestroy(c_void_p(executable))
        if graph:
            self.lib.cudaGraphDestroy(c_void_p(graph))

    def elapsed_ms(self, start: int, end: int) -> float:
        self.check("cudaEventSynchronize", self.lib.cudaEventSynchronize(c_void_p(end)))
        value = c_float(0.0)
        self.check("cudaEventElapsedTime", self.lib.cudaEventElapsedTime(byref(value), c_void_p(start), c_void_p(end)))
        return float(value.value)
