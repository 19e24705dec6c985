"""Read a cuDNN archive of any layout NVIDIA has shipped, one member at a time, and stage it.

Layouts: cuDNN <= 8.2 `.tgz` (`cuda/include`, `cuda/lib64`), cuDNN >= 8.3 `.tar.xz`
(`cudnn-<platform>-<ver>_cuda<M>-archive/{include,lib}`), Windows `.zip` (`bin`,
`include`, `lib/x64`) and pip wheels (`nvidia/cudnn/{include,lib}`). The archive is read
once, as a stream: each member is checked (safety), placed by the platform's Layout,
hashed while it is written, and its ELF header checked for the target architecture.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.cudnn_files import ANY_NAME, header_version, major_of
from cudnn_doctor.elf import ElfError, parse_header
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.install.faults import step
from cudnn_doctor.install.safety import (
    DIR,
    FILE,
    HARDLINK,
    SYMLINK,
    Member,
    check_placement,
    check_size,
    check_symlink,
    printable,
    refuse,
    safe_mode,
    safe_name,
)
from cudnn_doctor.knowledge.layout import BIN, IMPLIB, INCLUDE, LIB, Layout
from cudnn_doctor.operating_system import CURRENT

CHUNK = 1 << 20
ROOT = re.compile(r"^(?:cuda|cudnn-[^/]+|nvidia/cudnn)/(.*)$")
# (folder inside the archive root, category); the first that matches wins
FOLDERS = (("include/", INCLUDE), ("lib64/", LIB), ("lib/x64/", IMPLIB), ("lib/", LIB), ("bin/x64/", BIN),
           ("bin/", BIN))
WHEEL_LIBRARY = re.compile(r"^(lib[A-Za-z0-9_]+)\.so\.(\d+)$")
PLATFORM_WORDS = {BIN: "Windows (DLL)", IMPLIB: "Windows (import)", LIB: "Linux or macOS shared"}

Chunks = Callable[[], Iterator[bytes]]


@dataclass(frozen=True)
class StagedFile:
    """One file an install puts into the prefix."""

    dest: str  # relative to the prefix, "/"-separated
    category: str  # include | lib | bin | implib
    kind: str  # file | symlink
    size: int
    mode: int
    sha256: str | None = None  # files only (None when only listed)
    target: str | None = None  # symlinks only


@dataclass(frozen=True)
class ArchiveContents:
    archive: str
    format: str  # tar | zip
    files: tuple[StagedFile, ...]
    version: str | None  # what its cudnn_version.h (or cudnn.h) declares
    major: int | None  # from its main library's name
    skipped: tuple[str, ...]  # members that are not installed (LICENSE, wheel metadata)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files if f.kind == FILE)


def classify(name: str) -> tuple[str, str] | None:
    """(category, path inside that category's folder) for an archive member, or None (not installed: a wheel's
    Python package files, __init__.py and __pycache__, which make its folders importable, are not cuDNN's)."""
    match = ROOT.match(name)
    rest = match.group(1) if match else name
    if name.startswith("nvidia/") and (os.path.basename(rest) == "__init__.py" or "__pycache__/" in rest):
        return None
    for folder, category in FOLDERS:
        if rest.startswith(folder) and len(rest) > len(folder):
            inner = rest[len(folder):]
            if inner.endswith(".dll"):
                return BIN, inner
            if inner.endswith(".lib"):
                return IMPLIB, inner
            return category, inner
    return None


def read_archive(path: str, layout: Layout, staging: Callable[[str], Path] | None = None,
                 progress: Callable[[int], None] | None = None,
                 reserve: Callable[[Path, int], None] | None = None) -> ArchiveContents:
    """Check every member of the archive at PATH, in one pass; with STAGING (where each file, named
    by its path in the prefix, is written), also write the files, each after RESERVE(where, size)
    (which refuses what the disk cannot hold) and before the next member is read."""
    with open(path, "rb") as raw:
        counted = _CountingReader(raw, progress)
        fmt = _detect_format(path, raw)
        members = _zip_members(path, counted) if fmt == "zip" else _tar_members(path, counted)
        stager = _Stager(path, layout, staging, reserve)
        for member, chunks in members:
            stager.add(member, chunks)
        return stager.finish(fmt)


class _Stager:
    def __init__(self, archive: str, layout: Layout, staging: Callable[[str], Path] | None,
                 reserve: Callable[[Path, int], None] | None = None) -> None:
        self.archive, self.layout, self.staging = archive, layout, staging
        self.files: dict[str, StagedFile] = {}  # dest -> file
        self.by_member: dict[str, StagedFile] = {}  # archive member name -> file (for hardlinks)
        self.folders: set[str] = set()  # the folders the files placed so far lie in
        self.skipped: list[str] = []
        self.headers: dict[str, bytes] = {}
        self.version: str | None = None
        self.total = self.count = 0
        self.reserve = reserve  # refuses a file its filesystem cannot hold, before its bytes are read

    def add(self, member: Member, chunks: Chunks | None) -> None:
        self.count += 1
        self.total += member.size if member.kind == FILE else 0
        check_size(self.archive, member.name, member.size, self.total, self.count)
        if member.kind == DIR:
            return
        placed = classify(member.name)
        if placed is None:
            self.skipped.append(member.name)
            return
        category, inner = placed
        folder = self.layout.folder(category)
        if folder is None:
            raise doctor_error("CD506", exit_code=2, file=f"{printable(os.path.basename(self.archive))} "
                                 f"({printable(inner)})", found=PLATFORM_WORDS.get(category, category),
                                 target=self.layout.platform)
        dest = f"{folder}/{inner}"
        if dest in self.files:
            raise refuse(self.archive, f"member {member.name!r} appears twice (or collides with {dest})")
        check_placement(self.archive, member.name, dest, self.files, self.folders)
        if member.kind == SYMLINK:
            target = check_symlink(self.archive, member.name, member.target or "")
            self._link(dest, category, target)
        elif member.kind == HARDLINK:
            self._hardlink(member, dest)
        else:
            self._file(member, dest, category, chunks)
        if self.staging is not None:
            step("extract.member")

    def _file(self, member: Member, dest: str, category: str, chunks: Chunks | None) -> None:
        base = os.path.basename(dest)
        chain = self._wheel_chain(member.name, base) if category == LIB else None
        real_dest = f"{os.path.dirname(dest)}/{chain[0]}" if chain else dest
        digest = hashlib.sha256() if self.staging is not None else None
        handle = None
        if self.staging is not None:
            target = self.staging(real_dest)
            target.parent.mkdir(parents=True, exist_ok=True)
            if self.reserve is not None:
                self.reserve(target.parent, member.size)
            handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | CURRENT.binary, 0o600)
        is_header = category == INCLUDE and base in ("cudnn_version.h", "cudnn.h")
        wants_elf = category == LIB and self.layout.os_name == "linux" and ".so" in base
        first: bytes | None = None
        written = 0
        try:
            for chunk in (chunks() if chunks and (handle is not None or is_header or wants_elf) else ()):
                if first is None:
                    first = chunk
                    if wants_elf:
                        self._check_elf(dest, chunk, member.size)
                if is_header:
                    self.headers[base] = self.headers.get(base, b"") + chunk
                if handle is None:
                    if not is_header:
                        break  # listing: the ELF header was all we needed
                    continue
                digest.update(chunk)  # type: ignore[union-attr]
                view = memoryview(chunk)
                while view:
                    view = view[os.write(handle, view):]
                written += len(chunk)
        finally:
            if handle is not None:
                os.fchmod(handle, safe_mode(member.mode))
                os.close(handle)
        if handle is not None and written != member.size:
            raise refuse(self.archive, f"member {member.name!r} is truncated ({written} of {member.size} bytes)")
        if wants_elf and first is None and member.size == 0:
            raise refuse(self.archive, f"{dest} is an empty file")
        if is_header:
            self._read_version()
        staged = StagedFile(real_dest, category, FILE, member.size, safe_mode(member.mode),
                            digest.hexdigest() if digest else None)
        self.files[real_dest] = staged
        self.by_member[member.name] = staged
        if chain:
            folder = os.path.dirname(dest)
            self._link(f"{folder}/{chain[1]}", category, chain[0])
            self._link(f"{folder}/{chain[2]}", category, chain[1])

    def _wheel_chain(self, name: str, base: str) -> tuple[str, str, str] | None:
        """Wheels ship only libX.so.9: install it as NVIDIA's archives do, libX.so.9.19.0 with
        the links libX.so.9 and libX.so, so that older copies are recognised and -lX works."""
        match = WHEEL_LIBRARY.match(base)
        if not name.startswith("nvidia/cudnn/") or not match or not self.version:
            return None
        if self.version.split(".")[0] != match.group(2):
            return None
        return f"{base[:-len(match.group(2))]}{self.version}", base, f"{match.group(1)}.so"

    def _link(self, dest: str, category: str, target: str) -> None:
        if self.staging is not None:
            path = self.staging(dest)
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                path.unlink()
            os.symlink(target, path)
        self.files[dest] = StagedFile(dest, category, SYMLINK, 0, 0o777, None, target)

    def _hardlink(self, member: Member, dest: str) -> None:
        original = self.by_member.get(member.target or "")
        if original is None or os.path.dirname(original.dest) != os.path.dirname(dest):
            raise refuse(self.archive, f"hardlink {member.name!r} points outside the archive's files, "
                                       f"to {member.target!r}")
        if self.staging is not None:
            os.link(self.staging(original.dest), self.staging(dest))
        staged = StagedFile(dest, original.category, FILE, original.size, original.mode, original.sha256)
        self.files[dest] = staged
        self.by_member[member.name] = staged

    def _check_elf(self, dest: str, head: bytes, size: int) -> None:
        problem = elf_problem(head, size, self.layout.arch)
        if problem is None:
            return
        if problem.startswith("built for"):
            raise doctor_error("CD506", exit_code=2, file=f"{printable(os.path.basename(self.archive))} "
                                 f"({dest} is {problem})", found=problem.removeprefix("built for "),
                                 target=f"{self.layout.platform} ({self.layout.arch})")
        raise refuse(self.archive, f"{dest} {problem}")

    def _read_version(self) -> None:
        text = self.headers.get("cudnn_version.h") or self.headers.get("cudnn.h") or b""
        self.version = header_version(text) or self.version

    def finish(self, fmt: str) -> ArchiveContents:
        majors = [library_major(os.path.basename(f.dest)) for f in self.files.values()]
        major = next((m for m in majors if m is not None), None)
        if major is None:
            raise doctor_error("CD516", exit_code=2, file=printable(os.path.basename(self.archive)))
        return ArchiveContents(self.archive, fmt, tuple(self.files.values()), self.version, major,
                               tuple(self.skipped))


