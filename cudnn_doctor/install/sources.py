"""Where the archive comes from: a local file, a URL, or a version looked up in NVIDIA's
redistributable manifest (under a base URL that --mirror replaces)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.install import download as downloads
from cudnn_doctor.install.redistrib import DEFAULT_BASE_URL, FULL_VERSION, manifest_name, newest_matching, pick_file

CUDA_IN_NAME = (re.compile(r"_cuda(\d+)"), re.compile(r"nvidia_cudnn_cu(\d+)"), re.compile(r"^cudnn-(\d+)\.\d+-"))


@dataclass(frozen=True)
class Request:
    """What the user asked for (the install command's source options)."""

    location: str | None  # --from PATH_OR_URL
    version: str | None  # --version
    cuda_major: int | None  # --cuda
    mirror: str | None  # --mirror
    sha256: str | None  # --sha256


@dataclass(frozen=True)
class Source:
    """A resolved source: where the bytes are, and what they must hash to."""

    description: str
    url: str | None  # None for a local file
    path: str | None  # the local file (set for --from PATH, or once downloaded)
    name: str  # file name
    sha256: str | None
    size: int | None
    cuda_major: int | None  # the CUDA variant, as far as the name or manifest tells
    release: str | None = None  # the manifest's four-part version


def is_url(text: str) -> bool:
    return urlparse(text).scheme in ("http", "https", "file")


def resolve(request: Request, platform: str, http_factory: Callable[[], object],
            default_cuda: int | None) -> Source:
    """Turn the options into a Source; fetches the manifest for --version."""
    if request.location and request.version:
        raise DoctorError("give either --from or --version, not both", exit_code=2)
    if request.location:
        return _from_location(request)
    if not request.version:
        raise DoctorError("nothing to install: give --from PATH_OR_URL or --version X.Y.Z",
                          "for example `cudnn-doctor install --version 9.19.0 --cuda 13`", exit_code=2)
    return _from_manifest(request, platform, http_factory(), default_cuda)


def _from_location(request: Request) -> Source:
    location = request.location or ""
    if location.startswith("file://"):
        location = unquote(urlparse(location).path)
    if is_url(location):
        name = os.path.basename(unquote(urlparse(location).path)) or "download"
        return Source(f"URL {location}", location, None, name, request.sha256, None, cuda_in_name(name))
    path = os.path.abspath(os.path.expanduser(location))
    if not os.path.isfile(path):
        raise DoctorError(f"no such archive: {location}", "pass an existing .tar.xz, .tgz, .zip or .whl file",
                          exit_code=2)
    name = os.path.basename(path)
    return Source(f"archive {path}", None, path, name, request.sha256, None, cuda_in_name(name))


def mirror_base(mirror: str | None) -> str:
    """The base URL: --mirror (a URL, or a local folder for air-gapped sites), else NVIDIA's."""
    base = mirror or os.environ.get("CUDNN_DOCTOR_MIRROR") or DEFAULT_BASE_URL
    if not is_url(base):
        folder = os.path.abspath(os.path.expanduser(base))
        if not os.path.isdir(folder):
            raise DoctorError(f"--mirror {base}: no such folder", "give a URL or a folder holding "
                              "redistrib_<version>.json and the cudnn/ tree beside it", exit_code=2)
        base = Path(folder).as_uri()
    return base.rstrip("/") + "/"


def _from_manifest(request: Request, platform: str, http, default_cuda: int | None) -> Source:  # type: ignore[no-untyped-def]
    base = mirror_base(request.mirror)
    version = request.version or ""
    if not FULL_VERSION.match(version):
        listing = _try_listing(http, base)
        found = newest_matching(listing, version) if listing else None
        if found is None:
            raise DoctorError(f"cannot resolve cuDNN {version!r}: {base} lists no matching redistrib_*.json",
                              "give a full version, e.g. --version 9.19.0", exit_code=2)
        version = found
    manifest_url = urljoin(base, manifest_name(version))
    text = _read_local(manifest_url) if manifest_url.startswith("file:") else downloads.fetch_text(http, manifest_url)
    try:
        manifest = json.loads(text)
    except ValueError:
        raise DoctorError(f"{manifest_url} is not valid JSON", exit_code=2) from None
    chosen = pick_file(manifest, platform, request.cuda_major if request.cuda_major else default_cuda_for(
        manifest, platform, default_cuda), manifest_url)
    url = urljoin(base, chosen.relative_path)
    return Source(f"cuDNN {chosen.version} for CUDA {chosen.cuda_major} ({platform}) from {base}", url, None,
                  os.path.basename(chosen.relative_path), request.sha256 or chosen.sha256, chosen.size,
                  chosen.cuda_major, chosen.version)


def default_cuda_for(manifest: dict, platform: str, preferred: int | None) -> int | None:  # type: ignore[type-arg]
    """The toolkit's (or driver's) CUDA major when the manifest has that variant, else None (the newest)."""
    entry = manifest.get("cudnn", {}).get(platform)
    if preferred is not None and isinstance(entry, dict) and f"cuda{preferred}" in entry:
        return preferred
    return None


def _read_local(url: str) -> str:
    path = unquote(urlparse(url).path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise DoctorError(f"cannot read {path}: {error.strerror}", "check the version and the --mirror folder",
                          exit_code=2) from None


def _try_listing(http, base: str) -> str | None:  # type: ignore[no-untyped-def]
    if base.startswith("file:"):
        folder = unquote(urlparse(base).path)
        return "\n".join(sorted(os.listdir(folder))) if os.path.isdir(folder) else None
    try:
        answer = http.get(base, timeout=30)
    except Exception:  # noqa: BLE001 - any failure means "cannot list"; the caller says so
        return None
    return answer.text if answer.status_code == 200 else None


def cuda_in_name(name: str) -> int | None:
    for pattern in CUDA_IN_NAME:
        match = pattern.search(name)
        if match:
            return int(match.group(1))
    return None


def fetch(source: Source, http_factory: Callable[[], object], cache: Path,
          progress: Callable[[int, int | None], None] | None) -> Source:
    """SOURCE with a local, verified file: downloaded into CACHE, or a local file's sha256 checked."""
    from dataclasses import replace

    if source.url is not None and source.url.startswith("file:"):
        local = unquote(urlparse(source.url).path)
        if not os.path.isfile(local):
            raise DoctorError(f"no such archive: {local}", "copy it into the mirror folder", exit_code=2)
        source = replace(source, url=None, path=local)
    if source.url is None:
        path = Path(source.path or "")
        if source.size is not None and path.stat().st_size != source.size:
            raise DoctorError(f"CD501 checksum mismatch: {source.name}: expected {source.size} bytes, got "
                              f"{path.stat().st_size}; nothing was written", "copy the archive again", exit_code=2)
        if source.sha256:
            actual = downloads.sha256_of(path)
            if actual != source.sha256.lower():
                raise downloads.checksum_error(source.name, source.sha256.lower(), actual)
        return source
    path = downloads.download(http_factory(), source.url, cache / "downloads", source.name, source.sha256,
                              source.size, progress)
    return replace(source, path=str(path))
