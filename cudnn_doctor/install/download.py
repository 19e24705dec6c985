"""Downloads: one requests session, a resumable `.part` file in the cache, the sha256 computed
as the bytes arrive, a rename only once it matches, and one deadline for the whole download
(a server that drip-feeds a byte every 20 s, or never answers, ends in a one-line error)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

from cudnn_doctor.codes import doctor_error
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.quoting import redacted_url
from cudnn_doctor.versions import ascii_digits

CHUNK = 1 << 20
ATTEMPTS = 4  # whole-transfer attempts; each resumes where the last one stopped
READ_TIMEOUT_S = 30.0  # the longest wait for one piece of data
MAX_TEXT_BYTES = 16 << 20  # a redistrib manifest is a few KiB
MAX_DOWNLOAD_BYTES = 32 << 30  # the most an archive of unknown size may send (cuDNN's are under 2 GiB)
DEADLINE_VARIABLE = "CUDNN_DOCTOR_DOWNLOAD_DEADLINE"  # seconds for one download, all attempts included


def session():  # type: ignore[no-untyped-def]
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util import Retry

    from cudnn_doctor.variables import number

    # read errors are retried here (resuming the .part), within the deadline; urllib3 retries
    # only connections and the "try again" statuses, and never waits past the deadline of the download it serves
    # (http.retry_deadline, set by each download): urllib3 sleeps a server's Retry-After as it is, up to 6 hours
    ends = [float("inf")]

    class DeadlineRetry(Retry):
        """A Retry-After that would end past the deadline ends the retries at once: the last answer (429, 503) is
        returned to the caller, who says so in one line (raise_on_status off), instead of a sleep past it."""

        def increment(self, method=None, url=None, response=None, error=None, _pool=None,  # type: ignore[no-untyped-def]
                      _stacktrace=None):
            if response is not None and self.respect_retry_after_header:
                if retry_after(response.headers.get("Retry-After")) > ends[0] - time.monotonic():
                    from urllib3.exceptions import MaxRetryError, ResponseError

                    raise MaxRetryError(_pool, url, ResponseError("Retry-After past the deadline"))
            return super().increment(method, url, response, error, _pool, _stacktrace)

        def sleep(self, response=None):  # type: ignore[no-untyped-def]
            wait = retry_after(response.headers.get("Retry-After")) if response is not None else 0.0
            wait = wait or self.get_backoff_time()
            time.sleep(max(0.0, min(wait, ends[0] - time.monotonic())))

    retry = DeadlineRetry(total=4, connect=4, read=0, backoff_factor=number("CUDNN_DOCTOR_RETRY_BACKOFF", 0.5),
                          status_forcelist=(429, 500, 502, 503, 504), allowed_methods=frozenset({"GET", "HEAD"}),
                          raise_on_status=False)
    class SystemTrustAdapter(HTTPAdapter):
        """TLS that trusts the system's certificate store (an internal CA a site installed there; SSL_CERT_FILE and
        SSL_CERT_DIR are honoured by it) as well as requests' own bundle (REQUESTS_CA_BUNDLE replaces that one)."""

        def init_poolmanager(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            import ssl

            kwargs.setdefault("ssl_context", ssl.create_default_context())
            super().init_poolmanager(*args, **kwargs)

    http = requests.Session()
    adapter = SystemTrustAdapter(max_retries=retry)
    http.mount("http://", adapter)
    http.mount("https://", adapter)
    http.headers["User-Agent"] = "cudnn-doctor"
    http.retry_deadline = ends  # type: ignore[attr-defined]
    return http


def retry_after(value: str | None) -> float:
    """The seconds a Retry-After header asks to wait (RFC 9110: digits, or an HTTP date); 0 where there is none or
    it cannot be read."""
    import email.utils

    if not value:
        return 0.0
    text = value.strip()
    if ascii_digits(text):
        return float(int(text[:12]))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return 0.0
    import datetime

    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


def _bound_retries(http, clock: _Clock) -> None:  # type: ignore[no-untyped-def]
    """HTTP's own retries end by CLOCK's deadline (a session of session(); any other is left as it is)."""
    ends = getattr(http, "retry_deadline", None)
    if isinstance(ends, list):
        ends[0] = clock.end


def asked_to_wait(answer, clock: _Clock) -> str:  # type: ignore[no-untyped-def]
    """Words for a 'try again later' answer whose Retry-After ends past the deadline; empty otherwise."""
    seconds = retry_after(answer.headers.get("Retry-After"))
    if seconds <= 0 or seconds <= clock.left():
        return ""
    shown = (f"{seconds:.0f} s" if seconds < 7200 else f"{seconds / 3600:.0f} hours" if seconds < 172800
             else f"{seconds / 86400:.0f} days")
    return (f"; it asks to be asked again in {shown}, past the deadline of {clock.seconds:g} s "
            f"({DEADLINE_VARIABLE} changes it)")


def deadline_for(size: int | None) -> float:
    """Seconds one download may take: CUDNN_DOCTOR_DOWNLOAD_DEADLINE, else 2 minutes plus the
    size at 256 KiB/s (a cuDNN 9 archive of 900 MB: about an hour), 30 minutes when unknown."""
    from cudnn_doctor.variables import number

    return number(DEADLINE_VARIABLE, 120.0 + size / (256 * 1024) if size else 1800.0)


class _Clock:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def timeout(self) -> tuple[float, float]:
        """(connect, read) timeouts that end by the deadline."""
        left = max(0.05, self.left())
        return min(10.0, left), min(READ_TIMEOUT_S, left)


def failure(url: str, why: str) -> DoctorError:
    return doctor_error("CD511", exit_code=2, url=redacted_url(url), why=why)  # its password never printed


def reason(error: BaseException | None, url: str, clock: _Clock | None = None) -> str:
    """One plain sentence for a network failure: which host could not be reached and why (no
    urllib3 text)."""
    import socket

    import requests

    host = urlparse(url).hostname or url
    chain: list[BaseException] = []
    seen = error
    while seen is not None and len(chain) < 12:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__ or next(
            (a for a in getattr(seen, "args", ()) if isinstance(a, BaseException)), None)
        if seen is not None and hasattr(seen, "reason") and isinstance(seen.reason, BaseException):  # type: ignore[attr-defined]
            chain.append(seen)
            seen = seen.reason  # type: ignore[attr-defined]
    names = " ".join(type(e).__name__ for e in chain)
    if any(isinstance(e, socket.gaierror) for e in chain) or "NameResolution" in names:
        return f"cannot reach {host}: its name does not resolve (no DNS, or no network)"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return f"cannot reach {host}: the connection was refused"
    if any(isinstance(e, requests.exceptions.SSLError) for e in chain):
        return (f"cannot reach {host} securely: the TLS handshake failed (a mirror behind an internal CA: add the CA "
                "to the system's certificate store, or name its file in SSL_CERT_FILE or REQUESTS_CA_BUNDLE)")
    if any(isinstance(e, requests.exceptions.ConnectTimeout) for e in chain) or "ConnectTimeout" in names:
        return f"cannot reach {host}: no answer to the connection"
    if any(isinstance(e, (requests.exceptions.ReadTimeout, socket.timeout, TimeoutError)) for e in chain) or \
            "ReadTimeout" in names:
        return f"{host} stopped sending (no data for {READ_TIMEOUT_S:g} s)"
    if any(isinstance(e, OSError) and e.errno is not None for e in chain):
        first = next(e for e in chain if isinstance(e, OSError) and e.errno is not None)
        return f"cannot reach {host}: {first.strerror or type(first).__name__}"
    if any(isinstance(e, requests.exceptions.ConnectionError) for e in chain):
        return f"cannot reach {host}: the connection failed"
    return f"{host}: {type(error).__name__}" if error is not None else f"cannot reach {host}"


def _resolve(url: str, clock: _Clock) -> None:
    """Resolve URL's host within the deadline (a name lookup ignores socket timeouts): a host
    whose name does not resolve, or not in time, is one line. Skipped behind a proxy (the proxy
    resolves) and for addresses."""
    import ipaddress
    import socket
    import threading

    import requests

    host = urlparse(url).hostname
    if not host or requests.utils.get_environ_proxies(url):
        return
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    found: dict[str, BaseException | bool] = {}

    def look_up() -> None:
        try:
            socket.getaddrinfo(host, None)
            found["ok"] = True
        except (OSError, UnicodeError) as error:
            found["error"] = error

    worker = threading.Thread(target=look_up, daemon=True)
    worker.start()
    worker.join(max(0.05, min(clock.left(), 30.0)))
    if worker.is_alive():
        raise failure(url, f"cannot reach {host}: its name did not resolve in time (no DNS, or no network)")
    error = found.get("error")
    if isinstance(error, BaseException):
        raise failure(url, reason(error, url))


def fetch_text(http, url: str) -> str:  # type: ignore[no-untyped-def]
    """GET URL as text, within one deadline; a clear one-line error on failure."""
    import requests
    import urllib3

    clock = _Clock(deadline_for(None) if DEADLINE_VARIABLE in os.environ else 120.0)
    body = bytearray()
    _resolve(url, clock)
    _bound_retries(http, clock)
    try:
        with http.get(url, timeout=clock.timeout(), stream=True) as answer:
            if answer.status_code != 200:
                raise failure(url, f"the server answered HTTP {answer.status_code}{asked_to_wait(answer, clock)} "
                                   "(check the version and the mirror URL)")
            for chunk in _pieces(answer):
                body += chunk
                if len(body) > MAX_TEXT_BYTES:
                    raise failure(url, f"the answer is larger than {MAX_TEXT_BYTES >> 20} MiB: not a manifest")
                if clock.left() <= 0:
                    raise failure(url, f"not finished within {clock.seconds:g} s")
    except (requests.RequestException, urllib3.exceptions.HTTPError) as error:
        raise failure(url, reason(error, url)) from None
    return body.decode("utf-8", errors="replace")


def _pieces(answer) -> Iterator[bytes]:  # type: ignore[no-untyped-def]
    """The body as it arrives (read1: whatever came, so that the deadline is seen between pieces)."""
    raw = answer.raw
    read1 = getattr(raw, "read1", None)
    while True:
        data = read1(CHUNK, decode_content=True) if read1 is not None else raw.read(64 * 1024, decode_content=True)
        if not data:
            return
        yield data


def sha256_of(path: Path, digest=None) -> str:  # type: ignore[no-untyped-def]
    digest = digest or hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verified_copy(path: Path, expected: str, folders: list[Path], name: str) -> Path:
    """PATH copied into a private file (mode 0600, in the first of FOLDERS that can hold it) while its bytes are
    hashed, in one read; the copy when they hash to EXPECTED, else CD501. What was checked is then what is
    installed: the user's file may be rewritten in place (same size, its modification time put back) at any moment
    after, and the copy is not. Removed when the process ends."""
    import atexit
    import tempfile

    why = "no folder given"
    for folder in folders:
        digest = hashlib.sha256()
        copy = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            descriptor, copy = tempfile.mkstemp(prefix=".verified-", suffix=".part", dir=folder)
            atexit.register(_remove, copy)
            with open(path, "rb") as source, os.fdopen(descriptor, "wb") as target:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    target.write(chunk)
        except OSError as error:
            if copy is not None:
                _remove(copy)
            if getattr(error, "filename", None) == str(path) or not os.access(path, os.R_OK):
                raise  # the archive itself cannot be read: not a matter of where the copy goes
            why = f"{folder}: {error.strerror or error}"
            continue
        except BaseException:
            if copy is not None:
                _remove(copy)
            raise
        actual = digest.hexdigest()
        if actual != expected.lower():
            _remove(copy)
            raise checksum_error(name, expected.lower(), actual)
        return Path(copy)
    raise DoctorError(f"{name}: no folder could keep the checked copy of the archive ({why})",
                      fix="free some space, or set CUDNN_DOCTOR_CACHE_DIR or TMPDIR to a folder with room", exit_code=1, code="CD006")


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def checksum_error(name: str, expected: str, actual: str) -> DoctorError:
    return doctor_error("CD501", exit_code=2, file=name, expected=expected, actual=actual)


def size_error(name: str, expected: int, actual: int) -> DoctorError:
    return doctor_error("CD517", exit_code=2, file=name, expected=expected, actual=actual)


def download(http, url: str, folder: Path, name: str, sha256: str | None, size: int | None,  # type: ignore[no-untyped-def]
             progress: Callable[[int, int | None], None] | None = None) -> Path:
    """URL into FOLDER/NAME, resuming FOLDER/NAME.part; verified against SHA256 and SIZE when given.
    A file already in the cache with the right sha256 is used as it is."""
    try:
        return _download(http, url, folder, name, sha256, size, progress)
    except OSError as error:  # the cache folder, not the network: its own fix, not the network's
        raise DoctorError(f"{name}: cannot write it into {folder} ({error.strerror or error}); nothing was installed",
                          fix="make that folder writable, or set CUDNN_DOCTOR_CACHE_DIR to a folder you can write "
                              "with room for the download", exit_code=1, code="CD006") from None


def _download(http, url: str, folder: Path, name: str, sha256: str | None, size: int | None,  # type: ignore[no-untyped-def]
              progress: Callable[[int, int | None], None] | None) -> Path:
    import requests
    import urllib3

    folder.mkdir(parents=True, exist_ok=True)
    final, part = folder / name, folder / (name + ".part")
    for kept in (final, part):
        _only_a_file(kept)
    if sha256 and final.exists():
        if sha256_of(final) == sha256.lower():
            return final
        final.unlink()
    elif final.exists():
        final.unlink()  # no checksum to trust a cached copy by: fetch it again
    clock = _Clock(deadline_for(size))
    _resolve(url, clock)
    _bound_retries(http, clock)
    last_error: BaseException | None = None
    for _attempt in range(ATTEMPTS):
        if clock.left() <= 0:
            break
        try:
            if _transfer(http, url, part, size, progress, clock):
                break
        except (requests.RequestException, urllib3.exceptions.HTTPError) as error:
            last_error = error
    else:
        raise failure(url, reason(last_error, url) + "; the partial download is kept and resumed next time")
    if clock.left() <= 0 and not _complete(part, size):
        why = reason(last_error, url) + "; " if last_error is not None else ""
        raise failure(url, f"{why}not finished within the deadline of {clock.seconds:g} s "
                           f"({DEADLINE_VARIABLE} changes it); the partial download is kept and resumed next time")
    actual_size = part.stat().st_size
    if size is not None and actual_size != size:
        part.unlink()
        raise size_error(name, size, actual_size)
    if sha256:
        actual = sha256_of(part)
        if actual != sha256.lower():
            part.unlink()
            raise checksum_error(name, sha256.lower(), actual)
    os.replace(part, final)
    return final


def _only_a_file(path: Path) -> None:
    """PATH, a download kept in the cache, removed unless it is a regular file: a FIFO there hung the install, a link
    to /dev/zero was read without end, a link elsewhere would have the download written through it (a file of root's,
    for an install run as root). A folder stays (the write then says it is in the way)."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        path.unlink()


def _complete(part: Path, size: int | None) -> bool:
    return part.exists() and size is not None and part.stat().st_size == size


def _transfer(http, url: str, part: Path, size: int | None,  # type: ignore[no-untyped-def]
              progress: Callable[[int, int | None], None] | None, clock: _Clock) -> bool:
    """One attempt; True when the whole file is in PART. Stops at the deadline (False)."""
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have == size:
        return True
    if size is not None and have > size:
        part.unlink()
        have = 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    with http.get(url, stream=True, timeout=clock.timeout(), headers=headers) as answer:
        if answer.status_code == 416:  # nothing left to send: the .part is complete or wrong
            part.unlink()
            return False
        if answer.status_code not in (200, 206):
            raise failure(url, f"the server answered HTTP {answer.status_code}{asked_to_wait(answer, clock)} "
                               "(check the version and the mirror URL)")
        mode = "ab" if answer.status_code == 206 and have else "wb"
        have = have if mode == "ab" else 0
        length = answer.headers.get("Content-Length")
        total = size if size is not None else (have + int(length) if length and ascii_digits(length) else None)
        with open(part, mode) as handle:
            for chunk in _pieces(answer):
                handle.write(chunk)
                have += len(chunk)
                if progress:
                    progress(have, total)
                if have > (size if size is not None else MAX_DOWNLOAD_BYTES):
                    return True  # more than promised: the size check says so
                if clock.left() <= 0:
                    return False
        return total is None or have >= total
