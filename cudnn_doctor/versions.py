"""Versions: every NVIDIA version encoding decoded here, and forgiving helpers for dotted versions.

Nothing here raises on what a user's file or a library said: a number with 5,000 digits, a
negative one, a string, is simply not a version (None).
"""

from __future__ import annotations

import re

MAX_PART_DIGITS = 9  # no real version part is longer; int() of 5,000 digits raises (and is slow)
MAX_PARTS = 8
MAX_ENCODED = 10**9  # the largest plausible NVIDIA encoded version (cuDNN 99.99.99 is 999999)
# ASCII digits only, here as in knowledge/inputs.py: int() would read "١٢" (Arabic-Indic) as 12
DOTTED = re.compile(rf"[0-9]{{1,{MAX_PART_DIGITS}}}(?:\.[0-9]{{1,{MAX_PART_DIGITS}}}){{0,{MAX_PARTS - 1}}}")


def ascii_digits(text: str) -> bool:
    """Is TEXT one or more of the digits 0-9? As C's strtol, CUDA and every NVIDIA tool read a number:
    str.isdigit() is true for '²' and '١' too, which int() refuses or reads as another number."""
    return text.isascii() and text.isdigit()


def _encoded(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < MAX_ENCODED:
        return None
    return value


def decode_cudnn(encoded: object) -> str | None:
    """cudnnGetVersion's number (CUDNN_VERSION) as "major.minor.patch": 8907 -> 8.9.7, 91900 -> 9.19.0.
    cuDNN 9 changed the encoding from major*1000 + minor*100 + patch to major*10000 + minor*100 + patch."""
    number = _encoded(encoded)
    if number is None:
        return None
    if number >= 90000:
        return f"{number // 10000}.{(number % 10000) // 100}.{number % 100}"
    return f"{number // 1000}.{(number % 1000) // 100}.{number % 100}"


def decode_cuda(encoded: object) -> str | None:
    """A CUDA version number as "major.minor": 12040 -> 12.4, 13000 -> 13.0 (cudaRuntimeGetVersion,
    cuDriverGetVersion, cudnnGetCudartVersion, NVML's nvmlSystemGetCudaDriverVersion: major*1000 + minor*10)."""
    number = _encoded(encoded)
    if number is None:
        return None
    return f"{number // 1000}.{(number % 1000) // 10}"


def clean_version(value: object) -> str | None:
    """VALUE if it is a plausible dotted version string ("12.4.131", "9.1.0.70"), else None: what a
    user's file says is checked before it is believed."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text if len(text) <= 64 and DOTTED.fullmatch(text) else None


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """"12.4.1" -> (12, 4, 1); "580.159.04" -> (580, 159, 4); None, junk or absurdly long -> None."""
    if not text:
        return None
    text = str(text)[:256]
    try:
        return _VERSION_TUPLES[text]
    except KeyError:
        pass
    found = _version_tuple(text)
    if len(_VERSION_TUPLES) < 4096:  # the compat tables ask for the same few hundred versions again and again
        _VERSION_TUPLES[text] = found
    return found


_VERSION_TUPLES: dict[str, tuple[int, ...] | None] = {}
_LEADING_VERSION = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)")


def _version_tuple(text: str) -> tuple[int, ...] | None:
    match = _LEADING_VERSION.match(text)
    if not match:
        return None
    parts = match.group(1).split(".")
    if len(parts) > MAX_PARTS or any(len(part) > MAX_PART_DIGITS for part in parts):
        return None
    return tuple(int(part) for part in parts)


def major_minor(text: str | None) -> tuple[int, int] | None:
    parts = version_tuple(text)
    if parts is None:
        return None
    return (parts[0], parts[1] if len(parts) > 1 else 0)


def major(text: str | None) -> int | None:
    parts = version_tuple(text)
    return parts[0] if parts else None


def matches_prefix(version: str | None, prefix: str) -> bool:
    """Does VERSION fall in the series PREFIX names ("8.9" holds 8.9.7; "5" holds 5.1.10)?"""
    have, want = version_tuple(version), version_tuple(prefix)
    if have is None or want is None:
        return False
    padded = have + (0,) * max(0, len(want) - len(have))
    return padded[: len(want)] == want


def in_range(version: str | None, text_range: str) -> bool | None:
    """Is VERSION within "12.0-12.4" (inclusive, by major.minor)? None when unparseable."""
    have = major_minor(version)
    bounds = [major_minor(part) for part in text_range.split("-")]
    if have is None or not bounds or any(b is None for b in bounds):
        return None
    low, high = bounds[0], bounds[-1]
    return low <= have <= high  # type: ignore[operator]


def decode_nccl(code: object) -> str | None:
    """ncclGetVersion's integer as a dotted version: major*10000 + minor*100 + patch from NCCL 2.9
    (NCCL_VERSION_CODE in nccl.h), major*1000 + minor*100 + patch before it (22705 -> '2.27.5', 2708 -> '2.7.8')."""
    if not isinstance(code, int) or isinstance(code, bool) or code <= 0:
        return None
    if code >= 20900:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def release_in_file_name(name: str) -> str | None:
    """The release a versioned library's file name carries: libcuda.so.580.159.04 -> 580.159.04 (None without one)."""
    found = re.search(r"\.so\.(\d+\.\d+(?:\.\d+)*)$", name)
    return found.group(1) if found else None
