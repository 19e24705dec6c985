"""Facts for the CUDA libraries other than cuDNN (issue 45, "what a program gets, beyond cuDNN"), asked of the real
torch and JAX on the GPU machine, beside what plain `check` says of the same environment.

For cuBLASLt, nvJitLink and NCCL (and the CUDA runtime where the toolkit has a stub of it), each scenario puts one
thing first, in a folder of its own under the output folder: a copy of another release (the CUDA toolkit's, where its
release differs from the wheel's), an empty file, the toolkit's link stub under the soname, an unrelated library
under the soname; first on LD_LIBRARY_PATH, or in LD_PRELOAD. For each it records, side by side:

  torch   a matmul (cuBLAS/cuBLASLt) and a convolution (cuDNN) in torch, and what torch mapped for the library
          (/proc/self/maps after the work): did it run, and which file did it take
  jax     the same in JAX (XLA_PYTHON_CLIENT_PREALLOCATE=false, so that scenarios can share the GPU)
  check   plain `python -m cudnn_doctor check --json` here: its CD203 findings (severity, evidence, subject) and what
          its loading children saw each framework get for the library (process.loads[].libraries)

Round twelve (l16) adds, for the CUDA runtime, cuBLASLt, NCCL and cuFFT, the wheel's own copy with one symbol that
torch's libtorch_cuda.so takes from it renamed in its dynamic string table (the same soname, version node and
release: to the loader, an older release that lacks that function), preloaded and first on LD_LIBRARY_PATH; and an
empty libnvidia-ptxjitcompiler.so.1 first on LD_LIBRARY_PATH, alone and with CUDA_FORCE_PTX_JIT=1. Expected: torch's
import refused ('undefined symbol: X, version N') where the copy is preloaded and check's CD203 an error, seen; JAX
as it is recorded (its plugin binds lazily: a warning); the PTX JIT scenario fails only the forced one.

so that the lead can prove (or refute) the rules of rules/process_env.cuda_libraries: a file refused in a
framework's own loading child is an error (seen); a copy the framework maps but that is a stub, lacks functions, or
is of another release is a warning until this script shows the framework fails with it.

  python3 benchmarks/cuda_library_facts.py --out DIR [--python PYTHON] [--budget-s 110] [--jobs 4]

Writes DIR/facts.json (every scenario) and DIR/summary.md (one line each). Within --budget-s (default 110 s):
scenarios run --jobs at a time, each one's three children side by side; a scenario not started in time is recorded
as skipped.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("import os; print('MAPPED', sorted({l.split()[-1] for l in open('/proc/self/maps') "
          "if len(l.split()) == 6 and any(s in l for s in ('libcublas', 'libnvJitLink', 'libnccl', 'libcudart', "
          "'libcufft', 'ptxjit'))}))")
TORCH = ("import torch; x = torch.randn(64, 64, device='cuda'); y = x @ x; "
         "c = torch.nn.functional.conv2d(torch.randn(2, 8, 16, 16, device='cuda'), torch.randn(8, 8, 3, 3, "
         "device='cuda')); torch.cuda.synchronize(); print('torch ok', torch.version.cuda); " + MAPPED)
JAX = ("import jax, jax.numpy as j; d = jax.devices(); assert d[0].platform == 'gpu', d; x = j.ones((64, 64)); "
       "(x @ x).block_until_ready(); jax.lax.conv_general_dilated(j.ones((2, 8, 16, 16)), j.ones((8, 8, 3, 3)), "
       "(1, 1), 'SAME').block_until_ready(); print('jax ok', d); " + MAPPED)


def run(argv: list[str], env: dict[str, str], timeout: float, lines: int = 8) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd="/tmp")
    except subprocess.TimeoutExpired:
        return {"rc": None, "timed_out": True, "seconds": round(time.monotonic() - started, 2)}
    out = (done.stdout + done.stderr).strip().splitlines()
    mapped = next((line[len("MAPPED "):] for line in out if line.startswith("MAPPED ")), None)
    return {"rc": done.returncode, "ok": done.returncode == 0, "mapped": mapped,
            "tail": [line for line in out if not line.startswith("MAPPED ")][-lines:],
            "seconds": round(time.monotonic() - started, 2)}


def check(python: str, env: dict[str, str], timeout: float, stems: tuple[str, ...]) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run([python, "-m", "cudnn_doctor", "check", "--json"], capture_output=True, text=True,
                              env={**env, "PYTHONPATH": str(ROOT)}, timeout=timeout, cwd="/tmp")
        report = json.loads(done.stdout)
    except (subprocess.TimeoutExpired, ValueError) as error:
        return {"error": str(error)[:300]}
    process = report.get("process") or {}
    return {"exit_code": done.returncode, "seconds": round(time.monotonic() - started, 2),
            "findings": [{k: f.get(k) for k in ("code", "severity", "evidence", "subject", "proof")}
                         for f in report.get("findings", []) if f.get("code") in ("CD203", "CD409", "CD307", "CD410")],
            "errors": sorted({f.get("code") for f in report.get("findings", []) if f.get("severity") == "error"}),
            "seen": {load.get("user"): [lib for lib in load.get("libraries", []) if lib.get("soname", "").startswith(stems)]
                     for load in process.get("loads", [])}}


def site_packages(python: str) -> str:
    """The site-packages that holds torch, asked without importing it."""
    code = "import importlib.util, os; s = importlib.util.find_spec('torch'); print(os.path.dirname(list(s.submodule_search_locations)[0]))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip()


def needed(site: str) -> dict[str, list[str]]:
    """What the frameworks' own libraries need by soname and where they look (readelf -d): which CUDA libraries
    torch's import and JAX's plugin need at start ([[library_loading]] at_start)."""
    out: dict[str, list[str]] = {}
    for pattern in ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_global_deps.so", "torch/lib/libc10_cuda.so",
                    "jax_plugins/xla_cuda*/xla_cuda_plugin.so", "jax_cuda*_plugin/*.so"):
        for path in sorted(glob.glob(os.path.join(site, pattern)))[:8]:
            try:
                text = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.SubprocessError) as error:
                out[path] = [str(error)]
                continue
            out[path] = [line.split("[", 1)[-1].rstrip("]") for line in text.splitlines()
                         if "(NEEDED)" in line or "PATH)" in line]
    return out


def first(patterns: list[str]) -> str | None:
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


def toolkit(name: str) -> str | None:
    return first([f"/usr/local/cuda*/lib64/{name}", f"/usr/local/cuda*/targets/*/lib/{name}"])


def scenarios(site: str, out: Path) -> list[dict[str, object]]:
    """Each scenario: name, what it bends, the library stem, and its environment's changes."""
    wheel = {name: first([f"{site}/nvidia/cu13/lib/{name}", f"{site}/nvidia/*/lib/{name}"])
             for name in ("libcublasLt.so.13", "libnvJitLink.so.13", "libnccl.so.2", "libcudart.so.13")}
    libz = first(["/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib64/libz.so.1"])
    found: list[dict[str, object]] = []

    def folder(name: str) -> Path:
        path = out / "files" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def add(name: str, what: str, stem: str, file: Path, preload: bool = False) -> None:
        env = {"LD_PRELOAD": str(file)} if preload else {"LD_LIBRARY_PATH": str(file.parent)}
        found.append({"name": name, "what": what, "stem": stem, "file": str(file), "env": env})

    for soname, stem in (("libcublasLt.so.13", "libcublasLt"), ("libnvJitLink.so.13", "libnvJitLink"),
                         ("libnccl.so.2", "libnccl")):
        empty = folder(f"{stem}-empty") / soname
        empty.write_bytes(b"")
        add(f"{stem}-empty-first", f"an empty {soname} first on LD_LIBRARY_PATH", stem, empty)
        other = toolkit(soname)
        if other and wheel.get(soname) and os.path.realpath(other) != os.path.realpath(str(wheel[soname])):
            same = os.path.getsize(os.path.realpath(other)) == os.path.getsize(os.path.realpath(str(wheel[soname])))
            note = " (the same size as the wheel's: likely the same release)" if same else ""
            copy = folder(f"{stem}-toolkit") / soname
            shutil.copyfile(other, copy)
            add(f"{stem}-toolkit-first", f"the CUDA toolkit's {soname} ({os.path.realpath(other)}){note} first on "
                "LD_LIBRARY_PATH", stem, copy)
            add(f"{stem}-toolkit-preload", f"the CUDA toolkit's {soname}{note} in LD_PRELOAD", stem, copy, preload=True)
        stub = toolkit(f"stubs/{soname.split('.so')[0]}.so")
        if stub:
            linked = folder(f"{stem}-stub") / soname
            linked.unlink(missing_ok=True)
            linked.symlink_to(stub)
            add(f"{stem}-stub-first", f"the toolkit's link stub {stub} as {soname} first on LD_LIBRARY_PATH", stem,
                linked)
            add(f"{stem}-stub-preload", f"the toolkit's link stub {stub} as {soname} in LD_PRELOAD", stem, linked,
                preload=True)
        if libz:
            foreign = folder(f"{stem}-foreign") / soname
            shutil.copyfile(libz, foreign)
            add(f"{stem}-foreign-first", f"an unrelated library (libz) saved as {soname} first on LD_LIBRARY_PATH",
                stem, foreign)
    # round twelve (l16): the wheel's own copy with one symbol that torch's libtorch_cuda.so takes from it renamed in
    # its dynamic string table (the same soname, version node and release: what an older release that lacks that
    # function is to the loader), preloaded and first on the path; an empty PTX JIT compiler first on the path
    for soname, stem in (("libcudart.so.13", "libcudart"), ("libcublasLt.so.13", "libcublasLt"),
                         ("libnccl.so.2", "libnccl"), ("libcufft.so.12", "libcufft")):
        source = wheel.get(soname) or first([f"{site}/nvidia/cu13/lib/{soname}", f"{site}/nvidia/*/lib/{soname}"])
        cut = without_one_symbol(site, soname, source, folder(f"{stem}-lacking") / soname) if source else None
        if cut is not None:
            add(f"{stem}-lacking-preload", f"{soname} without {cut} (renamed), in LD_PRELOAD", stem,
                folder(f"{stem}-lacking") / soname, preload=True)
            add(f"{stem}-lacking-first", f"{soname} without {cut} (renamed), first on LD_LIBRARY_PATH", stem,
                folder(f"{stem}-lacking") / soname)
    jit = folder("ptxjit-empty") / "libnvidia-ptxjitcompiler.so.1"
    jit.write_bytes(b"")
    add("ptxjit-empty-first", "an empty libnvidia-ptxjitcompiler.so.1 first on LD_LIBRARY_PATH", "libnvidia-ptx", jit)
    found.append({"name": "ptxjit-empty-first-forced", "what": "the same, with CUDA_FORCE_PTX_JIT=1 (every kernel "
                  "through the PTX JIT)", "stem": "libnvidia-ptx", "file": str(jit),
                  "env": {"LD_LIBRARY_PATH": str(jit.parent), "CUDA_FORCE_PTX_JIT": "1"}})
    cudart_stub = toolkit("stubs/libcudart.so")
    if cudart_stub:
        linked = folder("libcudart-stub") / "libcudart.so.13"
        linked.unlink(missing_ok=True)
        linked.symlink_to(cudart_stub)
        add("libcudart-stub-preload", f"the toolkit's link stub {cudart_stub} as libcudart.so.13 in LD_PRELOAD",
            "libcudart", linked, preload=True)
    return found


