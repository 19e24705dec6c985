"""Values of this machine that an answer may need where the message does not give them: the CUDA major its
frameworks were built for (PyTorch's own CUDA), its GPU's compute capability, its driver. Read from check's Report; a value is given only
where the machine has one answer (two GPUs of different capabilities give none)."""

from __future__ import annotations

import re

from cudnn_doctor.model import Report

# what a CUDA release is (12, 12.4, 12.8.1), in the digits 0-9: a framework's build file is read as it is written,
# and an answer's fix must not say 'install CUDA ....' or CUDA in another script's digits
CUDA_RELEASE = re.compile(r"\d{1,3}(?:\.\d{1,4}){0,2}", re.ASCII)


def machine_values(report: Report | None) -> dict[str, str]:
    """{field: value} for the fields of compat/fixes.toml [[field]] that this machine answers unambiguously."""
    if report is None:
        return {}
    values: dict[str, str] = {}
    majors = {f.cuda_built_for.split(".")[0] for f in report.frameworks
              if f.cuda_built_for and CUDA_RELEASE.fullmatch(f.cuda_built_for)}
    if not majors:
        majors = {t.version.split(".")[0] for t in report.toolkits if t.version and CUDA_RELEASE.fullmatch(t.version)}
    if len(majors) == 1:
        values["cuda_major"] = majors.pop()
    torch_builds = {f.cuda_built_for for f in report.frameworks
                    if f.name == "torch" and f.cuda_built_for and CUDA_RELEASE.fullmatch(f.cuda_built_for)}
    if len(torch_builds) == 1:  # the CUDA PyTorch was built for, never the driver's
        values["torch_cuda"] = torch_builds.pop()
    capabilities = {g.compute_capability for g in report.gpus if g.compute_capability}
    if len(capabilities) == 1:
        values["cc"] = values["compute_capability"] = next(iter(capabilities))
    if report.driver.version:
        values["driver_version"] = report.driver.version
    if report.driver.cuda_driver_version:
        values["driver_cuda"] = report.driver.cuda_driver_version
    return values
