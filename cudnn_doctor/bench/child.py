"""`python -m cudnn_doctor.bench.child REQUEST_JSON`: run the bench on one GPU, answer JSON.

Runs in its own process so that a crash or hang inside cuDNN or the driver is a finding
of the parent, not a crash of the doctor, and so that the cuDNN the parent chose is loaded
by path without clashing with another copy of the same soname. Prints exactly one JSON
object on stdout; everything it knows goes in there, failures included.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

STARTED = time.perf_counter()


def _error(error: BaseException) -> dict[str, Any]:
    from cudnn_doctor.bench.cudart import CudaError
    from cudnn_doctor.bench.cudnn import CudnnError

    if isinstance(error, CudnnError):
        return {"kind": "cudnn", "call": error.call, "code": error.code, "name": error.name,
                "meaning": error.meaning, "fix": error.fix}
    if isinstance(error, CudaError):
        return {"kind": "cuda", "call": error.call, "code": error.code, "name": error.name, "text": error.text}
    from cudnn_doctor.bench.convolution import ApiUnavailable
    from cudnn_doctor.bench.lstm import WorkloadUnavailable

    if isinstance(error, ApiUnavailable):
        return {"kind": "api-unavailable", "message": str(error)}
    if isinstance(error, WorkloadUnavailable):
        return {"kind": "workload-unavailable", "message": str(error)}
    if isinstance(error, MemoryError):
        return {"kind": "host-memory", "message": "out of host memory"}
    return {"kind": "other", "message": f"{type(error).__name__}: {error}"}


PROGRESS_PREFIX = "cudnn-doctor-progress "
_progress_wanted = False  # the request's "progress": only a parent that shows progress reads these lines


def _progress(**event: Any) -> None:
    """One line on stderr for the parent's progress display (`now`: what runs; `done`: a finished workload)."""
    if not _progress_wanted:
        return  # else the last stderr line, which names how a crashed child died, would be a progress line
    try:
        sys.stderr.write(PROGRESS_PREFIX + json.dumps(event) + "\n")
        sys.stderr.flush()
    except OSError:
        pass  # nobody is watching