def without_one_symbol(site: str, soname: str, source: str, target: Path) -> str | None:
    """A copy of SOURCE at TARGET in which the first symbol torch's libtorch_cuda.so takes from SONAME (read by the
    loading child's own reader) that stands alone in its dynamic string table is renamed (its last letter changed):
    the loader's lookup of that name then finds nothing. Returns the name, or None where none could be cut."""
    sys.path.insert(0, str(ROOT / "cudnn_doctor"))
    import _load_jobs as _load_child  # type: ignore[import-not-found]

    binders = sorted(glob.glob(os.path.join(site, "torch", "lib", "libtorch_cuda.so")))
    prefixes = {"libnccl.so.2": ["nccl"]}.get(soname, [])
    needs = _load_child.bound_needs(binders, {soname: prefixes}).get(soname, [])
    import struct

    data = bytearray(Path(os.path.realpath(source)).read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, count = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from(_load_child.ELF_SECTION, data, shoff + i * entsize) for i in range(count)]
    dynsym = next((section for section in sections if section[1] == _load_child.SHT_DYNSYM), None)
    if dynsym is None:
        return None
    start, end = sections[dynsym[6]][4], sections[dynsym[6]][4] + sections[dynsym[6]][5]  # its string table
    for _, symbol, _ in needs:
        name = symbol.encode()
        at = data.find(b"\0" + name + b"\0", start, end)
        if at < 0 or data.find(b"\0" + name + b"\0", at + 1, end) >= 0:
            continue
        data[at + len(name)] = ord("Q") if data[at + len(name)] != ord("Q") else ord("Z")
        target.write_bytes(bytes(data))
        return symbol
    return None


