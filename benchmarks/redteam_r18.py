"""Round thirteen's red-team of plain check's first-use probes and the settings' grammar (issue 43, helper r18) as a
figure: each case a pretend machine built as the tests build them (tests/test_first_use.py: JAX's CUDA 12 plugin, a
GPU, sh scripts that answer as ptxas does) and one command run as a user would, or one setting's value judged by the
doctor against what its reader's code makes of it. What broke is said in words.

Usage: python benchmarks/redteam_r18.py [--package DIR] [--only NAME]
  --package DIR: the checkout whose cudnn_doctor is judged (/work/main: the figure before); by default this one.
  Prints each broken case, then `N cases, B broken, T s`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudnn_doctor.quoting import split_code_spans  # noqa: E402
from tests.conftest import Machine  # noqa: E402
from tests.test_first_use import jax_cu12, script_ptxas  # noqa: E402
from tests.test_first_use_hostile import HOSTILE, IN_WORDS, SHELLS, hostile_ptxas  # noqa: E402
from tests.test_value_readers import CASES  # noqa: E402

PACKAGE: Path | None = None
SLOW_S = 3.0  # with CUDNN_DOCTOR_HELPER_TIMEOUT=0.5, a check longer than this did not take the helpers' timeout


def run(machine: Machine, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(machine.env)
    if PACKAGE is not None:
        env["PYTHONPATH"] = str(PACKAGE)
    return subprocess.run([sys.executable, "-m", "cudnn_doctor", *args], env=env, cwd=machine.cwd,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def report_of(done: subprocess.CompletedProcess[bytes]) -> dict:
    def refuse(word: str) -> None:
        raise ValueError(word)
    # what a preloaded library printed into the doctor's own stdout (before and after its JSON) is not judged here
    text = done.stdout.decode("utf-8", "surrogateescape")
    start = text.find("{\n")
    return json.JSONDecoder(parse_constant=refuse).raw_decode(text, max(start, 0))[0]


def ptxas_case(body: str, timeout: str | None = None) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        jax_cu12(machine, tmp, nvcc=False)
        folder = hostile_ptxas(tmp / "x", body).parent
        machine.env["PATH"] = f"{folder}:{machine.env['PATH']}"
        if timeout:
            machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = timeout
        started = time.monotonic()
        done = run(machine, "check", "--json")
        took = time.monotonic() - started
        if done.returncode == 3 or b"Traceback" in done.stderr:
            return "internal error"
        [first, *_] = report_of(done)["first_use"]["xla"]["ptxas"]
        if first["verdict"] not in ("did not run", "hangs"):  # r19: one that never ends is where XLA hangs
            return f"taken as {first['verdict']}"
        if timeout and took > SLOW_S:
            return f"{took:.1f} s under CUDNN_DOCTOR_HELPER_TIMEOUT={timeout}: a ptxas's --version has its own 5 s"
        text = run(machine, "check").stdout.decode(errors="replace")
        raw = [c for c in text if (ord(c) < 32 and c != "\n") or c in "\u202e\x7f"]
        return f"raw {raw[:3]!r} in the text" if raw else None
    return case


def xla_flags_case(flags: str, want_dir: Callable[[Path], str | None], ptxas_in: str | None) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        jax_cu12(machine, tmp, nvcc=False)
        if ptxas_in:
            script_ptxas(tmp / ptxas_in / "bin", "12.6.85")
        machine.env["XLA_FLAGS"] = flags.format(tmp=tmp)
        xla = report_of(run(machine, "check", "--json"))["first_use"]["xla"]
        if xla["flag_data_dir"] != want_dir(tmp):
            return f"--xla_gpu_cuda_data_dir read as {xla['flag_data_dir']!r}"
        return None
    return case


def other_digits(tmp: Path) -> str | None:
    machine = Machine(tmp)
    jax_cu12(machine, tmp, nvcc=False)
    folder = hostile_ptxas(tmp / "x", "echo 'Cuda compilation tools, release 12.6, V\u0661\u0662.6.85'\n").parent
    machine.env["PATH"] = f"{folder}:{machine.env['PATH']}"
    [first, *_] = report_of(run(machine, "check", "--json"))["first_use"]["xla"]["ptxas"]
    return None if first["verdict"] == "no version" else f"V١٢.6.85 taken as a version ({first['verdict']})"


def nvrtc_noisy(tmp: Path) -> str | None:
    from tests.fakes.build import compile_library
    from tests.test_first_use import _nvrtc_wheel

    machine = Machine(tmp)
    site = jax_cu12(machine, tmp)
    _nvrtc_wheel(site, builtins=False)
    machine.env["LD_PRELOAD"] = str(compile_library("noisy_preload.c", "libnoisy.so"))
    [seen] = report_of(run(machine, "check", "--json"))["first_use"]["nvrtc"]
    return None if seen["said"].startswith("NVRTC_ERROR") else f"NVRTC's words lost: said {seen['said']!r}"


def nvrtc_hangs(tmp: Path) -> str | None:
    import shutil as files

    from tests.fakes.build import compile_library

    machine = Machine(tmp)
    site = jax_cu12(machine, tmp)
    lib = site / "nvidia" / "cuda_nvrtc" / "lib"
    lib.mkdir(parents=True)
    files.copyfile(compile_library("hanging_library.c", "libnvrtc.so.12", soname="libnvrtc.so.12"),
                   lib / "libnvrtc.so.12")
    (site / "nvidia_cuda_nvrtc_cu12-12.6.85.dist-info").mkdir()
    (site / "nvidia_cuda_nvrtc_cu12-12.6.85.dist-info" / "RECORD").write_text("nvidia/cuda_nvrtc/lib/libnvrtc.so.12,,\n")
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "0.5"
    [seen] = report_of(run(machine, "check", "--json"))["first_use"]["nvrtc"]
    return None if "0.5 s" in seen["said"] else f"not cut at CUDNN_DOCTOR_PROBE_TIMEOUT: {seen['said']!r}"


def odd_file(make: Callable[[Path], None]) -> Callable[[Path], str | None]:
    """A ptxas first on PATH that is no program: each passed over (or bounded by the helpers' timeout)."""
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        jax_cu12(machine, tmp, nvcc=False)
        (tmp / "x").mkdir()
        make(tmp / "x" / "ptxas")
        machine.env["PATH"] = f"{tmp / 'x'}:{machine.env['PATH']}"
        machine.env["CUDNN_DOCTOR_HELPER_TIMEOUT"] = "0.5"
        done = run(machine, "check", "--json")
        if done.returncode == 3 or b"Traceback" in done.stderr:
            return "internal error"
        xla = report_of(done)["first_use"]["xla"]
        taken = [c for c in xla["ptxas"] if c["path"] == str(tmp / "x" / "ptxas") and c["verdict"] == "used"]
        return f"taken: {taken}" if taken else None
    return case


def _sparse(path: Path) -> None:
    with open(path, "wb") as stream:
        stream.truncate(8 << 30)
    path.chmod(0o755)


def path_entries(tmp: Path) -> str | None:
    machine = Machine(tmp)
    jax_cu12(machine, tmp, nvcc=False)
    machine.env["PATH"] = ":".join([*(f"{n:x}" for n in range(20000)), "", ".", "bin", machine.env["PATH"]])
    done = run(machine, "check", "--json")
    said = [f for f in report_of(done)["findings"] if f["code"] == "CD208"]
    return None if said and len(said[0]["detail"]) < 4000 else "no short CD208"


def chmod_case(name: str) -> Callable[[Path], str | None]:
    def case(tmp: Path) -> str | None:
        machine = Machine(tmp)
        jax_cu12(machine, tmp, nvcc=False)
        root = Path(os.fsdecode(os.path.join(os.fsencode(tmp), os.fsencode(name))))
        script_ptxas(root / "bin", "12.6.85", mode=0o644)
        machine.env["CUDA_ROOT"] = str(root)
        plan = report_of(run(machine, "fix", "--json"))
        step = next(a for a in plan["actions"] if "chmod" in (a.get("text") or ""))
        codes = [part for index, part in enumerate(split_code_spans(step["text"])) if index % 2]
        if not codes and name in IN_WORDS and "execute bit" in step["text"]:
            return None  # words: no one line reads alike in every shell
        command = codes[0] if codes else step["text"].split(" (as the user")[0]
        for shell, script in SHELLS.items():
            if shutil.which(shell) is None:
                continue
            shown = subprocess.run([shell, "-c", script.format(command)], capture_output=True, cwd=tmp,
                                   env={"PATH": "/usr/bin:/bin", "HOME": str(tmp)})
            if shown.stdout.split(b"\0")[:-1] != [b"a+x", os.fsencode(str(root / "bin" / "ptxas"))]:
                pwned = " (and PWNED)" if (tmp / "PWNED").exists() else ""
                return f"{shell} runs chmod with {shown.stdout.split(bytes(1))[:-1]!r}{pwned}"
        return None
    return case


GRAMMAR_CHILD = """
import json, sys
from cudnn_doctor.knowledge import environment
cases = json.loads(sys.stdin.read())
print(json.dumps([environment.grammar_problem(environment.rows()[v], value) for v, value in cases]))
"""


def grammar_cases() -> dict[str, Callable[[Path], str | None]]:
    answers: list[str | None] = []

    def ask() -> list[str | None]:
        if not answers:
            env = {**os.environ, "PYTHONPATH": str(PACKAGE or Path(__file__).resolve().parents[1])}
            done = subprocess.run([sys.executable, "-c", GRAMMAR_CHILD], input=json.dumps([c[:2] for c in CASES]),
                                  capture_output=True, text=True, env=env, check=True,
                                  cwd=tempfile.gettempdir())  # not this checkout: -c puts the working folder first
            answers.extend(json.loads(done.stdout))
        return answers

    def one(index: int) -> Callable[[Path], str | None]:
        def case(tmp: Path) -> str | None:
            problem = ask()[index]
            verdict = CASES[index][2]
            if verdict == "ok":
                return None if problem is None else f"wrong verdict: said {problem!r} of a value its reader takes"
            if problem is None:
                return f"wrong verdict: nothing said, where its reader: {verdict}"
            return None if verdict in problem else f"wrong words: said {problem!r}, where its reader: {verdict}"
        return case

    return {f"grammar {v}={value!r}": one(i) for i, (v, value, _) in enumerate(CASES)}


def cases() -> dict[str, Callable[[Path], str | None]]:
    found: dict[str, Callable[[Path], str | None]] = {
        "ptxas hangs": ptxas_case("exec sleep 60\n", "0.5"),
        "ptxas floods stdout": ptxas_case("exec yes 'V12.6.85 and more'\n", "0.5"),
        "ptxas floods stderr": ptxas_case("exec yes 'a line' >&2\n", "0.5"),
        "ptxas killed by SIGSEGV": ptxas_case("kill -SEGV $$\n"),
        "ptxas says control, bidi, non-UTF-8": ptxas_case(
            "printf 'V1\\033[31mred\\033]0;t\\007 \\342\\200\\256gnp \\377\\n' >&2; exit 1\n"),
        "ptxas says one 1 MB line": ptxas_case("head -c 1048576 /dev/zero | tr '\\0' x >&2; exit 1\n"),
        "XLA_FLAGS quoted data dir": xla_flags_case('--xla_gpu_cuda_data_dir="{tmp}/my cuda" --xla_gpu_autotune_level=0',
                                                    lambda tmp: f"{tmp}/my cuda", "my cuda"),
        "XLA_FLAGS after a stop word": xla_flags_case("stray --xla_gpu_cuda_data_dir={tmp}/cuda", lambda tmp: None,
                                                      "cuda"),
        "XLA_FLAGS vertical tab": xla_flags_case("--xla_gpu_cuda_data_dir={tmp}\x0b--xla_gpu_autotune_level=0",
                                                 lambda tmp: f"{tmp}\x0b--xla_gpu_autotune_level=0", None),
        "PATH of 20,000 entries": path_entries,
        "ptxas's version in Arabic-Indic digits": other_digits,
        "NVRTC's child under a preload that prints": nvrtc_noisy,
        "NVRTC's library hangs at load": nvrtc_hangs,
        "ptxas a folder": odd_file(lambda path: path.mkdir(mode=0o755)),
        "ptxas a FIFO": odd_file(lambda path: os.mkfifo(path)),
        "ptxas a link loop": odd_file(lambda path: path.symlink_to(path.name)),
        "ptxas a sparse 8 GB file": odd_file(_sparse),
    }
    found.update({f"chmod for a folder {name!r}": chmod_case(name) for name in HOSTILE})
    found.update(grammar_cases())
    return found


def main() -> int:
    global PACKAGE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help="the checkout whose cudnn_doctor is judged")
    parser.add_argument("--only", help="run only the cases whose name holds this")
    options = parser.parse_args()
    PACKAGE = options.package.resolve() if options.package else None
    started, broken = time.monotonic(), 0
    chosen = {name: case for name, case in cases().items() if not options.only or options.only in name}
    for name, case in chosen.items():
        with tempfile.TemporaryDirectory() as tmp:
            try:
                said = case(Path(tmp))
            except Exception as error:  # a case that cannot even be judged is broken
                said = f"{type(error).__name__}: {str(error)[:160]}"
        if said:
            broken += 1
            print(f"BROKEN {name}: {said}")
    print(f"{len(chosen)} cases, {broken} broken, {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
