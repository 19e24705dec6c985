"""The image's file system as its layers make it, for the few files that matter: each layer streamed once (a tar,
gzip'd or not), whiteouts applied to the layers below, nothing extracted. Names are hostile: one that climbs out
('..') is refused and said; a member too big for what it claims to be is not read; a layer that would decompress
past the limit is stopped there."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import tarfile
from dataclasses import dataclass, field
from typing import IO, Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.image.sources import (
    WHOLE_ARCHIVE_INFLATE,
    WHOLE_ARCHIVE_SLACK,
    BoundedHeaders,
    ImageParts,
    Layer,
    check_tar_end,
)

SITE = re.compile(r"^(?:.*/)?(?:site|dist)-packages$")
SMALL_FILES = (  # (pattern relative to site-packages, or to the root with a leading /), what it is
    ("*.dist-info/METADATA", "metadata"),
    ("torch/version.py", "source"),
    ("tensorflow/python/platform/build_info.py", "source"),
    ("paddle/version/__init__.py", "source"),
)
ROOT_FILES = (re.compile(r"^(?:usr/local/)?cuda(?:-[\d.]+)?/version\.json$"),
              re.compile(r"^(?:usr/(?:local/cuda(?:-[\d.]+)?/)?)?include/(?:[\w-]+/)?cudnn_version(?:_v\d+)?\.h$"))
LIBRARY = re.compile(r"^(libcudnn|libcudart|libcuda|libnvidia-ml)\.so(?:\.(\d+(?:\.\d+){0,3}))?$")
SMALL_LIMIT = 1 << 20  # METADATA, version.py, version.json, a header: kilobytes
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
from cudnn_doctor.image.registry import DEFAULT_MAX_LAYER_BYTES  # noqa: E402 - one number for both readers

MAX_MEMBERS = 2_000_000
MAX_NOTES = 20
MAX_ENTRIES = 200_000  # the files that matter (libraries, METADATA, version files): a few thousand in real images
# deflate inflates at most 1032 to 1 (zlib's technical details, https://zlib.net/zlib_tech.html): a gzip layer of N
# bytes holds at most this many times N of tar, so a member that claims more is a layer cut short, not a bound
DEFLATE_MAX_RATIO = 1032
MAX_SMALL_TOTAL = 64 << 20  # the small files' text kept, all layers together: a few MB in real images


@dataclass
class Entry:
    kind: str  # "file" | "link"
    size: int
    layer: int
    link: str | None = None
    content: bytes | None = None  # for the small files that matter


@dataclass
class ImageFiles:
    """What the merged layers hold, by path from the image's root (no leading /)."""

    entries: dict[str, Entry] = field(default_factory=dict)
    site_packages: set[str] = field(default_factory=set)
    libraries_under_site: set[str] = field(default_factory=set)  # framework libraries' paths (existence only)
    notes: list[str] = field(default_factory=list)  # what was refused or skipped, in words
    bytes_read: int = 0
    small_bytes: int = 0  # the small files' text kept so far (MAX_SMALL_TOTAL)
    kept: int = 0  # the entries kept so far, every layer read (MAX_ENTRIES)

    def note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)
        elif len(self.notes) == MAX_NOTES:
            self.notes.append("more refused members were not listed")


def max_layer_bytes() -> int:
    from cudnn_doctor.variables import number

    return int(number("CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES", DEFAULT_MAX_LAYER_BYTES))


@dataclass
class _LayerFiles:
    """What one layer holds that matters, before it is merged over the layers below."""

    deleted: list[str] = field(default_factory=list)  # whiteouts: what it removes from the layers below
    opaque: list[str] = field(default_factory=list)  # folders of which it keeps only what it adds
    added: dict[str, Entry] = field(default_factory=dict)
    site_packages: set[str] = field(default_factory=set)
    libraries_under_site: set[str] = field(default_factory=set)


