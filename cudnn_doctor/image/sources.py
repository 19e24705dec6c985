"""Where an image comes from: a docker archive or OCI archive (a tar file), an OCI layout folder, a registry (HTTP API
v2). Each gives the image's manifest, its configuration and a way to open each layer as a stream."""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from cudnn_doctor import json_values
from cudnn_doctor.compressed import Streams, kind_of
from cudnn_doctor.errors import DoctorError

DIGEST = re.compile(r"^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
MAX_JSON = 8 << 20  # a manifest, index or configuration: kilobytes in real life
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEXES = (OCI_INDEX, DOCKER_LIST)
ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le"}
MAX_LAYERS = 500  # Docker's and containerd's images stop near 127 (overlayfs' 128 lower layers)
MAX_ARCHIVE_MEMBERS = 100_000  # a docker save or OCI archive: a few files per layer; a layer is streamed apart


MAX_EXTENDED_HEADER = 1 << 20  # a pax header or GNU long name: a path (4 KiB on Linux) and a few attributes


class BoundedHeaders(tarfile.TarInfo):
    """A tar member whose pax header or GNU long name/link is refused past MAX_EXTENDED_HEADER bytes before it is
    read (tarfile reads one whole into memory: a header claiming 400 MB took 1.2 GB), and whose damaged header is
    an error (tarfile ends the archive there, silently, as if the rest were not there; Go's archive/tar, which
    docker uses, refuses it)."""

    @classmethod
    def fromtarfile(cls, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        buf = tarfile_.fileobj.read(tarfile.BLOCKSIZE)  # type: ignore[union-attr]
        try:
            obj = (cls._plain(buf, tarfile_.encoding or "utf-8", tarfile_.errors or "surrogateescape")
                   or cls.frombuf(buf, tarfile_.encoding, tarfile_.errors))  # type: ignore[arg-type]
        except tarfile.HeaderError as error:  # an InvalidHeaderError: tarfile would take it for the end, the rest lost
            at = tarfile_.fileobj.tell() - len(buf)  # type: ignore[union-attr]
            if type(error).__name__ == "TruncatedHeaderError":  # tarfile takes a header cut short for the end too
                raise tarfile.ReadError(f"the archive ends inside a header, at offset {at}") from None
            if type(error).__name__ != "InvalidHeaderError":  # the end's zero blocks, or nothing more (Go's reader,
                raise  # which docker uses, takes an archive without its end marker as whole)
            raise tarfile.ReadError(f"a damaged tar header at offset {at} ({error}): what follows cannot be "
                                    "read") from None
        obj.offset = tarfile_.fileobj.tell() - tarfile.BLOCKSIZE  # type: ignore[union-attr]
        if obj.type in EXTENDED and obj.size > MAX_EXTENDED_HEADER:
            raise tarfile.ReadError(f"a {obj.size}-byte extended header (pax or GNU long name) at "
                                                f"offset {obj.offset}, more than {MAX_EXTENDED_HEADER} a name can need")
        return obj._proc_member(tarfile_)  # type: ignore[attr-defined,no-any-return]

    @classmethod
    def _plain(cls, buf: bytes, encoding: str, errors: str) -> tarfile.TarInfo | None:
        """The member BUF holds, read as tarfile's frombuf reads it, where BUF is a plain ustar header (a file,
        folder or link; every number plain octal; its unsigned checksum right): a layer of 600,000 members is read
        in a third less time. None for anything else, which frombuf itself reads (and refuses)."""
        if len(buf) != tarfile.BLOCKSIZE or buf[156:157] not in PLAIN_TYPES or buf[257:262] != b"ustar":
            return None
        numbers = [buf[start:start + 8] for start in (100, 108, 116, 329, 337)] + [buf[124:136], buf[136:148],
                                                                                   buf[148:156]]
        if not all(OCTAL_FIELD.fullmatch(number) for number in numbers):
            return None
        mode, uid, gid, devmajor, devminor, size, mtime, chksum = (int(number.rstrip(b" \0") or b"0", 8)
                                                                   for number in numbers)
        if chksum != 256 + sum(buf) - sum(buf[148:156]):
            return None
        obj = cls()
        obj.name = buf[0:100].split(b"\0", 1)[0].decode(encoding, errors)
        obj.mode, obj.uid, obj.gid, obj.size, obj.mtime, obj.chksum = mode, uid, gid, size, mtime, chksum
        obj.type = buf[156:157]
        obj.linkname = buf[157:257].split(b"\0", 1)[0].decode(encoding, errors)
        obj.uname = buf[265:297].split(b"\0", 1)[0].decode(encoding, errors)
        obj.gname = buf[297:329].split(b"\0", 1)[0].decode(encoding, errors)
        obj.devmajor, obj.devminor = devmajor, devminor
        prefix = buf[345:500].split(b"\0", 1)[0].decode(encoding, errors)
        if obj.type == tarfile.AREGTYPE and obj.name.endswith("/"):  # as frombuf: V7's folder, then the rest
            obj.type = tarfile.DIRTYPE
        if obj.isdir():
            obj.name = obj.name.rstrip("/")
        if prefix:  # none of PLAIN_TYPES is a GNU type
            obj.name = prefix + "/" + obj.name
        return obj


# what _plain reads itself: a regular file (either mark), a hard or symbolic link, a folder; a number as nti reads
# octal (spaces before, NULs or spaces after)
PLAIN_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE, tarfile.DIRTYPE)
OCTAL_FIELD = re.compile(rb" *[0-7]*[ \0]*")


MAX_TAR_TAIL = 1 << 20  # what follows a tar's end marker: its record padding (10 KiB for GNU tar), read to be judged


def check_tar_end(stream: Any, at: int) -> None:
    """STREAM (at byte AT of the tar stream) read past the archive's end marker to its end, at most MAX_TAR_TAIL
    bytes: a tar is whole 512-byte blocks (POSIX ustar), so a length that is not is a copy cut short in the end
    marker or its padding; a compressed stream read to its end-of-stream marker (a cut one is an EOFError). Past
    MAX_TAR_TAIL, what follows is not judged."""
    tail = 0
    while tail <= MAX_TAR_TAIL:
        chunk = stream.read(1 << 16)
        if not chunk:
            if at % tarfile.BLOCKSIZE:
                raise EOFError(f"the archive is {at} bytes, not a whole number of 512-byte tar blocks: it was cut "
                               "short")
            return
        at += len(chunk)
        tail += len(chunk)


EXTENDED = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
            tarfile.SOLARIS_XHDTYPE)