def one(python: str, scenario: dict[str, object], timeout: float) -> dict[str, object]:
    env = {**os.environ, **scenario["env"]}  # type: ignore[dict-item]
    if "LD_LIBRARY_PATH" in scenario["env"] and os.environ.get("LD_LIBRARY_PATH"):  # first, before what is there
        env["LD_LIBRARY_PATH"] += ":" + os.environ["LD_LIBRARY_PATH"]
    jax_env = {**env, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    stems = (str(scenario["stem"]),)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        torch = pool.submit(run, [python, "-c", TORCH], env, timeout)
        jax = pool.submit(run, [python, "-c", JAX], jax_env, timeout)
        doctor = pool.submit(check, python, env, timeout, stems)
        return {**scenario, "torch": torch.result(), "jax": jax.result(), "check": doctor.result()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--budget-s", type=float, default=110.0)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    site = site_packages(args.python)
    plan = scenarios(site, args.out)
    baseline = {"name": "baseline", "what": "the environment as it is", "stem": "lib", "file": "", "env": {}}
    def in_budget(scenario: dict[str, object]) -> dict[str, object]:
        left = args.budget_s - (time.monotonic() - started)  # asked as it starts, not as it is queued
        if left < 20:
            return {**scenario, "skipped": "no time left in the budget"}
        return one(args.python, scenario, min(45.0, left - 5))

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(in_budget, [baseline, *plan]))
    facts = {"site": site, "python": args.python, "seconds": round(time.monotonic() - started, 1),
             "needed": needed(site), "scenarios": results}
    (args.out / "facts.json").write_text(json.dumps(facts, indent=1))
    lines = ["| scenario | torch | jax | check: CD203 (severity/evidence) | check: what each framework got |",
             "| --- | --- | --- | --- | --- |"]
    for item in results:
        if "skipped" in item:
            lines.append(f"| {item['name']} | skipped | | | |")
            continue
        doctor = item["check"]  # type: ignore[index]
        said = ", ".join(f"{f['severity']}/{f['evidence']}" for f in doctor.get("findings", [])  # type: ignore[union-attr]
                         if f["code"] == "CD203") or "-"
        got = "; ".join(f"{user}: {lib.get('how')} {os.path.basename(str(lib.get('path')))} {lib.get('said')[:40]}"
                        for user, libs in (doctor.get("seen") or {}).items() for lib in libs)  # type: ignore[union-attr]
        lines.append(f"| {item['name']} | {'ok' if item['torch'].get('ok') else 'FAILS'} | "  # type: ignore[union-attr]
                     f"{'ok' if item['jax'].get('ok') else 'FAILS'} | {said} | {got or '-'} |")  # type: ignore[union-attr]
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{len(results)} scenarios in {facts['seconds']} s; {args.out / 'facts.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