def read_layers(parts: ImageParts, framework_libraries: tuple[str, ...]) -> ImageFiles:
    """Every layer of PARTS, merged lowest first. Each is read in the order its blob lies in an archive compressed as
    a whole (docker save | gzip stores them by name, not in their order): one forward pass through it, where reading
    them in their own order went back to its start for each, and past 40 layers past the decompression bound."""
    files = ImageFiles()
    order = list(range(len(parts.layers)))
    try:
        where = [layer.position() if layer.position is not None else index for index, layer in enumerate(parts.layers)]
        order.sort(key=lambda index: (where[index], index))
    except DoctorError:  # a layer the archive does not hold: said where it is read, in its own order
        pass
    read: dict[int, _LayerFiles] = {}
    for index in order:
        read[index] = _read_layer(parts.reference, index, parts.layers[index], files, framework_libraries)
    for index in range(len(parts.layers)):
        _merge(files, read.pop(index))
    return files


class _Hashing:
    """A stream that hashes what is read through it (a layer's digest is of its blob as stored)."""

    def __init__(self, raw: IO[bytes], algorithm: str) -> None:
        self.raw = raw
        self.hash = hashlib.new(algorithm)
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.hash.update(data)
        self.count += len(data)
        return data

    def drain(self, limit: int) -> None:
        while self.count <= limit and self.read(1 << 20):
            pass


class _Declared:
    """A blob's stream read to its declared size and one byte more: a blob longer than its manifest says (a sparse
    100 GiB file declared as 10 KiB) is refused there, not read to its end."""

    def __init__(self, raw: IO[bytes], size: int) -> None:
        self.raw = raw
        self.size = size
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        left = self.size + 1 - self.count
        data = self.raw.read(left if size < 0 else min(size, left)) if left > 0 else b""
        self.count += len(data)
        if self.count > self.size:
            raise ValueError(f"the blob is longer than the {self.size} bytes its manifest declares")
        return data

    def close(self) -> None:
        close = getattr(self.raw, "close", None)
        if close is not None:
            close()


