"""What a user types as a version or a specifier, checked by one rule before anything is judged.

Every option that takes one goes through here: `check --require` and `--framework`, `compat
FRAMEWORK==VERSION`, `--cuda`, `--cudnn`, `--driver` and `--compute-capability`. The rule is the same
everywhere: printable ASCII only (a Unicode digit such as "١" or "３" is refused by name, never read as
a digit), a bounded length, at most MAX_PART_DIGITS digits to a number. A bad value is a usage error
(DoctorError, exit 2, one line), never a verdict. A version with fewer parts than a release has
("--cudnn 9", "--cuda 12") names a range: every release of that series, not x.0.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.records import record
from cudnn_doctor.versions import MAX_PART_DIGITS

MAX_LENGTH = 40  # a version
MAX_SPEC_LENGTH = 200  # a requirement or NAME==VERSION: "cudnn>=9.1,<10,!=9.3.0" and the like
OS_NAMES = ("linux", "windows", "macos")
# option -> (parts allowed, example, what it is)
SHAPES = {
    "cuda": (3, "12.4", "a CUDA version"),
    "cudnn": (4, "9.19.0", "a cuDNN version"),
    "driver": (3, "580.95.05", "an NVIDIA driver version"),
}
NUMBER = r"[0-9]{1,5}"  # ASCII digits only: \d would take "١٢" for 12


@functools.cache
def long_number_pattern() -> re.Pattern[str]:
    return re.compile(rf"[0-9]{{{MAX_PART_DIGITS + 1},}}")


@functools.cache
def framework_spec_pattern() -> re.Pattern[str]:
    return re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.-]*?)\s*(?:==\s*(\S+?))?\s*$")


def plain_text(option: str, value: str, limit: int = MAX_LENGTH) -> str:
    """VALUE as given for OPTION, if it is at most LIMIT characters of printable ASCII with no number of
    more than MAX_PART_DIGITS digits; else a usage error that names the first character it cannot read."""
    if len(value) > limit:
        raise DoctorError(f"{option} {shown(value)}: too long ({len(value)} characters; at most {limit})",
                          fix=f"write versions with at most {MAX_PART_DIGITS} digits to a number, e.g. 12.4", code="CD001")
    for character in value:
        if not " " <= character <= "~":
            name = unicodedata.name(character, "a control character")
            digit = unicodedata.category(character) == "Nd" or character.isdigit()
            why = (f"{name} (U+{ord(character):04X}) is not an ASCII digit" if digit else
                   f"{name} (U+{ord(character):04X}) is not an ASCII character")
            raise DoctorError(f"{option} {shown(value)}: {why}",
                              fix="write versions with the digits 0-9 and dots, e.g. 12.4", code="CD001")
    long_number = long_number_pattern().search(value)
    if long_number:
        raise DoctorError(f"{option} {shown(value)}: a number of {len(long_number.group(0))} digits is no version part "
                          f"(at most {MAX_PART_DIGITS})", fix="write a version such as 9.1 or 580.95.05", code="CD001")
    return value


@record(frozen=True)
class VersionInput:
    """A version the user typed, normalised, and whether it names a series."""

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
    text = plain_text(f"--{option}", value).strip()
    text = re.sub(r"\.(x|\*)$", "", text, flags=re.IGNORECASE)
    if text.lower().startswith("v") and option != "driver":
        text = text[1:]
    pattern = rf"^{NUMBER}(\.{NUMBER}){{0,{parts_allowed - 1}}}$"
    if len(value) > MAX_LENGTH or not re.match(pattern, text):
        raise DoctorError(f"--{option} {shown(value)} is not {what}",
                          fix=f"write it as MAJOR[.MINOR...] with up to {parts_allowed} numbers, e.g. --{option} {example}"
                              + ("" if option == "driver" else
                                 f" (a bare major such as --{option} {example.split('.')[0]} means any release of it)"), code="CD001")
    is_range = option != "driver" and text.count(".") < (1 if option == "cuda" else 2)
    return VersionInput(text, is_range)


def compute_capability(value: str | None) -> str | None:
    """--compute-capability 8.6, 86 is refused; sm_86 / sm_90a / compute_90 are read as 8.6 / 9.0 / 9.0."""
    if value is None:
        return None
    text = plain_text("--compute-capability", value).strip().lower()
    match = re.match(r"^(?:sm_?|compute_?)([0-9]{1,2})([0-9])[af]?$", text)
    if match and len(value) <= MAX_LENGTH:
        return f"{int(match.group(1))}.{match.group(2)}"
    if len(value) <= MAX_LENGTH and re.match(r"^[0-9]{1,2}\.[0-9]$", text) and 1 <= int(text.split(".")[0]) <= 20:
        return text
    raise DoctorError(f"--compute-capability {shown(value)} is not a compute capability",
                      fix="write it as MAJOR.MINOR (e.g. 8.6; `nvidia-smi --query-gpu=compute_cap --format=csv` "
                          "prints it) or as sm_86", code="CD001")


def os_name(value: str) -> str:
    text = value.strip().lower()
    if text in OS_NAMES:
        return text
    raise DoctorError(f"--os {shown(value)} is not an operating system this data knows",
                      fix=f"use one of {', '.join(OS_NAMES)}", code="CD001")


def release_version(name: str, value: str) -> str:
    """The VERSION of NAME==VERSION: a release string (2.5.1+cu124, 1.0.0-beta7, 0.9.0.1)."""
    plain_text(f"{name}==", value)
    if not re.match(r"^[0-9]{1,5}(\.[0-9]{1,5}){0,3}([-+.]?[A-Za-z0-9][A-Za-z0-9.+-]*)?$", value):
        raise DoctorError(f"{name}=={shown(value)}: not a release version",
                          fix=f"write it as {name}==X.Y.Z, e.g. {name}==2.5.1", code="CD001")
    return value


def framework_spec(option: str, text: str) -> tuple[str, str | None]:
    """NAME[==VERSION] (`check --framework`, `compat FRAMEWORK`): a name that starts with a letter, and a
    release version; "tensorflow==2.15.0" -> ("tensorflow", "2.15.0"), "torch" -> ("torch", None)."""
    label = f"{option} " if option else ""
    plain_text(option or "FRAMEWORK", text, MAX_SPEC_LENGTH)
    match = framework_spec_pattern().match(text)
    if not match:
        raise DoctorError(f"{label}{shown(text)}: not a framework name (and version)",
                          fix="write it as NAME or NAME==VERSION, e.g. tensorflow==2.15.0", code="CD001")
    name, version = match.group(1), match.group(2)
    return name, release_version(name, version) if version is not None else None


def requirement_text(text: str) -> str:
    """--require SPEC, read by the same rule as every version (the specifier itself is parsed by rules/)."""
    return plain_text("--require", text, MAX_SPEC_LENGTH)


def ascii_integer(value: str | int) -> int:
    """A whole-number option (`install --cuda`, `bench --repeats`), read by the same rule: int() alone would
    take "١٢" for 12. A ValueError here is the option parser's usage error (exit 2)."""
    if isinstance(value, int):
        return value
    if not re.fullmatch(r"[+-]?[0-9]+", value.strip()):  # its range is the command's to judge, in its own words
        raise ValueError(f"{shown(value)} is not a whole number written with the digits 0-9")
    return int(value)


def ascii_decimal(value: str | float) -> float:
    """A number option (`--workspace-limit`, `--deadline`): digits 0-9, an optional fraction."""
    if isinstance(value, (int, float)):
        return float(value)
    if not re.fullmatch(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)", value.strip()):
        raise ValueError(f"{shown(value)} is not a number written with the digits 0-9")
    number = float(value)
    if not math.isfinite(number):  # 5,000 digits: float() says inf
        raise ValueError(f"{shown(value)} is too large")
    return number
