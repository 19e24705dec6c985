"""The probe child's questions: load one vendor library, ask it questions, answer in JSON. Its script is
_job_child.py (run as `_job_child.py _probe_jobs ...`), which imports this module (from its bytecode) and calls run_as_child.

Usage: python -I -S _job_child.py _probe_jobs JOB [ARG]
  cudnn PATH_OR_SONAME    cudnnGetVersion, cudnnGetCudartVersion
  cudart PATH_OR_SONAME   cudaRuntimeGetVersion
  libcuda PATH_OR_SONAME  cuDriverGetVersion
  cuda PATH_OR_SONAME     what a program gets: the libcuda mapped, cuInit, the visible GPUs
  nvml                    driver and GPUs through pynvml (nvidia-ml-py), with their links and pairs
  nccl PATH_OR_SONAME     ncclGetVersion

One library per process: a second dlopen of another file with the same soname
returns the first, and a broken library may crash or hang whoever loads it.
This file imports only the standard library (and pynvml for its job), so the child
starts in a few milliseconds; not even `json` (with `re` and `enum` it costs more than the rest
of the child): the answer is written by `to_json`.

The answer goes on the descriptor CUDNN_DOCTOR_ANSWER_FD names (the runner's answer channel), never on stdout:
a library the user's environment preloads may print on stdout when it loads or when the process exits.
"""

import ctypes
import os
import sys
import time

if __package__:  # imported by the doctor (the tests, the benchmarks)
    from ._proc_maps import mapped_files
else:  # a job child (_job_child.py imported _proc_maps from this folder first), or this file run by its path
    _FOLDER = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(_FOLDER)  # last, after the standard library's folders, and taken off at once
    try:
        from _proc_maps import mapped_files  # type: ignore[no-redef]
    finally:
        sys.path.remove(_FOLDER)

WINDOWS = os.name == "nt"
ANSWER_FD_VARIABLE = "CUDNN_DOCTOR_ANSWER_FD"
ANSWER_PATH_VARIABLE = "CUDNN_DOCTOR_ANSWER_PATH"


def _answer_fd():
    """The descriptor the answer goes on: the runner's answer channel (_child_stdio's answer_fd: opened again where a
    library this child loaded closed it; kept from what this child starts), else 1."""
    fd = _STDIO["answer_fd"]() if "answer_fd" in _STDIO else 1
    if fd != 1:
        try:
            os.set_inheritable(fd, False)
        except OSError:
            return 1
    return fd


def _write_answer(fd, text):
    data = text.encode("utf-8", "surrogateescape")
    while data:
        data = data[os.write(fd, data):]


def _loaded_path(name_fragment, lib=None):
    """The real path of the file the loader gave for LIB (its link map, dlinfo: a library preloaded or loaded earlier
    under another file name answers for its SONAME, and that file is the one named), else of the mapped file whose
    name starts with NAME_FRAGMENT. Paths are bytes on Linux: read as bytes and decoded with surrogateescape, so a
    folder name that is not UTF-8 comes back to the parent as the same bytes. On Windows: the file of the module
    LIB, as the loader names it (GetModuleFileNameW)."""
    if WINDOWS:
        return _module_file(lib)
    given = _handle_file(lib)
    if given:
        return given
    return next((path for path in _mapped_files() if os.path.basename(path).startswith(name_fragment)), None)


class _LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]  # the first two of glibc's struct link_map


def _handle_file(lib):
    """The real path of the object behind the dlopen handle of LIB, as the loader's link map names it; None where
    this C library has no dlinfo or the name is not a file (the main program's is empty)."""
    handle = getattr(lib, "_handle", None)
    if not handle:
        return None
    for name in (None, "libdl.so.2"):
        try:
            dlinfo = ctypes.CDLL(name).dlinfo
            break
        except (OSError, AttributeError):
            continue
    else:
        return None
    dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    dlinfo.restype = ctypes.c_int
    linkmap = ctypes.POINTER(_LinkMap)()
    if dlinfo(handle, 2, ctypes.byref(linkmap)) != 0 or not linkmap:  # RTLD_DI_LINKMAP
        return None
    name = linkmap.contents.l_name
    if not name or not name.startswith(b"/") and b"/" not in name:
        return None
    path = os.path.realpath(os.fsdecode(name))
    return path if os.path.isfile(path) else None


def _module_file(lib):
    if lib is None:
        return None
    buffer = ctypes.create_unicode_buffer(32768)
    kernel32 = ctypes.WinDLL("kernel32")
    kernel32.GetModuleFileNameW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_uint32]
    length = kernel32.GetModuleFileNameW(lib._handle, buffer, len(buffer))
    return buffer.value[:length] if length else None


