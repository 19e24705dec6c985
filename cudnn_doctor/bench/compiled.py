"""The compiled CPU baseline: cpu_kernels.c, built once per machine with its C compiler, driving
the sgemm of the BLAS NumPy itself uses (found in this process, called with its address).

NumPy alone loses most of its time on small shapes to the GIL and to per-call overhead between
the pieces of work (benchmarks/README.md); these loops run them in C threads, blocked for the
cache, as PyTorch's oneDNN does. Where there is no C compiler or no usable BLAS, or
CUDNN_DOCTOR_CPU_BASELINE=numpy, reference.py runs its NumPy code instead; the bench reports
which one ran.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_name("cpu_kernels.c")
# -fno-trapping-math: no FP traps, which lets gcc vectorise the LSTM's gate loop (its clamps)
FLAGS = ("-O3", "-fno-trapping-math", "-Werror=implicit-function-declaration", "-std=c11", "-shared", "-fPIC",
         "-pthread")
NATIVE = "-march=native"  # built on the machine it runs on; tried first, dropped if the compiler refuses it
ENV = "CUDNN_DOCTOR_CPU_BASELINE"  # auto (default) | numpy | compiled
# cblas_sgemm under the names NumPy's BLAS builds export it, and whether its integers are 64-bit
SGEMM_SYMBOLS = (("scipy_cblas_sgemm64_", True), ("cblas_sgemm64_", True), ("cblas_sgemm_64", True),
                 ("scipy_cblas_sgemm", False), ("cblas_sgemm", False))
BLOCK_BYTES = 512 << 10  # a thread's im2col block: stays in its core's L2 cache next to the filters
BLOCK_PIXELS = 128  # but at least this many output pixels, for a GEMM BLAS runs at speed

i64 = ctypes.c_int64


class Unavailable(Exception):
    """Why the compiled baseline cannot run here (one line)."""


def blas_libraries() -> list[str]:
    """The BLAS libraries loaded in this process (NumPy's OpenBLAS under its various names, MKL),
    from /proc/self/maps; empty where there is none (other systems)."""
    from cudnn_doctor.variables import mapped_here

    return [path for path in mapped_here()
            if "blas" in os.path.basename(path).lower() or "mkl_rt" in os.path.basename(path)]


def _sgemm() -> tuple[int, bool, str]:
    """(address of cblas_sgemm, 64-bit integers, library path) of NumPy's BLAS."""
    for path in blas_libraries():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name, ilp64 in SGEMM_SYMBOLS:
            function = getattr(library, name, None)
            if function is not None:
                return ctypes.cast(function, ctypes.c_void_p).value or 0, ilp64, path
    raise Unavailable("no cblas_sgemm in NumPy's BLAS")


def _compiler() -> list[str]:
    command = os.environ.get("CC", "").split()
    found = shutil.which(command[0]) if command else None
    if found:  # by its path: the child runner starts it from /, not from the working folder
        return [os.path.abspath(found), *command[1:]]
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    raise Unavailable("no C compiler: install gcc, or set CC")


def _cpu_identity() -> str:
    """What -march=native depends on: the CPU's model and flags (a cache shared over NFS may be
    read by other machines)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            lines = [line for line in cpuinfo if line.startswith(("model name", "flags", "Features", "CPU part"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.processor()


def _compile(argv: list[str], deadline: float) -> tuple[int | None, str, str]:
    """ARGV (the compiler) through the one child runner, within DEADLINE (the bench's own limit,
    CUDNN_DOCTOR_BENCH_TIMEOUT, over the whole build): (exit status or None, stdout, why it failed).
    A compiler on PATH that hangs, floods or leaves children behind is stopped with all it started."""
    from cudnn_doctor.child import run_child

    answer = run_child(argv, None, deadline, what=Path(argv[0]).name)
    if answer.timed_out:
        raise Unavailable(f"{Path(argv[0]).name} did not finish within the bench's time limit "
                          "(CUDNN_DOCTOR_BENCH_TIMEOUT)")
    return answer.exit_code, answer.stdout, answer.stderr_tail or answer.error or "failed"


def _version(compiler: list[str], deadline: float) -> tuple[str, str | None]:
    """COMPILER's `--version` as every helper program is asked (child.helper_request: read to its end, within the
    helpers' timeout and DEADLINE): (what it printed, what it did that a build reading it meets, or None)."""
    import time

    from cudnn_doctor.child import helper_request, helper_timeout, helper_trouble, run_children

    seconds = max(0.001, min(helper_timeout(), deadline - time.monotonic()))
    [answer] = run_children([helper_request([*compiler, "--version"], None, f"{Path(compiler[0]).name} --version",
                                            seconds)], deadline=deadline)
    return answer.stdout, helper_trouble(answer, seconds)


KERNELS_LIMIT = 64 << 20  # the built library is tens of kilobytes


def _build(compiler: list[str]) -> tuple[bytes, str]:
    """The shared library for this source, compiler and CPU, as bytes read at one instant: the cache's copy where it
    is whole, else compiled into the cache (or, where the cache cannot be written, into a temporary folder removed at
    once), and the compiler's name. What is loaded is those bytes (_load), never the cache's file: a file changed
    under its mapping (copied over in place) would end the process with SIGBUS."""
    from cudnn_doctor.bench.timeout import bench_timeout
    from cudnn_doctor.cache import cache_dir
    from cudnn_doctor.child import deadline_in

    deadline = deadline_in(bench_timeout())
    version, trouble = _version(compiler, deadline)
    source = SOURCE.read_bytes()
    identity = "\0".join([" ".join(compiler), version, _cpu_identity(), platform.machine(), " ".join(FLAGS)])
    digest = hashlib.sha256(source + identity.encode()).hexdigest()[:24]
    numbers = re.findall(r"\b\d+\.\d+(?:\.\d+)?\b", (version.splitlines() or [""])[0])
    name = f"{Path(compiler[0]).name} {numbers[-1]}" if numbers else Path(compiler[0]).name
    if trouble:  # said where the baseline is named, as check's compiler rows say it
        name += f" (its --version {trouble})"
    folder, temporary_folder = cache_dir() / "cpu-kernels", None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        folder = temporary_folder = Path(tempfile.mkdtemp(prefix="cudnn-doctor-kernels-"))
    target = folder / f"cpu_kernels-{digest}.so"
    cached = _whole_library(target)
    if cached is not None:
        return cached, name
    handle, temporary = tempfile.mkstemp(suffix=".so", dir=folder)
    os.close(handle)
    try:
        error = ""
        for extra in ([NATIVE], []):
            status, _out, error = _compile([*compiler, *FLAGS, *extra, str(SOURCE), "-o", temporary, "-lm"],
                                           deadline)
            if status == 0:
                built = _whole_library(Path(temporary))
                if built is None:
                    raise Unavailable(f"{Path(compiler[0]).name} wrote no whole library for {SOURCE.name}")
                if temporary_folder is None:
                    try:  # atomic: a concurrent bench sees the old file or the whole new one
                        os.replace(temporary, target)
                    except OSError:  # a folder of that name in the way: this run's bytes are loaded all the same
                        pass
                return built, name
        raise Unavailable(f"{Path(compiler[0]).name} could not build {SOURCE.name}: {error}")
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
        if temporary_folder is not None:
            shutil.rmtree(temporary_folder, ignore_errors=True)


def _whole_library(path: Path) -> bytes | None:
    """PATH's bytes where it is a regular file holding a whole shared library for this machine, read at one instant
    (without blocking, bounded); None for anything else, which is then built again over it: a FIFO (a load would wait
    for a writer for ever), a file cut short (mapped, its missing pages end the process with SIGBUS), one that is no
    ELF or for another machine, a folder, a link loop."""
    from cudnn_doctor.elf import ElfError, host_arch, parse_header
    from cudnn_doctor.user_files import UnreadableFile, read_user_file

    if not os.path.lexists(path):
        return None
    try:
        data = read_user_file(str(path), KERNELS_LIMIT)
        return data if parse_header(data).arch == host_arch() else None
    except (UnreadableFile, ElfError):
        return None


def _loaded(data: bytes, name: str) -> ctypes.CDLL:
    """DATA, a shared library, loaded from a copy of this process's own (memfd_create: in memory, gone with the
    process; a private temporary folder where there is none): nothing another process does to a file changes it."""
    if hasattr(os, "memfd_create"):
        descriptor = os.memfd_create(name)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
            return ctypes.CDLL(f"/proc/self/fd/{descriptor}")
        finally:
            os.close(descriptor)
    folder = tempfile.mkdtemp(prefix="cudnn-doctor-kernels-")
    try:
        path = os.path.join(folder, name)
        with open(path, "wb") as stream:
            stream.write(data)
        return ctypes.CDLL(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Failed(RuntimeError):
    """The kernels could not start their threads: nothing ran; the caller runs NumPy instead."""


_SCRATCH: dict[str, np.ndarray] = {}


def _scratch(name: str, size: int) -> np.ndarray:
    """A float32 buffer of SIZE elements kept between calls (grown when too small): a fresh one
    costs a page fault per 4 KiB inside the timing."""
    array = _SCRATCH.get(name)
    if array is None or array.size < size:
        array = _SCRATCH[name] = np.empty(size, dtype=np.float32)
    return array[:size]


def _pointer(array: np.ndarray) -> int:
    return int(array.ctypes.data)


@dataclass(frozen=True)
class Kernels:
    library: ctypes.CDLL
    sgemm: int
    ilp64: bool
    compiler: str  # the compiler and its version, "gcc 13.3.0"
    blas: str  # the BLAS library's file name

    @property
    def description(self) -> str:
        """"gcc 13.3.0 around NumPy's OpenBLAS sgemm"."""
        name = self.blas.lower()
        blas = "OpenBLAS" if "openblas" in name else "MKL" if "mkl" in name else self.blas
        return f"{self.compiler} around NumPy's {blas} sgemm"

    @staticmethod
    def _check(status: int) -> None:
        if status != 0:
            raise Failed("the compiled CPU baseline could not start its threads")

    @staticmethod
    def _block(pixels: int, depth: int, threads: int) -> tuple[int, int]:
        """(output pixels per GEMM, threads): blocks that fit the cache, no thread without a block."""
        block = max(BLOCK_PIXELS, BLOCK_BYTES // (4 * depth))
        return block, max(1, min(threads, -(-pixels // block)))

    def conv_forward(self, source: np.ndarray, filters_t: np.ndarray, rs: tuple[int, int], out_hw: tuple[int, int],
                     offset: int, stride: int, dilation: int, threads: int) -> np.ndarray:
        """out (N,P,Q,K) = correlation of SOURCE (N,H,W,C), set in a virtual zero-padded input at
        (OFFSET, OFFSET) with DILATION-1 zeros between its elements, with FILTERS_T (R·S·C, K)."""
        source = np.ascontiguousarray(source, dtype=np.float32)
        filters_t = np.ascontiguousarray(filters_t, dtype=np.float32)
        n, h, w, c = source.shape
        depth, k = filters_t.shape
        p, q = out_hw
        out = np.empty((n, p, q, k), dtype=np.float32)
        block, threads = self._block(n * p * q, depth, threads)
        scratch = _scratch("im2col", threads * block * depth)
        self._check(self.library.cd_conv_forward(
            self.sgemm, int(self.ilp64), _pointer(source), n, h, w, c, _pointer(filters_t), k, rs[0], rs[1], p, q,
            offset, stride, dilation, _pointer(out), _pointer(scratch), block, threads))
        return out

    def conv_backward_filter(self, x: np.ndarray, dy: np.ndarray, rs: tuple[int, int], pad: int, stride: int,
                             threads: int) -> np.ndarray:
        """dw (K,R,S,C) = dyᵀ · im2col(x)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        dy = np.ascontiguousarray(dy, dtype=np.float32)
        n, h, w, c = x.shape
        _, p, q, k = dy.shape
        r, s = rs
        depth = r * s * c
        out = np.empty((k, r, s, c), dtype=np.float32)
        block, threads = self._block(n * p * q, depth, threads)
        scratch = _scratch("im2col", threads * block * depth)
        partials = _scratch("partials", threads * k * depth)
        self._check(self.library.cd_conv_backward_filter(
            self.sgemm, int(self.ilp64), _pointer(x), n, h, w, c, _pointer(dy), k, r, s, p, q, pad, stride,
            _pointer(out), _pointer(partials), _pointer(scratch), block, threads))
        return out

    def lstm_forward(self, inputs: np.ndarray, input_weights: np.ndarray, recurrent: np.ndarray, bias: np.ndarray,
                     threads: int) -> np.ndarray:
        """states (T, H, B) from inputs (T, B, I), weights and bias as LstmWeights lays them out."""
        steps, batch, features = inputs.shape
        hidden = recurrent.shape[1]
        threads = max(1, min(threads, hidden))
        inputs = np.ascontiguousarray(inputs, dtype=np.float32)
        bias = np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
        states = np.empty((steps, hidden, batch), dtype=np.float32)
        scratch = _scratch("lstm", threads * self.library.cd_lstm_scratch(steps, batch, features, hidden, threads))
        self._check(self.library.cd_lstm_forward(
            self.sgemm, int(self.ilp64), _pointer(inputs), _pointer(input_weights), _pointer(recurrent),
            _pointer(bias), _pointer(states), _pointer(scratch), steps, batch, features, hidden, threads))
        return states


def _load() -> Kernels:
    if sys.platform != "linux" and not sys.platform.startswith("freebsd"):
        raise Unavailable(f"the compiled baseline is built on Linux only (this is {sys.platform})")
    sgemm, ilp64, blas = _sgemm()
    data, compiler = _build(_compiler())
    try:
        library = _loaded(data, "cpu_kernels.so")
    except OSError as error:
        raise Unavailable(f"could not load the compiled CPU kernels: {error}") from None
    pointer = ctypes.c_void_p
    integer = ctypes.c_int
    library.cd_conv_forward.argtypes = [pointer, integer, pointer, i64, i64, i64, i64, pointer, i64, i64, i64, i64,
                                        i64, i64, i64, i64, pointer, pointer, i64, integer]
    library.cd_conv_backward_filter.argtypes = [pointer, integer, pointer, i64, i64, i64, i64, pointer, i64, i64,
                                                i64, i64, i64, i64, i64, pointer, pointer, pointer, i64, integer]
    library.cd_lstm_forward.argtypes = [pointer, integer, pointer, pointer, pointer, pointer, pointer, pointer, i64,
                                        i64, i64, i64, integer]
    library.cd_lstm_scratch.argtypes = [i64, i64, i64, i64, integer]
    library.cd_lstm_scratch.restype = i64
    for function in (library.cd_conv_forward, library.cd_conv_backward_filter, library.cd_lstm_forward):
        function.restype = integer
    return Kernels(library, sgemm, ilp64, compiler, Path(blas).name)


_LOADED: Kernels | Unavailable | None = None


def get() -> Kernels | None:
    """The compiled kernels, or None where the NumPy baseline runs (see reason())."""
    from cudnn_doctor.variables import choice as variable_choice

    choice = variable_choice(ENV, "auto")
    if choice == "numpy":
        return None
    global _LOADED
    if _LOADED is None:
        try:
            _LOADED = _load()
        except (Unavailable, OSError) as error:
            _LOADED = Unavailable(str(error) or type(error).__name__)
    if isinstance(_LOADED, Unavailable):
        if choice == "compiled":
            raise _LOADED
        return None
    return _LOADED


def reason() -> str | None:
    """Why the NumPy baseline runs instead of the compiled one, if it does."""
    if os.environ.get(ENV, "auto").strip().lower() == "numpy":  # checked by variables.check_all
        return f"{ENV}=numpy"
    return str(_LOADED) if isinstance(_LOADED, Unavailable) else None