@dataclass
class Layer:
    digest: str
    media_type: str
    size: int | None
    open: Callable[[], IO[bytes]]  # a stream of the layer blob (compressed as its media type says)
    # where its blob lies in an archive compressed as a whole (layers are read in this order, the one forward pass
    # such an archive allows, and merged in theirs); None: wherever (a folder, a registry)
    position: Callable[[], int] | None = None


@dataclass
class ImageParts:
    source: str  # "docker-archive" | "oci-layout" | "oci-archive" | "registry"
    reference: str
    config: dict[str, Any]
    layers: list[Layer]
    manifest_digest: str | None = None
    notes: list[str] = field(default_factory=list)
    close: Callable[[], None] = lambda: None
    # the error to say where the file read changed while it was read (another program still writing it), else None
    changed: Callable[[], DoctorError | None] = lambda: None


def bad_image(ref: str, why: str, fix: str = "give a `docker save` archive, an OCI layout folder, or a registry "
                                               "reference such as 127.0.0.1:5000/name:tag") -> DoctorError:
    return DoctorError(f"image {ref}: {why}", fix=fix, exit_code=2, code="CD005")


PATH_LIKE = re.compile(r"^(?:[/~]|\.{1,2}/|\.{1,2}$)|\.(?:tar|tar\.gz|tgz|oci)$|[/\\]$")


