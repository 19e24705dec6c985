"""A registry, reached as `docker pull` reaches it: a reference read by the distribution project's grammar
(distribution/reference: `ubuntu` is docker.io/library/ubuntu, served by registry-1.docker.io), the registry HTTP
API v2, the bearer-token flow of Docker Hub, nvcr.io and ghcr.io (distribution's docs/spec/auth/token.md: a 401 with
`WWW-Authenticate: Bearer realm=...,service=...,scope=...`, a token from the realm, the request again with it), and
the user's own Docker credentials (~/.docker/config.json `auths`, or a credential helper, `docker-credential-NAME get`
run through the one child runner).

Every URL visited is https, or http to the loopback host the registry was named by only (a token realm or a
redirect included; 127.0.0.2 is not 127.0.0.1); the user's credentials go to the registry's own host and its realm,
never along a redirect to another host. Each
request has one deadline for its answer and its whole body (CUDNN_DOCTOR_IMAGE_TIMEOUT, 30 s; a layer one more
second per MiB it declares, each second bought by a MiB that came), so a server that drips a byte a second is cut
off, not waited on, whatever size it declares.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cudnn_doctor import json_values
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.versions import ascii_digits

DEFAULT_MAX_LAYER_BYTES = 64 << 30  # the largest CUDA images' layers are a few GiB (CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES)

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"  # distribution/reference's defaultDomain is served here
DOCKER_HUB_KEY = "https://index.docker.io/v1/"  # how docker login stores Docker Hub in config.json
OFFICIAL = "library"
COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
DOMAIN = (r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*"
          r"[a-zA-Z0-9]))*|\[[0-9a-fA-F:.]+\])(?::[0-9]{1,5})?")
PATH = re.compile(rf"^{COMPONENT}(?:/{COMPONENT})*$")
TAG = re.compile(r"^[\w][\w.-]{0,127}$")
DIGEST = re.compile(r"^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
MAX_NAME = 255  # distribution/reference's NameTotalLengthMax
MAX_REDIRECTS = 5
MAX_TOKEN_ANSWER = 1 << 20  # a token answer: a few kilobytes
MIN_RATE = 1 << 20  # a layer's deadline: the timeout, and one more second per MiB it declares
CHALLENGE = re.compile(r'(\w+)="([^"]*)"|(\w+)=([^\s,"]+)')


@dataclass(frozen=True)
class Reference:
    """An image reference, normalised as docker normalises it."""

    domain: str  # "docker.io" for Docker Hub
    path: str  # "library/ubuntu"
    tag: str | None
    digest: str | None

    @property
    def host(self) -> str:
        """Where the registry API answers."""
        return DOCKER_HUB_API if self.domain == DOCKER_HUB else self.domain

    @property
    def wanted(self) -> str:
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        return f"{self.domain}/{self.path}" + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}"
                                                                                       if self.digest else "")


def parse_reference(text: str) -> Reference | None:
    """TEXT as distribution/reference's ParseNormalizedNamed reads it, or None where it is not one."""
    name, _, digest = text.partition("@")
    if digest and not DIGEST.match(digest):
        return None
    tag = None
    last = name.rfind("/")
    colon = name.rfind(":")
    if colon > last:
        name, tag = name[:colon], name[colon + 1:]
        if not TAG.match(tag):
            return None
    first, slash, rest = name.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost" and first.lower() == first):
        domain, path = DOCKER_HUB, name
    else:
        domain, path = first, rest
        if not registry_address(domain):
            return None
    if domain == "index.docker.io":
        domain = DOCKER_HUB
    if domain == DOCKER_HUB and "/" not in path:
        path = f"{OFFICIAL}/{path}"
    if not PATH.match(path) or len(f"{domain}/{path}") > MAX_NAME:
        return None
    return Reference(domain, path, tag, digest or None)