def library_major(name: str) -> int | None:
    return major_of(name, ANY_NAME)


def elf_problem(head: bytes, size: int, arch: str) -> str | None:
    """What is wrong with an ELF file of SIZE bytes, judged from its first bytes HEAD; None if nothing
    (the one ELF reader, elf.py)."""
    try:
        header = parse_header(head, size)
    except ElfError as error:
        text = str(error)
        if text.startswith("not an ELF"):
            return "is not an ELF shared library"
        if text.startswith("truncated"):
            return f"is {text}"
        return f"has an invalid ELF header ({text})"
    if header.arch != arch:
        return f"built for {header.arch}"
    return None


# --- the two archive formats -------------------------------------------------------------

class _CountingReader:
    """The archive file, reporting how much of it has been read (for the progress bar): the bytes read, not the
    position, since a zip is read from its end first (the central directory), and a bar told "done" at once, then
    "36 %", estimates its speed from that jump and shows 0:00:00 left for half a minute."""

    def __init__(self, raw, progress: Callable[[int], None] | None) -> None:  # type: ignore[no-untyped-def]
        self.raw, self.progress = raw, progress
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.consumed += len(data)
        self.moved(self.consumed)
        return data

    def moved(self, position: int) -> None:
        """The archive has been read up to POSITION (by this process or by its decompressor's)."""
        if self.progress is not None:
            self.progress(position)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def seekable(self) -> bool:
        return True