def open_image(ref: str, arch: str) -> ImageParts:
    """The image REF names: a path (file or folder) when one exists there, or when REF can only be a path
    (./app.tar, /srv/oci/); else a registry reference, read as docker reads it."""
    from cudnn_doctor.image.registry import parse_reference

    if os.path.isdir(ref):
        return _oci_layout(ref, _FolderBlobs(ref), "oci-layout", arch)
    if os.path.exists(ref):
        return _archive(ref, arch)
    if os.path.lexists(ref):
        raise bad_image(ref, "a link that leads nowhere", fix="give the archive or folder it should name")
    reference = None if PATH_LIKE.search(ref) else parse_reference(ref)
    if reference is None:
        fix = ("give a `docker save` archive, an OCI layout folder, or a reference such as nvidia/cuda:12.8.1-runtime-"
               "ubuntu24.04 or 127.0.0.1:5000/team/app:1")
        if PATH_LIKE.search(ref):
            raise bad_image(ref, "no such file or folder", fix=fix)
        raise bad_image(ref, "no such file or folder, and not an image reference ([HOST[:PORT]/]NAME[:TAG][@DIGEST])",
                        fix=fix)
    return _registry(ref, reference, arch)


def _object(value: object) -> dict[str, Any]:
    """VALUE where it is a JSON object, else an empty one: every field of a manifest, index or configuration is
    read through these, so a wrong type is a missing field, never an internal error."""
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _json(ref: str, raw: bytes, what: str) -> Any:
    try:
        return json_values.loads(raw)
    except (ValueError, RecursionError):
        raise bad_image(ref, f"its {what} is not JSON") from None


def _checked_digest(ref: str, digest: object) -> str:
    if not isinstance(digest, str) or not DIGEST.match(digest):
        raise bad_image(ref, f"a digest that is not one ({str(digest)[:80]!r})")
    return digest


def _verify(ref: str, raw: bytes, digest: str, what: str) -> None:
    algorithm, _, hexdigest = digest.partition(":")
    if hashlib.new(algorithm, raw).hexdigest() != hexdigest:
        raise bad_image(ref, f"its {what} does not match its digest {digest}", fix="the image is damaged or was "
                                                                                  "changed: save or push it again")


def _pick(ref: str, index: dict[str, Any], arch: str) -> dict[str, Any]:
    """The manifest of INDEX for linux on ARCH, else its only one."""
    manifests = [m for m in _list(index.get("manifests")) if isinstance(m, dict)]
    if not manifests:
        raise bad_image(ref, "its index lists no manifest")
    wanted = ARCHES.get(arch, arch)
    for manifest in manifests:
        platform = _object(manifest.get("platform"))
        if platform.get("os") == "linux" and platform.get("architecture") == wanted:
            return manifest
    images = [m for m in manifests if m.get("mediaType") not in INDEXES and
              _object(m.get("platform")).get("architecture") not in ("unknown",)]
    return images[0] if images else manifests[0]


def _too_many_layers(ref: str, count: int) -> None:
    if count > MAX_LAYERS:
        raise bad_image(ref, f"{count} layers: more than the {MAX_LAYERS} an image can have (overlayfs stacks at "
                             "most 128 lower layers)")


def _layers_of(ref: str, manifest: dict[str, Any], opener: Callable[[str], IO[bytes]],
               position: Callable[[str], int] | None = None) -> list[Layer]:
    layers = []
    _too_many_layers(ref, len(_list(manifest.get("layers"))))
    for entry in _list(manifest.get("layers")):
        if not isinstance(entry, dict):
            raise bad_image(ref, "a layer entry that is not an object")
        digest = _checked_digest(ref, entry.get("digest"))
        size = entry.get("size") if isinstance(entry.get("size"), int) else None
        layers.append(Layer(digest, _text(entry.get("mediaType")) or "", size, functools.partial(opener, digest),
                            functools.partial(position, digest) if position is not None else None))
    return layers


# --- OCI layout: a folder, or the same inside a tar -------------------------------------------------------------------

class _FolderBlobs:
    def __init__(self, root: str) -> None:
        self.root = root

    def read(self, name: str, limit: int) -> bytes:
        from cudnn_doctor.user_files import UnreadableFile, read_user_file

        try:
            return read_user_file(os.path.join(self.root, name), limit)
        except UnreadableFile as error:
            raise bad_image(self.root, f"{name}: {error}") from None

    def open(self, name: str) -> IO[bytes]:
        from cudnn_doctor.user_files import UnreadableFile, open_user_file

        try:
            return open_user_file(os.path.join(self.root, name))
        except UnreadableFile as error:
            raise bad_image(self.root, f"{name}: {error}") from None

    def exists(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self.root, name))