def registry_address(host: str) -> bool:
    """Is HOST a registry's HOST[:PORT] as docker's reference grammar writes one, its port one TCP has (1-65535)?"""
    if not re.fullmatch(DOMAIN, host):
        return False
    port = re.search(r":([0-9]{1,5})$", host)  # "[::1]" ends in its bracket: no port
    return port is None or 1 <= int(port.group(1)) <= 65535


def loopback(host: str) -> bool:
    """Is HOST (a name or address, with or without a port) this machine's loopback?"""
    name = host[1:host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def docker_hub_mirror() -> tuple[str, str] | None:
    """CUDNN_DOCTOR_REGISTRY_MIRROR: a mirror (pull-through cache) that serves Docker Hub's names, as dockerd's
    `registry-mirrors` setting names one: HOST[:PORT], or its https:// (http:// on loopback) URL; (scheme, host)."""
    value = os.environ.get("CUDNN_DOCTOR_REGISTRY_MIRROR", "").strip()
    if not value:
        return None
    try:  # urlsplit drops a tab or newline inside silently, and raises on a bracket left open
        parts = urllib.parse.urlsplit(value if "://" in value else f"https://{value}")
        host = parts.netloc
    except ValueError:
        parts, host = urllib.parse.urlsplit(""), ""
    if not value.isprintable() or parts.scheme not in ("http", "https") or not registry_address(host) or \
            parts.path.strip("/") or parts.query or parts.fragment or (parts.scheme == "http" and not loopback(host)):
        raise DoctorError(f"CUDNN_DOCTOR_REGISTRY_MIRROR={value!r}: not a registry mirror (https://HOST[:PORT], "
                          "or http:// on 127.0.0.1)", fix="set it like CUDNN_DOCTOR_REGISTRY_MIRROR=https://mirror."
                                                          "example.com, or unset it", exit_code=2,
                          code="CD007")
    scheme = parts.scheme if "://" in value else ("http" if loopback(host) else "https")
    return scheme, host


def image_timeout() -> float:
    from cudnn_doctor.variables import number

    return number("CUDNN_DOCTOR_IMAGE_TIMEOUT", 30.0)


# --- credentials -----------------------------------------------------------------------------------------------------

def docker_credentials(domain: str) -> tuple[str, str] | None:
    """(user, secret) that `docker login DOMAIN` stored: a credential helper's (credHelpers, credsStore), else
    config.json's `auths` (base64 user:password). None where there are none; a broken config is said, not fatal."""
    from cudnn_doctor.user_files import UnreadableFile, read_user_file
    from cudnn_doctor.variables import home_folder

    home = home_folder()  # docker's own: HOME, else the password database's (an empty HOME is not /)
    folder = os.environ.get("DOCKER_CONFIG") or (os.path.join(home, ".docker") if home else "")
    if not folder:
        return None
    try:
        config = json_values.loads(read_user_file(os.path.join(folder, "config.json"), 1 << 20))
    except (UnreadableFile, ValueError, RecursionError):
        return None
    if not isinstance(config, dict):
        return None
    key = DOCKER_HUB_KEY if domain == DOCKER_HUB else domain
    raw_helpers = config.get("credHelpers")
    helpers: dict[str, Any] = raw_helpers if isinstance(raw_helpers, dict) else {}
    helper = helpers.get(domain) or helpers.get(key) or config.get("credsStore")
    if isinstance(helper, str) and re.fullmatch(r"[A-Za-z0-9][\w.-]{0,63}", helper):
        found = _from_helper(helper, key)
        if found is not None:
            return found
    raw_auths = config.get("auths")
    auths: dict[str, Any] = raw_auths if isinstance(raw_auths, dict) else {}
    for stored, entry in auths.items():
        if _same_registry(str(stored), key) and isinstance(entry, dict) and isinstance(entry.get("auth"), str):
            try:
                user, colon, secret = base64.b64decode(entry["auth"], validate=True).decode("utf-8").partition(":")
            except (ValueError, UnicodeDecodeError):
                continue
            if colon:
                return user, secret
    return None


def _same_registry(stored: str, key: str) -> bool:
    """docker's config keys are a host, or a URL of it (https://host/v1/ as older clients wrote them)."""
    host = urllib.parse.urlsplit(stored).netloc if "://" in stored else stored.split("/")[0]
    wanted = urllib.parse.urlsplit(key).netloc if "://" in key else key
    return host == wanted or (wanted == "index.docker.io" and host in ("docker.io", "registry-1.docker.io"))


def _from_helper(helper: str, key: str) -> tuple[str, str] | None:
    """`docker-credential-HELPER get`, the server on its standard input, its JSON answer on its standard output
    (docker/docker-credential-helpers' protocol), through the one child runner."""
    import shutil

    from cudnn_doctor.child import ChildBatch, ChildRequest, timeout_from_env

    program = shutil.which(f"docker-credential-{helper}")
    if program is None:
        return None
    request = ChildRequest((program, "get"), timeout=timeout_from_env("CUDNN_DOCTOR_HELPER_TIMEOUT", 10.0),
                           what=f"docker-credential-{helper}", stdin=key.encode())
    answer = ChildBatch([request], background=False).answers()[0]
    values = answer.values or {}
    user, secret = values.get("Username"), values.get("Secret")
    if answer.exit_code != 0 or not isinstance(user, str) or not isinstance(secret, str) or user == "<token>":
        return None  # not stored there (an identity token is docker's OAuth refresh token: not used here)
    return user, secret


# --- the client ------------------------------------------------------------------------------------------------------

class Registry:
    """The requests of one image read: its base URL, its token once a challenge gave one, one deadline each."""

    def __init__(self, text: str, reference: Reference) -> None:
        from cudnn_doctor.install.download import session

        self.text = text
        self.reference = reference
        self.host = reference.host
        self.login = reference.domain  # whose credentials docker stored (`docker login DOMAIN`)
        mirror = docker_hub_mirror() if reference.domain == DOCKER_HUB else None
        self.scheme = "http" if loopback(self.host) else "https"
        if mirror is not None:
            self.scheme, self.host = mirror
            self.login = self.host
        self.base = f"{self.scheme}://{self.host}/v2/{reference.path}"
        self.http = session()
        self.http.trust_env = True
        self.authorization: str | None = None
        self.tried_credentials = False
        self.timeout = image_timeout()

    def close(self) -> None:
        self.http.close()

    def fail(self, why: str, fix: str | None = None) -> DoctorError:
        """The one refusal of a registry read: WHY, FIX, and always the way that needs no registry read from here
        (docker pulls it where it can, saves it, and the archive is judged)."""
        from cudnn_doctor.quoting import code_span, command_line

        fix = fix or f"check that the registry answers at {self.scheme}://{self.host}/v2/"
        offline = (f"{code_span(command_line(('docker', 'pull', self.text)))} then "
                   f"{code_span(command_line(('docker', 'save', '-o', 'image.tar', self.text)))} where docker can "
                   "reach it, and give image.tar")
        return DoctorError(f"image {self.text}: {why}", exit_code=2, code="CD005", fix=f"{fix}; or {offline}")

    def get_json(self, url: str, limit: int, accept: str | None = None) -> tuple[bytes, str]:
        """The body of URL (at most LIMIT bytes) and its media type, within one deadline."""
        deadline = time.monotonic() + self.timeout
        answer = self.open(url, deadline, {"Accept": accept} if accept else {})
        with answer:
            body = read_within(answer, limit, deadline, lambda why: self.fail(f"{_short(url)}: {why}"))
        return body, answer.headers.get("Content-Type", "").split(";")[0].strip()

    def open_blob(self, digest: str, size: int | None) -> Any:
        from cudnn_doctor.variables import number

        # a size a manifest declares past what a layer may be read to buys no more time than that bound
        deadline = time.monotonic() + self.timeout + min(size or 0, int(number("CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES", DEFAULT_MAX_LAYER_BYTES))) / MIN_RATE
        answer = self.open(f"{self.base}/blobs/{digest}", deadline, {})
        return _TimedBody(answer, deadline, lambda why: self.fail(f"the layer {digest[:19]}: {why}"), self.timeout)

    def open(self, url: str, deadline: float, headers: dict[str, str]) -> Any:
        """The answer to GET URL, redirects followed by hand (each hop checked), a challenge answered once."""
        for _ in range(MAX_REDIRECTS + 1):
            self.allowed(url)
            answer = self._get(url, deadline, headers)
            if answer.status_code == 401 and self._answer_challenge(answer.headers.get("WWW-Authenticate", ""),
                                                                    deadline):
                answer.close()
                answer = self._get(url, deadline, headers)
            if answer.status_code in (301, 302, 303, 307, 308) and answer.headers.get("Location"):
                location = urllib.parse.urljoin(url, answer.headers["Location"])
                answer.close()
                url = location
                continue
            self._status(answer, url)
            return answer
        raise self.fail(f"more than {MAX_REDIRECTS} redirects from {_short(url)}")

    def allowed(self, url: str, what: str = "a URL") -> None:
        """Refuse URL unless it is https, or http to the very loopback host the registry was named by (another
        address of the loopback, 127.0.0.2, is another server: plain http is not followed there)."""
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        if parts.scheme == "https" or (parts.scheme == "http" and loopback(host)):
            if self.scheme == "https" and parts.scheme != "https":
                raise self.fail(f"refused {what} that turns https into plain http ({_short(url)})",
                                fix="the registry must keep to https; ask its operator")
            if parts.scheme == "http" and _host_name(host) != _host_name(self.host):
                raise self.fail(f"refused {what} over plain http to another host than the registry's own "
                                f"({_short(url)})", fix="plain http is read only from the registry named, on this "
                                                        "machine; ask its operator to serve it there or over https")
            return
        raise self.fail(f"refused {what} over plain {parts.scheme or 'no scheme'} beyond this machine "
                        f"({_short(url)})", fix="the registry must use https (plain http only on 127.0.0.1)")

    def _get(self, url: str, deadline: float, headers: dict[str, str]) -> Any:
        left = deadline - time.monotonic()
        if left <= 0:
            raise self.fail(f"no answer within {self.timeout:g} s (CUDNN_DOCTOR_IMAGE_TIMEOUT)")
        sent = dict(headers)
        ends = getattr(self.http, "retry_deadline", None)
        if isinstance(ends, list):
            ends[0] = deadline  # urllib3's own retries wait no longer than this request may (a Retry-After of days)
        if self.authorization and urllib.parse.urlsplit(url).netloc == self.host:
            sent["Authorization"] = self.authorization  # the registry's own host only, never a redirect's
        try:
            with within(deadline, lambda: self.fail(f"no answer within {self.timeout:g} s "
                                                    "(CUDNN_DOCTOR_IMAGE_TIMEOUT)")):
                return self.http.get(url, headers=sent, stream=True, timeout=(min(left, self.timeout),
                                                                             min(left, self.timeout)),
                                     allow_redirects=False)
        except DoctorError:
            raise
        except Exception as error:  # requests' and urllib3's own errors: one line
            raise self.fail(f"the registry at {self.host} did not answer ({type(error).__name__})",
                            fix=f"check the network (HTTPS_PROXY where a proxy is the way out) and that the registry "
                                f"answers at {self.scheme}://{self.host}/v2/") from None

    def _status(self, answer: Any, url: str) -> None:
        code = answer.status_code
        if code == 200:
            return
        answer.close()
        where = url.rsplit("/v2/", 1)[-1]
        if code in (401, 403):
            raise self.fail(f"the registry answers {code} for {_short(where)}: it wants credentials it was not given",
                            fix=f"`docker login {self.login}` (the doctor reads docker's credentials), or "
                                f"check the name: a private or missing repository answers so too")
        if code == 404:
            raise self.fail(f"the registry at {self.host} has no such image ({_short(where)})",
                            fix="check the name and tag (GET /v2/NAME/tags/list lists the tags)")
        raise self.fail(f"the registry answered HTTP {code} for {_short(where)}")

    def _answer_challenge(self, header: str, deadline: float) -> bool:
        """A 401's challenge answered: Bearer (a token from its realm, with the user's credentials where docker has
        them) or Basic (the user's credentials). False where there is nothing to try again with."""
        scheme, _, rest = header.strip().partition(" ")
        params = {m.group(1) or m.group(3): m.group(2) if m.group(1) else m.group(4) for m in CHALLENGE.finditer(rest)}
        if self.tried_credentials:
            return False
        self.tried_credentials = True
        credentials = docker_credentials(self.login)
        if scheme.lower() == "basic":
            if credentials is None:
                return False
            self.authorization = "Basic " + base64.b64encode(":".join(credentials).encode()).decode()
            return True
        if scheme.lower() != "bearer" or not params.get("realm"):
            return False
        realm = params["realm"]
        self.allowed(realm, "a token realm")
        query = {"service": params["service"]} if params.get("service") else {}
        query["scope"] = params.get("scope") or f"repository:{self.reference.path}:pull"
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(query)
        auth = credentials if credentials is not None and _realm_may_have(realm, self.host) else None
        left = deadline - time.monotonic()
        try:
            with within(deadline, lambda: self.fail(f"the token service at {_short(realm)} did not answer within "
                                                    f"{self.timeout:g} s (CUDNN_DOCTOR_IMAGE_TIMEOUT)")):
                answer = self.http.get(url, auth=auth, stream=True, timeout=(max(left, 0.001), max(left, 0.001)),
                                       allow_redirects=False)
        except DoctorError:
            raise
        except Exception as error:
            raise self.fail(f"the token service at {_short(realm)} did not answer ({type(error).__name__})") from None
        with answer:
            if answer.status_code != 200:
                raise self.fail(f"the token service at {_short(realm)} answered HTTP {answer.status_code}",
                                fix=f"`docker login {self.login}` if the image is private; else check "
                                    f"the name")
            body = read_within(answer, MAX_TOKEN_ANSWER, deadline,
                               lambda why: self.fail(f"the token service: {why}"))
        try:
            values = json_values.loads(body)
        except (ValueError, RecursionError):
            values = None
        token = (values.get("token") or values.get("access_token")) if isinstance(values, dict) else None
        if not isinstance(token, str) or not re.fullmatch(r"[\x21-\x7e]{1,16384}", token):
            raise self.fail(f"the token service at {_short(realm)} answered no token")
        self.authorization = f"Bearer {token}"
        return True


class _Late(BaseException):
    """The deadline's alarm: a BaseException, so that no library's `except Exception` (urllib3 retries on its own
    errors) takes it for one of its own."""


@contextmanager
def within(deadline: float, late: Callable[[], DoctorError]) -> Iterator[None]:
    """The block cut off at DEADLINE, however its server drips its status line and headers (a read timeout is per
    receive): an interval timer in the main thread, where there is one (Unix); elsewhere each receive's timeout."""
    import signal
    import threading

    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(_signal: int, _frame: object) -> None:
        raise _Late

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, deadline - time.monotonic()))
    try:
        yield
    except _Late:
        raise late() from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _host_name(netloc: str) -> str:
    """NETLOC's host, without its port or brackets, lower case."""
    if netloc.startswith("[") and "]" in netloc:
        return netloc[1:netloc.index("]")].lower()
    return netloc.rsplit(":", 1)[0].lower() if netloc.count(":") == 1 else netloc.lower()