def _read_layer(ref: str, index: int, layer: Layer, files: ImageFiles,
                framework_libraries: tuple[str, ...]) -> _LayerFiles:
    """What layer INDEX holds that matters (FILES keeps the counts and notes of every layer read)."""
    limit = max_layer_bytes()
    raw: Any = layer.open()
    if layer.size is not None:
        raw = _Declared(raw, layer.size)  # type: ignore[arg-type]
    algorithm, _, expected = layer.digest.partition(":")
    hashing = _Hashing(raw, algorithm) if algorithm in ("sha256", "sha512") and expected else None
    stream = hashing if hashing is not None else raw
    own = _LayerFiles()
    deleted, opaque, added = own.deleted, own.opaque, own.added
    what = f"layer {index + 1} ({layer.digest[:19]})"
    try:
        head = stream.read(4)
        if head[:4] == b"\x28\xb5\x2f\xfd":
            raise DoctorError(f"image {ref}: {what} is zstd-compressed, which this Python cannot read",
                              fix="save the image with gzip layers (docker save) or read it from a registry that "
                                  "serves gzip", code="CD008")
        plain = _Plain(_Prefixed(head, stream), gzipped=head[:2] == b"\x1f\x8b")
        inflated = limit  # how far its tar is read: the layer bound, and for a gzip'd layer of a declared size no
        bound = "CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES"  # more than it can hold but as a bomb (1,000 to 1) inflates
        if plain.inflate is not None and layer.size is not None and \
                WHOLE_ARCHIVE_INFLATE * layer.size + WHOLE_ARCHIVE_SLACK < limit:
            inflated = WHOLE_ARCHIVE_INFLATE * layer.size + WHOLE_ARCHIVE_SLACK
            bound = f"{WHOLE_ARCHIVE_INFLATE} times its {layer.size} bytes and 1 GiB"
        archive = tarfile.open(fileobj=plain, mode="r|", tarinfo=BoundedHeaders)  # type: ignore[call-overload]  # noqa: SIM115
        members = 0
        end = 0
        complete = False
        while True:
            member = archive.next()
            if member is None:
                complete = True
                break
            archive.members.clear()  # streamed, nothing looks back: 600,000 members must not grow memory
            if member.sparse is None:  # a GNU sparse member stores less than its size: where it ends is tarfile's
                end = member.offset_data + member.size
            members += 1
            if members > MAX_MEMBERS:
                files.note(f"{what}: more than {MAX_MEMBERS} members; the rest was not read")
                break
            if member.offset_data + member.size > inflated:
                held = _can_hold(layer.size, plain.inflate is not None)
                if held is not None and member.offset_data + member.size > held:
                    raise EOFError(f"a member claims {member.size} bytes, more than the layer's {layer.size} bytes "
                                   f"can hold: the layer is cut short or its header lies")
                files.note(f"{what}: stopped at {inflated} bytes ({bound})")
                break
            name = _clean(member.name)
            if name is None:
                files.note(f"{what}: refused a member that climbs out of the image: {member.name[:120]!r}")
                continue
            base = os.path.basename(name)
            folder = os.path.dirname(name)
            if base == OPAQUE:
                opaque.append(folder)
                continue
            if base.startswith(WHITEOUT):
                deleted.append(os.path.join(folder, base[len(WHITEOUT):]))
                continue
            if member.isdir():
                if SITE.match(name):
                    own.site_packages.add(name)
                continue
            entry = _entry(member, index)
            if entry is None:
                continue
            kind = _wanted(name, own, framework_libraries)
            if kind is None:
                continue
            if files.kept + len(added) >= MAX_ENTRIES and name not in added:
                files.note(f"{what}: more than {MAX_ENTRIES} files that matter; the rest was not read")
                continue
            if kind == "small" and entry.kind == "file":
                if member.size > SMALL_LIMIT:
                    files.note(f"{what}: {name} is {member.size} bytes, too big for what it is; not read")
                    continue
                if files.small_bytes + member.size > MAX_SMALL_TOTAL:
                    files.note(f"{what}: {name} not read: the small files read so far hold {MAX_SMALL_TOTAL} bytes")
                    continue
                files.small_bytes += member.size
                read = archive.extractfile(member)
                entry.content = read.read(SMALL_LIMIT + 1) if read is not None else b""
            added[name] = entry
        if complete:
            if end > plain.delivered:  # a tar stream that ends inside a member's data: tarfile says nothing
                raise EOFError(f"the layer ends at {plain.delivered} bytes, inside a member that ends at {end}")
            check_tar_end(plain, plain.delivered)  # cut in its end marker or padding, or its gzip stream cut
        if hashing is not None:
            hashing.drain(limit)
            files.bytes_read += hashing.count
    except (tarfile.TarError, EOFError, OSError, ValueError) as error:
        raise DoctorError(f"image {ref}: {what} cannot be read to its end ({type(error).__name__}: {error})",
                          fix="the image is damaged or truncated: save or push it again", exit_code=2, code="CD005") from None
    finally:
        close = getattr(raw, "close", None)
        if close is not None:
            close()
    if hashing is not None and hashing.count <= limit and hashing.hash.hexdigest() != expected:
        raise DoctorError(f"image {ref}: {what} does not match its digest", exit_code=2,
                          fix="the image is damaged or was changed: save or push it again", code="CD005")
    files.kept += len(added)
    return own


def _can_hold(size: int | None, gzipped: bool) -> int | None:
    """The most bytes of tar a layer blob of SIZE bytes can hold: itself, or as gzip DEFLATE_MAX_RATIO times it (and
    its header's slack); None where its size is not known."""
    if size is None:
        return None
    return DEFLATE_MAX_RATIO * size + (1 << 16) if gzipped else size


def _merge(files: ImageFiles, layer: _LayerFiles) -> None:
    """A layer's whiteouts remove from the layers below it (OCI image spec, 'Representing Changes'), then its files.
    Each path is looked up by its folders in sets of what is gone: linear, where 30,000 whiteouts against every path
    took 45 s."""
    gone = set(layer.deleted)
    cleared = set(layer.opaque)  # an opaque folder keeps only what this layer adds under it

    def removed(path: str, whiteouts_only: bool = False) -> bool:
        parts = path.split("/")
        for depth in range(len(parts), 0, -1):
            folder = "/".join(parts[:depth])
            if folder in gone or (not whiteouts_only and depth < len(parts) and folder in cleared):
                return True
        return not whiteouts_only and "" in cleared

    if gone or cleared:
        files.entries = {path: entry for path, entry in files.entries.items() if not removed(path)}
        files.site_packages = {site for site in files.site_packages if not removed(site, whiteouts_only=True)}
    files.entries.update(layer.added)
    files.site_packages |= layer.site_packages
    files.libraries_under_site |= layer.libraries_under_site


