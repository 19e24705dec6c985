"""The versions a user types for `compat`, checked before anything is judged.

A bad value is a usage error (DoctorError, exit 2, one line), never a verdict. A version with
fewer parts than a release has ("--cudnn 9", "--cuda 12") names a range: every release of that
series, not x.0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudnn_doctor.errors import DoctorError

MAX_LENGTH = 40
OS_NAMES = ("linux", "windows", "macos")
# option -> (parts allowed, example, what it is)
SHAPES = {
    "cuda": (3, "12.4", "a CUDA version"),
    "cudnn": (4, "9.19.0", "a cuDNN version"),
    "driver": (3, "580.95.05", "an NVIDIA driver version"),
}
NUMBER = r"\d{1,5}"


@dataclass(frozen=True)
class VersionInput:
    text: str  # normalised: "9", "9.19.0"
    is_range: bool  # fewer parts than a release: every release of that series


def shown(value: str) -> str:
    """The value as it can be quoted in one line (a 5,000-digit value is cut)."""
    text = value if len(value) <= MAX_LENGTH else f"{value[:20]}…({len(value)} characters)"
    return repr(text)


def version_option(option: str, value: str | None) -> VersionInput | None:
    """--cuda / --cudnn / --driver: digits and dots, a bare major (or "9.x") meaning the whole series."""
    if value is None:
        return None
    parts_allowed, example, what = SHAPES[option]
    text = value.strip()
    text = re.sub(r"\.(x|\*)$", "", text, flags=re.IGNORECASE)
    if text.lower().startswith("v") and option != "driver":
        text = text[1:]
    pattern = rf"^{NUMBER}(\.{NUMBER}){{0,{parts_allowed - 1}}}$"
    if len(value) > MAX_LENGTH or not re.match(pattern, text):
        raise DoctorError(f"--{option} {shown(value)} is not {what}",
                          fix=f"write it as MAJOR[.MINOR...] with up to {parts_allowed} numbers, e.g. --{option} {example}"
                              + ("" if option == "driver" else
                                 f" (a bare major such as --{option} {example.split('.')[0]} means any release of it)"))
    is_range = option != "driver" and text.count(".") < (1 if option == "cuda" else 2)
    return VersionInput(text, is_range)


def compute_capability(value: str | None) -> str | None:
    """--compute-capability 8.6, 86 is refused; sm_86 / sm_90a / compute_90 are read as 8.6 / 9.0 / 9.0."""
    if value is None:
        return None
    text = value.strip().lower()
    match = re.match(r"^(?:sm_?|compute_?)(\d{1,2})(\d)[af]?$", text)
    if match and len(value) <= MAX_LENGTH:
        return f"{int(match.group(1))}.{match.group(2)}"
    if len(value) <= MAX_LENGTH and re.match(r"^\d{1,2}\.\d$", text) and 1 <= int(text.split(".")[0]) <= 20:
        return text
    raise DoctorError(f"--compute-capability {shown(value)} is not a compute capability",
                      fix="write it as MAJOR.MINOR (e.g. 8.6; `nvidia-smi --query-gpu=compute_cap --format=csv` "
                          "prints it) or as sm_86")


def os_name(value: str) -> str:
    text = value.strip().lower()
    if text in OS_NAMES:
        return text
    raise DoctorError(f"--os {shown(value)} is not an operating system this data knows",
                      fix=f"use one of {', '.join(OS_NAMES)}")


def release_version(name: str, value: str) -> str:
    """The VERSION of NAME==VERSION: a release string (2.5.1+cu124, 1.0.0-beta7, 0.9.0.1)."""
    if len(value) > MAX_LENGTH or not re.match(r"^\d{1,5}(\.\d{1,5}){0,3}([-+.]?[A-Za-z0-9][A-Za-z0-9.+-]*)?$", value):
        raise DoctorError(f"{name}=={shown(value)}: not a release version",
                          fix=f"write it as {name}==X.Y.Z, e.g. {name}==2.5.1")
    return value