def _load(target):
    if WINDOWS:
        # LoadLibraryExW(target, 0, 0): the search order a program's plain LoadLibrary gets (its folder,
        # System32, the Windows folder, the current folder, PATH). A copy named by its path gets its own
        # folder as well (SetDllDirectoryW), as when that folder is on PATH: cuDNN's front library loads
        # its sub-libraries (cudnn_graph64_9.dll, ...) by their bare names.
        folder = os.path.dirname(target)
        if folder:
            ctypes.WinDLL("kernel32").SetDllDirectoryW(folder)
        return ctypes.CDLL(target, winmode=0)
    mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_LOCAL", 0)
    return ctypes.CDLL(target, mode=mode)


def _call_size_t(lib, name):
    try:
        function = getattr(lib, name)
    except AttributeError:
        return None
    function.restype = ctypes.c_size_t
    function.argtypes = []
    return int(function())


def _call_int_out(lib, name):
    try:
        function = getattr(lib, name)
    except AttributeError:
        return None, "missing"
    value = ctypes.c_int(0)
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.POINTER(ctypes.c_int)]
    status = function(ctypes.byref(value))
    return value.value, status


def probe_cudnn(target):
    lib = _load(target)
    _watched("loading " + os.path.basename(target))
    base = os.path.basename(target).split(".so")[0]
    return {
        "cudnnGetVersion": _call_size_t(lib, "cudnnGetVersion"),
        "cudnnGetCudartVersion": _call_size_t(lib, "cudnnGetCudartVersion"),
        "loaded_path": _loaded_path(base + ".", lib) or _loaded_path(base, lib),
    }


def probe_cudart(target):
    lib = _load(target)
    version, status = _call_int_out(lib, "cudaRuntimeGetVersion")
    return {"cudaRuntimeGetVersion": version, "status": status, "loaded_path": _loaded_path("libcudart", lib)}


def probe_libcuda(target):
    lib = _load(target)
    version, status = _call_int_out(lib, "cuDriverGetVersion")
    return {"cuDriverGetVersion": version, "status": status, "loaded_path": _loaded_path("libcuda.so", lib)}


def _mapped_files():
    """Every file mapped into this process, once each, in the order of its first mapping (bytes-safe; the one reader,
    _proc_maps.py)."""
    return mapped_files()


def _mapped_libraries():
    """Every shared object mapped into this process, in the order of its first mapping: what the loader
    gave a program started in this environment (LD_PRELOAD first)."""
    return [path for path in _mapped_files() if ".so" in os.path.basename(path)]


def _cuda_name(lib, status, function):
    """cuGetErrorName / cuGetErrorString of STATUS, as a program would print it."""
    text = ctypes.c_char_p()
    try:
        call = getattr(lib, function)
    except AttributeError:
        return None
    call.restype = ctypes.c_int
    call.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    if call(status, ctypes.byref(text)) != 0 or not text.value:
        return None
    return text.value.decode("ascii", "replace")


def _uuid_text(raw):
    digits = raw.hex()
    return "GPU-" + "-".join((digits[0:8], digits[8:12], digits[12:16], digits[16:20], digits[20:32]))


def _watched(step):
    """What the libraries this child loaded took from it so far (_child_stdio's ProcessWatch), each change said once
    with the first STEP after which it was seen: a program that loads them loses the same."""
    if _WATCH:
        _WATCH[0].check(step)


def probe_cuda(target):
    """What a program started in this environment gets from CUDA: the libcuda.so.1 the loader maps (with
    LD_LIBRARY_PATH, LD_PRELOAD and the cache as they are), cuInit's answer by its CUDA name, and the GPUs
    CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER leave, in CUDA's order, with their UUIDs and PCI bus ids; what the
    driver took from the process at each step is main's changed_process."""
    lib = _load(target)
    answer = {"loaded_path": _loaded_path("libcuda.so", lib), "mapped": _mapped_libraries()}
    _watched("loading libcuda.so.1")
    version, status = _call_int_out(lib, "cuDriverGetVersion")
    answer["cuDriverGetVersion"] = version if status == 0 else None
    answer["status"] = status  # of cuDriverGetVersion, as the libcuda job answers it
    init = lib.cuInit
    init.restype = ctypes.c_int
    init.argtypes = [ctypes.c_uint]
    started = time.perf_counter()
    status = init(0)
    answer["cuInit_ms"] = round((time.perf_counter() - started) * 1000, 1)
    answer["cuInit"] = status
    answer["cuInit_name"] = _cuda_name(lib, status, "cuGetErrorName")
    answer["cuInit_text"] = _cuda_name(lib, status, "cuGetErrorString")
    _watched("cuInit")
    if status != 0:
        return answer
    count, status = _call_int_out(lib, "cuDeviceGetCount")
    answer["device_count"] = count if status == 0 else None
    devices = []
    for ordinal in range(count if status == 0 and count else 0):
        device = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
            continue
        entry = {"ordinal": ordinal}
        name = ctypes.create_string_buffer(256)
        if lib.cuDeviceGetName(name, 256, device) == 0:
            entry["name"] = name.value.decode("utf-8", "replace")
        raw = ctypes.create_string_buffer(16)
        get_uuid = getattr(lib, "cuDeviceGetUuid_v2", None) or getattr(lib, "cuDeviceGetUuid", None)
        if get_uuid is not None and get_uuid(raw, device) == 0:
            entry["uuid"] = _uuid_text(raw.raw)
        bus = ctypes.create_string_buffer(64)
        if lib.cuDeviceGetPCIBusId(bus, 64, device) == 0:
            entry["pci_bus_id"] = bus.value.decode("ascii", "replace")
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        if lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device) == 0 and \
                lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device) == 0:
            entry["compute_capability"] = f"{major.value}.{minor.value}"
        devices.append(entry)
    answer["devices"] = devices
    answer["peer_access"] = _peer_access(lib, len(devices))
    _watched("the device queries")
    return answer


