"""The NVIDIA driver and GPUs, from NVML's answer or, failing that, libcuda's."""

from __future__ import annotations

from dataclasses import fields

from cudnn_doctor.model import Driver, Gpu, GpuHealth, GpuProcess, LibraryProbe
from cudnn_doctor.probes.library_jobs import LIBCUDA_JOB, NVML_JOB, NVML_SONAME
from cudnn_doctor.versions import decode_cuda

__all__ = ["LIBCUDA_JOB", "NVML_JOB", "NVML_NOT_FOUND", "NVML_SONAME", "read_driver", "read_health"]

# pynvml's own words when libnvidia-ml.so.1 cannot be loaded
NVML_NOT_FOUND = LibraryProbe(NVML_SONAME, loaded=True,
                              values={"ok": False, "error": "NVML Shared Library Not Found",
                                      "error_class": "NVMLError_LibraryNotFound"})


def read_driver(nvml: LibraryProbe, libcuda: LibraryProbe | None) -> tuple[Driver, list[Gpu], str | None]:
    """(driver, gpus, why NVML could not be used or None)."""
    answer = nvml.values if nvml.loaded else {}
    if answer.get("ok"):
        version = answer.get("driver_version")
        gpus = [
            Gpu(
                index=gpu["index"],
                name=gpu.get("name") or "unknown",
                uuid=gpu.get("uuid"),
                compute_capability=gpu.get("compute_capability"),
                memory_total_mib=gpu.get("memory_total_mib"),
                driver_version=version,
                health=read_health(gpu.get("health")),
                memory_used_mib=gpu.get("memory_used_mib") if isinstance(gpu.get("memory_used_mib"), int) else None,
                pci_bus_id=gpu.get("pci_bus_id") if isinstance(gpu.get("pci_bus_id"), str) else None,
            )
            for gpu in answer.get("gpus", [])
        ]
        driver = Driver(version, decode_cuda(answer.get("cuda_driver_version")), "nvml",
                        library=answer.get("library"))
        return driver, gpus, None
    nvml_error = answer.get("error") or nvml.error or "NVML did not answer"
    if libcuda is not None and libcuda.loaded and libcuda.values.get("status") == 0:
        driver = Driver(None, decode_cuda(libcuda.values.get("cuDriverGetVersion")), "libcuda",
                        library=libcuda.values.get("loaded_path"), error=nvml_error)
        return driver, [], nvml_error
    return Driver(None, None, "none", error=nvml_error), [], nvml_error


def read_health(raw: object) -> GpuHealth | None:
    """The child's health readings as a GpuHealth; anything of the wrong type is left unread."""
    if not isinstance(raw, dict):
        return None
    known = {f.name for f in fields(GpuHealth)}
    values: dict[str, object] = {}
    for key, value in raw.items():
        if key not in known or key in ("not_supported", "errors", "processes", "throttle_reasons"):
            continue
        if isinstance(value, (bool, int, str)):
            values[key] = value
    if isinstance(raw.get("throttle_reasons"), list):
        values["throttle_reasons"] = tuple(str(reason) for reason in raw["throttle_reasons"])
    if isinstance(raw.get("processes"), list):
        values["processes"] = tuple(GpuProcess(int(p.get("pid", 0)), p.get("used_memory_mib"), _process_name(p.get("pid")))
                                    for p in raw["processes"] if isinstance(p, dict))
    values["not_supported"] = tuple(str(key) for key in raw.get("not_supported") or ())
    values["errors"] = {str(k): str(v) for k, v in (raw.get("errors") or {}).items()}
    return GpuHealth(**values)  # type: ignore[arg-type]



def _process_name(pid: object) -> str | None:
    """The command name of process PID (/proc/PID/comm), where this process may read it."""
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/comm", "rb") as comm:
            return comm.read(64).decode("utf-8", "replace").strip() or None
    except OSError:
        return None