def run(request: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = {"device": None, "versions": {}, "startup_ms": {}, "results": [], "error": None,
                              "stage": "load-cudart"}
    from cudnn_doctor.bench import convolution, lstm  # noqa: F401 - NumPy and the bindings, timed as imports
    from cudnn_doctor.bench.device import device_info, elapsed_ms, initialise

    imported = time.perf_counter()
    answer["startup_ms"]["imports"] = round((imported - STARTED) * 1000, 1)
    try:
        from cudnn_doctor.bench.cudart import Cudart

        rt = Cudart(request["cudart"])
    except OSError as error:
        answer["error"] = {"kind": "load", "library": request["cudart"], "message": str(error)}
        return answer
    except AttributeError as error:
        answer["error"] = {"kind": "load", "library": request["cudart"], "message": f"not a CUDA runtime: {error}"}
        return answer
    answer["versions"]["cudart"] = rt.runtime_version()
    try:
        answer["versions"]["driver_cuda"] = rt.driver_version()
    except Exception:  # noqa: BLE001 - informational
        pass
    answer["stage"] = "load-cudnn"
    try:
        from cudnn_doctor.bench.cudnn import Cudnn

        lib = Cudnn(request["cudnn"])
    except (OSError, AttributeError) as error:
        answer["error"] = {"kind": "load", "library": request["cudnn"], "message": str(error)}
        return answer
    answer["versions"]["cudnn"] = lib.version()
    loaded = time.perf_counter()
    answer["startup_ms"]["load"] = round((loaded - imported) * 1000, 1)

    answer["stage"] = "init"

    device = int(request["device"])
    try:
        count = rt.device_count()
        answer["device_count"] = count
        if device >= count:
            answer["error"] = {"kind": "no-such-device", "device": device, "count": count}
            return answer
        handle_gpu = initialise(rt, lib, device)
        answer["startup_ms"]["init"] = elapsed_ms(loaded)
        answer["device"] = device_info(rt, device)
    except Exception as error:  # noqa: BLE001 - every failure is an answer
        answer["error"] = _error(error)
        return answer

    answer["stage"] = "workloads"
    from cudnn_doctor.bench.clocks import ClockWatch

    watch = ClockWatch(rt.pci_bus_id(device), device)
    try:
        with watch:
            answer["results"] = _workloads(handle_gpu, request)
    finally:
        handle_gpu.release()
        answer["clocks"] = watch.summary()
    answer["stage"] = "done"
    return answer


def _workloads(gpu: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    import numpy as np

    from cudnn_doctor.bench import reference as ref
    from cudnn_doctor.bench.convolution import make_conv_inputs, run_conv
    from cudnn_doctor.bench.lstm import run_lstm
    from cudnn_doctor.bench.workloads import CONV_SHAPES, LSTM_SHAPES, conv_flops, lstm_flops, tolerance

    dtype, layout, size = request["dtype"], request["layout"], request["size"]
    warmup, repeats = int(request.get("warmup", 3)), int(request.get("repeats", 20))
    cpu, threads = bool(request.get("cpu", True)), int(request.get("threads") or ref.default_threads())
    limit = request.get("workspace_limit_bytes")
    rng = np.random.default_rng(int(request.get("seed", 2024)))
    wanted = list(request["workloads"])
    results: list[dict[str, Any]] = []

    conv_passes = tuple(name for name in wanted if name.startswith("conv"))
    if conv_passes:
        shape = CONV_SHAPES[size]
        inputs = make_conv_inputs(shape, dtype, rng)
        _progress(now=f"{', '.join(conv_passes)} on the GPU")
        common = {"shape": shape.describe(), "shape_name": shape.name, "size": size, "layout": layout, "dtype": dtype,
                  "flops": conv_flops(shape)}
        try:
            outcomes = run_conv(gpu, shape, dtype, layout, conv_passes, inputs, limit, warmup, repeats,
                                str(request.get("api", "auto")))
        except Exception as error:  # noqa: BLE001
            outcomes = [{"workload": name, "error": _error(error)} for name in conv_passes]
        for outcome in outcomes:
            record = {**common, **outcome}
            if "exception" in record:
                record["error"] = _error(record.pop("exception"))
            if "output" in record:
                _progress(now=f"checking {record['workload']} against the CPU reference")
                _check_conv(record, shape, inputs, cpu, threads)
            record["tolerance"] = tolerance(record["workload"], dtype)
            results.append(record)
            _progress(done=record["workload"])
            gpu.rt.synchronize()

    if "lstm-fwd" in wanted:
        lstm_shape = LSTM_SHAPES[size]
        common = {"shape": lstm_shape.describe(), "shape_name": lstm_shape.name, "size": size, "layout": "TNC",
                  "dtype": dtype,
                  "flops": lstm_flops(lstm_shape), "tolerance": tolerance("lstm-fwd", dtype)}
        try:
            _progress(now="lstm-fwd on the GPU")
            outcome, inputs_lstm = run_lstm(gpu, lstm_shape, dtype, rng, warmup, repeats)
            record = {**common, **outcome}
            _progress(now="checking lstm-fwd against the CPU reference")
            _check_lstm(record, inputs_lstm, cpu, threads)
        except Exception as error:  # noqa: BLE001
            record = {**common, "workload": "lstm-fwd", "error": _error(error)}
        results.append(record)
        _progress(done="lstm-fwd")

    for record in results:
        record.pop("output", None)
        if record.get("gpu_ms"):
            record["tflops"] = record["flops"] / (record["gpu_ms"] * 1e-3) / 1e12
        if record.get("cpu_ms") and record.get("gpu_ms"):
            record["speedup"] = record["cpu_ms"] / record["gpu_ms"]
    return results


CPU_SAMPLES = (5, 25)  # at least, at most: a median of many short calls, or of five long ones
CPU_BUDGET_S = 0.3  # stop sampling after this much time once the least is taken


def _time_cpu(function: Any) -> tuple[Any, float]:
    """The result and the median wall time (ms) of FUNCTION on the CPU, after a warm-up call."""
    import statistics

    result = function()  # warm-up: building or loading the compiled kernels, thread pool, scratch buffers
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < CPU_SAMPLES[1] and (len(samples) < CPU_SAMPLES[0]
                                             or time.perf_counter() - started < CPU_BUDGET_S):
        begun = time.perf_counter()
        result = function()
        samples.append((time.perf_counter() - begun) * 1000)
    return result, statistics.median(samples)


def _check_conv(record: dict[str, Any], shape: Any, inputs: Any, cpu: bool, threads: int) -> None:
    """Compare with the CPU reference: the whole output when the CPU baseline runs, else a
    slice (two images; four filters for backward-filter) that costs little."""
    from cudnn_doctor.bench import reference as ref

    output = record["output"]
    name = record["workload"]
    if name == "conv-fwd":
        full = lambda: ref.conv_forward(inputs.x, inputs.w, shape.pad, shape.stride, threads)  # noqa: E731
        part = lambda: ref.conv_forward(inputs.x[:2], inputs.w, shape.pad, shape.stride, threads)  # noqa: E731
        output_part = output[:2]
    elif name == "conv-bwd-data":
        full = lambda: ref.conv_backward_data(inputs.dy, inputs.w, shape.pad, shape.stride,  # noqa: E731
                                              (shape.h, shape.w), threads)
        part = lambda: ref.conv_backward_data(inputs.dy[:2], inputs.w, shape.pad, shape.stride,  # noqa: E731
                                              (shape.h, shape.w), threads)
        output_part = output[:2]
    else:
        full = lambda: ref.conv_backward_filter(inputs.x, inputs.dy, (shape.r, shape.s), shape.pad,  # noqa: E731
                                                shape.stride, threads)
        part = lambda: ref.conv_backward_filter(inputs.x, inputs.dy[..., :4], (shape.r, shape.s),  # noqa: E731
                                                shape.pad, shape.stride, threads)
        output_part = output[:4]
    if cpu:
        expected, record["cpu_ms"] = _time_cpu(full)
        record["max_error"] = ref.scaled_error(output, expected)
        record["checked"] = "full"
        record["cpu_baseline"] = ref.baseline()
    else:
        record["max_error"] = ref.scaled_error(output_part, part())
        record["checked"] = "slice"
    record["cpu_threads"] = threads


def _check_lstm(record: dict[str, Any], inputs: Any, cpu: bool, threads: int) -> None:
    from cudnn_doctor.bench import reference as ref

    output = record["output"]
    weights = ref.LstmWeights.pack(inputs.w, inputs.r, inputs.bias)  # once, as the GPU side packs its weights
    if cpu:
        expected, record["cpu_ms"] = _time_cpu(lambda: ref.lstm_forward(inputs.x, weights, threads))
        record["max_error"] = ref.scaled_error(output, expected)
        record["checked"] = "full"
        record["cpu_baseline"] = ref.baseline()
    else:
        expected = ref.lstm_forward(inputs.x[:, :4], weights, threads)
        record["max_error"] = ref.scaled_error(output[:, :4], expected)
        record["checked"] = "slice"
    record["cpu_threads"] = threads


def main() -> None:
    global _progress_wanted
    request = json.loads(sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read())
    _progress_wanted = bool(request.get("progress"))
    try:
        answer = run(request)
    except Exception as error:  # noqa: BLE001 - the parent reads JSON, never a traceback
        answer = {"error": _error(error), "stage": "unknown", "results": []}
    answer["child_ms"] = round((time.perf_counter() - STARTED) * 1000, 1)
    from cudnn_doctor.child import write_answer

    write_answer(json.dumps(answer, default=float) + "\n")  # the runner's answer channel: a library may print on stdout
    # skip interpreter teardown: some vendor libraries crash or hang in their destructors
    os._exit(0)


if __name__ == "__main__":
    main()