def _realm_may_have(realm: str, host: str) -> bool:
    """The user's password goes to a realm over https (Docker Hub's auth.docker.io, nvcr.io's own), or on loopback."""
    parts = urllib.parse.urlsplit(realm)
    return parts.scheme == "https" or loopback(parts.netloc) or parts.netloc == host


def _short(text: str, limit: int = 160) -> str:
    text = text.encode("ascii", "backslashreplace").decode()
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _socket_of(answer: Any) -> Any:
    raw = getattr(answer, "raw", answer)
    connection = getattr(raw, "_connection", None)
    return getattr(connection, "sock", None)


def _read_some(answer: Any, size: int, deadline: float, fail: Any, decode: bool = True,
               stall: float | None = None) -> bytes:
    """At most SIZE bytes of ANSWER's body, one receive, the socket's wait cut to what is left of DEADLINE; DECODE:
    undone of its Content-Encoding (a manifest a CDN gzips), else as sent (a layer, compressed by its media type);
    STALL: seconds without a byte after which the body has stopped, whatever is left of its deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise fail("the body did not come within its deadline (CUDNN_DOCTOR_IMAGE_TIMEOUT)")
    sock = _socket_of(answer)
    if sock is not None:
        try:
            sock.settimeout(min(left, stall) if stall else left)
        except OSError:
            pass
    raw = getattr(answer, "raw", answer)
    try:
        return bytes(raw.read1(size, decode_content=decode))
    except TimeoutError:
        raise fail("the body did not come within its deadline (CUDNN_DOCTOR_IMAGE_TIMEOUT)") from None
    except Exception as error:  # a reset, a body cut short, a broken chunk: urllib3's and http.client's own errors
        if "timeout" in type(error).__name__.lower() or time.monotonic() >= deadline:  # urllib3's ReadTimeoutError
            raise fail("the body did not come within its deadline (CUDNN_DOCTOR_IMAGE_TIMEOUT)") from None
        raise fail(f"the body was cut short ({type(error).__name__})") from None


def read_within(answer: Any, limit: int, deadline: float, fail: Any) -> bytes:
    """ANSWER's whole body, refused past LIMIT bytes or DEADLINE, and where it is shorter than its Content-Length."""
    chunks = []
    got = 0
    while True:
        chunk = _read_some(answer, min(1 << 16, limit + 1 - got), deadline, fail)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
        if got > limit:
            raise fail(f"it sent more than {limit} bytes")
    length = answer.headers.get("Content-Length", "")
    if ascii_digits(length) and int(length) != got and not answer.headers.get("Content-Encoding"):
        raise fail(f"the body was cut short ({got} of {length} bytes)")
    return b"".join(chunks)