def probe_cuda_context(target):
    """probe_cuda's answer, and then what a program's first CUDA work makes of the first visible GPU: its primary
    context made and made current, 1 MiB allocated and freed, the context synchronized (what torch's and JAX's first
    steps ask of the driver). Asked only where the environment sets a CUDA variable the data cannot vouch for: the
    driver reads some of them where it makes a context, not in cuInit. "context": the first step that failed, its
    status and CUDA name, or "ok" with the time it took."""
    answer = probe_cuda(target)
    if answer.get("cuInit") != 0 or not answer.get("devices"):
        return answer
    lib = _load(target)
    started = time.perf_counter()
    device = ctypes.c_int(0)
    context = ctypes.c_void_p(0)
    pointer = ctypes.c_ulonglong(0)
    retained = False
    steps = (("cuDeviceGet", lambda: lib.cuDeviceGet(ctypes.byref(device), 0)),
             ("cuDevicePrimaryCtxRetain", lambda: lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)),
             ("cuCtxSetCurrent", lambda: lib.cuCtxSetCurrent(context)),
             ("cuMemAlloc", lambda: lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(1 << 20))),
             ("cuMemFree", lambda: lib.cuMemFree_v2(pointer)),
             ("cuCtxSynchronize", lambda: lib.cuCtxSynchronize()))
    said = {"step": "ok", "status": 0, "name": "CUDA_SUCCESS"}
    for name, call in steps:
        try:
            status = call()
        except AttributeError:  # a libcuda without the call (a stub, a fake): nothing to say of contexts
            return answer
        retained = retained or (name == "cuDevicePrimaryCtxRetain" and status == 0)
        if status != 0:
            said = {"step": name, "status": status, "name": _cuda_name(lib, status, "cuGetErrorName"),
                    "text": _cuda_name(lib, status, "cuGetErrorString")}
            break
    said["ms"] = round((time.perf_counter() - started) * 1000, 1)
    answer["context"] = said
    if retained:
        release = getattr(lib, "cuDevicePrimaryCtxRelease_v2", None)
        if release is not None:
            release(device)
    _watched("the first context")
    return answer


def _peer_access(lib, count):
    """cuDeviceCanAccessPeer of every ordered pair of CUDA ordinals, as "0-1": true (issue 42)."""
    found = {}
    can_access = getattr(lib, "cuDeviceCanAccessPeer", None)
    if can_access is None or count < 2:
        return found
    handles = []
    for ordinal in range(count):
        device = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
            return found
        handles.append(device.value)
    for a in range(count):
        for b in range(count):
            can = ctypes.c_int(0)
            if a != b and can_access(ctypes.byref(can), handles[a], handles[b]) == 0:
                found[f"{a}-{b}"] = bool(can.value)
    return found