# the small members of an archive (manifests, configurations, index.json: kilobytes) are kept as the archive is
# listed, where the reader already is: one compressed as a whole then goes back to its start for none of them
SMALL_MEMBERS_TOTAL = 32 << 20


class _TarBlobs:
    def __init__(self, path: str, archive: tarfile.TarFile) -> None:
        self.path = path
        self.archive = archive
        self.members: dict[str | None, tarfile.TarInfo] = {}
        self.small: dict[int, bytes] = {}  # a small member's bytes, by where its data starts
        kept = 0
        try:
            while True:
                member = archive.next()
                if member is None:
                    break
                if len(archive.members) > MAX_ARCHIVE_MEMBERS:  # type: ignore[attr-defined]
                    raise bad_image(path, f"more than {MAX_ARCHIVE_MEMBERS} members: not an image archive")
                if _clean(member.name) is not None:
                    self.members[_clean(member.name)] = member
                if member.isfile() and member.size <= MAX_JSON and kept + member.size <= SMALL_MEMBERS_TOTAL:
                    stream = archive.extractfile(member)  # read from where the listing stands: no seek back
                    data = stream.read(member.size) if stream is not None else b""
                    if len(data) == member.size:
                        self.small[member.offset_data] = data
                        kept += member.size
            fileobj = archive.fileobj
            if fileobj is not None:
                check_tar_end(fileobj, fileobj.tell())
        except (tarfile.TarError, EOFError, OSError, ValueError) as error:
            raise bad_image(path, f"the archive is damaged or truncated ({type(error).__name__}: {error})",
                            fix="save the image again (docker save -o image.tar IMAGE)") from None

    def _member(self, name: str) -> tarfile.TarInfo:
        clean = _clean(name)
        member = self.members.get(clean or "")
        seen = 0
        while member is not None and member.issym() and seen < 8:  # docker save links repeated layers
            target = _link_target(clean or "", member.linkname)
            clean, member, seen = target, self.members.get(target or ""), seen + 1
        if member is None or not member.isfile():
            raise bad_image(self.path, f"names {name!r}, which the archive does not hold as a file")
        return member

    def read(self, name: str, limit: int) -> bytes:
        member = self._member(name)
        if member.size > limit:
            raise bad_image(self.path, f"{name} is {member.size} bytes, more than a {limit}-byte {name} can be")
        if member.offset_data in self.small:
            return self.small[member.offset_data]
        try:
            stream = self.archive.extractfile(member)
            data = stream.read() if stream else b""
        except (tarfile.TarError, EOFError, OSError, ValueError) as error:
            raise bad_image(self.path, f"{name} cannot be read ({type(error).__name__}: {error})") from None
        if len(data) != member.size:
            raise bad_image(self.path, f"the archive ends inside {name} ({len(data)} of {member.size} bytes)",
                            fix="save the image again (docker save -o image.tar IMAGE)")
        return data

    def open(self, name: str) -> IO[bytes]:
        member = self._member(name)
        if member.offset_data in self.small:
            return io.BytesIO(self.small[member.offset_data])
        stream = self.archive.extractfile(member)
        if stream is None:
            raise bad_image(self.path, f"{name} cannot be read")
        return stream

    def position(self, name: str) -> int:
        """Where NAME's data starts in the archive (its link followed)."""
        return int(self._member(name).offset_data)

    def exists(self, name: str) -> bool:
        return _clean(name) in self.members


