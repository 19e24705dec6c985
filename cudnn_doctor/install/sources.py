"""Where the archive comes from: a local file, a URL, or a version looked up in NVIDIA's
redistributable manifest (under a base URL that --mirror replaces)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

from cudnn_doctor import json_values
from cudnn_doctor.codes import doctor_error
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.install import download as downloads
from cudnn_doctor.install.redistrib import (
    DEFAULT_BASE_URL,
    FULL_VERSION,
    file_name,
    manifest_name,
    newest_matching,
    pick_file,
)
from cudnn_doctor.install.safety import printable
from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.quoting import redacted_url
from cudnn_doctor.variables import expand_user

CUDA_IN_NAME = (re.compile(r"_cuda(\d+)"), re.compile(r"nvidia_cudnn_cu(\d+)"), re.compile(r"^cudnn-(\d+)\.\d+-"))


@dataclass(frozen=True)
class Request:
    """What the user asked for (the install command's source options)."""

    location: str | None  # --from PATH_OR_URL
    version: str | None  # --version
    cuda_major: int | None  # --cuda
    mirror: str | None  # --mirror
    sha256: str | None  # --sha256
    no_verify: bool = False  # --no-verify: a manifest entry without sha256 and size is installed unchecked


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
    warning: str | None = None  # said before anything is done (an unverified archive)


def is_url(text: str) -> bool:
    return urlparse(text).scheme in ("http", "https", "file")


def resolve(request: Request, platform: str, http_factory: Callable[[], object],
            default_cuda: int | None) -> Source:
    """Turn the options into a Source; fetches the manifest for --version."""
    if request.location and request.version:
        raise DoctorError("give either --from or --version, not both", exit_code=2, code="CD002")
    if request.location:
        return _from_location(request)
    if not request.version:
        raise DoctorError("nothing to install: give --from PATH_OR_URL or --version X.Y.Z",
                          "for example `cudnn-doctor install --version 9.19.0 --cuda 13`", exit_code=2, code="CD003")
    if not re.fullmatch(r"\d{1,4}(\.\d{1,4}){0,2}", request.version):
        raise DoctorError(f"--version {printable(request.version[:40])}{'...' if len(request.version) > 40 else ''} "
                          "is not a cuDNN version", "for example --version 9.19.0 (or 9, or 9.19)", exit_code=2, code="CD001")
    if request.cuda_major is not None and not 1 <= request.cuda_major <= 99:
        raise DoctorError(f"--cuda {str(request.cuda_major)[:20]} is not a CUDA major", "for example --cuda 13",
                          exit_code=2, code="CD001")
    return _from_manifest(request, platform, http_factory(), default_cuda)


def _from_location(request: Request) -> Source:
    location = request.location or ""
    if not location.strip():
        raise DoctorError("--from is empty: give an archive's path or URL", exit_code=2, code="CD001")
    if request.sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", request.sha256):
        raise DoctorError(f"--sha256 {request.sha256[:80]!r} is not 64 hexadecimal digits", exit_code=2, code="CD001")
    if location.startswith("file://"):
        location = local_path(location, "--from")
    if is_url(location):
        from cudnn_doctor.install.redistrib import file_name

        name = file_name(urlparse(location).path.rsplit("/", 1)[-1])
        if name is None:
            raise DoctorError(f"--from {printable(redacted_url(location)[:200])}: the URL names no archive file (it ends in a "
                              "folder, '..' or an encoded '/')", "give the URL of the archive file itself", exit_code=2, code="CD001")
        warning = None
        if urlparse(location).scheme == "http" and request.sha256 is None:
            warning = (f"--from {redacted_url(location)} comes over plain HTTP with no --sha256: the archive is unverified (anything "
                       "on the way could have changed it); pass --sha256 HEX from a source you trust, or use https")
        return Source(f"URL {redacted_url(location)}", location, None, name, request.sha256, None, cuda_in_name(name),
                      warning=warning)
    path = os.path.abspath(expand_user(location))
    readable_archive(path, location)
    name = os.path.basename(path)
    return Source(f"archive {path}", None, path, name, request.sha256, None, cuda_in_name(name))


def readable_archive(path: str, shown: str) -> None:
    """PATH must be a regular file this user can read: else one line saying which of those it is not."""
    import stat as stat_module

    def unreadable(why: str, fix: str) -> DoctorError:
        return doctor_error("CD515", exit_code=2, file=shown, why=why, fix=fix)

    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise unreadable("no such file", "pass an existing .tar.xz, .tgz, .zip or .whl file") from None
    except OSError as error:
        raise unreadable(f"cannot look at it ({error.strerror})", "check the path and its folders' "
                         "permissions") from None
    if stat_module.S_ISDIR(info.st_mode):
        raise unreadable("it is a folder, not an archive", "pass the archive file inside it")
    if not stat_module.S_ISREG(info.st_mode):
        raise unreadable("it is not a regular file (a FIFO, a device or a socket)", "pass an archive file")
    try:
        fd = os.open(path, os.O_RDONLY | CURRENT.open_flags)
    except OSError as error:
        raise unreadable(f"it exists but cannot be read ({error.strerror})",
                         "make it readable (chmod a+r), or run as a user who can read it") from None
    os.close(fd)


def local_path(url: str, said: str) -> str:
    """The local path a file: URL names; a file: URL naming another host than this one (file://server/share) is
    refused, as curl and Python's urllib refuse it: the file is on that host, not in this machine's folder."""
    parts = urlparse(url)
    if parts.netloc not in ("", "localhost"):
        from cudnn_doctor.knowledge.inputs import shown

        raise DoctorError(f"{said} {shown(redacted_url(url)[:200])} names the host "
                          f"{shown(redacted_url('file://' + parts.netloc)[7:87])}: a file URL reads only "
                          "this machine's files", "mount that host's folder and give its local path (or file:///PATH)",
                          exit_code=2, code="CD004")
    return unquote(parts.path)


def mirror_base(mirror: str | None) -> str:
    """The base URL: --mirror (a URL, or a local folder for air-gapped sites), else NVIDIA's."""
    base = mirror or os.environ.get("CUDNN_DOCTOR_MIRROR") or DEFAULT_BASE_URL
    if is_url(base) and urlparse(base).scheme == "file":
        local_path(base, "--mirror" if mirror else "CUDNN_DOCTOR_MIRROR")
    if not is_url(base):
        from cudnn_doctor.knowledge.inputs import shown

        folder = os.path.abspath(expand_user(base))
        if not os.path.isdir(folder):  # said as given: the option, or the variable it came from; quoted, cut
            said = f"--mirror {shown(redacted_url(base))}" if mirror else \
                f"CUDNN_DOCTOR_MIRROR={shown(redacted_url(base))}"
            raise DoctorError(f"{said}: no such folder", "give a URL or a folder holding "
                              "redistrib_<version>.json and the cudnn/ tree beside it", exit_code=2, code="CD004")
        base = Path(folder).as_uri()
    return base.rstrip("/") + "/"


def _from_manifest(request: Request, platform: str, http, default_cuda: int | None) -> Source:  # type: ignore[no-untyped-def]
    base = mirror_base(request.mirror)
    version = request.version or ""
    if not FULL_VERSION.match(version):
        listing = _try_listing(http, base)
        found = newest_matching(listing, version) if listing else None
        if found is None:
            raise doctor_error("CD512", exit_code=2, where=redacted_url(base), why=f"it lists no redistrib_*.json for cuDNN "
                                 f"{version!r} (give a full version, e.g. --version 9.19.0)")
        version = found
    manifest_url = urljoin(base, manifest_name(version))
    text = _read_local(manifest_url) if manifest_url.startswith("file:") else downloads.fetch_text(http, manifest_url)
    try:
        manifest = json_values.loads(text)
    except (ValueError, RecursionError):
        raise doctor_error("CD512", exit_code=2, where=redacted_url(manifest_url), why="it is not valid JSON") from None
    chosen = pick_file(manifest, platform, request.cuda_major if request.cuda_major else default_cuda_for(
        manifest, platform, default_cuda), manifest_url)
    if chosen.version.split(".")[:len(version.split("."))] != version.split("."):  # 9.19.0 asked: 9.19.0.x
        raise doctor_error("CD512", exit_code=2, where=redacted_url(manifest_url),
                           why=f"it calls its cuDNN {chosen.version} where {version} was asked for (a manifest of "
                               "another release under this release's name)")
    url = urljoin(base, chosen.relative_path)
    if not url.startswith(base):
        raise doctor_error("CD512", exit_code=2, where=redacted_url(manifest_url),
                             why=f"its relative_path {chosen.relative_path[:80]!r} leaves the mirror")
    sha256 = request.sha256 or chosen.sha256
    warning = None
    if sha256 is None or chosen.size is None:
        missing = " and ".join(w for w, v in (("sha256", sha256), ("size", chosen.size)) if v is None)
        if not request.no_verify:
            raise doctor_error("CD513", exit_code=2, where=redacted_url(manifest_url),
                                 why=f"its {platform} entry lists no {missing}")
        warning = (f"--no-verify: {redacted_url(manifest_url)} lists no {missing} for the archive; it is installed without "
                   "that check")
    name = file_name(chosen.relative_path)
    if name is None:
        raise doctor_error("CD512", exit_code=2, where=redacted_url(manifest_url),
                             why=f"its relative_path {chosen.relative_path[:80]!r} names no archive file")
    return Source(f"cuDNN {chosen.version} for CUDA {chosen.cuda_major} ({platform}) from {redacted_url(base)}", url, None,
                  name, sha256, chosen.size, chosen.cuda_major,
                  chosen.version, warning)


def default_cuda_for(manifest: object, platform: str, preferred: int | None) -> int | None:
    """The toolkit's (or driver's) CUDA major when the manifest has that variant, else None (the newest)."""
    product = manifest.get("cudnn") if isinstance(manifest, dict) else None
    entry = product.get(platform) if isinstance(product, dict) else None
    if preferred is not None and isinstance(entry, dict) and f"cuda{preferred}" in entry:
        return preferred
    return None


def _read_local(url: str) -> str:
    path = unquote(urlparse(url).path)
    try:
        if not os.path.isfile(path):
            raise FileNotFoundError(2, "no such file")
        if os.path.getsize(path) > downloads.MAX_TEXT_BYTES:
            raise doctor_error("CD512", exit_code=2, where=path, why="it is far too large for a manifest")
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise doctor_error("CD512", exit_code=2, where=path, why=f"it cannot be read ({error.strerror})") from None


def _try_listing(http, base: str) -> str | None:  # type: ignore[no-untyped-def]
    if base.startswith("file:"):
        folder = unquote(urlparse(base).path)
        return "\n".join(sorted(os.listdir(folder))) if os.path.isdir(folder) else None
    try:
        return downloads.fetch_text(http, base)
    except DoctorError as error:
        if "cannot reach" in error.message or "stopped sending" in error.message:
            raise  # offline, or the host is down: that, not "lists nothing", is what the user must hear
        return None  # the mirror answered but lists nothing (HTTP 404, no index page): the caller says so


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
        if not os.path.lexists(local):
            raise doctor_error("CD515", exit_code=2, file=local, why="no such file in the mirror folder",
                                 fix="copy the archive into the mirror folder, in the layout of NVIDIA's redist site")
        readable_archive(local, local)
        source = replace(source, url=None, path=local)
    if source.url is None:
        path = Path(source.path or "")
        if source.size is not None and path.stat().st_size != source.size:
            raise downloads.size_error(source.name, source.size, path.stat().st_size)
        if source.sha256:  # hashed as copied: the copy, not the user's file, is what is then extracted
            import tempfile

            from cudnn_doctor.install.faults import step

            step("fetch.verify")
            try:  # no usable temporary folder at all (a read-only root, TMPDIR on one): the cache alone is tried
                temporary = [Path(tempfile.gettempdir())]
            except OSError:
                temporary = []
            copy = downloads.verified_copy(path, source.sha256, [cache / "verified", *temporary], source.name)
            return replace(source, path=str(copy))
        return source
    path = downloads.download(http_factory(), source.url, cache / "downloads", source.name, source.sha256,
                              source.size, progress)
    return replace(source, path=str(path))