def probe_nccl(target):
    """The libnccl.so.2 a program gets (TARGET: a path, or the soname as the loader resolves it): ncclGetVersion."""
    lib = _load(target)
    version, status = _call_int_out(lib, "ncclGetVersion")
    return {"ncclGetVersion": version if status == 0 else None, "status": status,
            "loaded_path": _loaded_path("libnccl.so", lib)}


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _import_pynvml():
    """pynvml (nvidia-ml-py) without importing ctypes.util or string. pynvml takes find_library from ctypes.util at its
    top and never calls it on Linux (it opens libnvidia-ml.so.1 by name), and ctypes.util imports shutil and
    subprocess: 14 ms of this child's 80 on an H100, on the path of every check. It imports string for capwords alone
    (the names of its error classes), and string imports re, re enum: 3 ms of this child's 25 on the CI machine.
    Each is a light module while pynvml is imported: what pynvml reads of it at import is there (find_library,
    capwords, written as Python's own), and anything else it asks of it later is the real module's, imported then."""
    lights = {}
    if "ctypes.util" not in sys.modules:
        lights["ctypes.util"] = _light_module("ctypes.util", find_library=lambda name: _real_module(
            "ctypes.util").find_library(name))
    if "string" not in sys.modules:
        lights["string"] = _light_module("string", capwords=_capwords)
    sys.modules.update(lights)
    try:
        import pynvml
    finally:
        for name, light in lights.items():
            if sys.modules.get(name) is light:
                del sys.modules[name]
        if getattr(ctypes, "util", None) is lights.get("ctypes.util"):
            del ctypes.util
    return pynvml


def _capwords(s, sep=None):
    """string.capwords, as Python's own string module writes it."""
    return (sep or " ").join(map(str.capitalize, s.split(sep)))


def _light_module(name, **attributes):
    """A module NAME holding ATTRIBUTES; any other attribute is the real module's (_real_module), but for the import
    system's own questions of a module (__path__, __spec__, ...), which it answers as a module without them."""
    module = type(sys)(name)
    module.__dict__.update(attributes, _light_module=True)

    def __getattr__(attribute):
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)
        return getattr(_real_module(name), attribute)

    module.__getattr__ = __getattr__
    return module


def _real_module(name):
    """Module NAME as Python imports it, never a light stand-in (one still in sys.modules is taken out first)."""
    import importlib

    if name in sys.modules and vars(sys.modules[name]).get("_light_module"):
        del sys.modules[name]
    return importlib.import_module(name)


