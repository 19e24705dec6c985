"""The doctor's `CUDNN_DOCTOR_*` variables, read and checked one way: a value that is set but not what the variable
takes (`abc`, `nan`, `inf`, a negative number of seconds, a word not in its list) is a usage error, one line with
the variable's name and what it takes, exit 2, before the command does anything. Unset or blank: the default.

`check_all()` runs in the guard of every command (runner.guarded); each reader uses the same functions, so a
value is never read differently from where it was checked. Settings of `check` (SELECT, IGNORE, STRICT, REQUIRE,
FORMAT) are checked with the project file's keys in settings.py."""

from __future__ import annotations

import math
import os

from cudnn_doctor.errors import DoctorError

# name -> (lowest, highest, an example): a number of seconds (or a factor) in that closed range
NUMBERS: dict[str, tuple[float, float, str]] = {
    "CUDNN_DOCTOR_PROBE_TIMEOUT": (0.001, 1e6, "20"),
    "CUDNN_DOCTOR_HELPER_TIMEOUT": (0.001, 1e6, "10"),
    "CUDNN_DOCTOR_DEEP_TIMEOUT": (0.001, 1e6, "60"),
    "CUDNN_DOCTOR_ALLREDUCE_TIMEOUT": (0.001, 1e6, "60"),
    "CUDNN_DOCTOR_BENCH_TIMEOUT": (0.001, 1e6, "600"),
    "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": (0.1, 1e7, "3600"),
    "CUDNN_DOCTOR_RETRY_BACKOFF": (0.0, 60.0, "0.5"),
    "CUDNN_DOCTOR_READ_TIMEOUT": (0.01, 1e6, "60"),
    "CUDNN_DOCTOR_IMAGE_TIMEOUT": (0.001, 1e6, "30"),
    "CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES": (1, float(1 << 60), "68719476736"),
}
CHOICES: dict[str, tuple[str, ...]] = {
    "CUDNN_DOCTOR_CPU_BASELINE": ("auto", "numpy", "compiled"),
}


def _set(name: str, environ: dict[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    return value if value is not None and value.strip() else None


def number(name: str, default: float, environ: dict[str, str] | None = None) -> float:
    """NAME's value as a finite number in its range, DEFAULT when unset; DoctorError (exit 2) otherwise."""
    value = _set(name, environ)
    if value is None:
        return default
    low, high, example = NUMBERS[name]
    if not value.strip().isascii():  # float() reads '३' and '٣' as 3; nothing else that reads the value would
        raise DoctorError(f"{name}={value!r}: not a number written with the digits 0-9",
                          fix=f"set it like {name}={example}, or unset it for the default", exit_code=2, code="CD007")
    try:
        read = float(value.strip())
    except ValueError:
        read = math.nan
    if not math.isfinite(read) or not low <= read <= high:
        raise DoctorError(f"{name}={value!r}: not a number from {low:g} to {high:g}",
                          fix=f"set it like {name}={example}, or unset it for the default", exit_code=2, code="CD007")
    return read


def choice(name: str, default: str, environ: dict[str, str] | None = None) -> str:
    """NAME's value, one of its words (any case), DEFAULT when unset; DoctorError (exit 2) otherwise."""
    value = _set(name, environ)
    if value is None:
        return default
    if value.strip().lower() not in CHOICES[name]:
        raise DoctorError(f"{name}={value!r}: not one of {', '.join(CHOICES[name])}",
                          fix=f"set it like {name}={CHOICES[name][0]}, or unset it", exit_code=2, code="CD007")
    return value.strip().lower()


def check_all(environ: dict[str, str] | None = None) -> None:
    """Every variable of NUMBERS and CHOICES that is set, checked: the first wrong one is a usage error."""
    for name, (low, _high, _example) in NUMBERS.items():
        number(name, low, environ)
    for name, words in CHOICES.items():
        choice(name, words[0], environ)


LOADER_LIST_SEPARATORS = ":;"  # glibc's ld.so splits LD_LIBRARY_PATH at both (elf/dl-load.c: fillin_rpath's ":;")


def loader_folders(value: str) -> list[str]:
    """LD_LIBRARY_PATH's folders as glibc's ld.so reads them: split at ':' and at ';', an empty entry the working
    folder (''), in order. Every reader of the variable goes through here, so a folder named a;b is two for it too."""
    import re

    return re.split(f"[{LOADER_LIST_SEPARATORS}]", value) if value else []
