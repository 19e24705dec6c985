"""The treatments of several GPUs and NCCL (rules/multi_gpu.py's findings): a setting unset, a folder out of
LD_LIBRARY_PATH, the container flag that gives /dev/shm room, the service to start. A failed all-reduce (CD179) is
resolved by the treatment of the cause it names."""

from __future__ import annotations

from typing import Any

from cudnn_doctor.knowledge.data import load
from cudnn_doctor.model import Finding, Report
from cudnn_doctor.plan.actions import ENV, MANUAL, Action, EnvChange
from cudnn_doctor.plan.process_env import drop_preload
from cudnn_doctor.versions import ascii_digits

LOADER_SOURCE = "ld.so(8): LD_LIBRARY_PATH is searched before a library's RUNPATH"


def treat(work: Any) -> None:
    report: Report = work.report
    if report.multi_gpu is None and not work.with_code("CD170"):
        return
    failed = work.with_code("CD179")
    data = load("multi_gpu")
    rows = {row["variable"]: row for row in data.get("nccl_setting", [])}
    for finding in work.with_code("CD175", "CD176"):
        variable = str(finding.subject)
        row = rows.get(variable, {})
        work.take([finding, *_explained(failed, finding)], Action(
            ENV, (), f"{variable} unset: NCCL's own choice ({row.get('effect', 'as documented')})",
            row.get("source", "compat/multi_gpu.toml"), env=(EnvChange(variable, "unset", ""),)))
    for finding in work.with_code("CD180"):
        entry = finding.values.get("entry")
        if entry and finding.values.get("via") == "LD_PRELOAD":
            behind = finding.values.get("after_preload")  # the LD_LIBRARY_PATH folder that would bring another
            drop_preload(work, [finding, *_explained(failed, finding)], str(entry), report,
                         f"{entry} out of LD_PRELOAD{f' and {behind} out of LD_LIBRARY_PATH' if behind else ''}: "
                         f"{finding.values.get('framework')} loads the NCCL {finding.values.get('built_with')} it "
                         f"was built with", also=(EnvChange("LD_LIBRARY_PATH", "remove", str(behind)),) if behind
                         else ())
        elif entry:
            work.take([finding, *_explained(failed, finding)], Action(
                ENV, (), f"{entry} out of LD_LIBRARY_PATH: {finding.values.get('framework')} loads the NCCL "
                f"{finding.values.get('built_with')} it was built with", LOADER_SOURCE,
                env=(EnvChange("LD_LIBRARY_PATH", "remove", str(entry)),)))
    shm = data.get("shm", {})
    for finding in work.with_code("CD177", "CD178"):
        flags = " or ".join(f"`{flag}`" for flag in shm.get("container_flags", ["--shm-size=1g"]))
        work.take([finding, *_explained(failed, finding)], Action(
            MANUAL, (), "/dev/shm with room for NCCL's segments and DataLoader workers' batches",
            shm.get("source", "compat/multi_gpu.toml"),
            text=f"start the container with {flags} (Kubernetes: an emptyDir volume of medium Memory mounted on "
                 "/dev/shm); on a host, remount it larger: `sudo mount -o remount,size=8G /dev/shm`"))
    fabric = data.get("fabric_manager", {})
    for finding in work.with_code("CD170"):
        service = fabric.get("service", "nvidia-fabricmanager")
        state = finding.values.get("fabric_manager")
        branch = (report.driver.version or "").split(".")[0]
        package = f"`sudo apt install {service}-{branch}` (the driver's branch: the two must be of one release)" \
            if ascii_digits(branch) else f"the {service} package of the driver's own release"
        install = "" if state in ("installed", "running") else f"install {package}, then "
        work.take([finding, *_explained(failed, finding)], Action(
            MANUAL, (), "the NVSwitch fabric configured, so CUDA starts", fabric.get("source", "compat/multi_gpu.toml"),
            text=f"{install}`sudo systemctl enable --now {service}`; `systemctl status {service}` says why it stopped"))


def _explained(failed: list[Finding], cause: Finding) -> list[Finding]:
    """The failed all-reduce(s) whose named causes include CAUSE's code."""
    return [f for f in failed if cause.code in (f.values.get("causes") or ())]