def probe_nvml(_arg=None, module_folder=None):
    if module_folder:  # started with -S: only the folder that holds pynvml, not every .pth of site-packages
        sys.path.insert(0, module_folder)
    pynvml = _import_pynvml()

    try:
        try:
            pynvml.nvmlInit()
        finally:
            _watched("loading libnvidia-ml.so.1 and nvmlInit")
    except pynvml.NVMLError as error:  # which libnvidia-ml answered so: a stub on LD_LIBRARY_PATH is not the driver's
        return {"ok": False, "error": str(error), "error_class": type(error).__name__,
                "library": _loaded_path("libnvidia-ml.so", getattr(pynvml, "nvmlLib", None))}
    except UnicodeDecodeError as error:  # ctypes could not decode the loader's refusal (a file name not UTF-8 in it)
        said = error.object.decode("utf-8", "backslashreplace") if isinstance(error.object, bytes) else str(error)
        return {"ok": False, "error": "the loader refused libnvidia-ml.so.1: " + said[:2000],
                "error_class": "LoaderRefused", "library": None}
    # what every C program looks up: nvml.h defines nvmlInit as nvmlInit_v2 (and the device calls as their _v2),
    # while pynvml calls nvmlInitWithFlags; a lookup that ends the program (a symbol table that lies, an IFUNC
    # whose resolver crashes) ends this child before it answers, as it ends them
    for name in ("nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlDeviceGetHandleByIndex_v2"):
        try:
            getattr(pynvml.nvmlLib, name)
        except (AttributeError, TypeError):
            pass
    try:
        result = {
            "ok": True,
            "driver_version": _text(pynvml.nvmlSystemGetDriverVersion()),
            "cuda_driver_version": pynvml.nvmlSystemGetCudaDriverVersion(),
            "library": _loaded_path("libnvidia-ml.so", getattr(pynvml, "nvmlLib", None)),
            "gpus": [],
        }
        queries = (
            ("uuid", lambda h: _text(pynvml.nvmlDeviceGetUUID(h))),
            ("compute_capability", lambda h: "{}.{}".format(*pynvml.nvmlDeviceGetCudaComputeCapability(h))),
            ("memory_total_mib", lambda h: pynvml.nvmlDeviceGetMemoryInfo(h).total // (1024 * 1024)),
            ("memory_used_mib", lambda h: pynvml.nvmlDeviceGetMemoryInfo(h).used // (1024 * 1024)),
            ("pci_bus_id", lambda h: _text(pynvml.nvmlDeviceGetPciInfo(h).busId)),
        )
        handles = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gpu = {"index": index, "name": _text(pynvml.nvmlDeviceGetName(handle))}
            for key, query in queries:
                try:
                    gpu[key] = query(handle)
                except pynvml.NVMLError as error:
                    gpu[key] = None
                    gpu.setdefault("errors", {})[key] = str(error)
            gpu["health"] = gpu_health(pynvml, handle)
            gpu["links"] = gpu_links(pynvml, handle, gpu.get("pci_bus_id"))
            result["gpus"].append(gpu)
            handles.append(handle)
        result["pairs"] = gpu_pairs(pynvml, handles)
        return result
    finally:
        if not _EXITS_AFTER_ANSWER:  # this child's exit releases what nvmlInit took (3.6 ms on an H100 spared)
            pynvml.nvmlShutdown()


# nvmlClocksEventReasons bits (nvml.h); GPU idle (0x1) and the application/display clock
# settings (0x2, 0x100) are not slowdowns and are left out
THROTTLE_REASONS = (
    (0x4, "sw_power_cap"), (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"),
)


def gpu_health(pynvml, handle):
    """Health readings of one GPU; what the GPU or driver does not support is listed, not an error."""
    health = {"not_supported": [], "errors": {}}

    def read(key, query):
        try:
            health[key] = query()
        except pynvml.NVMLError as error:
            if getattr(error, "value", None) == pynvml.NVML_ERROR_NOT_SUPPORTED:
                health["not_supported"].append(key)
            else:
                health["errors"][key] = str(error)

    uncorrected = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    read("ecc_enabled", lambda: bool(pynvml.nvmlDeviceGetEccMode(handle)[0]))
    if health.get("ecc_enabled"):
        read("ecc_errors_uncorrected_volatile",
             lambda: pynvml.nvmlDeviceGetTotalEccErrors(handle, uncorrected, pynvml.NVML_VOLATILE_ECC))
        read("ecc_errors_uncorrected_aggregate",
             lambda: pynvml.nvmlDeviceGetTotalEccErrors(handle, uncorrected, pynvml.NVML_AGGREGATE_ECC))
    read("retired_pages_pending", lambda: bool(pynvml.nvmlDeviceGetRetiredPagesPendingStatus(handle)))

    def remapped():
        _corrected, _uncorrected, pending, failed = pynvml.nvmlDeviceGetRemappedRows(handle)
        health["remapped_rows_failed"] = bool(failed)
        return bool(pending)

    read("remapped_rows_pending", remapped)

    def throttling():
        reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
        return [name for bit, name in THROTTLE_REASONS if reasons & bit]

    read("throttle_reasons", throttling)
    read("pcie_link_generation", lambda: pynvml.nvmlDeviceGetCurrPcieLinkGeneration(handle))
    read("pcie_link_generation_max", lambda: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle))
    read("pcie_link_width", lambda: pynvml.nvmlDeviceGetCurrPcieLinkWidth(handle))
    read("pcie_link_width_max", lambda: pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle))
    read("persistence_mode", lambda: bool(pynvml.nvmlDeviceGetPersistenceMode(handle)))

    def mig():
        current, pending = pynvml.nvmlDeviceGetMigMode(handle)
        health["mig_mode_pending"] = bool(pending)
        return bool(current)

    read("mig_mode", mig)
    compute_modes = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}
    read("compute_mode", lambda: compute_modes.get(pynvml.nvmlDeviceGetComputeMode(handle), "unknown"))

    def processes():
        running = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
        own = os.getpid()
        return [{"pid": p.pid, "used_memory_mib": (p.usedGpuMemory // (1024 * 1024)) if p.usedGpuMemory else None}
                for p in running if p.pid != own]

    read("processes", processes)
    read("temperature_celsius", lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))
    read("temperature_slowdown_celsius",
         lambda: pynvml.nvmlDeviceGetTemperatureThreshold(handle, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN))
    return health


def gpu_links(pynvml, handle, bus_id=None):
    """How one GPU is linked: NUMA node, CPU affinity, each NVLink (state, version, the PCI bus id at its other end),
    its fabric state (NVSwitch systems), its utilisation (an idle GPU lowers its PCIe link). What the GPU or driver
    does not support is listed, not an error."""
    links = {"not_supported": [], "errors": {}}
    near = _sysfs_cpu_list(bus_id) if isinstance(bus_id, str) else None
    if near is not None:
        links["cpu_affinity"] = near

    def read(key, query):
        try:
            links[key] = query()
        except pynvml.NVMLError as error:
            if getattr(error, "value", None) == pynvml.NVML_ERROR_NOT_SUPPORTED:
                links["not_supported"].append(key)
            else:
                links["errors"][key] = str(error)

    read("numa_node", lambda: pynvml.nvmlDeviceGetNumaNodeId(handle))
    if near is None:
        read("cpu_affinity", lambda: _cpu_list(pynvml.nvmlDeviceGetCpuAffinity(handle, 16)))
    read("utilization_percent", lambda: pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    nvlinks = []
    # a GPU without NVLink answers NOT_SUPPORTED for each of the 18 links, an exception each (10 ms on an H100
    # PCIe, on the path of every check): NVML's link count first, and the links only where it says some or nothing
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18) if _nvlink_count(pynvml, handle) != 0 else 0):
        try:
            active = bool(pynvml.nvmlDeviceGetNvLinkState(handle, link))
        except pynvml.NVMLError as error:
            # NOT_SUPPORTED for a link the GPU does not have, INVALID_ARGUMENT past the last one
            if getattr(error, "value", None) not in (pynvml.NVML_ERROR_NOT_SUPPORTED,
                                                     pynvml.NVML_ERROR_INVALID_ARGUMENT):
                links["errors"][f"nvlink {link}"] = str(error)
            continue
        entry = {"link": link, "active": active}
        for key, query in (("version", lambda link=link: pynvml.nvmlDeviceGetNvLinkVersion(handle, link)),
                           ("remote_pci_bus_id",
                            lambda link=link: _text(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId))):
            try:
                entry[key] = query()
            except pynvml.NVMLError:
                entry[key] = None
        nvlinks.append(entry)
    links["nvlinks"] = nvlinks

    def fabric():
        info = pynvml.c_nvmlGpuFabricInfo_t()
        pynvml.nvmlDeviceGetGpuFabricInfo(handle, ctypes.byref(info))
        return {"state": int(info.state), "status": int(info.status), "clique_id": int(info.cliqueId)}

    if hasattr(pynvml, "c_nvmlGpuFabricInfo_t"):
        read("fabric", fabric)
    return links