def _detect_format(path: str, raw) -> str:  # type: ignore[no-untyped-def]
    head = raw.read(262)
    raw.seek(0)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head.startswith((b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh")) or head[257:262] == b"ustar":
        return "tar"
    raise refuse(path, "it is not a tar, tar.gz, tar.xz, zip or wheel archive")


_READ_ERRORS = (tarfile.TarError, EOFError, lzma.LZMAError, zlib.error, zipfile.BadZipFile, OSError)


def _truncated(path: str, error: BaseException) -> DoctorError:
    return refuse(path, f"it is truncated or corrupt ({type(error).__name__}: {error})")


TAR_TAIL = 1 << 20  # what is read past a tar's end marker to reach its compressed stream's end


def _read_to_its_end(path: str, decompressed) -> None:  # type: ignore[no-untyped-def]
    """Past the tar's end marker, its compressed stream read to its end (at most TAR_TAIL bytes more), so that the
    decompressor's own verdict is had: `xz -dc` and `gzip -dc` exit non-zero, and the thread's reader raises, on a
    stream cut short or followed by bytes that are not the format (what `tar -xJf` and `xz -t` refuse), where the
    files were taken whole and the rest was never read. Past TAR_TAIL what follows is not judged."""
    tail = 0
    try:
        while tail <= TAR_TAIL:
            chunk = decompressed.read(CHUNK)
            if not chunk:
                return
            tail += len(chunk)
    except _READ_ERRORS as error:
        raise _truncated(path, error) from None


def _tar_members(path: str, fileobj) -> Iterator[tuple[Member, Chunks | None]]:  # type: ignore[no-untyped-def]
    decompressed = _decompressed(fileobj)
    try:
        archive = tarfile.open(fileobj=decompressed, mode="r|", bufsize=CHUNK)  # type: ignore[call-overload]
    except _READ_ERRORS as error:
        decompressed.close()
        raise _truncated(path, error) from None
    with decompressed, archive:
        iterator = iter(archive)
        while True:
            try:
                info = next(iterator)
            except StopIteration:
                _read_to_its_end(path, decompressed)
                return
            except _READ_ERRORS as error:
                raise _truncated(path, error) from None
            name = safe_name(path, info.name)
            if info.isdir():
                yield Member(name, DIR, 0, info.mode), None
            elif info.issym():
                yield Member(name, SYMLINK, 0, 0o777, info.linkname), None
            elif info.islnk():
                yield Member(name, HARDLINK, 0, info.mode, safe_name(path, info.linkname)), None
            elif info.issparse():  # no NVIDIA archive has one; a sparse bomb does
                raise refuse(path, f"member {info.name!r} is a sparse file ({info.size} bytes once expanded)")
            elif info.isreg():
                yield Member(name, FILE, info.size, info.mode), _tar_chunks(path, archive, info)
            else:
                raise refuse(path, f"member {info.name!r} is a device file, FIFO or other special file")


def program_for(head: bytes) -> str | None:
    """The system's own decompressor program for a stream that begins with HEAD (the one `tar -xf` runs beside
    itself: gzip, xz or bzip2 by its first bytes), if any: never one first on PATH, whose output would be installed
    in place of the archive's verified bytes (Python's own decompressor runs where the system has none)."""
    from cudnn_doctor.compressed import NAMES, kind_of
    from cudnn_doctor.operating_system import CURRENT

    kind = kind_of(head)
    return CURRENT.system_tool(NAMES[kind]) if kind else None


def _decompressed(counted: _CountingReader) -> _Decompressing | _PipedDecompressing:
    """The archive's tar stream: decompressed by the system's xz, gzip or bzip2 in a child of its own
    (child.py's StreamingChild) where there is one (as tar does: in this process, the GIL and the scheduler
    of a busy machine slow a decompressing thread to half of that), else by a thread of this process."""
    head = counted.raw.read(6)
    counted.raw.seek(0)
    found = program_for(head)
    if found:
        try:
            return _PipedDecompressing(counted, [found, "-dc"])
        except OSError:
            counted.raw.seek(0)
    return _Decompressing(counted)


class _PipedDecompressing:
    """`xz -dc < ARCHIVE` (or gzip, bzip2) as a stream; its failure (a corrupt or truncated archive) is an
    EOFError with its own words when its output ends."""

    def __init__(self, counted: _CountingReader, argv: list[str]) -> None:
        from cudnn_doctor.child import StreamingChild

        self.counted, self.argv = counted, argv
        self.position = descriptor = counted.raw.fileno()
        os.lseek(descriptor, 0, os.SEEK_SET)  # the buffered reader's position is not the descriptor's
        # a session of its own: Ctrl-C reaches us, and we end it (close), never half of a pipeline
        self.child = StreamingChild(argv, descriptor)
        self.process = self.child.process

    def read(self, size: int = -1) -> bytes:
        assert self.process.stdout is not None
        data = self.process.stdout.read(size)
        self.counted.moved(os.lseek(self.position, 0, os.SEEK_CUR))
        if not data and size != 0 and self.process.wait() != 0:
            said = (self.process.stderr.read(2000) if self.process.stderr else b"").decode(errors="replace")
            raise EOFError(f"{os.path.basename(self.argv[0])}: {said.strip() or f'exit {self.process.returncode}'}")
        return data

    def close(self) -> None:
        self.child.close()

    def __enter__(self) -> _PipedDecompressing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Decompressing:
    """The archive's tar stream, decompressed (xz, gzip, bzip2 or none) by a thread of its own a few
    chunks ahead of the reader, where the system has no decompressor program: the decompressors release
    the GIL, so checking, hashing and writing one member overlaps with decompressing the next. A read
    error or a corrupt stream reaches the reader as the exception it was."""

    AHEAD = 8  # chunks decompressed ahead of the reader

    def __init__(self, raw) -> None:  # type: ignore[no-untyped-def]
        import queue
        import threading

        self.raw = raw
        self.chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(self.AHEAD)
        self.pending = memoryview(b"")
        self.finished = False
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="decompress", daemon=True)
        self.thread.start()

    def _put(self, item: bytes | BaseException | None) -> bool:
        import queue

        while not self.stop.is_set():
            try:
                self.chunks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        from cudnn_doctor.compressed import Streams, kind_of

        try:
            data = self.raw.read(CHUNK)
            kind = kind_of(data)
            if kind is None:  # an uncompressed tar
                while data:
                    if not self._put(data):
                        return
                    data = self.raw.read(CHUNK)
                self._put(None)
                return
            self.raw.seek(0)
            streams = Streams(self.raw, kind)  # stream after stream, padding skipped, other bytes and cuts refused
            while out := streams.read(CHUNK):
                if not self._put(out):
                    return
            self._put(None)
        except BaseException as error:  # noqa: BLE001 - handed to the reader, raised there
            self._put(error)

    def read(self, size: int = -1) -> bytes:
        wanted = size if size >= 0 else 1 << 62
        if not self.pending and not self.finished:  # the common case: a whole chunk, handed on uncopied
            item = self.chunks.get()
            if isinstance(item, bytes) and len(item) <= wanted:
                return item
            self._take(item)
        parts = []
        while wanted > 0 and not self.finished:
            if not self.pending:
                self._take(self.chunks.get())
                if not self.pending:
                    break
            taken = self.pending[:wanted]
            self.pending = self.pending[len(taken):]
            parts.append(bytes(taken))
            wanted -= len(taken)
        return b"".join(parts)

    def _take(self, item: bytes | BaseException | None) -> None:
        """ITEM from the queue becomes the pending bytes (the end: none; an error: raised)."""
        if item is None:
            self.finished = True
        elif isinstance(item, BaseException):
            self.finished = True
            raise item
        else:
            self.pending = memoryview(item)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()

    def __enter__(self) -> _Decompressing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tar_chunks(path: str, archive: tarfile.TarFile, info: tarfile.TarInfo) -> Chunks:
    def open_member() -> Any:
        handle = archive.extractfile(info)
        assert handle is not None
        return handle
    return _member_chunks(path, open_member)


def _member_chunks(path: str, open_member: Callable[[], Any]) -> Chunks:
    """A member's bytes in CHUNK pieces; a short or corrupt archive is one clear error."""
    def chunks() -> Iterator[bytes]:
        try:
            with open_member() as handle:
                while True:
                    data = handle.read(CHUNK)
                    if not data:
                        return
                    yield data
        except _READ_ERRORS as error:
            raise _truncated(path, error) from None
    return chunks


def _zip_members(path: str, fileobj) -> Iterator[tuple[Member, Chunks | None]]:  # type: ignore[no-untyped-def]
    try:
        archive = zipfile.ZipFile(fileobj)  # type: ignore[arg-type]
        infos = archive.infolist()
    except _READ_ERRORS as error:
        raise _truncated(path, error) from None
    with archive:
        for info in infos:
            name = safe_name(path, info.filename)
            why = _zip_member_unreadable(info)
            if why:
                raise refuse(path, f"member {info.filename!r} {why}")
            mode = (info.external_attr >> 16) if info.create_system == 3 else 0
            kind = stat.S_IFMT(mode)
            if info.is_dir() or kind == stat.S_IFDIR:
                yield Member(name, DIR, 0, 0o755), None
            elif kind == stat.S_IFLNK:
                target = archive.read(info).decode(errors="replace")
                yield Member(name, SYMLINK, 0, 0o777, target), None
            elif kind in (0, stat.S_IFREG):
                yield Member(name, FILE, info.file_size, mode & 0o7777 or 0o644), _zip_chunks(path, archive, info)
            else:
                raise refuse(path, f"member {info.filename!r} is a device file, FIFO or other special file")


# the methods Python's zipfile reads (stored, deflate, bzip2, lzma); 9 (deflate64), 99 (AES) and others it refuses
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def _zip_member_unreadable(info: zipfile.ZipInfo) -> str | None:
    """Why INFO's bytes cannot be read, said before anything is written: an encrypted member (zipfile's
    RuntimeError 'password required', an internal error before) or a compression method zipfile does not have
    (its NotImplementedError). NVIDIA's wheels and archives have neither."""
    if info.flag_bits & 0x1:
        return "is encrypted (a password is needed to read it)"
    if info.compress_type not in _ZIP_METHODS:
        return f"is compressed with a method that cannot be read here (zip method {info.compress_type})"
    return None


def _zip_chunks(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Chunks:
    return _member_chunks(path, lambda: archive.open(info))