def _clean(name: str) -> str | None:
    """A member name as a relative path, or None for one that climbs out ('..') or is empty."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _link_target(name: str, linkname: str) -> str | None:
    """The member a symbolic link member NAME points to, as a relative path in the archive: LINKNAME taken from
    NAME's folder with its '..' steps resolved (Docker 25's save links layers/X.tar to ../blobs/sha256/X); None for
    an absolute target or one that climbs out of the archive."""
    import posixpath

    if linkname.startswith(("/", "\\")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(name), linkname.replace("\\", "/")))
    if joined == ".." or joined.startswith("../"):
        return None
    return _clean(joined)


def _blob_path(ref: str, digest: str) -> str:
    algorithm, _, hexdigest = _checked_digest(ref, digest).partition(":")
    return f"blobs/{algorithm}/{hexdigest}"


def _oci_layout(ref: str, blobs: _FolderBlobs | _TarBlobs, source: str, arch: str) -> ImageParts:
    if not blobs.exists("oci-layout") or not blobs.exists("index.json"):
        raise bad_image(ref, "not an OCI layout (no oci-layout and index.json) nor a docker archive (no manifest.json)")
    index = _json(ref, blobs.read("index.json", MAX_JSON), "index.json")
    notes: list[str] = []
    entry = _pick(ref, index if isinstance(index, dict) else {}, arch)
    for _ in range(4):  # an index may point at an index (a multi-platform image inside a layout)
        digest = _checked_digest(ref, entry.get("digest"))
        raw = blobs.read(_blob_path(ref, digest), MAX_JSON)
        _verify(ref, raw, digest, "manifest")
        manifest = _json(ref, raw, "manifest")
        if not isinstance(manifest, dict):
            raise bad_image(ref, "its manifest is not an object")
        if manifest.get("mediaType") in INDEXES or "manifests" in manifest:
            entry = _pick(ref, manifest, arch)
            continue
        break
    else:
        raise bad_image(ref, "indexes nested deeper than 4")
    config_digest = _checked_digest(ref, _object(manifest.get("config")).get("digest"))
    raw_config = blobs.read(_blob_path(ref, config_digest), MAX_JSON)
    _verify(ref, raw_config, config_digest, "configuration")
    config = _json(ref, raw_config, "configuration")
    layers = _layers_of(ref, manifest, lambda d: blobs.open(_blob_path(ref, d)),
                        (lambda d: blobs.position(_blob_path(ref, d))) if isinstance(blobs, _TarBlobs) else None)
    return ImageParts(source, ref, config if isinstance(config, dict) else {}, layers, digest, notes)


# --- docker save archives (legacy and Docker 25+), OCI archives ---------------------------------------------------

# An archive compressed as a whole (docker save | gzip) has no random access: each member is reached by decompressing
# up to it, from its beginning where it lies behind. The work is bounded by the archive's size, so that one that
# inflates without end (a gzip bomb: 1,000 to 1) is refused in seconds; a real one is read in two passes (listed,
# its small members kept; then its layers in the order they lie, layers.read_layers), a few times its size.
WHOLE_ARCHIVE_INFLATE = 64
WHOLE_ARCHIVE_SLACK = 1 << 30


class _BoundedInflate:
    """A whole-archive compressed stream (gzip, bzip2, xz) whose reads and seeks are counted as the decompression
    they cost (a seek back starts over), refused past LIMIT bytes with one line that says to decompress it first."""

    def __init__(self, raw: Any, limit: int, path: str) -> None:
        self.raw, self.limit, self.path, self.spent = raw, limit, path, 0

    def _spend(self, count: int) -> None:
        self.spent += max(0, count)
        if self.spent > self.limit:
            raise bad_image(self.path, f"it is compressed as a whole, and reading it would decompress more than "
                                       f"{self.limit} bytes ({WHOLE_ARCHIVE_INFLATE} times its size and 1 GiB): "
                                       "each member is reached by decompressing from the start, and an archive that "
                                       "inflates without end never ends",
                            fix="decompress it first (gunzip -k, bunzip2 -k or unxz -k) and give the .tar, which is "
                                "read at once")

    def read(self, size: int = -1) -> bytes:
        data: bytes = self.raw.read(size)
        self._spend(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        here = self.raw.tell()
        target = offset if whence == 0 else here + offset if whence == 1 else None
        if target is not None:
            self._spend(target - here if target >= here else target)
        return int(self.raw.seek(offset, whence))

    def tell(self) -> int:
        return int(self.raw.tell())

    def close(self) -> None:
        self.raw.close()


def _compression(head: bytes) -> str:
    """The tarfile mode suffix of an archive starting with HEAD: gz, bz2 or xz by their magic bytes, else plain."""
    return kind_of(head) or ""


def _stamp(stream: IO[bytes]) -> tuple[int, int] | None:
    """(size, modification time) of the open file under STREAM."""
    try:
        status = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return None
    return status.st_size, status.st_mtime_ns


RECENT_S = 2.0  # a file modified this recently, seen damaged, is watched a moment for a writer still at it
WATCH_S = 1.0


def _still_written(stream: IO[bytes], stamp: tuple[int, int]) -> bool:
    """Whether the file under STREAM changed since STAMP (its size and modification time when it was opened), or,
    where it did not and was modified in the last RECENT_S seconds, changes within WATCH_S more: a writer starved of
    the processor for the whole read (a loaded machine) still looks like a file cut short. Asked only on the way to
    an error, so the watch costs nothing on a whole archive."""
    import time

    now = _stamp(stream)
    if now is None:
        return False
    if now != stamp:
        return True
    if time.time() - stamp[1] / 1e9 > RECENT_S:
        return False
    ends = time.monotonic() + WATCH_S
    while time.monotonic() < ends:
        time.sleep(0.05)
        if _stamp(stream) not in (stamp, None):
            return True
    return False


def _archive(path: str, arch: str) -> ImageParts:
    import bz2

    from cudnn_doctor.user_files import UnreadableFile, open_user_file

    try:  # a FIFO or a device (/dev/zero) named as the archive is refused, never waited on or read without end
        stream = open_user_file(path)
    except UnreadableFile as error:
        raise bad_image(path, str(error)) from None
    stamp = _stamp(stream)

    def changed() -> DoctorError | None:
        """A file written while it is read (a `docker save -o` still running, a copy in progress) is read in two
        passes from two states: its members' places no longer hold them, or one image's configuration is judged
        with another's layers. Said as what it is, not as a damaged archive or a verdict."""
        if stamp is None or not _still_written(stream, stamp):
            return None
        return bad_image(path, "the archive changed while it was read (another program is writing it: a docker "
                               "save still running, a copy in progress)",
                         fix="read it once it is written whole (or a copy of it made first)")

    try:
        # the compression named by the file's first bytes: tarfile's "r:*" tries xz on any file, and xz reads zeros
        # as stream padding, to the end (a sparse 10 GB file of zeros, eighteen minutes)
        kind = _compression(stream.read(6))
        stream.seek(0)
        if kind in ("gz", "xz"):  # read as gzip(1) and xz(1) read them: several streams, zero padding
            unpacked: IO[bytes] = io.BufferedReader(Streams(stream, kind), Streams.CHUNK)
            archive = tarfile.open(name=path, mode="r:", fileobj=unpacked, tarinfo=BoundedHeaders)  # type: ignore[call-overload]  # noqa: SIM115
        else:
            archive = tarfile.open(name=path, mode=f"r:{kind}", fileobj=stream, tarinfo=BoundedHeaders)  # type: ignore[call-overload]  # noqa: SIM115
    except (tarfile.TarError, OSError, EOFError) as error:
        said = changed() or bad_image(path, f"not a tar archive ({error})")
        stream.close()
        raise said from None
    if isinstance(archive.fileobj, (io.BufferedReader, bz2.BZ2File)):
        size = os.fstat(stream.fileno()).st_size
        archive.fileobj = _BoundedInflate(archive.fileobj, WHOLE_ARCHIVE_INFLATE * size + WHOLE_ARCHIVE_SLACK,
                                          path)  # type: ignore[assignment]
    try:
        blobs = _TarBlobs(path, archive)
        if not blobs.exists("manifest.json"):
            parts = _oci_layout(path, blobs, "oci-archive", arch)
        else:
            parts = _docker_archive(path, blobs)
    except DoctorError:
        written = changed()
        archive.close()
        stream.close()
        if written is not None:
            raise written from None
        raise
    except BaseException:
        archive.close()
        stream.close()
        raise

    def close() -> None:  # the archive, and the file under it (a compressed archive's reader leaves it open)
        archive.close()
        stream.close()

    parts.close, parts.changed = close, changed
    return parts