def _nvlink_count(pynvml, handle):
    """The GPU's NVLinks as NVML counts them (field NVLINK_LINK_COUNT; NOT_SUPPORTED: none), None where NVML cannot
    say (an older driver or library: then each link is asked)."""
    try:
        [value] = pynvml.nvmlDeviceGetFieldValues(handle, [pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT])
    except (pynvml.NVMLError, AttributeError, TypeError, ValueError):
        return None
    if value.nvmlReturn == pynvml.NVML_ERROR_NOT_SUPPORTED:
        return 0
    if value.nvmlReturn != pynvml.NVML_SUCCESS:
        return None
    return int(value.value.uiVal)


PCI_DEVICES = "/sys/bus/pci/devices"
CPU_LIST_CHARACTERS = frozenset("0123456789,-")


def _sysfs_cpu_list(bus_id):
    """The CPUs close to the NVIDIA device at PCI BUS_ID (NVML's 00000000:18:00.0) as the kernel lists them in sysfs
    (local_cpulist: where NVML's nvmlDeviceGetCpuAffinity gets its answer, read without NVML's 10 ms on an H100),
    under the system prefix the parent reads (CUDNN_DOCTOR_SYSTEM_PREFIX); None where sysfs holds no NVIDIA device
    there or its list is not a CPU list (NVML is asked then)."""
    domain, _, rest = bus_id.partition(":")
    try:
        number = int(domain, 16)
    except ValueError:
        return None
    if not rest or "/" in rest or "\0" in rest:
        return None
    prefix = os.environ.get("CUDNN_DOCTOR_SYSTEM_PREFIX") or "/"
    folder = os.path.join(prefix, PCI_DEVICES.lstrip("/"), f"{number:04x}:{rest.lower()}")
    if _small_file(os.path.join(folder, "vendor")) != "0x10de":
        return None
    text = _small_file(os.path.join(folder, "local_cpulist"))
    return text if text and set(text) <= CPU_LIST_CHARACTERS and text[0].isdigit() else None


def _small_file(path):
    """A small regular file's text, stripped (never waiting on a FIFO, at most 4 KiB), or None."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return os.read(descriptor, 4096).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(descriptor)


def _cpu_list(mask_words):
    """NVML's CPU mask (64-bit words) as the kernel writes a CPU list: 0-15,32-47."""
    cpus = [word * 64 + bit for word, value in enumerate(mask_words) for bit in range(64) if int(value) >> bit & 1]
    ranges = []
    for cpu in cpus:
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def gpu_pairs(pynvml, handles):
    """Every pair of GPUs: their closest common PCIe ancestor and NVML's P2P status for reads and over NVLink."""
    pairs = []
    for a in range(len(handles)):
        for b in range(a + 1, len(handles)):
            pair = {"gpus": [a, b]}
            first, second = handles[a], handles[b]
            for key, query in (
                    ("common_ancestor", lambda x=first, y=second: pynvml.nvmlDeviceGetTopologyCommonAncestor(x, y)),
                    ("p2p_read", lambda x=first, y=second: pynvml.nvmlDeviceGetP2PStatus(x, y, 0)),
                    ("p2p_nvlink", lambda x=first, y=second: pynvml.nvmlDeviceGetP2PStatus(x, y, 2))):
                try:
                    pair[key] = query()
                except pynvml.NVMLError as error:
                    pair[key] = None
                    pair.setdefault("errors", {})[key] = str(error)
            pairs.append(pair)
    return pairs


