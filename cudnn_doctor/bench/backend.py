"""Convolutions through cuDNN's backend ("graph") API, autotuned as cudnn-frontend's benchmark
mode and PyTorch (`torch.backends.cudnn.benchmark = True`) do: build the one-operation graph,
ask the heuristics (modes A, B and FALLBACK) for engine configurations, finalize a plan for
each, time the plans and keep the fastest.

The enum values and attribute names are those of cudnn_graph.h (cuDNN 9.19.0) and
cudnn_backend_v8.h (8.9.7): the same numbers in both. The legacy API in convolution.py stays as the
fallback for a cuDNN where any of this fails (older 8.x builds, a GPU the engines refuse).
"""

from __future__ import annotations

from collections.abc import Callable
from ctypes import byref, c_char, c_double, c_float, c_int, c_int64, c_void_p
from dataclasses import dataclass, field
from typing import Any

from cudnn_doctor.bench import cudnn as dnn

# cudnnBackendDescriptorType_t
CONVOLUTION, ENGINE, ENGINECFG, ENGINEHEUR, EXECUTION_PLAN = 1, 2, 3, 4, 5
OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_BACKWARD_FILTER = 10, 11
OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATIONGRAPH, VARIANT_PACK, TENSOR = 12, 15, 16, 17
# cudnnBackendAttributeType_t
TYPE_HANDLE, TYPE_DATA_TYPE, TYPE_INT64, TYPE_FLOAT, TYPE_DOUBLE, TYPE_VOID_PTR = 0, 1, 3, 4, 5, 6
TYPE_CONVOLUTION_MODE, TYPE_HEUR_MODE, TYPE_NUMERICAL_NOTE, TYPE_BACKEND_DESCRIPTOR = 7, 8, 11, 15
TYPE_BEHAVIOR_NOTE, TYPE_CHAR = 19, 24
# cudnnBackendAttributeName_t
CONVOLUTION_COMP_TYPE, CONVOLUTION_CONV_MODE, CONVOLUTION_DILATIONS = 100, 101, 102
CONVOLUTION_FILTER_STRIDES, CONVOLUTION_POST_PADDINGS, CONVOLUTION_PRE_PADDINGS = 103, 104, 105
CONVOLUTION_SPATIAL_DIMS = 106
ENGINEHEUR_MODE, ENGINEHEUR_OPERATION_GRAPH, ENGINEHEUR_RESULTS = 200, 201, 202
ENGINECFG_ENGINE = 300
EXECUTION_PLAN_HANDLE, EXECUTION_PLAN_ENGINE_CONFIG, EXECUTION_PLAN_WORKSPACE_SIZE = 400, 401, 402
EXECUTION_PLAN_JSON_REPRESENTATION = 405
OPERATIONGRAPH_HANDLE, OPERATIONGRAPH_OPS = 800, 801
TENSOR_BYTE_ALIGNMENT, TENSOR_DATA_TYPE, TENSOR_DIMENSIONS, TENSOR_STRIDES = 900, 901, 902, 903
TENSOR_UNIQUE_ID = 906
VARIANT_PACK_UNIQUE_IDS, VARIANT_PACK_DATA_POINTERS, VARIANT_PACK_WORKSPACE = 1000, 1001, 1003
ENGINE_GLOBAL_INDEX, ENGINE_NUMERICAL_NOTE, ENGINE_BEHAVIOR_NOTE = 1301, 1303, 1305
# cudnnBackendHeurMode_t (INSTANT is A's old name)
HEUR_MODE_B, HEUR_MODE_FALLBACK, HEUR_MODE_A = 1, 2, 3
# cudnnBackendNumericalNote_t / cudnnBackendBehaviorNote_t
NOTE_TENSOR_CORE, NOTE_DOWN_CONVERT_INPUTS = 0, 1
NOTE_RUNTIME_COMPILATION = 0

# per pass: the operation descriptor and its attributes (alpha, beta, conv, then the three tensors
# named as in the graph: x-like, w-like, y-like)
OPERATIONS = {
    "conv-fwd": (OPERATION_CONVOLUTION_FORWARD, 700, 701, 702, {"x": 704, "w": 703, "y": 705}),
    "conv-bwd-data": (OPERATION_CONVOLUTION_BACKWARD_DATA, 706, 707, 708, {"x": 710, "w": 709, "y": 711}),
    "conv-bwd-filter": (OPERATION_CONVOLUTION_BACKWARD_FILTER, 712, 713, 714, {"x": 716, "w": 715, "y": 717}),
}
UIDS = {"x": 1, "w": 2, "y": 3}
MAX_PLANS = 16  # plans finalized and timed per pass; PyTorch's benchmark_limit is 10


