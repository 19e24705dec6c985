"""How long `cudnn-doctor install --from ARCHIVE` takes next to the manual recipe,
`tar -xf ARCHIVE` then `cp -a` of its include/ and lib/ into the prefix.

    python benchmarks/install_speed.py [--archive cudnn-...tar.xz] [--repeat 5] [--before DIR]

Without --archive, a .tar.xz in NVIDIA's layout is made once from the real
nvidia-cudnn-cu13 9.19.0.56 wheel (cudnn-linux-x86_64-9.19.0.56_cuda13-archive/
{include,lib} with the libX.so -> libX.so.9 -> libX.so.9.19.0 links, single-threaded
xz as NVIDIA's are). Both sides read the archive warm from the page cache and write to
the same filesystem; the install's time includes the plan, the checks and the
verification (loading the result in a child process), i.e. the whole command. Before each
timed run the file system is synced, so that no run pays for the previous one's writes (with
1 GB written by the recipe, the run after it was throttled by the kernel's writeback).
--before DIR also times the install of another checkout (e.g. `git archive` of the commit
before a change, unpacked into DIR) in the same interleaved rounds, for a fair before/after
on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WHEEL = "nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl"
ROOT = "cudnn-linux-x86_64-9.19.0.56_cuda13-archive"


def find_wheel() -> Path:
    for folder in (os.environ.get("CUDNN_DOCTOR_TEST_CACHE"), str(Path.home() / ".cache/cudnn-doctor-tests/wheels"),
                   "/tmp/wheels"):
        if folder and (Path(folder) / WHEEL).is_file():
            return Path(folder) / WHEEL
    target = Path.home() / ".cache/cudnn-doctor-tests/wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(target),
                    "nvidia-cudnn-cu13==9.19.0.56"], check=True)
    return target / WHEEL


def make_archive(work: Path) -> Path:
    """The wheel's files in NVIDIA's .tar.xz layout (made once, kept in WORK)."""
    archive = work / f"{ROOT}.tar.xz"
    if archive.exists():
        return archive
    tree = work / "tree" / ROOT
    shutil.rmtree(work / "tree", ignore_errors=True)
    with zipfile.ZipFile(find_wheel()) as wheel:
        for info in wheel.infolist():
            if not info.filename.startswith("nvidia/cudnn/"):
                continue
            rel = Path(info.filename.removeprefix("nvidia/cudnn/"))
            (tree / rel.parent).mkdir(parents=True, exist_ok=True)
            if rel.parts[0] == "lib":
                real = rel.name.replace(".so.9", ".so.9.19.0")
                (tree / "lib" / real).write_bytes(wheel.read(info))
                os.symlink(real, tree / "lib" / rel.name)
                os.symlink(rel.name, tree / "lib" / rel.name.removesuffix(".9"))
            else:
                (tree / rel).write_bytes(wheel.read(info))
    (tree / "LICENSE").write_text("see NVIDIA's cuDNN license\n")
    partial = archive.with_suffix(".partial")
    with open(partial, "wb") as out:
        tar = subprocess.Popen(["tar", "-C", str(tree.parent), "-cf", "-", ROOT], stdout=subprocess.PIPE)
        subprocess.run(["xz", "-T1", "-6"], stdin=tar.stdout, stdout=out, check=True)
        tar.wait()
    partial.rename(archive)
    shutil.rmtree(work / "tree")
    return archive


def manual_recipe(archive: Path, scratch: Path) -> float:
    """tar -xf, then cp -a of include/ and lib/ into the prefix (as pytorch's install_cudnn.sh does)."""
    unpack, prefix = scratch / "unpack", scratch / "prefix"
    for folder in (unpack, prefix / "include", prefix / "lib64"):
        folder.mkdir(parents=True)
    started = time.perf_counter()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(unpack)], check=True)
    root = next(unpack.iterdir())
    subprocess.run(f"cp -a {root}/include/* {prefix}/include/ && cp -a {root}/lib/* {prefix}/lib64/",
                   shell=True, check=True)
    return time.perf_counter() - started


def doctor_install(archive: Path, scratch: Path, tree: Path = REPO) -> float:
    prefix = scratch / "prefix"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed package has it
    started = time.perf_counter()
    # as the `cudnn-doctor` command runs (entry.py); `-m` puts the cwd, TREE, first on sys.path
    subprocess.run([sys.executable, "-m", "cudnn_doctor", "install", "--from", str(archive), "--prefix", str(prefix),
                    "--yes"], check=True, stdout=subprocess.DEVNULL, env=env, cwd=str(tree))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archive", type=Path, help="a cuDNN .tar.xz/.tgz (default: made from the 9.19.0 wheel)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "cudnn-doctor-bench")
    parser.add_argument("--before", type=Path, help="another checkout whose install is timed too (interleaved)")
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    archive = options.archive or make_archive(options.work)
    subprocess.run(["cat", str(archive)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    runners: list[tuple[str, Any]] = [("tar -xf + cp -a", manual_recipe), ("cudnn-doctor install", doctor_install)]
    import resource

    def used() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    if options.before:
        other_tree = options.before.resolve()
        runners.append((f"install of {other_tree.name}", lambda a, s: doctor_install(a, s, other_tree)))
    times: dict[str, list[float]] = {name: [] for name, _ in runners}
    cpu: dict[str, list[float]] = {name: [] for name, _ in runners}
    for _ in range(options.repeat):
        for name, runner in runners:  # interleaved: fair to each
            scratch = Path(tempfile.mkdtemp(dir=options.work))
            try:
                os.sync()  # the last run's writes reach the disk now, not while this one is timed
                cpu_before = used()
                times[name].append(runner(archive, scratch))
                cpu[name].append(used() - cpu_before)  # user + system of every process it ran
            finally:
                shutil.rmtree(scratch)
    manual = statistics.median(times["tar -xf + cp -a"])
    print(f"archive: {archive.name} ({archive.stat().st_size / 2**20:.0f} MiB), {options.repeat} interleaved rounds")
    for name, _ in runners:
        median = statistics.median(times[name])
        print(f"{name + ':':32s} median {median:6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times[name])})"
              f"  {median / manual:.2f}x;  CPU (user+sys) median {statistics.median(cpu[name]):6.2f} s")
    print("target: cudnn-doctor install <= 1.0x tar -xf + cp -a")


if __name__ == "__main__":
    main()