def _docker_archive(path: str, blobs: _TarBlobs) -> ImageParts:
    manifest = _json(path, blobs.read("manifest.json", MAX_JSON), "manifest.json")
    if not isinstance(manifest, list) or not manifest or not isinstance(manifest[0], dict):
        raise bad_image(path, "its manifest.json lists no image")
    notes = [f"the archive holds {len(manifest)} images; the first is read"] if len(manifest) > 1 else []
    entry = manifest[0]
    config_name = _text(entry.get("Config"))
    if not config_name:
        raise bad_image(path, "its manifest.json names no configuration (Config)")
    config = _json(path, blobs.read(config_name, MAX_JSON), "configuration")
    layers = []
    _too_many_layers(path, len(_list(entry.get("Layers"))))
    for name in _list(entry.get("Layers")):
        if not isinstance(name, str) or _clean(name) is None:
            raise bad_image(path, f"a layer path that climbs out of the archive ({str(name)[:80]!r})")
        member = blobs._member(name)
        layers.append(Layer(name, "", member.size, functools.partial(blobs.open, name),
                            functools.partial(blobs.position, name)))
    tags = _list(entry.get("RepoTags"))
    reference = f"{path} ({tags[0]})" if tags and isinstance(tags[0], str) else path
    return ImageParts("docker-archive", reference, config if isinstance(config, dict) else {}, layers, None, notes)