class Descriptors:
    """Backend descriptors created through LIB, destroyed together (newest first)."""

    def __init__(self, lib: dnn.Cudnn) -> None:
        self.lib = lib
        self.created: list[int] = []

    def create(self, kind: int) -> int:
        pointer = c_void_p(0)
        self.lib.call("cudnnBackendCreateDescriptor", kind, byref(pointer))
        self.created.append(int(pointer.value or 0))
        return int(pointer.value or 0)

    def forget(self, descriptor: int) -> None:
        """Destroy one descriptor now (a plan that lost the timing)."""
        if descriptor in self.created:
            self.created.remove(descriptor)
            self.lib.function("cudnnBackendDestroyDescriptor")(c_void_p(descriptor))

    def destroy_all(self) -> None:
        if not self.created:
            return
        destroy = self.lib.function("cudnnBackendDestroyDescriptor")
        for descriptor in reversed(self.created):
            destroy(c_void_p(descriptor))
        self.created.clear()

    def set(self, descriptor: int, name: int, kind: int, values: list[Any]) -> None:
        ctype = _CTYPES[kind]
        array = (ctype * len(values))(*values)
        self.lib.call("cudnnBackendSetAttribute", c_void_p(descriptor), name, kind, c_int64(len(values)), array)

    def get_int64(self, descriptor: int, name: int) -> int:
        value, count = c_int64(0), c_int64(0)
        self.lib.call("cudnnBackendGetAttribute", c_void_p(descriptor), name, TYPE_INT64, c_int64(1), byref(count),
                      byref(value))
        return int(value.value)

    def get_enums(self, descriptor: int, name: int, kind: int, most: int = 16) -> list[int]:
        values, count = (c_int * most)(), c_int64(0)
        self.lib.call("cudnnBackendGetAttribute", c_void_p(descriptor), name, kind, c_int64(most), byref(count), values)
        return [values[i] for i in range(min(count.value, most))]

    def get_text(self, descriptor: int, name: int) -> str:
        count = c_int64(0)
        self.lib.call("cudnnBackendGetAttribute", c_void_p(descriptor), name, TYPE_CHAR, c_int64(0), byref(count), None)
        buffer = (c_char * max(1, count.value))()
        self.lib.call("cudnnBackendGetAttribute", c_void_p(descriptor), name, TYPE_CHAR, c_int64(count.value),
                      byref(count), buffer)
        return buffer.raw[:count.value].decode(errors="replace")

    def finalize(self, descriptor: int) -> None:
        self.lib.call("cudnnBackendFinalize", c_void_p(descriptor))


_CTYPES: dict[int, Any] = {TYPE_HANDLE: c_void_p, TYPE_DATA_TYPE: c_int, TYPE_INT64: c_int64, TYPE_FLOAT: c_float,
                           TYPE_DOUBLE: c_double, TYPE_VOID_PTR: c_void_p, TYPE_CONVOLUTION_MODE: c_int,
                           TYPE_HEUR_MODE: c_int, TYPE_BACKEND_DESCRIPTOR: c_void_p}


@dataclass(frozen=True)
class ConvProblem:
    """One convolution pass in the backend API's terms (dims always n,c,h,w / k,c,r,s)."""

    name: str
    storage: int
    compute: int
    nhwc: bool
    x_dims: tuple[int, int, int, int]
    w_dims: tuple[int, int, int, int]
    y_dims: tuple[int, int, int, int]
    pad: int
    stride: int
    tensor_cores: bool  # False: fp32 on the CUDA cores only (PyTorch's allow_tf32 = False)


@dataclass
class CandidatePlan:
    """A finalized execution plan of one engine configuration, and its time once measured."""

    descriptor: int
    engine: int
    workspace: int
    ms: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class TunedConv:
    """The fastest plan, a callable that runs it, and what was tried."""

    run: Callable[[], None]
    engine: int
    workspace: int
    tried: list[dict[str, Any]]
    heuristics: dict[str, int]


def strides(dims: tuple[int, int, int, int], nhwc: bool) -> list[int]:
    n, c, h, w = dims
    return [h * w * c, 1, w * c, c] if nhwc else [c * h * w, h * w, w, 1]