def _entry(member: tarfile.TarInfo, index: int) -> Entry | None:
    if member.isfile():
        return Entry("file", member.size, index)
    if member.issym() or member.islnk():
        return Entry("link", 0, index, link=member.linkname[:4096])
    return None


def _wanted(name: str, files: _LayerFiles, framework_libraries: tuple[str, ...]) -> str | None:
    """"small" for a file whose text is read, "name" for one whose name (and link) is enough, else None."""
    if LIBRARY.match(os.path.basename(name)):
        return "name"
    if any(pattern.match(name) for pattern in ROOT_FILES):
        return "small"
    site, _, inside = _split_site(name)
    if site is None:
        return None
    files.site_packages.add(site)
    for pattern, _what in SMALL_FILES:
        if fnmatch.fnmatchcase(inside, pattern) and inside.count("/") == pattern.count("/"):
            return "small"
    if any(fnmatch.fnmatchcase(inside, pattern) for pattern in framework_libraries):
        files.libraries_under_site.add(name)
        return "name"
    return None


def _split_site(name: str) -> tuple[str | None, str, str]:
    parts = name.split("/")
    for position, part in enumerate(parts):
        if part in ("site-packages", "dist-packages"):
            return "/".join(parts[:position + 1]), part, "/".join(parts[position + 1:])
    return None, "", name


def _clean(name: str) -> str | None:
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or any(len(p) > 255 for p in parts) or "\0" in name:
        return None
    return "/".join(parts)


class _Plain:
    """The layer's tar stream: gunzipped where it is gzip (to its end-of-stream marker: a layer cut short is an
    error, which tarfile's own stream mode does not see), with the bytes delivered counted."""

    def __init__(self, raw: _Prefixed, gzipped: bool) -> None:
        import zlib

        self.raw = raw
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
        self.pending = b""
        self.delivered = 0
        self.trailing = False  # past the last gzip member: what is left is read and ignored

    def read(self, size: int = -1) -> bytes:
        if self.inflate is None:
            data = self.raw.read(size)
        else:
            import zlib

            while size < 0 or len(self.pending) < size:
                chunk = self.inflate.unconsumed_tail
                if self.inflate.eof:
                    chunk = self.inflate.unused_data  # what follows the member: another member, or trailing bytes
                    while len(chunk) < 2 and not self.trailing:
                        more = self.raw.read(1 << 16)
                        if not more:
                            break
                        chunk += more
                    if chunk[:2] == b"\x1f\x8b" and not self.trailing:
                        # another gzip member: gzip -d and Go's reader (docker's, containerd's) go on with it, its
                        # bytes following the first's (pigz, `cat a.gz b.gz`, a writer that flushes members)
                        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    else:  # bytes after the last member: read (the blob's digest covers them) and ignored, as gzip does
                        self.trailing = True
                        if not self.raw.read(1 << 16):
                            break
                        continue
                if not chunk:
                    chunk = self.raw.read(1 << 16)
                    if not chunk:
                        raise EOFError("the layer's gzip stream ends before its end-of-stream marker")
                try:  # at most 1 MiB out per step: a small blob that inflates hugely is read as it goes
                    self.pending += self.inflate.decompress(chunk, 1 << 20)
                except zlib.error as error:
                    raise EOFError(f"the layer's gzip stream is damaged ({error})") from None
            data, self.pending = (self.pending, b"") if size < 0 else (self.pending[:size], self.pending[size:])
        self.delivered += len(data)
        return data


class _Prefixed:
    """HEAD (already read to look at the magic bytes) followed by the rest of STREAM."""

    def __init__(self, head: bytes, stream: IO[bytes] | _Hashing) -> None:
        self.head = head
        self.stream = stream

    def read(self, size: int = -1) -> bytes:
        if self.head:
            if size < 0:
                data, self.head = self.head + self.stream.read(), b""
                return data
            data, self.head = self.head[:size], self.head[size:]
            if len(data) < size:
                data += self.stream.read(size - len(data))
            return data
        return self.stream.read(size)