# --- a registry, through the registry HTTP API v2 (image/registry.py) ---------------------------------------------

def _registry(ref: str, reference: Any, arch: str) -> ImageParts:
    from cudnn_doctor.image.registry import Registry

    registry = Registry(ref, reference)
    try:
        return _from_registry(ref, registry, arch)
    except BaseException:
        registry.close()
        raise


def _from_registry(ref: str, registry: Any, arch: str) -> ImageParts:
    accept = ", ".join((OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST))
    wanted = registry.reference.wanted
    raw, media_type = registry.get_json(f"{registry.base}/manifests/{wanted}", MAX_JSON, accept)
    if registry.reference.digest:
        _verify(ref, raw, registry.reference.digest, "manifest")
    manifest = _json(ref, raw, "manifest")
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    notes: list[str] = []
    for _ in range(2):
        if not isinstance(manifest, dict):
            raise bad_image(ref, "its manifest is not an object")
        if (_text(manifest.get("mediaType")) or media_type) in INDEXES or "manifests" in manifest:
            entry = _pick(ref, manifest, arch)
            digest = _checked_digest(ref, entry.get("digest"))
            platform = _object(entry.get("platform"))
            count = len(_list(manifest.get("manifests")))
            notes.append(f"a multi-platform image ({count} manifests): the one for {_text(platform.get('os')) or '?'}/"
                         f"{_text(platform.get('architecture')) or '?'} was read (--platform chooses another)")
            raw, media_type = registry.get_json(f"{registry.base}/manifests/{digest}", MAX_JSON, accept)
            _verify(ref, raw, digest, "manifest")
            manifest = _json(ref, raw, "manifest")
    if not isinstance(manifest, dict) or "manifests" in manifest:
        raise bad_image(ref, "its index points at another index, and that at another")
    config_digest = _checked_digest(ref, _object(manifest.get("config")).get("digest"))
    raw_config, _ = registry.get_json(f"{registry.base}/blobs/{config_digest}", MAX_JSON)
    _verify(ref, raw_config, config_digest, "configuration")
    config = _json(ref, raw_config, "configuration")
    sizes = {_text(e.get("digest")): e.get("size") for e in _list(manifest.get("layers")) if isinstance(e, dict)}

    def open_blob(layer_digest: str) -> IO[bytes]:
        size = sizes.get(layer_digest)
        return registry.open_blob(layer_digest, size if isinstance(size, int) and size >= 0 else None)  # type: ignore[no-any-return]

    parts = ImageParts("registry", ref, config if isinstance(config, dict) else {},
                       _layers_of(ref, manifest, open_blob), digest, notes[-1:])
    parts.close = registry.close
    return parts