def build_graph(lib: dnn.Cudnn, handle: int, problem: ConvProblem, descriptors: Descriptors) -> int:
    """The finalized operation graph of PROBLEM's one convolution."""
    d = descriptors
    tensors = {}
    for role, dims in (("x", problem.x_dims), ("w", problem.w_dims), ("y", problem.y_dims)):
        tensor = d.create(TENSOR)
        d.set(tensor, TENSOR_DATA_TYPE, TYPE_DATA_TYPE, [problem.storage])
        d.set(tensor, TENSOR_DIMENSIONS, TYPE_INT64, list(dims))
        d.set(tensor, TENSOR_STRIDES, TYPE_INT64, strides(dims, problem.nhwc))
        d.set(tensor, TENSOR_UNIQUE_ID, TYPE_INT64, [UIDS[role]])
        d.set(tensor, TENSOR_BYTE_ALIGNMENT, TYPE_INT64, [16])
        d.finalize(tensor)
        tensors[role] = tensor
    conv = d.create(CONVOLUTION)
    d.set(conv, CONVOLUTION_SPATIAL_DIMS, TYPE_INT64, [2])
    d.set(conv, CONVOLUTION_COMP_TYPE, TYPE_DATA_TYPE, [problem.compute])
    d.set(conv, CONVOLUTION_CONV_MODE, TYPE_CONVOLUTION_MODE, [dnn.CROSS_CORRELATION])
    d.set(conv, CONVOLUTION_DILATIONS, TYPE_INT64, [1, 1])
    d.set(conv, CONVOLUTION_FILTER_STRIDES, TYPE_INT64, [problem.stride] * 2)
    d.set(conv, CONVOLUTION_PRE_PADDINGS, TYPE_INT64, [problem.pad] * 2)
    d.set(conv, CONVOLUTION_POST_PADDINGS, TYPE_INT64, [problem.pad] * 2)
    d.finalize(conv)
    kind, alpha, beta, conv_attr, roles = OPERATIONS[problem.name]
    operation = d.create(kind)
    for role, attribute in roles.items():
        d.set(operation, attribute, TYPE_BACKEND_DESCRIPTOR, [tensors[role]])
    d.set(operation, conv_attr, TYPE_BACKEND_DESCRIPTOR, [conv])
    scalar_type = TYPE_DOUBLE if problem.compute == dnn.DATA_DOUBLE else TYPE_FLOAT
    d.set(operation, alpha, scalar_type, [1.0])
    d.set(operation, beta, scalar_type, [0.0])
    d.finalize(operation)
    graph = d.create(OPERATIONGRAPH)
    d.set(graph, OPERATIONGRAPH_HANDLE, TYPE_HANDLE, [handle])
    d.set(graph, OPERATIONGRAPH_OPS, TYPE_BACKEND_DESCRIPTOR, [operation])
    d.finalize(graph)
    return graph


def engine_configs(lib: dnn.Cudnn, graph: int, mode: int, descriptors: Descriptors) -> list[int]:
    """The engine configurations the heuristics in MODE propose for GRAPH, best first."""
    d = descriptors
    heuristics = d.create(ENGINEHEUR)
    d.set(heuristics, ENGINEHEUR_OPERATION_GRAPH, TYPE_BACKEND_DESCRIPTOR, [graph])
    d.set(heuristics, ENGINEHEUR_MODE, TYPE_HEUR_MODE, [mode])
    d.finalize(heuristics)
    count = c_int64(0)
    lib.call("cudnnBackendGetAttribute", c_void_p(heuristics), ENGINEHEUR_RESULTS, TYPE_BACKEND_DESCRIPTOR,
             c_int64(0), byref(count), None)
    if count.value <= 0:
        return []
    configs = [d.create(ENGINECFG) for _ in range(count.value)]
    array = (c_void_p * len(configs))(*configs)
    returned = c_int64(0)
    lib.call("cudnnBackendGetAttribute", c_void_p(heuristics), ENGINEHEUR_RESULTS, TYPE_BACKEND_DESCRIPTOR,
             c_int64(len(configs)), byref(returned), array)
    return configs[:returned.value]


