"""`bench --p2p`: copy bandwidth between GPUs, per pair and direction, as nvbandwidth's copy-engine method measures
it (cudaMemcpyPeerAsync on a stream of the source GPU, timed with events, peer access enabled where CUDA allows
it). On one GPU there is no pair: the device-to-device copy of that GPU is measured instead, as a reference.

`python -m cudnn_doctor.bench.p2p REQUEST_JSON` is the child (started through the child runner by run_p2p): it
prints one JSON object, {"device_count", "copies": [{"src", "dst", "gbs", "peer_access", "mib", "repeats"}],
"error"}; a failure of CUDA is its answer, never a traceback."""

from __future__ import annotations

import ctypes
import json
import os
import sys
from ctypes import POINTER, c_int, c_size_t, c_uint, c_void_p
from typing import Any

MEMCPY_DEVICE_TO_DEVICE = 3
WARMUP = 3
DEFAULT_MIB = 256
DEFAULT_REPEATS = 20


def measure(request: dict[str, Any]) -> dict[str, Any]:
    from cudnn_doctor.bench.cudart import CudaError, Cudart

    answer: dict[str, Any] = {"device_count": None, "copies": [], "error": None}
    try:
        rt = Cudart(request["cudart"])
    except (OSError, AttributeError) as error:
        answer["error"] = f"{request['cudart']}: {error}"
        return answer
    for name, argtypes in (("cudaDeviceCanAccessPeer", [POINTER(c_int), c_int, c_int]),
                           ("cudaDeviceEnablePeerAccess", [c_int, c_uint]),
                           ("cudaMemcpyPeerAsync", [c_void_p, c_int, c_void_p, c_int, c_size_t, c_void_p]),
                           ("cudaMemcpyAsync", [c_void_p, c_void_p, c_size_t, c_int, c_void_p])):
        function = getattr(rt.lib, name)
        function.argtypes, function.restype = argtypes, c_int
    size = int(request.get("mib", DEFAULT_MIB)) << 20
    repeats = int(request.get("repeats", DEFAULT_REPEATS))
    try:
        count = rt.device_count()
        answer["device_count"] = count
        buffers = {}
        for device in range(count):
            rt.set_device(device)
            buffers[device] = (rt.malloc(size), rt.malloc(size))
            rt.memset(buffers[device][0], 1, size)
        access = {}
        for src in range(count):
            for dst in range(count):
                if src != dst:
                    can = c_int(0)
                    rt.check("cudaDeviceCanAccessPeer", rt.lib.cudaDeviceCanAccessPeer(ctypes.byref(can), src, dst))
                    access[(src, dst)] = bool(can.value)
                    if can.value:
                        rt.set_device(src)
                        status = rt.lib.cudaDeviceEnablePeerAccess(dst, 0)
                        if status not in (0, 704):  # 704: cudaErrorPeerAccessAlreadyEnabled
                            rt.check("cudaDeviceEnablePeerAccess", status)
        pairs = [(0, 0)] if count == 1 else [(s, d) for s in range(count) for d in range(count) if s != d]
        for src, dst in pairs:
            gbs = _timed_copy(rt, src, dst, buffers, size, repeats)
            answer["copies"].append({"src": src, "dst": dst, "gbs": round(gbs, 1), "mib": size >> 20,
                                     "repeats": repeats, "peer_access": access.get((src, dst))})
    except CudaError as error:
        answer["error"] = str(error)
    return answer


def _timed_copy(rt: Any, src: int, dst: int, buffers: dict[int, tuple[int, int]], size: int, repeats: int) -> float:
    """GB/s of REPEATS copies of SIZE bytes from SRC to DST on a stream of SRC (the copy engine of the source)."""
    rt.set_device(src)
    stream = rt.stream()
    start, end = rt.event(), rt.event()
    source, target = buffers[src][0], buffers[dst][1]

    def copy() -> None:
        if src == dst:
            rt.check("cudaMemcpyAsync", rt.lib.cudaMemcpyAsync(c_void_p(target), c_void_p(source), size,
                                                               MEMCPY_DEVICE_TO_DEVICE, c_void_p(stream)))
        else:
            rt.check("cudaMemcpyPeerAsync", rt.lib.cudaMemcpyPeerAsync(c_void_p(target), dst, c_void_p(source), src,
                                                                       size, c_void_p(stream)))

    try:
        for _ in range(WARMUP):
            copy()
        rt.stream_synchronize(stream)
        rt.record(start, stream)
        for _ in range(repeats):
            copy()
        rt.record(end, stream)
        rt.stream_synchronize(stream)
        return size * repeats / (rt.elapsed_ms(start, end) / 1000) / 1e9
    finally:
        rt.destroy_event(start)
        rt.destroy_event(end)
        rt.destroy_stream(stream)


def run_p2p(cudart: str, mib: int = DEFAULT_MIB, repeats: int = DEFAULT_REPEATS) -> dict[str, Any]:
    """The child through the child runner; a crash or a hang is {'error': ...}."""
    from cudnn_doctor.bench.run import PACKAGE_ROOT
    from cudnn_doctor.bench.timeout import bench_timeout
    from cudnn_doctor.child import deadline_in, python_module_argv, run_child

    here = os.getcwd()
    paths = [PACKAGE_ROOT, *[p for p in sys.path if p and os.path.abspath(p) != here]]
    request = {"cudart": cudart, "mib": mib, "repeats": repeats}
    argv = python_module_argv("cudnn_doctor.bench.p2p", json.dumps(request), paths=paths)
    answer = run_child(argv, dict(os.environ), deadline_in(bench_timeout()), what="the peer-copy benchmark")
    if answer.timed_out:
        return {"error": "did not finish within its deadline (CUDNN_DOCTOR_BENCH_TIMEOUT)", "copies": []}
    if answer.values is None:
        return {"error": answer.error or f"exited with status {answer.exit_code}: {answer.stderr_tail}", "copies": []}
    return dict(answer.values)


def main() -> None:
    request = json.loads(sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read())
    try:
        answer = measure(request)
    except Exception as error:  # noqa: BLE001 - every failure is the answer
        answer = {"device_count": None, "copies": [], "error": f"{type(error).__name__}: {error}"}
    sys.stdout.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
