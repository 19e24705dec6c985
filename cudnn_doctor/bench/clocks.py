"""What the GPU's clocks did while the bench ran: NVML sampled from a thread of the bench child.

A benchmark figure means little if the GPU slowed down while it ran (a hot GPU, a failing power
supply, a power brake from the rack); this records the SM clock and the throttle reasons NVML
reports, so the bench can say so. Without NVML (nvidia-ml-py missing, no libnvidia-ml) it records
nothing and says why.
"""

from __future__ import annotations

import statistics
import threading
from typing import Any

SAMPLE_EVERY_S = 0.02
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
        self._thread = threading.Thread(target=self._sample, name="clock-watch", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        nvml, handle = self._nvml, self._handle
        while not self._stop.is_set():
            try:
                clock = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
                reasons = nvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
                temperature = nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
            except Exception as error:  # noqa: BLE001
                self.unavailable = f"NVML stopped answering: {error}"
                return
            self.samples.append((int(clock), int(reasons), int(temperature)))
            self._stop.wait(SAMPLE_EVERY_S)

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
            return {"sampled": 0, "unavailable": self.unavailable or "no samples"}
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
        }