def engine_of(descriptors: Descriptors, config: int) -> tuple[int, list[int], list[int]]:
    """(global engine index, numerical notes, behaviour notes) of an engine configuration."""
    d = descriptors
    engine = d.create(ENGINE)
    returned = c_int64(0)
    d.lib.call("cudnnBackendGetAttribute", c_void_p(config), ENGINECFG_ENGINE, TYPE_BACKEND_DESCRIPTOR, c_int64(1),
               byref(returned), byref(c_void_p(engine)))
    index = d.get_int64(engine, ENGINE_GLOBAL_INDEX)
    numerical = d.get_enums(engine, ENGINE_NUMERICAL_NOTE, TYPE_NUMERICAL_NOTE)
    try:
        behaviour = d.get_enums(engine, ENGINE_BEHAVIOR_NOTE, TYPE_BEHAVIOR_NOTE)
    except dnn.CudnnError:
        behaviour = []
    d.forget(engine)
    return index, numerical, behaviour


def wanted(problem: ConvProblem, numerical: list[int]) -> bool:
    """PyTorch's filter: never engines that down-convert inputs; for fp32 without TF32, none on tensor cores."""
    if NOTE_DOWN_CONVERT_INPUTS in numerical:
        return False
    return problem.tensor_cores or NOTE_TENSOR_CORE not in numerical


def make_plans(lib: dnn.Cudnn, handle: int, problem: ConvProblem, graph: int, workspace_limit: int,
               descriptors: Descriptors) -> tuple[list[CandidatePlan], dict[str, int]]:
    """Finalized plans from heuristics A, B and FALLBACK (in that order, duplicates dropped) that
    pass the filter and need at most WORKSPACE_LIMIT bytes; at most MAX_PLANS."""
    d = descriptors
    plans: list[CandidatePlan] = []
    seen: set[str] = set()
    counts: dict[str, int] = {}
    for mode_name, mode in (("A", HEUR_MODE_A), ("B", HEUR_MODE_B), ("fallback", HEUR_MODE_FALLBACK)):
        try:
            configs = engine_configs(lib, graph, mode, d)
        except dnn.CudnnError:
            counts[mode_name] = 0
            continue
        counts[mode_name] = len(configs)
        for config in configs:
            if len(plans) >= MAX_PLANS:
                break
            try:
                index, numerical, behaviour = engine_of(d, config)
            except dnn.CudnnError:
                continue
            if not wanted(problem, numerical):
                continue
            plan = d.create(EXECUTION_PLAN)
            try:
                d.set(plan, EXECUTION_PLAN_HANDLE, TYPE_HANDLE, [handle])
                d.set(plan, EXECUTION_PLAN_ENGINE_CONFIG, TYPE_BACKEND_DESCRIPTOR, [config])
                d.finalize(plan)
                workspace = d.get_int64(plan, EXECUTION_PLAN_WORKSPACE_SIZE)
            except dnn.CudnnError:
                d.forget(plan)
                continue
            try:
                key = d.get_text(plan, EXECUTION_PLAN_JSON_REPRESENTATION)
            except dnn.CudnnError:
                key = f"{index}/{workspace}/{len(plans)}"
            if key in seen or workspace > workspace_limit:
                d.forget(plan)
                continue
            seen.add(key)
            notes = ["tensor-core"] if NOTE_TENSOR_CORE in numerical else []
            if NOTE_RUNTIME_COMPILATION in behaviour:
                notes.append("runtime-compiled")
            plans.append(CandidatePlan(descriptor=plan, engine=index, workspace=workspace, notes=notes))
    return plans, counts


def variant_pack(descriptors: Descriptors, pointers: dict[str, int], workspace: int) -> int:
    d = descriptors
    pack = d.create(VARIANT_PACK)
    roles = sorted(pointers)
    d.set(pack, VARIANT_PACK_UNIQUE_IDS, TYPE_INT64, [UIDS[role] for role in roles])
    d.set(pack, VARIANT_PACK_DATA_POINTERS, TYPE_VOID_PTR, [pointers[role] for role in roles])
    d.set(pack, VARIANT_PACK_WORKSPACE, TYPE_VOID_PTR, [workspace or None])
    d.finalize(pack)
    return pack


def executor(lib: dnn.Cudnn, handle: int, plan: int, pack: int) -> Callable[[], None]:
    execute = lib.function("cudnnBackendExecute")
    args = (c_void_p(handle), c_void_p(plan), c_void_p(pack))

    def run() -> None:
        status = execute(*args)
        if status:
            raise dnn.CudnnError("cudnnBackendExecute", status, lib.status_name(status))

    return run
