"""Where an image comes from: a docker archive or OCI archive (a tar file), an OCI layout folder, a registry (HTTP API
v2). Each gives the image's manifest, its configuration and a way to open each layer as a stream."""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import os
import re
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.operating_system import CURRENT

DIGEST = re.compile(r"^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
MAX_JSON = 8 << 20  # a manifest, index or configuration: kilobytes in real life
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEXES = (OCI_INDEX, DOCKER_LIST)
ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le"}
REFERENCE = re.compile(r"^(?P<host>[A-Za-z0-9.-]+(?::\d{1,5})?|\[[0-9a-fA-F:]+\](?::\d{1,5})?)/"
                       r"(?P<name>[a-z0-9]+(?:[._/-][a-z0-9]+)*)(?::(?P<tag>[\w][\w.-]{0,127}))?"
                       r"(?:@(?P<digest>sha256:[a-f0-9]{64}))?$")


@dataclass
class Layer:
    digest: str
    media_type: str
    size: int | None
    open: Callable[[], IO[bytes]]  # a stream of the layer blob (compressed as its media type says)


@dataclass
class ImageParts:
    source: str  # "docker-archive" | "oci-layout" | "oci-archive" | "registry"
    reference: str
    config: dict[str, Any]
    layers: list[Layer]
    manifest_digest: str | None = None
    notes: list[str] = field(default_factory=list)
    close: Callable[[], None] = lambda: None


def bad_image(ref: str, why: str, fix: str = "give a `docker save` archive, an OCI layout folder, or a registry "
                                               "reference such as 127.0.0.1:5000/name:tag") -> DoctorError:
    return DoctorError(f"image {ref}: {why}", fix=fix, exit_code=2, code="CD005")


def open_image(ref: str, arch: str) -> ImageParts:
    """The image REF names: a path (file or folder) when one exists there, else a registry reference."""
    if os.path.isdir(ref):
        return _oci_layout(ref, _FolderBlobs(ref), "oci-layout", arch)
    if os.path.exists(ref):
        return _archive(ref, arch)
    if REFERENCE.match(ref):
        return _registry(ref, arch)
    raise bad_image(ref, "no such file or folder, and not a registry reference (HOST[:PORT]/NAME[:TAG][@DIGEST])")


def _json(ref: str, raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
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
    manifests = [m for m in index.get("manifests", []) if isinstance(m, dict)]
    if not manifests:
        raise bad_image(ref, "its index lists no manifest")
    wanted = ARCHES.get(arch, arch)
    for manifest in manifests:
        platform = manifest.get("platform") or {}
        if platform.get("os") == "linux" and platform.get("architecture") == wanted:
            return manifest
    images = [m for m in manifests if m.get("mediaType") not in INDEXES and
              (m.get("platform") or {}).get("architecture") not in ("unknown",)]
    return images[0] if images else manifests[0]


def _layers_of(ref: str, manifest: dict[str, Any], opener: Callable[[str], IO[bytes]]) -> list[Layer]:
    layers = []
    for entry in manifest.get("layers", []):
        if not isinstance(entry, dict):
            raise bad_image(ref, "a layer entry that is not an object")
        digest = _checked_digest(ref, entry.get("digest"))
        size = entry.get("size") if isinstance(entry.get("size"), int) else None
        layers.append(Layer(digest, str(entry.get("mediaType", "")), size, functools.partial(opener, digest)))
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
        path = os.path.join(self.root, name)
        flags = os.O_RDONLY | CURRENT.open_flags
        try:
            descriptor = os.open(path, flags)
        except OSError as error:
            raise bad_image(self.root, f"{name}: {error.strerror}") from None
        import stat

        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise bad_image(self.root, f"{name}: not a regular file")
        return os.fdopen(descriptor, "rb")

    def exists(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self.root, name))


class _TarBlobs:
    def __init__(self, path: str, archive: tarfile.TarFile) -> None:
        self.path = path
        self.archive = archive
        self.members = {_clean(m.name): m for m in archive.getmembers() if _clean(m.name) is not None}

    def _member(self, name: str) -> tarfile.TarInfo:
        clean = _clean(name)
        member = self.members.get(clean or "")
        seen = 0
        while member is not None and member.issym() and seen < 8:  # docker save links repeated layers
            target = _clean(os.path.join(os.path.dirname(clean or ""), member.linkname))
            clean, member, seen = target, self.members.get(target or ""), seen + 1
        if member is None or not member.isfile():
            raise bad_image(self.path, f"names {name!r}, which the archive does not hold as a file")
        return member

    def read(self, name: str, limit: int) -> bytes:
        member = self._member(name)
        if member.size > limit:
            raise bad_image(self.path, f"{name} is {member.size} bytes, more than a {limit}-byte {name} can be")
        stream = self.archive.extractfile(member)
        return stream.read() if stream else b""

    def open(self, name: str) -> IO[bytes]:
        stream = self.archive.extractfile(self._member(name))
        if stream is None:
            raise bad_image(self.path, f"{name} cannot be read")
        return stream

    def exists(self, name: str) -> bool:
        return _clean(name) in self.members


def _clean(name: str) -> str | None:
    """A member name as a relative path, or None for one that climbs out ('..') or is empty."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


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
    config_digest = _checked_digest(ref, (manifest.get("config") or {}).get("digest"))
    raw_config = blobs.read(_blob_path(ref, config_digest), MAX_JSON)
    _verify(ref, raw_config, config_digest, "configuration")
    config = _json(ref, raw_config, "configuration")
    layers = _layers_of(ref, manifest, lambda d: blobs.open(_blob_path(ref, d)))
    return ImageParts(source, ref, config if isinstance(config, dict) else {}, layers, digest, notes)


# --- docker save archives (legacy and Docker 25+), OCI archives ---------------------------------------------------

def _archive(path: str, arch: str) -> ImageParts:
    try:
        archive = tarfile.open(path, "r:*")  # noqa: SIM115 - closed by ImageParts.close
    except (tarfile.TarError, OSError, EOFError) as error:
        raise bad_image(path, f"not a tar archive ({error})") from None
    try:
        blobs = _TarBlobs(path, archive)
        if not blobs.exists("manifest.json"):
            parts = _oci_layout(path, blobs, "oci-archive", arch)
        else:
            parts = _docker_archive(path, blobs)
    except BaseException:
        archive.close()
        raise
    parts.close = archive.close
    return parts


def _docker_archive(path: str, blobs: _TarBlobs) -> ImageParts:
    manifest = _json(path, blobs.read("manifest.json", MAX_JSON), "manifest.json")
    if not isinstance(manifest, list) or not manifest or not isinstance(manifest[0], dict):
        raise bad_image(path, "its manifest.json lists no image")
    notes = [f"the archive holds {len(manifest)} images; the first is read"] if len(manifest) > 1 else []
    entry = manifest[0]
    config = _json(path, blobs.read(str(entry.get("Config", "")), MAX_JSON), "configuration")
    layers = []
    for name in entry.get("Layers", []):
        if not isinstance(name, str) or _clean(name) is None:
            raise bad_image(path, f"a layer path that climbs out of the archive ({str(name)[:80]!r})")
        member = blobs._member(name)
        layers.append(Layer(name, "", member.size, functools.partial(blobs.open, name)))
    tags = entry.get("RepoTags") or []
    reference = f"{path} ({tags[0]})" if tags and isinstance(tags[0], str) else path
    return ImageParts("docker-archive", reference, config if isinstance(config, dict) else {}, layers, None, notes)


# --- a registry, through the registry HTTP API v2 -------------------------------------------------------------------

def _registry(ref: str, arch: str) -> ImageParts:
    match = REFERENCE.match(ref)
    assert match is not None
    host, name = match.group("host"), match.group("name")
    reference = match.group("digest") or match.group("tag") or "latest"
    scheme = "http" if _loopback(host) else "https"
    base = f"{scheme}://{host}/v2/{name}"
    from cudnn_doctor.install.download import session

    http = session()
    accept = ", ".join((OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST))

    def get(url: str, limit: int, headers: dict[str, str] | None = None) -> tuple[bytes, str]:
        try:
            answer = http.get(url, headers=headers or {}, stream=True, timeout=_timeout(), allow_redirects=True)
        except Exception as error:  # requests' and urllib3's own errors: one line
            raise bad_image(ref, f"the registry at {host} did not answer ({type(error).__name__})",
                            fix=f"check that the registry runs at {scheme}://{host}/v2/") from None
        with answer:
            if answer.status_code in (401, 403):
                raise bad_image(ref, f"the registry answers {answer.status_code}: it wants credentials",
                                fix="`docker pull` the image, then `docker save -o image.tar` it and give the archive")
            if answer.status_code == 404:
                raise bad_image(ref, f"the registry at {host} has no such image ({url.rsplit('/v2/', 1)[-1]})",
                                fix="check the name and tag (GET /v2/NAME/tags/list lists the tags)")
            if answer.status_code != 200:
                raise bad_image(ref, f"the registry answered HTTP {answer.status_code} for {url}")
            body = answer.raw.read(limit + 1, decode_content=True)
            if len(body) > limit:
                raise bad_image(ref, f"{url} sent more than {limit} bytes")
            return body, answer.headers.get("Content-Type", "").split(";")[0].strip()

    raw, media_type = get(f"{base}/manifests/{reference}", MAX_JSON, {"Accept": accept})
    if reference.startswith("sha256:"):
        _verify(ref, raw, reference, "manifest")
    manifest = _json(ref, raw, "manifest")
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    for _ in range(2):
        if not isinstance(manifest, dict):
            raise bad_image(ref, "its manifest is not an object")
        if (manifest.get("mediaType") or media_type) in INDEXES or "manifests" in manifest:
            entry = _pick(ref, manifest, arch)
            digest = _checked_digest(ref, entry.get("digest"))
            raw, media_type = get(f"{base}/manifests/{digest}", MAX_JSON, {"Accept": accept})
            _verify(ref, raw, digest, "manifest")
            manifest = _json(ref, raw, "manifest")
    config_digest = _checked_digest(ref, (manifest.get("config") or {}).get("digest"))
    raw_config, _ = get(f"{base}/blobs/{config_digest}", MAX_JSON)
    _verify(ref, raw_config, config_digest, "configuration")
    config = _json(ref, raw_config, "configuration")

    def open_blob(layer_digest: str) -> IO[bytes]:
        try:
            answer = http.get(f"{base}/blobs/{layer_digest}", stream=True, timeout=_timeout())
        except Exception as error:
            raise bad_image(ref, f"the registry at {host} did not answer ({type(error).__name__})") from None
        if answer.status_code != 200:
            answer.close()
            raise bad_image(ref, f"the registry answered HTTP {answer.status_code} for the layer {layer_digest}")
        answer.raw.decode_content = False  # the blob is compressed by its media type, not by HTTP
        return answer.raw  # type: ignore[no-any-return]

    parts = ImageParts("registry", ref, config if isinstance(config, dict) else {},
                       _layers_of(ref, manifest, open_blob), digest)
    parts.close = http.close
    return parts


def _loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1:host.index("]")]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _timeout() -> float:
    from cudnn_doctor.child import timeout_from_env

    return timeout_from_env("CUDNN_DOCTOR_IMAGE_TIMEOUT", 30.0)