def probe_library(target):
    """Any library opened as a program opens it (by name: the loader's own search), the loader's words if it refuses."""
    lib = _load(target)
    return {"loaded_path": _loaded_path(os.path.basename(target).split(".so")[0] + ".so", lib)}


JOBS = {
    "library": probe_library,
    "cudnn": probe_cudnn,
    "cudart": probe_cudart,
    "libcuda": probe_libcuda,
    "cuda": probe_cuda,
    "cuda_context": probe_cuda_context,
    "nvml": probe_nvml,
    "nccl": probe_nccl,
}


def run_batch(job, timeout, in_flight, targets):
    """`batch JOB TIMEOUT IN_FLIGHT TARGET...`: each TARGET in a process of its own, forked from this one
    (one library per process still; Python starts once per batch, not once per library), asked JOB (one job for
    every target, or one per target: "cudart,cudnn,cudnn"), at most IN_FLIGHT
    at once, each within TIMEOUT s of its start. One JSON line per target on stdout, as it ends:
    {"index", "exit" (negative: the signal that ended it; null: killed at its deadline), "timed_out",
    "stdout", "stderr", "wall_ms"}. Each forked process keeps only its own two pipes open."""
    import gc
    import select
    import signal

    # what this process made so far is left out of the collector's walks: a forked process that collects would
    # otherwise write to every page of it (copy-on-write faults: 4.2k -> 3.9k and 27 -> 23 ms CPU, three libraries)
    gc.freeze()
    kinds = job.split(",")
    pending = [(index, target, kinds[index] if len(kinds) > 1 else job) for index, target in enumerate(targets)]
    pending.reverse()
    running = {}  # pid -> [index, out_fd, err_fd, out, err, started, answer_fd, answer]
    poller = select.poll()
    owner = {}
    answer_fd = _answer_fd()

    def start(index, target, kind):
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        answer_read, answer_write = os.pipe()
        answer_path = f"/proc/{os.getpid()}/fd/{answer_read}" if os.path.isdir("/proc/self/fd") else ""
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:  # the child: its pipes on 1 and 2, its answer channel on 3, every other descriptor closed
            try:
                os.dup2(out_write, 1)
                os.dup2(err_write, 2)
                os.dup2(answer_write, 3, inheritable=False)
                os.closerange(4, min(os.sysconf("SC_OPEN_MAX"), 1 << 16))
                os.environ[ANSWER_FD_VARIABLE] = "3"
                os.environ[ANSWER_PATH_VARIABLE] = answer_path  # this batch's own end, not the doctor's
                if "die_with_parent" in _STDIO:  # a fork keeps no such setting: this one dies with the batch
                    _STDIO["die_with_parent"]()
                sys.stdout = os.fdopen(1, "w", closefd=False)
                sys.stderr = os.fdopen(2, "w", closefd=False)
                main(["", kind, target])
            finally:
                os._exit(0)
        for fd in (out_write, err_write, answer_write):
            os.close(fd)
        for fd in (out_read, err_read, answer_read):
            os.set_blocking(fd, False)
            poller.register(fd, select.POLLIN)
            owner[fd] = pid
        running[pid] = [index, out_read, err_read, bytearray(), bytearray(), time.monotonic(), answer_read,
                        bytearray()]

    def drain(fd, into):
        while True:
            try:
                chunk = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                chunk = b""
            if not chunk:
                return False
            if len(into) < 1 << 20:
                into += chunk

    def finish(pid, status, timed_out):
        index, out_fd, err_fd, out, err, started, said_fd, said = running.pop(pid)
        for fd, into in ((out_fd, out), (err_fd, err), (said_fd, said)):
            if owner.pop(fd, None) is not None:
                poller.unregister(fd)
            # read to its end even where its end was seen before: a library that closed the child's answer channel
            # (its descriptor pointed elsewhere) ends it here, and the child then opens the same pipe again by its
            # path (_child_stdio's answer_fd) and answers on it
            drain(fd, into)
            os.close(fd)
        code = None if timed_out else (-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
        line = {"index": index, "exit": code, "timed_out": timed_out,
                "stdout": out.decode("utf-8", "surrogateescape")[-65536:],
                "stderr": err.decode("utf-8", "surrogateescape")[-4096:],
                "answer": said.decode("utf-8", "surrogateescape")[-65536:],
                "wall_ms": round((time.monotonic() - started) * 1000, 1)}
        _write_answer(answer_fd, to_json(line) + "\n")

    while pending or running:
        while pending and len(running) < in_flight:
            start(*pending.pop())
        # a child whose pipes are both at their end is about to exit: look again soon
        soon = any(all(running[pid][i] not in owner for i in (1, 2, 6)) for pid in running)
        for fd, _event in poller.poll(1 if soon else 20):
            pid = owner.get(fd)
            if pid is not None:
                into = {running[pid][1]: running[pid][3], running[pid][6]: running[pid][7]}.get(fd, running[pid][4])
                if not drain(fd, into):  # end of file: nothing more to wait for on it
                    poller.unregister(fd)
                    del owner[fd]
        now = time.monotonic()
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                finish(pid, status, timed_out=False)
            elif now - running[pid][5] >= timeout:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, os.WNOHANG)  # not waited for: one stuck in the kernel must not stop the rest
                except OSError:
                    pass
                finish(pid, 0, timed_out=True)