class _TimedBody:
    """A layer blob's body as a stream, every read within the blob's deadline (the blob is compressed by its media
    type, not by HTTP: no content decoding), and at its pace: past its first STALL seconds each second must have
    brought a MiB (MIN_RATE), so that a size declared huge buys no time for a body that drips."""

    def __init__(self, answer: Any, deadline: float, fail: Any, stall: float) -> None:
        self.answer = answer
        self.deadline = deadline
        self.stall = stall
        self.fail = fail
        self.got = 0
        self.started = time.monotonic()
        length = answer.headers.get("Content-Length", "")
        self.length = int(length) if ascii_digits(length) else None

    def read(self, size: int = -1) -> bytes:
        out = bytearray()
        want = size if size >= 0 else 1 << 62
        while len(out) < want:
            paced = self.started + self.stall + self.got / MIN_RATE  # the time the bytes so far have bought
            if time.monotonic() >= paced and paced < self.deadline:
                raise self.fail(f"the body came at less than {MIN_RATE >> 20} MiB a second ({self.got} bytes in "
                                f"{time.monotonic() - self.started:.0f} s; CUDNN_DOCTOR_IMAGE_TIMEOUT)")
            chunk = _read_some(self.answer, min(1 << 20, want - len(out)), min(self.deadline, paced), self.fail,
                               decode=False, stall=self.stall)
            if not chunk:
                if self.length is not None and self.got < self.length:
                    raise self.fail(f"the body was cut short ({self.got} of {self.length} bytes)")
                break
            self.got += len(chunk)
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.answer.close()
