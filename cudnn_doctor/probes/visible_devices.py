"""Which GPUs CUDA_VISIBLE_DEVICES leaves to torch, as torch itself counts them (issue 45). CUDA's driver parses the
variable in cuInit (the loader probe asks it); torch parses it again in Python before CUDA starts, and
torch.cuda.device_count() is its own count wherever NVML answers (torch/cuda/__init__.py device_count: the NVML-based
count unless negative). The two parsers differ: torch compares a UUID with NVML's as written (str.startswith: a UUID
in capitals matches nothing), takes the UUID form only after an exact "GPU-" or "MIG-", and keeps its own rules for
repeats and prefixes. Where torch's count is 0 and cuInit's is not, torch.cuda.is_available() is True (cuInit) while
torch sees no device, and its first CUDA work fails (round eleven, s11-cvd-uuid-uppercase: "min() iterable argument
is empty" in torch 2.11's _lazy_init on an H100).

Asked of torch's own code, not a model of it: the functions of the installed torch/cuda/__init__.py that make the
count are run in torch's Python with the user's environment and the libnvidia-ml.so.1 torch's CDLL finds
(_python_child.py torch_visible), without importing torch. Only where the value is not a plain list of distinct
indices (there both parsers agree), torch is installed with its Python found, and its file holds those functions."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

from cudnn_doctor.model import Framework

FUNCTIONS = ("_parse_visible_devices", "_transform_uuid_to_ordinals", "_device_count_nvml")
MAX_SOURCE = 4 << 20


@functools.cache
def _plain_pattern() -> re.Pattern[str]:
    return re.compile(r"[0-9]+(,[0-9]+)*")


class TorchVisibleQuestion:
    """Asked of the Python that owns torch's site-packages, where CUDA_VISIBLE_DEVICES may be read otherwise by torch
    than by CUDA; result() reads the answer."""

    def __init__(self, frameworks: list[Framework], env: Mapping[str, str]) -> None:
        self.pythons: list[str] = []
        self.source = ""
        value = env.get("CUDA_VISIBLE_DEVICES")
        if value is None or (_plain_pattern().fullmatch(value) and len(set(value.split(","))) == len(value.split(","))):
            return
        torch = next((f for f in frameworks if f.name == "torch" and f.details.get("site_packages")
                      and not f.details.get("assumed")), None)
        if torch is None:
            return
        from cudnn_doctor.probes.context import interpreter_for

        site = str(torch.details["site_packages"])
        source = os.path.join(site, "torch", "cuda", "__init__.py")
        python = interpreter_for(site)
        if python is None or not _holds_functions(source):
            return
        self.pythons = [python]
        self.source = source

    def request(self, python: str) -> dict[str, object]:
        return {"torch_visible": self.source}

    def trials(self, answers: Mapping[str, object]) -> list[tuple[str, str]]:
        return []

    def trial_request(self) -> dict[str, object]:
        return {}

    def result(self, answers: Mapping[str, object]) -> tuple[str, int, tuple[str, ...]] | None:
        """(torch/cuda/__init__.py, torch's count, its parse of the value) where torch's Python answered."""
        for python in self.pythons:
            answer = answers.get(python)
            counted = getattr(answer, "torch_visible", None)
            if counted is not None:
                return self.source, counted[0], counted[1]
        return None


def _holds_functions(path: str) -> bool:
    """Does the file at PATH (a regular file, its first MAX_SOURCE bytes) define every function of FUNCTIONS at the
    margin? Never opens a FIFO."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as handle:
            text = handle.read(MAX_SOURCE)
    except OSError:
        return False
    return all(re.search(rb"^def " + name.encode() + rb"\(", text, re.MULTILINE) for name in FUNCTIONS)
