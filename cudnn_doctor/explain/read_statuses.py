"""Status and error codes of the GPU stack, by name (CUDNN_STATUS_*, cudaError*), by number (CUDA error 35),
and by NVIDIA's own message for them."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

from cudnn_doctor.explain.facts import Status
from cudnn_doctor.explain.message_text import PER_LINE
from cudnn_doctor.knowledge.data import load

_STATUS_NAME = re.compile(r"\b(?:CUDNN_STATUS_[A-Z0-9_]{2,60}|CUDA_ERROR_[A-Z0-9_]{2,60}|NVML_ERROR_[A-Z0-9_]{2,60}"
                          r"|CUBLAS_STATUS_[A-Z0-9_]{2,60}|CUFFT_[A-Z0-9_]{2,60}|CURAND_STATUS_[A-Z0-9_]{2,60}"
                          r"|CUSOLVER_STATUS_[A-Z0-9_]{2,60}|CUSPARSE_STATUS_[A-Z0-9_]{2,60}|NVRTC_ERROR_[A-Z0-9_]{2,60}"
                          r"|cudaError[A-Za-z0-9]{2,60}"
                          r"|NVJPEG_STATUS_[A-Z0-9_]{2,60}|NVJITLINK_ERROR_[A-Z0-9_]{2,60}|CU_FILE_[A-Z0-9_]{2,60}|DCGM_ST_[A-Z0-9_]{2,60}"
                          r"|nccl(?:UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage|RemoteError"
                          r"|InProgress)\b)")
_STATUS_NUMBER = re.compile(r"(?i)\b(cudnn|cuda|nvml|cublas|cu[a-z]{2,30})\b[a-z_ :.-]{0,40}?"
                            # (the API's name may stand before the number, quoted: "CUDA error DRIVER: '999'")
                            r"\b(?:error|failure|status|err|code)\b(?: (?:driver|runtime))?[\s:=(#'\"]{0,4}(\d{1,4})\b")
_ERROR_NUMBER = re.compile(r"(?i)\berror (\d{2,4}): ")
# a CUDA runtime or driver call named by the program, then, further on the line, the number it returned in the
# program's own words ("error code : 35", "returned error 999", "err = 100"): the call says whose numbering it is
_CALL_NUMBER = re.compile(r"\b(cuda[A-Z][A-Za-z0-9_]{1,60}|cu[A-Z][A-Za-z0-9_]{1,60}|nvml[A-Z][A-Za-z0-9_]{1,60})\b"
                          r"[^\n]{0,100}?\b(?:[Ee]rror|[Ee]rr|[Cc]ode|[Ss]tatus|[Rr]eturned|[Ff]ailed)\b"
                          r"(?:\s{0,2}(?:code|number|with|=|:|#))?\s{0,2}[:=(#]?\s{0,2}(\d{1,4})\b"
                          # the number ends the program's words: "returned 3 rows" counts something else
                          r"(?!\s{0,2}[A-Za-z])")

# Numba's CudaAPIError: "[%s] %s" % (code, "Call to %s results in %s" % (fname, errname)), the CUresult a driver function
# returned in brackets before the call's name; the name it prints is UNKNOWN_CUDA_ERROR for a code its own map lacks
# ("[802] Call to cuInit results in UNKNOWN_CUDA_ERROR"), so the number is the fact (numba/numba@0.61:
# numba/cuda/cudadrv/driver.py Driver._check_ctypes_error, numba/cuda/cudadrv/error.py CudaAPIError.__str__)
_NUMBA_CALL = re.compile(r"\[(\d{1,4})\]\s{0,3}Call to cu[A-Z][A-Za-z0-9_]{1,60} results in\b")

# TensorRT's (5-8) own check of a cuDNN, cuBLAS or CUDA call, with the function it was in and the status number
# ("cuda/cudaConvolutionLayer.cpp (163) - Cudnn Error in execute: 8", "Cudnn Error in
# nvinfer1::rt::cuda::CudnnConvolutionRunner::executeConv: 8 (CUDNN_STATUS_EXECUTION_FAILED)", "cuda error in execute :: 77"):
# NVIDIA/TensorRT#1390 and #311, NVIDIA-AI-IOT/torch2trt#551
_LIBRARY_ERROR_IN = re.compile(r"(?i)\b(cudnn|cublas|cuda)\s{1,3}error\s{1,3}in\s{1,3}[a-z_][a-z0-9_:]{0,120}?\s{0,2}:{1,2}\s{0,3}"
                               r"(\d{1,4})\b")
# CuPy's NVRTCError: "{nvrtcGetErrorString(status)} ({status})", where an NVRTC older than the status prints its generic
# "NVRTC_ERROR unknown" (cupy/cupy cupy_backends/cuda/libs/nvrtc.pyx: NVRTCError.__init__): the number is the fact
_NVRTC_NUMBER = re.compile(r"\bNVRTC_ERROR\b[^\n()]{0,40}\((\d{1,2})\)")

# a program that names the CUDA driver library as what failed, then the CUresult it got, as Ollama's GPU discovery
# prints them (ollama/ollama@08f8471dba9846a015b37cc829688aaa4438a78e:gpu/gpu_info_nvcuda.c: "cuda driver library init
# failure: %d", "cuda driver library failed to get device context %d", "... device memory info lookup failure %d", with
# the CUresult of cuInit, cuCtxCreate_v3, cuMemGetInfo_v2); the number may run into the next log field ("46time=")
_DRIVER_LIBRARY = re.compile(r"\bcuda driver library\b[a-z _:]{0,60}?\b(?:failure|failed|error)\b[a-z _:]{0,40}?"
                             r"(?<![\w.])(\d{1,4})(?!\d|\.\d)")
# a status's C type named before its number, as check macros print them ("cudaError_t 98 : \"invalid device function\"",
# "CUresult 999", "cublasStatus_t = 13", "ncclResult_t 2"): the type says whose numbering it is
_TYPE_NUMBER = re.compile(r"\b(cudaError_t|cudaError|CUresult|cudnnStatus_t|cublasStatus_t|nvmlReturn_t|ncclResult_t|"
                          r"cufftResult|cusparseStatus_t|cusolverStatus_t|curandStatus_t|nvrtcResult)\b\s{0,3}[:=(#]?"
                          r"\s{0,3}(\d{1,4})\b")
TYPE_API = {"cudaError_t": "cudart", "cudaError": "cudart", "CUresult": "driver", "cudnnStatus_t": "cudnn",
            "cublasStatus_t": "cublas", "nvmlReturn_t": "nvml", "ncclResult_t": "nccl", "cufftResult": "cufft",
            "cusparseStatus_t": "cusparse", "cusolverStatus_t": "cusolver", "curandStatus_t": "curand",
            "nvrtcResult": "nvrtc"}
# ------------------------------------------------------------------------------------------ status codes


@functools.cache
def _status_tables() -> tuple[dict[str, dict[str, Any]], dict[tuple[str, int], dict[str, Any]], tuple[tuple[str, str], ...]]:
    """(rows by name, rows by (api, number), NVIDIA's texts that stand for a code anywhere: (text, name))."""
    data = load("status_codes")
    by_name: dict[str, dict[str, Any]] = {}
    by_number: dict[tuple[str, int], dict[str, Any]] = {}
    for row in data.get("status", []):
        by_name.setdefault(row["name"], row)
        api = row["api"]
        if api == "cudnn":
            api = "cudnn9" if row.get("cudnn") == "9" else "cudnn8"
        by_number.setdefault((api, int(row["number"])), row)
    messages = tuple((_spaced(row["text"]), row["name"]) for row in data.get("message", [])
                     if not row.get("bare") and not row.get("within"))
    return by_name, by_number, messages


def _spaced(text: str) -> str:
    """TEXT with no space around a slash: programs print "display driver/cuda driver" and "driver / cuda driver"."""
    return text.replace(" / ", "/")


@functools.cache
def _bare_messages() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """([[error_prefix]] texts, (text, name) of the [[message]] rows with bare = true, longest first)."""
    data = load("status_codes")
    prefixes = tuple(row["text"] for row in data.get("error_prefix", []))
    bare = sorted(((row["text"], row["name"]) for row in data.get("message", []) if row.get("bare")),
                  key=lambda pair: -len(pair[0]))
    return prefixes, tuple(bare)


_AFTER_PREFIX = re.compile(r"[\s'\"(:=#\d-]{0,12}")  # what may stand between a prefix and the text: "CUDA failure 2: '"


def _after_prefix(index: int, lower: str) -> list[Status]:
    """NVIDIA's short texts for a code ("unknown error") right after a program's words for a CUDA error."""
    by_name, _, _ = _status_tables()
    prefixes, bare = _bare_messages()
    out: list[Status] = []
    for prefix in prefixes:
        at = lower.find(prefix)
        while at >= 0 and len(out) < 2:
            start = at + len(prefix)
            gap = _AFTER_PREFIX.match(lower, start)
            rest = lower[gap.end() if gap else start:][:80]
            found = next((name for text, name in bare if rest.startswith(text)), None)
            if found and found in by_name:
                out.append(_status(by_name[found], "message", index))
            at = lower.find(prefix, start)
    return out


# where a program reports a CUDA call's failure in its own words, the CUDA call or the CUDA source file is on the
# line: a driver or runtime function (cuInit, cudaMalloc), a .cu/.cuh file with its line, the success value a check
# compares with, or the word CUDA itself ("cuInit(): unknown error", "updater_gpu.cu: 841: initialization error",
# "Check failed: error == cudaSuccess (8 vs. 0)  invalid device function", "Error: invalid device function:
# .../convenience.cuh:68", "VX3_SimulationManager.cu(413): CUDA Function Error: invalid device function")
_CUDA_CONTEXT = re.compile(r"\bcu[A-Z][A-Za-z0-9_]{1,60}|\bcuda[A-Z][A-Za-z0-9_]{1,60}|\.cuh?\b|\b(?i:cuda)\b")
# what stands before NVIDIA's text (a colon, a closing bracket, a quote, or the start of the line) and after it (the
# end, or punctuation): the text is the whole of what the program printed for the code, not words of a sentence
_TEXT_BEFORE = frozenset(":)]'\"(=>-")
_TEXT_AFTER = frozenset(":.,;'\"()[]!-")


def _in_cuda_context(index: int, line: str, lower: str) -> list[Status]:
    """NVIDIA's short texts for a code ("unknown error", "invalid device function"), standing alone after a CUDA call
    or a CUDA source location on the same line, in whatever words the program wraps them."""
    if not _CUDA_CONTEXT.search(line):
        return []
    by_name, _, _ = _status_tables()
    _, bare = _bare_messages()
    for text, name in bare:
        at = lower.find(text)
        while at >= 0:
            # the code's number may stand between the program's words and the text ("IPC handle : 30 unknown error")
            before = lower[:at].rstrip().rstrip("0123456789").rstrip()
            after = lower[at + len(text):].lstrip()
            if (not before or before[-1] in _TEXT_BEFORE) and (not after or after[0] in _TEXT_AFTER) \
                    and name in by_name:
                return [_status(by_name[name], "message", index)]
            at = lower.find(text, at + 1)
    return []


@functools.cache
def _alone_messages() -> tuple[tuple[str, str, frozenset[int]], ...]:
    """(text, name, every number the code has had) of the [[message]] rows with alone = true: texts only CUDA's runtime
    prints, which stand for their code as the whole of a program's error words even with no CUDA word on the line."""
    by_name, _, _ = _status_tables()
    return tuple((row["text"], row["name"], frozenset([int(by_name[row["name"]]["number"]), *row.get("older_numbers", ())]))
                 for row in load("status_codes").get("message", []) if row.get("alone") and row["name"] in by_name)


# what may follow such a text and still leave it the whole of the program's words: its number ("invalid device function
# 8", "... (error-code 8)") or the place it was raised ("in /src/kernels.cu at line 273")
_ALONE_AFTER = re.compile(r"\(?(?:error[- ]?code|error|code|err)?\s{0,2}[:=#]?\s{0,2}(\d{1,4})\)?\s*$"
                          r"|(?:in\s)?\S{0,200}?[/\\.]\S{0,200}(?:\sat line \d{1,6})?(?:\s{0,2}\((?:error[- ]?code|error|code)"
                          r"\s{0,2}[:=#]?\s{0,2}(\d{1,4})\))?\s*$")


def _alone(index: int, lower: str) -> list[Status]:
    """A text of _alone_messages() after an error word, a colon or nothing, and before the end of the line, a punctuation
    mark, its own number (of any numbering the code has had) or the place it was raised."""
    if "hip" in lower.split(":")[0]:  # AMD's runtime prints the same texts ([[aside]] sets its lines aside)
        return []
    by_name, _, _ = _status_tables()
    for text, name, numbers in _alone_messages():
        at = lower.find(text)
        if at < 0:
            continue
        before = lower[:at].rstrip()
        after = lower[at + len(text):].strip()
        if before and before[-1] not in _TEXT_BEFORE and not before.endswith("error"):
            continue
        if not after or after[0] in _TEXT_AFTER and after[0] != "(":
            return [_status(by_name[name], "message", index)]
        tail = _ALONE_AFTER.match(after)
        number = next((group for group in tail.groups() if group), None) if tail else None
        if tail and (number is None or int(number) in numbers):
            return [_status(by_name[name], "message", index)]
    return []


# a program's CUDA error block, one field a line under its heading: the CHECK macro of Fan Zheyong's "CUDA Programming"
# (GPUMD's src/utilities/error.cuh and the many projects that copied it: printf("CUDA Error:\n"), then "    File:", "    Line:",
# "    Error code: %d", "    Error text: %s" with cudaGetErrorString): the number on a line of its own is the heading's
_BLOCK_NUMBER = re.compile(r"^\s{0,12}error\s{0,2}code\s{0,2}[:=]\s{0,4}(\d{1,4})\s*$")
BLOCK_WINDOW = 4  # lines between the heading and its number


# Thrust's and CUB's exception (NVIDIA/cccl thrust/system/cuda/detail/util.h throw_on_error: system_error(status,
# cuda_category(), "parallel_for failed"), whose what() is the algorithm's words, ": ", then cudaGetErrorString's
# text): under "thrust::system::system_error" the text after "<algorithm> failed: " is the CUDA runtime's
# (its namespace may carry the release and target: "thrust::THRUST_300200_SM_90_NVHPC_NS::system::system_error")
_THRUST_ERROR = re.compile(r"\bthrust::(?:[a-z0-9_]{1,60}::){0,3}system_error\b")
THRUST_WINDOW = 2  # lines between the exception's type and its what()


def _thrust_status(index: int, lowers: list[str]) -> list[Status]:
    lower = lowers[index]
    if " failed: " not in lower or not any("thrust::" in line and _THRUST_ERROR.search(line)
                                          for line in lowers[max(0, index - THRUST_WINDOW):index + 1]):
        return []
    text = lower[lower.index(" failed: ") + len(" failed: "):]
    return _in_cuda_context(index, "cuda: " + text, ": " + text)


def block_statuses(index: int, lowers: list[str]) -> list[Status]:
    """The CUDA runtime status a multi-line error block gives on line INDEX ("Error code: 209" under "CUDA Error:"), or
    a Thrust exception's what() under its type."""
    thrust = _thrust_status(index, lowers)
    if thrust:
        return thrust
    match = _BLOCK_NUMBER.match(lowers[index])
    if match is None or not any("cuda error" in line for line in lowers[max(0, index - BLOCK_WINDOW):index]):
        return []
    _, by_number, _ = _status_tables()
    row = by_number.get(("cudart", int(match.group(1))))
    return [_status(row, "number", index)] if row is not None else []


def _status(row: dict[str, Any], how: str, index: int) -> Status:
    return Status(api=row["api"], name=row["name"], number=int(row["number"]), meaning=row["meaning"],
                  finding=row["finding"], how=how, line=index, source=row["source"])


STATUS_PREFIXES = ("cudnn_status_", "cuda_error_", "nvml_error_", "cudaerror", "cublas_status_", "cufft_", "curand_status_",
                   "cusolver_status_", "cusparse_status_", "nvrtc_error_", "ncclunhandled", "ncclsystemerror",
                   "ncclinternalerror", "ncclinvalid", "ncclremoteerror", "ncclinprogress", "nvjpeg_status_",
                   "nvjitlink_error_", "cu_file_", "dcgm_st_")


# a status as other languages' wrappers spell it: cudnnStatusArchMismatch (Python's cudnn wrappers, Julia's
# CUDNN.jl enum), "ERROR: Arch mismatch" (Mocha.jl prints the words of the name)
# (cuda-python's and CuTe DSL's exception class before the name, a space between: "CUDAError InsufficientDriver")
_CAMEL_STATUS = re.compile(r"\b(cudnnStatus|cudaError|CUDAError|CUresult|nvmlError)(?:_| (?=[A-Z][a-z]))?([A-Z][A-Za-z]{2,50})\b")
_CAMEL_WORD = re.compile(r"[A-Z][a-z]{0,20}|[A-Z]{2,10}(?![a-z])")
CAMEL_PREFIX = {"cudnnStatus": "CUDNN_STATUS_", "CUresult": "CUDA_ERROR_", "nvmlError": "NVML_ERROR_"}
# the words of a cuDNN status name that say one thing only; generic ones ("not supported", "internal error",
# "bad param") are read only with their prefix
SPELLED_MIN_WORDS = 2
SPELLED_GENERIC = ("not supported", "internal error", "bad param", "success", "execution failed", "not initialized",
                   "invalid value", "version mismatch", "alloc failed", "runtime in progress", "not supported shape",
                   "not supported padding", "not supported layout", "not supported data type", "license error")


@functools.cache
def _spelled_statuses() -> tuple[tuple[str, str], ...]:
    """cuDNN's status names as words ("arch mismatch" for CUDNN_STATUS_ARCH_MISMATCH), the specific ones only."""
    by_name, _, _ = _status_tables()
    out = []
    for name in by_name:
        if name.startswith("CUDNN_STATUS_"):
            words = name.removeprefix("CUDNN_STATUS_").lower().replace("_", " ")
            if words.count(" ") + 1 >= SPELLED_MIN_WORDS and words not in SPELLED_GENERIC:
                out.append((words, name))
    return tuple(out)


def _other_spellings(index: int, line: str, lower: str, cudnn_named: bool) -> list[Status]:
    by_name, _, _ = _status_tables()
    out = []
    for match in itertools.islice(_CAMEL_STATUS.finditer(line), PER_LINE):
        prefix, rest = match.group(1), match.group(2)
        words = "_".join(word.upper() for word in itertools.islice(_CAMEL_WORD.findall(rest), 12))
        name = CAMEL_PREFIX[prefix] + words if prefix in CAMEL_PREFIX else "cudaError" + rest  # (CUDAError: the runtime's)
        if name in by_name:
            out.append(_status(by_name[name], "name", index))
    if cudnn_named and not out:
        out.extend(_status(by_name[name], "message", index) for words, name in _spelled_statuses()
                   if words in lower and "status" not in lower)
    return out


# a check macro's comparison with the success value, the status as a number only (glog's CHECK_EQ in Caffe and
# Paddle: "Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)", "cudaSuccess == cudaStat (0 vs. 38)")
_CHECK_PAIR = re.compile(r"\b(CUDNN_STATUS_SUCCESS|cudaSuccess|CUDA_SUCCESS|CUBLAS_STATUS_SUCCESS|NVML_SUCCESS)\b"
                         r"[^()]{0,40}\((\d{1,4}) vs\. ?(\d{1,4})\)")
CHECK_API = {"CUDNN_STATUS_SUCCESS": "cudnn", "cudaSuccess": "cudart", "CUDA_SUCCESS": "driver",
             "CUBLAS_STATUS_SUCCESS": "cublas", "NVML_SUCCESS": "nvml"}


def _check_pairs(index: int, line: str) -> list[Status]:
    _, by_number, _ = _status_tables()
    out = []
    for match in itertools.islice(_CHECK_PAIR.finditer(line), PER_LINE):
        number = max(int(match.group(2)), int(match.group(3)))  # the other side is the success value, 0
        api = CHECK_API[match.group(1)]
        if api == "cudnn":
            api = "cudnn9" if number >= 1000 else "cudnn8"
        row = by_number.get((api, number))
        if row is not None and number:
            out.append(_status(row, "number", index))
    return out


# NVML's and the CUDA driver's codes as other languages' bindings spell them: pynvml's exception classes
# (NVMLError_DriverNotLoaded), go-nvml's Return names (ERROR_LIBRARY_NOT_FOUND), Rust nvml-wrapper's variants
# (NvmlError::GpuLost, "Failed to initialize nvml: DriverNotLoaded"), CUDA.jl's (CuError(ERROR_NO_DEVICE))
_BOUND_NAME = re.compile(r"\b(?:NVMLError_?|NvmlError(?:::|\()|nvml(?:_wrapper)?::error::NvmlError::)([A-Z][A-Za-z]{2,50})\b"
                         r"|(?<![A-Za-z0-9_])ERROR_([A-Z][A-Z0-9_]{2,60})\b")
# a CamelCase variant right after NVML's words for a failure ("Failed to initialize nvml: DriverNotLoaded")
_NVML_VARIANT = re.compile(r"(?i:nvml)[^\n]{0,40}?:\s{0,2}([A-Z][a-z]{1,20}(?:[A-Z][a-z]{1,20}){1,5})\b")


@functools.cache
def _bound_names() -> dict[tuple[str, str], str]:
    """(api, key) -> the NVML or CUDA driver name whose words, lower case without separators, are KEY (also without
    the word 'is': Rust's GpuLost is NVML_ERROR_GPU_IS_LOST)."""
    by_name, _, _ = _status_tables()
    keys: dict[tuple[str, str], str] = {}
    for name in by_name:
        for prefix, api in (("NVML_ERROR_", "nvml"), ("CUDA_ERROR_", "driver")):
            if name.startswith(prefix):
                words = name.removeprefix(prefix).lower().split("_")
                keys.setdefault((api, "".join(words)), name)
                keys.setdefault((api, "".join(word for word in words if word != "is")), name)
    return keys


@functools.cache
def _nvml_texts() -> tuple[tuple[str, str], ...]:
    """(text, name) of the [[message]] rows that stand for an NVML code on a line that names NVML (nvmlErrorString's
    words: "driver not loaded", "insufficient permissions"), longest first."""
    rows = load("status_codes").get("message", [])
    return tuple(sorted(((row["text"], row["name"]) for row in rows if row.get("within") == "nvml"),
                        key=lambda pair: -len(pair[0])))


def _bound_spellings(index: int, line: str, lower: str) -> list[Status]:
    """NVML's and the CUDA driver's codes in a binding's spelling, or NVML's text for a code on a line naming NVML."""
    by_name, _, _ = _status_tables()
    keys = _bound_names()
    nvml = "nvml" in lower
    out: list[Status] = []
    for match in itertools.islice(_BOUND_NAME.finditer(line), PER_LINE):
        if match.group(1):
            name = keys.get(("nvml", match.group(1).lower()))
        elif nvml or any(word in lower for word in ("cuda", "cuerror", "curesult")):
            # go-nvml's ERROR_X on a line naming NVML; CUDA.jl's on one naming CUDA (Windows' ERROR_FILE_NOT_FOUND is
            # neither's)
            name = keys.get(("nvml" if nvml else "driver", match.group(2).lower().replace("_", "")))
        else:
            name = None
        if name and name in by_name:
            out.append(_status(by_name[name], "name", index))
    if nvml and not out:
        variant = _NVML_VARIANT.search(line)
        name = keys.get(("nvml", variant.group(1).lower())) if variant else None
        if name and name in by_name:
            out.append(_status(by_name[name], "name", index))
    if nvml and not out:
        spaced = _spaced(lower)
        found = next((name for text, name in _nvml_texts() if text in spaced), None)
        if found and found in by_name:
            out.append(_status(by_name[found], "message", index))
    return out


@functools.cache
def _spelled_cuda() -> tuple[tuple[str, str], ...]:
    """(words, name) of compat/status_codes.toml [spelled]: CUDA's names whose words alone say one thing, longest
    first."""
    by_name, _, _ = _status_tables()
    out = []
    for name in load("status_codes").get("spelled", {}).get("names", ()):
        if name in by_name:
            rest = name.removeprefix("cudaError").removeprefix("CUDA_ERROR_")
            words = rest.lower().replace("_", " ") if "_" in name else " ".join(_CAMEL_WORD.findall(rest)).lower()
            out.append((words, name))
    return tuple(sorted(out, key=lambda pair: -len(pair[0])))


def _spelled_cuda_statuses(index: int, lower: str) -> list[Status]:
    by_name, _, _ = _status_tables()
    if not any(word in lower for word in load("status_codes").get("spelled", {}).get("anchors", ())):
        return []
    found = next((name for words, name in _spelled_cuda() if words in lower), None)
    return [_status(by_name[found], "message", index)] if found else []


# ------------------------------------------------- a library's status by its structure (compat/status_codes.toml
# [[library_spelling]], issue 41, round twenty-one): the library named on the line (its name as a word, or one of its
# calls, cublasLtMatmul), then its status's words however they are separated, or without the prefix, or a number after
# the library's "status"
_UPPER_WORDS = re.compile(r"(?<![A-Za-z0-9])([A-Z][A-Z0-9]{1,20}(?:[ _]{1,3}[A-Z0-9]{1,20}){1,8})(?![A-Za-z0-9])")
_SPLIT = re.compile(r"[ _]{1,3}")
SPELLED_WORDS_MIN = 2  # a status without its prefix is read only where its words are two or more (NOT_SUPPORTED)


@functools.cache
def _library_spellings() -> tuple[tuple[str, str, str, re.Pattern[str], re.Pattern[str]], ...]:
    """(api, prefix, call, the library named on a line, its status number after its "status") for each row."""
    out = []
    for row in load("status_codes").get("library_spelling", []):
        call = re.escape(row["call"])
        # (the status's own prefix names it too: "CUBLAS_STATUS _NOT_SUPPORTED" on a line of its own)
        named = re.compile(rf"(?i:\b{call}(?:lt)?\b)|\b{call}(?:Lt|Dn|Sp|Rf)?[A-Z][A-Za-z0-9_]{{1,60}}"
                           rf"|\b{call.upper()}[ _]{{1,3}}STATUS\b")
        # (the number in the digits 0-9 only: int() reads '٣' as 3, a status no program printed)
        number = re.compile(rf"(?ai)\b{call}_?(?:status|error)\s{{0,2}}[:=]\s{{0,2}}(\d{{1,4}})\b")
        out.append((row["api"], row["prefix"], row["call"], named, number))
    return tuple(out)


def _library_spelled(index: int, line: str, lower: str, read: list[Status]) -> list[Status]:
    by_name, by_number, _ = _status_tables()
    out: list[Status] = []
    for api, prefix, call, named, number in _library_spellings():
        if call not in lower or any(status.api == api for status in read) or not named.search(line):
            continue
        head = _SPLIT.split(prefix.rstrip("_"))
        for match in itertools.islice(_UPPER_WORDS.finditer(line), PER_LINE):
            words = _SPLIT.split(match.group(1))
            if words[:2] == head:  # the prefix written with other separators: CUBLAS STATUS NOT SUPPORTED
                words = words[2:]
            elif words[:1] == head[1:]:  # the prefix's second word kept: STATUS_EXECUTION_FAILED
                words = words[1:]
            elif words[:1] == head[:1] or "_" not in match.group(1) or len(words) < SPELLED_WORDS_MIN:
                continue  # another word of the library's (CUBLAS_COMPUTE_32F); prose in capitals; a single word
            # the longest run of the words that is a name of the library's enum (the words after it are the tool's)
            name = next((prefix + "_".join(words[:end]) for end in range(len(words), 0, -1)
                         if prefix + "_".join(words[:end]) in by_name), None)
            if name is not None and (len(words) >= SPELLED_WORDS_MIN or match.group(1).startswith(head[0])):
                out.append(_status(by_name[name], "name", index))
                break
        if not out:
            found = number.search(line)
            key = (("cudnn9" if int(found.group(1)) >= 1000 else "cudnn8") if api == "cudnn" else api,
                   int(found.group(1))) if found else None
            if key is not None and key in by_number and key[1]:
                out.append(_status(by_number[key], "number", index))
    return out


def statuses(index: int, line: str, lower: str, cudnn_named: bool = False) -> list[Status]:
    other = _other_spellings(index, line, lower, cudnn_named) if ("cudnnstatus" in lower or "cudaerror" in lower
                                                                 or "curesult" in lower or "nvmlerror" in lower
                                                                 or cudnn_named) else []
    if not any(prefix in lower for prefix in STATUS_PREFIXES) and ("nvml" in lower or "error_" in lower):
        other += _bound_spellings(index, line, lower)
    checked = _check_pairs(index, line) if " vs" in lower else []
    known = _known_statuses(index, line, lower)
    if checked and any(status.how == "message" for status in known):
        # "Check failed: error == cudaSuccess (8 vs. 0)  invalid device function": the text names the code; the number
        # is of the numbering of the CUDA the program was built with (CUDA 10.0 and older numbered the runtime's
        # errors otherwise: 8 was cudaErrorInvalidDeviceFunction), so the text decides
        checked = []
    if not (other or checked or known):  # a CUDA status's name in words ("Insufficient driver")
        known = _spelled_cuda_statuses(index, lower)
    found = other + checked + known
    if "cu" in lower:
        found += _library_spelled(index, line, lower, found)
    if found and _kernel_absent_by_name(lower):  # the module lacks a kernel of that name: the library's own
        found = [status for status in found if status.name not in _symbol_kernel()[0]]
    return found


@functools.cache
def _symbol_kernel() -> tuple[frozenset[str], tuple[re.Pattern[str], ...], tuple[str, ...]]:
    table = load("status_codes").get("symbol_kernel") or {}
    return (frozenset(table.get("statuses", ())), tuple(re.compile(p) for p in table.get("kernels", ())),
            tuple(table.get("arch_types", ())))


def _kernel_absent_by_name(lower: str) -> bool:
    """compat/status_codes.toml [symbol_kernel]: "named symbol not found" for a kernel the line names, whose name
    carries no type an architecture can lack (bf16, fp8 ...): the module has no such kernel on any GPU."""
    names, kernels, arch_types = _symbol_kernel()
    if not names or "not found" not in lower:
        return False
    kernel = next((hit.group(1) for pattern in kernels if (hit := pattern.search(lower))), None)
    return kernel is not None and not any(word in kernel for word in arch_types)


# NVIDIA's short text for a code with the code's own number beside it: "Unknown error (error 999)", "initialization
# error (3)" (the NGC containers' entry point, Blender): the text and the number confirm each other wherever they stand
_TEXT_NUMBER = re.compile(r"[\s:(\[]{0,3}\(?(?:error|code|status)?\s{0,2}[:=#]?\s{0,2}(\d{1,4})\)?")


SELF_CONFIRMING_MIN = 30


def _self_confirming(index: int, lower: str) -> list[Status]:
    by_name, _, _ = _status_tables()
    _, bare = _bare_messages()
    for text, name in bare:
        at = lower.find(text)
        if at < 0 or name not in by_name:
            continue
        number = _TEXT_NUMBER.match(lower, at + len(text))
        # a small number (2: out of memory, 3: initialization error) is any library's; the CUDA driver's own are not
        if number and int(number.group(1)) == int(by_name[name]["number"]) >= SELF_CONFIRMING_MIN:
            return [_status(by_name[name], "message", index)]
    return []


@functools.cache
def _descriptions() -> dict[str, tuple[tuple[str, str], ...]]:
    """The CUDA runtime's and NVML's own descriptions of the codes that name a cause (their headers' comments, which
    some programs print in place of the short text), the long ones only, as (description, name) by their first three
    words: a line is compared only with the descriptions whose opening it holds."""
    by_name, _, _ = _status_tables()
    out: dict[str, list[tuple[str, str]]] = {}
    for name, row in by_name.items():
        text = row["meaning"].strip().rstrip(".").lower()
        if row["finding"] and row["api"] in ("cudart", "driver", "nvml") and len(text) >= DESCRIPTION_MIN:
            out.setdefault(" ".join(text.split()[:3]), []).append((text, name))
    return {opening: tuple(rows) for opening, rows in out.items()}


def _described(index: int, lower: str) -> list[Status]:
    by_name, _, _ = _status_tables()
    for opening, rows in _descriptions().items():
        if opening in lower:
            found = next((name for text, name in rows if text in lower), None)
            if found:
                return [_status(by_name[found], "message", index)]
    return []


DESCRIPTION_MIN = 48  # a description this long says one thing only


def _known_statuses(index: int, line: str, lower: str) -> list[Status]:
    by_name, by_number, messages = _status_tables()
    # NVIDIA's own error strings name their code with no prefix at all ("the provided PTX was compiled with an
    # unsupported toolchain." is CUDA_ERROR_UNSUPPORTED_PTX_VERSION / cudaErrorUnsupportedPtxVersion, 222)
    spaced = _spaced(lower)
    said = [_status(by_name[name], "message", index) for text, name in messages if text in spaced and name in by_name]
    if not said and ("cuda" in lower or "nvml" in lower):
        said = _described(index, lower)
    if not said and any("0" <= char <= "9" for char in lower):
        said = _self_confirming(index, lower)
    if not said and "cu" in lower:
        said = _after_prefix(index, lower)
        # a code's name is the stronger fact (a type's name, cudaError_t, is none)
        if not said and not any(m.group(0) in by_name for m in itertools.islice(_STATUS_NAME.finditer(line), PER_LINE)):
            said = _in_cuda_context(index, line, lower)
    if not said:
        said = _alone(index, lower)
    if not any(word in lower for word in ("cu", "nvml", "nvrtc", "nccl", "nvjpeg", "nvjitlink", "dcgm")):
        return said
    out = []
    if any(prefix in lower for prefix in STATUS_PREFIXES):
        out = [_status(by_name[m.group(0)], "name", index)
               for m in itertools.islice(_STATUS_NAME.finditer(line), PER_LINE) if m.group(0) in by_name]
    if said:  # the library's own words name the code; a number beside them may be of an older numbering
        return out + said
    numbered: list[tuple[str, int]] = []
    if not any(word in lower for word in ("error", "failure", "status", "code", "err", "returned", "failed")):
        return out
    for match in itertools.islice(_STATUS_NUMBER.finditer(line), PER_LINE):
        word, number = match.group(1).lower(), int(match.group(2))
        if word == "cudnn":
            numbered.append(("cudnn9" if number >= 1000 else "cudnn8", number))
        elif word in ("nvml", "cublas"):
            numbered.append((word, number))
        elif word == "cuda" or (word.startswith("cuda") and word[4:5].isalpha()):  # cudaSetDevice err: 35
            numbered.append(("cudart", number))
        elif word in ("cuinit", "cuctxcreate", "cudevicegetcount", "cudriver", "curesult") or word.startswith("cumem"):
            numbered.append(("driver", number))
    if "cuda" in lower:
        numbered.extend(("cudart", int(m.group(1))) for m in itertools.islice(_ERROR_NUMBER.finditer(line), PER_LINE))
    if "error in" in lower:  # TensorRT's "Cudnn Error in execute: 8"
        numbered.extend((("cudnn9" if int(m.group(2)) >= 1000 else "cudnn8") if m.group(1).lower() == "cudnn"
                         else "cublas" if m.group(1).lower() == "cublas" else "cudart", int(m.group(2)))
                        for m in itertools.islice(_LIBRARY_ERROR_IN.finditer(line), PER_LINE))
    if "nvrtc_error" in lower:
        numbered.extend(("nvrtc", int(m.group(1))) for m in itertools.islice(_NVRTC_NUMBER.finditer(line), PER_LINE))
    if "results in" in lower:  # Numba's bracketed CUresult before the driver call it names
        numbered.extend(("driver", int(m.group(1))) for m in itertools.islice(_NUMBA_CALL.finditer(line), PER_LINE))
    if "driver library" in lower:  # Ollama's words for the CUresult of a driver call it made through libcuda
        numbered.extend(("driver", int(m.group(1))) for m in itertools.islice(_DRIVER_LIBRARY.finditer(lower), PER_LINE))
    if not numbered:  # "cudaGetDeviceCount failed in paddle::...GetCUDADeviceCountImpl, error code : 35"
        numbered.extend(("cudart" if m.group(1).startswith("cuda") else "nvml" if m.group(1).startswith("nvml")
                         else "driver", int(m.group(2))) for m in itertools.islice(_CALL_NUMBER.finditer(line), PER_LINE))
    for match in itertools.islice(_TYPE_NUMBER.finditer(line), PER_LINE):
        api, number = TYPE_API[match.group(1)], int(match.group(2))
        numbered.append(("cudnn9" if number >= 1000 else "cudnn8", number) if api == "cudnn" else (api, number))
    for api, number in numbered:
        row = by_number.get((api, number))
        if row is None and api in ("cudart", "driver"):
            row = by_number.get(("driver" if api == "cudart" else "cudart", number))
        if row is not None:
            out.append(_status(row, "number", index))
    return out
