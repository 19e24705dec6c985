"""Downloads: one requests session with retries, a resumable `.part` file in the cache,
the sha256 computed as the bytes arrive, and a rename only once it matches."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from cudnn_doctor.errors import DoctorError

CHUNK = 1 << 20
ATTEMPTS = 4  # whole-transfer attempts; each resumes where the last one stopped


def session():  # type: ignore[no-untyped-def]
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util import Retry

    retry = Retry(total=4, connect=4, read=4, backoff_factor=float(os.environ.get("CUDNN_DOCTOR_RETRY_BACKOFF", 0.5)),
                  status_forcelist=(429, 500, 502, 503, 504), allowed_methods=frozenset({"GET", "HEAD"}))
    http = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    http.mount("http://", adapter)
    http.mount("https://", adapter)
    http.headers["User-Agent"] = "cudnn-doctor"
    return http


def fetch_text(http, url: str) -> str:  # type: ignore[no-untyped-def]
    """GET URL as text; a clear error on failure."""
    import requests

    try:
        answer = http.get(url, timeout=30)
    except requests.RequestException as error:
        raise DoctorError(f"cannot download {url}: {_reason(error)}",
                          "check the network, or use --mirror URL with a local copy", exit_code=2) from None
    if answer.status_code != 200:
        raise DoctorError(f"cannot download {url}: HTTP {answer.status_code}",
                          "check the version and the mirror URL", exit_code=2)
    return answer.text


def sha256_of(path: Path, digest=None) -> str:  # type: ignore[no-untyped-def]
    digest = digest or hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def checksum_error(name: str, expected: str, actual: str) -> DoctorError:
    return DoctorError(f"CD501 checksum mismatch: {name}: expected sha256 {expected}, got {actual}; nothing was written",
                       "download the archive again; if it persists, the mirror holds a different file", exit_code=2)


def download(http, url: str, folder: Path, name: str, sha256: str | None, size: int | None,  # type: ignore[no-untyped-def]
             progress: Callable[[int, int | None], None] | None = None) -> Path:
    """URL into FOLDER/NAME, resuming FOLDER/NAME.part; verified against SHA256 and SIZE when given.
    A file already in the cache with the right sha256 is used as it is."""
    import requests

    folder.mkdir(parents=True, exist_ok=True)
    final, part = folder / name, folder / (name + ".part")
    if sha256 and final.exists():
        if sha256_of(final) == sha256.lower():
            return final
        final.unlink()
    elif final.exists():
        final.unlink()  # no checksum to trust a cached copy by: fetch it again
    last_error: Exception | None = None
    for _attempt in range(ATTEMPTS):
        try:
            if _transfer(http, url, part, size, progress):
                break
        except (requests.RequestException, OSError) as error:
            if isinstance(error, OSError) and not isinstance(error, requests.RequestException):
                raise
            last_error = error
    else:
        raise DoctorError(f"cannot download {url}: {_reason(last_error)}",
                          "check the network, or use --mirror URL with a local copy; the partial download is kept "
                          "and resumed next time", exit_code=2)
    actual_size = part.stat().st_size
    if size is not None and actual_size != size:
        part.unlink()
        raise DoctorError(f"CD501 checksum mismatch: {name}: expected {size} bytes, got {actual_size}; "
                          "nothing was written", "download it again", exit_code=2)
    if sha256:
        actual = sha256_of(part)
        if actual != sha256.lower():
            part.unlink()
            raise checksum_error(name, sha256.lower(), actual)
    os.replace(part, final)
    return final


def _transfer(http, url: str, part: Path, size: int | None,  # type: ignore[no-untyped-def]
              progress: Callable[[int, int | None], None] | None) -> bool:
    """One attempt; True when the whole file is in PART."""
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have == size:
        return True
    if size is not None and have > size:
        part.unlink()
        have = 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    with http.get(url, stream=True, timeout=30, headers=headers) as answer:
        if answer.status_code == 416:  # nothing left to send: the .part is complete or wrong
            part.unlink()
            return False
        if answer.status_code not in (200, 206):
            raise DoctorError(f"cannot download {url}: HTTP {answer.status_code}",
                              "check the version and the mirror URL", exit_code=2)
        mode = "ab" if answer.status_code == 206 and have else "wb"
        have = have if mode == "ab" else 0
        length = answer.headers.get("Content-Length")
        total = size if size is not None else (have + int(length) if length and length.isdigit() else None)
        with open(part, mode) as handle:
            for chunk in answer.iter_content(CHUNK):
                handle.write(chunk)
                have += len(chunk)
                if progress:
                    progress(have, total)
        return total is None or have >= total


def _reason(error: Exception | None) -> str:
    text = str(error) if error else "unknown error"
    return text if len(text) < 200 else text[:200] + "..."
