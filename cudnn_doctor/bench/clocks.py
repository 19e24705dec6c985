"""What the GPU's clocks did while the bench ran, and who else used it: NVML sampled from a thread of
the bench child.

A benchmark figure means little if the GPU slowed down while it ran (a hot GPU, a failing power
supply, a power brake from the rack), or if another process had work on it (its kernels take time
slices that a median hides); this records the SM clock and the throttle reasons NVML reports, the
other processes on the GPU and its utilisation before the bench started its own work, so the bench
can say so. Without NVML (nvidia-ml-py missing, no libnvidia-ml) it records nothing and says why.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from typing import Any

SAMPLE_EVERY_S = 0.02
PROCESSES_EVERY_S = 0.25  # the process list costs more than a clock reading
# nvmlClocksEventReasons bits (nvml.h); GPU idle and the clock settings are not slowdowns
REASONS = ((0x4, "sw_power_cap"), (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
           (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"))


class ClockWatch:
    """`with ClockWatch(pci_bus_id, index) as watch: ...`; then `watch.summary()`."""

    def __init__(self, pci_bus_id: str | None, index: int) -> None:
        self.pci_bus_id, self.index = pci_bus_id, index
        self.samples: list[tuple[int, int, int]] = []  # (SM MHz, reasons bitmask, temperature)
        self.max_sm_mhz: int | None = None
        self.unavailable: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None
        self._handle: Any = None
        self.others: dict[int, dict[str, Any]] = {}  # pid -> {pid, name, used_memory_mib, before, during}
        self.utilization_before: int | None = None  # percent, before the bench's own work
        self.utilization_max: int | None = None  # percent, while it ran (its own work included)
        self.processes_unavailable: str | None = None

    def __enter__(self) -> ClockWatch:
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            if self.pci_bus_id:
                self._handle = pynvml.nvmlDeviceGetHandleByPciBusId(self.pci_bus_id.encode())
            else:
                self._handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            self.max_sm_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self._handle, pynvml.NVML_CLOCK_SM)
        except Exception as error:  # noqa: BLE001 - no NVML: the bench still runs, without clocks
            self.unavailable = f"NVML not usable: {error}"
            return self
        self.utilization_before = self._utilization()
        self._other_processes("before")
        self._thread = threading.Thread(target=self._sample, name="clock-watch", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        nvml, handle = self._nvml, self._handle
        processes_due = time.monotonic() + PROCESSES_EVERY_S
        while not self._stop.is_set():
            try:
                clock = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
                reasons = nvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
                temperature = nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
            except Exception as error:  # noqa: BLE001
                self.unavailable = f"NVML stopped answering: {error}"
                return
            self.samples.append((int(clock), int(reasons), int(temperature)))
            if time.monotonic() >= processes_due:
                processes_due = time.monotonic() + PROCESSES_EVERY_S
                self._other_processes("during")
                utilization = self._utilization()
                if utilization is not None:
                    self.utilization_max = max(utilization, self.utilization_max or 0)
            self._stop.wait(SAMPLE_EVERY_S)

    def _utilization(self) -> int | None:
        try:
            return int(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)
        except Exception:  # noqa: BLE001 - not supported on this GPU or driver
            return None

    def _other_processes(self, when: str) -> None:
        """The processes other than this one with a context on the GPU (compute and graphics)."""
        nvml = self._nvml
        running: list[Any] = []
        try:
            running += nvml.nvmlDeviceGetComputeRunningProcesses(self._handle)
        except Exception as error:  # noqa: BLE001
            self.processes_unavailable = f"NVML cannot list the GPU's processes: {error}"
            return
        try:
            running += nvml.nvmlDeviceGetGraphicsRunningProcesses(self._handle)
        except Exception:  # noqa: BLE001 - absent from older drivers and the fakes
            pass
        for process in running:
            pid = int(process.pid)
            if pid == os.getpid():
                continue
            used = getattr(process, "usedGpuMemory", None)
            used_mib = int(used) >> 20 if isinstance(used, int) and used < 1 << 60 else None  # NVML_VALUE_NOT_AVAILABLE
            seen = self.others.setdefault(pid, {"pid": pid, "name": process_name(pid), "used_memory_mib": used_mib,
                                               "before": False, "during": False})
            seen[when] = True
            if used_mib is not None:
                seen["used_memory_mib"] = max(used_mib, seen["used_memory_mib"] or 0)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass

    def summary(self) -> dict[str, Any]:
        """Clocks and slowdowns over the run, for the bench's JSON."""
        if not self.samples:
            return {"sampled": 0, "unavailable": self.unavailable or "no samples", **self.sharing()}
        clocks = [sample[0] for sample in self.samples]
        seen = 0
        for _clock, reasons, _temperature in self.samples:
            seen |= reasons
        busy = [sample for sample in self.samples if not sample[1] & 0x1] or self.samples
        return {
            "sampled": len(self.samples),
            "sm_mhz_median": statistics.median(s[0] for s in busy),
            "sm_mhz_min": min(clocks),
            "sm_mhz_max_supported": self.max_sm_mhz,
            "temperature_max_celsius": max(sample[2] for sample in self.samples),
            "throttle_reasons": [name for bit, name in REASONS if seen & bit],
            "unavailable": self.unavailable,
            **self.sharing(),
        }

    def sharing(self) -> dict[str, Any]:
        """Who else used the GPU: other processes (before the bench's work, during it), utilisation."""
        return {"other_processes": sorted(self.others.values(), key=lambda p: p["pid"]),
                "utilization_before_percent": self.utilization_before,
                "utilization_max_percent": self.utilization_max,
                "processes_unavailable": self.processes_unavailable}


def process_name(pid: int) -> str | None:
    """PID's command line (shortened), as this process can see it; None in another PID namespace."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read(4096).split(b"\0")
    except OSError:
        return None
    text = " ".join(word.decode(errors="replace") for word in words if word)
    return (text[:77] + "...") if len(text) > 80 else text or None