def main(argv):
    if argv[1] == "batch":
        run_batch(argv[2], float(argv[3]), int(argv[4]), argv[5:])
        return
    started = time.perf_counter()
    job, arg, extra = argv[1], (argv[2] if len(argv) > 2 else None), argv[3:]
    if "ProcessWatch" in _STDIO:
        _WATCH[:] = [_STDIO["ProcessWatch"]()]
    try:
        values = JOBS[job](arg, *extra)
        _watched("its first calls")
        if _WATCH and _WATCH[0].changes:  # what loading the library (or its first calls) took from the process
            values["changed_process"] = list(_WATCH[0].changes)
        values["child_ms"] = round((time.perf_counter() - started) * 1000, 1)
        answer = {"loaded": True, "values": values}
    except OSError as error:  # dlopen's own message
        answer = {"loaded": False, "error": str(error)}
    except ImportError as error:
        answer = {"loaded": False, "error": f"import failed: {error}", "import_error": True}
    except Exception as error:  # the answer is data; the parent decides what it means
        answer = {"loaded": False, "error": f"{type(error).__name__}: {error}"}
    sys.stdout.flush()
    _write_answer(_answer_fd(), "\n" + to_json(answer) + "\n")
    if _EXITS_AFTER_ANSWER:  # answered: the interpreter's and the libraries' own teardown are nobody's wait
        sys.stderr.flush()
        os._exit(0)


# Run as the child (run_as_child): it ends the process as soon as its answer is written (main); imported (the
# benchmarks, the tests), its functions leave the process as they found it
_EXITS_AFTER_ANSWER = False


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def to_json(value):
    """VALUE as json.dumps(VALUE) writes it (ASCII only, a lone surrogate of a bytes-safe path as \\udcXX),
    for the types an answer holds: dict (str keys), list, tuple, str, int, float, bool, None."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    if isinstance(value, str):
        return '"' + "".join(_escape(char) for char in value) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(to_json(str(key)) + ": " + to_json(item) for key, item in value.items()) + "}"
    return to_json(str(value))


def _escape(char):
    if " " <= char <= "~":
        return _ESCAPES.get(char, char)
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if code > 0xFFFF:  # a surrogate pair, as json.dumps writes it
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def usage_error(argv):
    """What is wrong with ARGV (the script's path, then JOB ARG... or batch JOB TIMEOUT IN_FLIGHT TARGET...) as the
    doctor writes it, in words; None where it is such a command line."""
    if len(argv) > 1 and argv[1] == "batch":
        words = "batch JOB[,JOB...] TIMEOUT IN_FLIGHT TARGET..."
        if len(argv) < 6 or any(job not in JOBS for job in argv[2].split(",")):
            return words
        try:
            float(argv[3])
            int(argv[4])
        except ValueError:
            return words
        return None
    if len(argv) < 2 or argv[1] not in JOBS:
        return "{} ARG...".format("|".join(sorted(JOBS)))
    return None


def run_as_child(argv, stdio):
    """The child's run (_job_child.py calls it, its argv without the word _probe_jobs): STDIO is the namespace of _child_stdio.py, already run (each of
    stdin, stdout and stderr a preloaded library closed is /dev/null again; its answer_fd: the answer channel as it
    is when the answer is written); the process ends as soon as its answer is written."""
    global _EXITS_AFTER_ANSWER, _STDIO
    _EXITS_AFTER_ANSWER = True
    _STDIO = stdio
    main(argv)


_STDIO = {"__name__": "_child_stdio"}  # imported (the benchmarks, the tests): nothing of _child_stdio's
_WATCH: list = []  # main's ProcessWatch
