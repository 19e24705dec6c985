"""GPU health, from NVML's readings in the report: pure functions, one finding per problem."""

from __future__ import annotations

from cudnn_doctor.codes import finding
from cudnn_doctor.model import Finding, Gpu, GpuHealth, Report

HARD_SLOWDOWNS = {
    "hw_slowdown": "hardware slowdown (power supply or temperature signal from the board)",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "hw_power_brake_slowdown": "power brake (the system's power supply asked it to slow down)",
    "sw_thermal_slowdown": "software thermal slowdown",
}
NEAR_SLOWDOWN_CELSIUS = 5


def _name(gpu: Gpu) -> str:
    return f"{gpu.index} ({gpu.name})"


def _with_health(report: Report) -> list[tuple[Gpu, GpuHealth]]:
    return [(gpu, gpu.health) for gpu in report.gpus if gpu.health is not None]


def ecc_errors(report: Report) -> list[Finding]:
    return [finding("CD130", subject=f"GPU {gpu.index}", gpu=_name(gpu), index=gpu.index,
                    volatile=health.ecc_errors_uncorrected_volatile,
                    aggregate=health.ecc_errors_uncorrected_aggregate)
            for gpu, health in _with_health(report) if (health.ecc_errors_uncorrected_volatile or 0) > 0]


def memory_repair(report: Report) -> list[Finding]:
    findings = []
    for gpu, health in _with_health(report):
        waiting = [what for what, pending in (("retired pages", health.retired_pages_pending),
                                              ("remapped rows", health.remapped_rows_pending)) if pending]
        if waiting:
            findings.append(finding("CD131", subject=f"GPU {gpu.index}", gpu=_name(gpu), index=gpu.index,
                                    what=" and ".join(waiting)))
        if health.remapped_rows_failed:
            findings.append(finding("CD132", subject=f"GPU {gpu.index}", gpu=_name(gpu), index=gpu.index))
    return findings


def throttling(report: Report) -> list[Finding]:
    findings = []
    for gpu, health in _with_health(report):
        active = [reason for reason in health.throttle_reasons or () if reason in HARD_SLOWDOWNS]
        if not active:
            continue
        thermal = any("thermal" in reason for reason in active)
        fix = ("Check the cooling (fans, airflow, inlet temperature) and `nvidia-smi -q -d PERFORMANCE,TEMPERATURE`."
               if thermal else
               "Check the node's power supply and cables; `nvidia-smi -q -d PERFORMANCE` shows the reasons.")
        findings.append(finding("CD133", subject=f"GPU {gpu.index}", gpu=_name(gpu),
                                reasons=", ".join(HARD_SLOWDOWNS[reason] for reason in active), fix=fix))
    return findings


def pcie_link(report: Report) -> list[Finding]:
    return [finding("CD134", subject=f"GPU {gpu.index}", gpu=_name(gpu), width=health.pcie_link_width,
                    width_max=health.pcie_link_width_max, generation=health.pcie_link_generation,
                    generation_max=health.pcie_link_generation_max)
            for gpu, health in _with_health(report)
            if health.pcie_link_width and health.pcie_link_width_max
            and health.pcie_link_width < health.pcie_link_width_max]


def modes(report: Report) -> list[Finding]:
    findings = []
    on_linux = report.host.os == "linux"
    for gpu, health in _with_health(report):
        subject, name = f"GPU {gpu.index}", _name(gpu)
        if health.persistence_mode is False and on_linux:
            findings.append(finding("CD135", subject=subject, gpu=name))
        if health.mig_mode is not None and health.mig_mode_pending is not None \
                and health.mig_mode != health.mig_mode_pending:
            findings.append(finding("CD136", subject=subject, gpu=name, index=gpu.index,
                                    current="on" if health.mig_mode else "off",
                                    pending="on" if health.mig_mode_pending else "off"))
        elif health.mig_mode:
            findings.append(finding("CD137", subject=subject, gpu=name))
        if health.compute_mode == "prohibited":
            findings.append(finding("CD138", subject=subject, gpu=name, index=gpu.index))
        if health.processes:
            used = ", ".join(f"pid {p.pid}" + (f" {p.used_memory_mib} MiB" if p.used_memory_mib is not None else "")
                             for p in health.processes[:5])
            exclusive = ("; the GPU is in exclusive-process mode, so no other program can use it"
                         if health.compute_mode == "exclusive_process" else "")
            findings.append(finding("CD139", subject=subject, gpu=name, count=len(health.processes),
                                    processes=used, exclusive=exclusive))
    return findings


def temperature(report: Report) -> list[Finding]:
    return [finding("CD140", subject=f"GPU {gpu.index}", gpu=_name(gpu), temperature=health.temperature_celsius,
                    slowdown=health.temperature_slowdown_celsius)
            for gpu, health in _with_health(report)
            if health.temperature_celsius is not None and health.temperature_slowdown_celsius
            and health.temperature_celsius >= health.temperature_slowdown_celsius - NEAR_SLOWDOWN_CELSIUS]


RULES = (ecc_errors, memory_repair, throttling, pcie_link, modes, temperature)
