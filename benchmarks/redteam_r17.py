"""Round thirteen's red-team (issue 43, helper r17) as a figure: each case a pretend machine built the way the tests
build them (tests/fakes, tests/test_frameworks), one command run as a user would, and what broke said in words: an
internal error (exit 3, a traceback, a CD9xx), a JSON a strict reader refuses (NaN, Infinity, an integer beyond 2^53,
an unpaired surrogate), a raw control, bidi or separator character in a CI format, a finding the machine does not
have, a plan line pip refuses, a framework's answer lost.

Usage: python benchmarks/redteam_r17.py [--package DIR] [--only NAME]
  --package DIR: the checkout whose cudnn_doctor is judged (another commit's `git worktree`: the figure before); by
  default this one. Prints each broken case, then `N cases, B broken, T s`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import Machine  # noqa: E402
from tests.fakes.build import fake_cuda_math  # noqa: E402
from tests.test_ci_formats_hostile import ALL, BAD  # noqa: E402
from tests.test_cli_ci import broken_machine  # noqa: E402
from tests.test_frameworks import FAKE_TORCH, install_torch, python_env, real_python_sees  # noqa: E402
from tests.test_process_env import gpu_machine, jax_install  # noqa: E402

PACKAGE: Path | None = None


def run(machine: Machine, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(machine.env)
    if PACKAGE is not None:
        env["PYTHONPATH"] = str(PACKAGE)
    return subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], env=env, cwd=machine.cwd,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def strict(data: bytes) -> str | None:
    """What a strict JSON reader refuses in DATA, in words; None where it reads it."""
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    def number(text: str) -> int:
        if abs(int(text)) > 2**53:
            raise ValueError(f"{text[:30]} is beyond 2^53")
        return int(text)

    def real(text: str) -> float:
        if not math.isfinite(float(text)):
            raise ValueError(f"{text} overflows")
        return float(text)

    try:
        text = data.decode("utf-8")
        json.loads(text, parse_constant=refuse, parse_int=number, parse_float=real)
        json.loads(text).__repr__().encode("utf-8")
    except (ValueError, UnicodeError) as error:
        return str(error)[:120]
    return None


def internal(result: subprocess.CompletedProcess[bytes]) -> str | None:
    out = result.stdout.decode("utf-8", "replace")
    if result.returncode == 3 or b"Traceback" in result.stderr or '"CD90' in out:
        return f"internal error (exit {result.returncode}): {(out + result.stderr.decode('utf-8', 'replace'))[-200:]}"
    return None


def report_of(machine: Machine, *args: str) -> tuple[dict | None, str | None]:
    result = run(machine, "check", "--json", *args)
    broke = internal(result) or strict(result.stdout)
    return (None, broke) if broke else (json.loads(result.stdout), None)


# --- the cases: (machine, tmp) -> what broke, or None ----------------------------------------------------------------

def torch_pinned(pin: str) -> Callable[[Machine, Path], str | None]:
    def case(machine: Machine, tmp: Path) -> str | None:
        site = python_env(machine, tmp)
        install_torch(site, pin=pin)
        shutil.rmtree(site / "nvidia")
        (site / "torch" / "__init__.py").write_text("def _preload_cuda_deps(lib_folder, lib_name):\n    pass\n")
        real_python_sees(site, tmp)
        machine.env["LD_PRELOAD"] = "libm.so.6"
        report, broke = report_of(machine)
        if broke or report is None:
            return broke
        refused = pin.split("==")[1] in ("9x.1", "9\u0661.1")
        ran = [a for a in report["plan"]["actions"] if pin in (a.get("argv") or [])]
        return f"a plan line pip refuses: {ran[0]['argv']}" if refused and ran else None
    return case


def library_folder(name: str) -> Callable[[Machine, Path], str | None]:
    def case(machine: Machine, tmp: Path) -> str | None:
        other = tmp / name
        other.mkdir(parents=True)
        shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2), other / "libcublasLt.so.13")
        machine.add_library_path(other)
        report, broke = report_of(machine)
        if broke or report is None:
            return broke
        false = [f["detail"][:120] for f in report["findings"] if f["code"] == "CD203"]
        return f"a false CD203: {false[0]}" if false else None
    return case


def xla_flags(value: str, kept: str | None = None) -> Callable[[Machine, Path], str | None]:
    """XLA_FLAGS of VALUE on a machine with JAX: no CD411 where KEPT is None; else a CD411 whose fix keeps KEPT as
    written (a quoted value whole, its two blanks kept)."""
    def case(machine: Machine, tmp: Path) -> str | None:
        gpu_machine(machine, tmp, gpus=1)
        jax_install(python_env(machine, tmp))
        (tmp / "my  results").mkdir()
        (tmp / "my  results" / "at.txtpb").write_text("version: 3\n")
        machine.env["XLA_FLAGS"] = value.format(tmp=tmp)
        report, broke = report_of(machine)
        if broke or report is None:
            return broke
        made = [f for f in report["findings"] if f["code"] == "CD411" and f["subject"] == "XLA_FLAGS"]
        if kept is None:
            return f"a false CD411: {made[0]['detail'][:140]}" if made else None
        lines = [a.get("text") or "" for a in report["plan"]["actions"] if "CD411" in a["resolves"]]
        if not made or not any(kept.format(tmp=tmp) in line for line in lines):
            return f"the fix changes a kept flag: {lines[:1]}"
        return None
    return case


def deep_torch(body: str, judge: Callable[[dict], str | None]) -> Callable[[Machine, Path], str | None]:
    def case(machine: Machine, tmp: Path) -> str | None:
        site = python_env(machine, tmp)
        install_torch(site)
        (site / "torch" / "__init__.py").write_text(body)
        real_python_sees(site, tmp)
        report, broke = report_of(machine, "--deep")
        return broke or judge(report["frameworks"][0]["details"]["deep"]) if report or broke else "no report"
    return case


def ci_format(fmt: str) -> Callable[[Machine, Path], str | None]:
    def case(machine: Machine, tmp: Path) -> str | None:
        broken_machine(machine)
        machine.env["CUDA_HOME"] = f"{tmp}/cuda{ALL}\tend"
        result = run(machine, "check", "--format", fmt)
        broke = internal(result)
        if broke:
            return broke
        text = result.stdout.decode("utf-8", "surrogateescape")
        raw = sorted(f"U+{ord(c):04X}" for c in BAD & set(text))
        return f"raw in {fmt}: {' '.join(raw[:8])}" if raw else None
    return case


def fifo_in_site(relative: str) -> Callable[[Machine, Path], str | None]:
    def case(machine: Machine, tmp: Path) -> str | None:
        site = python_env(machine, tmp)
        install_torch(site)
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            path.unlink()
        os.mkfifo(path)
        if not (site / "torch" / "__init__.py").exists():
            (site / "torch" / "__init__.py").write_text("def _preload_cuda_deps(a, b):\n    pass\n")
        real_python_sees(site, tmp)
        other = tmp / "other"
        other.mkdir()
        shutil.copyfile(fake_cuda_math("libcublasLt.so.13", "cublasLt", 13, 0, 2), other / "libcublasLt.so.13")
        machine.add_library_path(other)
        machine.env["LD_PRELOAD"] = "libm.so.6"
        return report_of(machine)[1]
    return case


FORGED = ('import os\nanswer = b\'\\n{"error": {"a": [1]}, "conv_ran": "yes", "seconds": [], "mapped_cudnn": "x", '
          '"traceback": "x", "elsewhere": [1], "not_run": 1, "version": {"x": 1}, "cudnn_version": 1e999}\\n\'\n'
          'for fd in range(1, 64):\n    try:\n        os.write(fd, answer)\n    except OSError:\n        pass\n'
          'os._exit(0)\n')
NAN = FAKE_TORCH.replace('__version__ = "2.5.1+cu124"', '__version__ = float("inf")').replace(
    'cuda = "12.4"', 'cuda = float("nan")').replace("return int(_cudnn.cudnnGetVersion())", "return 2**64 + 1")
HUGE = ('raise RuntimeError("CUDNN_STATUS_NOT_INITIALIZED " + "x" * (9 << 20) + " libcudnn_graph.so.9: cannot open '
        'shared object file")\n')
CASES: dict[str, Callable[[Machine, Path], str | None]] = {
    "pin 9x.1, loading children started": torch_pinned("nvidia-cudnn-cu12==9x.1"),
    "pin 9-1 (a post-release), loading children started": torch_pinned("nvidia-cudnn-cu12==9-1"),
    "pin with an Arabic-Indic digit": torch_pinned("nvidia-cudnn-cu12==9\u0661.1"),
    "library folder with a tab": library_folder("cu\tda/lib"),
    "library folder with two tabs": library_folder("lib\t\tx"),
    "library folder with a backslash-t": library_folder("cu\\tda/lib"),
    "library folder ending in a backslash": library_folder("tab\\"),
    "library folder not UTF-8, with an escape and a newline": library_folder(os.fsdecode(b"cu\xff\x1b[31m\nlib")),
    "XLA_FLAGS: a quoted results file with two blanks": xla_flags(
        '--xla_gpu_load_autotune_results_from="{tmp}/my  results/at.txtpb"'),
    "XLA_FLAGS: a missing results file after an entry XLA stops at": xla_flags(
        "--xla_dump_to=/tmp stop --xla_gpu_load_autotune_results_from={tmp}/none.txt"),
    "XLA_FLAGS: a missing path beside a quoted one (the fix keeps it)": xla_flags(
        '--xla_gpu_dump_autotune_results_to="{tmp}/my  results/at.txtpb"  '
        "--xla_gpu_load_autotune_results_from={tmp}/none.txt",
        kept='--xla_gpu_dump_autotune_results_to="{tmp}/my  results/at.txtpb"'),
    "XLA_FLAGS: a no-break space joins two flags": xla_flags(
        "--xla_dump_to=/tmp\u00a0--xla_gpu_load_autotune_results_from={tmp}/none.txt"),
    "--deep: NaN, Infinity, 2^64 + 1 in the answer": deep_torch(NAN, lambda deep: None),
    "--deep: an error of 9 MiB": deep_torch(HUGE, lambda deep: None if str(deep.get("error", "")).startswith(
        "RuntimeError: CUDNN_STATUS") else f"the answer lost: {str(deep.get('error'))[:80]}"),
    "--deep: a forged answer of the wrong types (1e999 among them)": deep_torch(FORGED, lambda deep: None),
    "--format junit, every class of character": ci_format("junit"),
    "--format github, every class of character": ci_format("github"),
    "--format markdown, every class of character": ci_format("markdown"),
    **{f"a FIFO at {where}": fifo_in_site(where) for where in (
        "torch/__init__.py", "torch/lib/libtorch_cuda.so", "nvidia/cudnn/lib/libcudnn.so.9",
        "nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD", "torch-2.5.1+cu124.dist-info/METADATA", "torch/version.py")},
}


def main() -> int:
    global PACKAGE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help="the checkout whose cudnn_doctor is judged")
    parser.add_argument("--only", help="the cases whose name holds this")
    options = parser.parse_args()
    PACKAGE = options.package.resolve() if options.package else None
    started, broken, cases = time.monotonic(), 0, [n for n in CASES if not options.only or options.only in n]
    for name in cases:
        with tempfile.TemporaryDirectory(prefix="redteam-r17-") as folder:
            tmp = Path(folder)
            try:
                said = CASES[name](Machine(tmp), tmp)
            except subprocess.TimeoutExpired:
                said = "hung (120 s)"
        if said:
            broken += 1
            print(f"BROKEN {name}: {said}".encode("ascii", "backslashreplace").decode("ascii"))
    print(f"{len(cases)} cases, {broken} broken, {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
