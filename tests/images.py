"""Tiny container images built offline in Python, as docker and the OCI image spec lay them out: layers (tar, gzip'd
or not, with links and whiteouts), an OCI layout folder, a `docker save` archive, and a push to a registry through
the registry HTTP API v2 (the one Debian's docker-registry serves on 127.0.0.1)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"

Content = Union[bytes, str, tuple]  # bytes or text; ("link", target); ("big", size): a member of SIZE zero bytes


def layer(files: dict[str, Content], compress: bool = True) -> tuple[bytes, str]:
    """(blob, media type) of a layer holding FILES (path -> content), in order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path, content in files.items():
            info = tarfile.TarInfo(path)
            info.mtime = 1_700_000_000
            if isinstance(content, tuple) and content[0] == "link":
                info.type, info.linkname = tarfile.SYMTYPE, content[1]
                archive.addfile(info)
            elif isinstance(content, tuple) and content[0] == "big":
                info.size = content[1]
                archive.addfile(info, _Zeros(content[1]))
            else:
                data = content.encode() if isinstance(content, str) else content
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    return (gzip.compress(raw, mtime=0), LAYER_GZIP) if compress else (raw, LAYER_TAR)


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        self.left -= size
        return b"\0" * size


def digest(blob: bytes) -> str:
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def config_of(env: dict[str, str], arch: str = "amd64", labels: dict[str, str] | None = None,
              layers: list[tuple[bytes, str]] | None = None) -> bytes:
    diff_ids = [digest(gzip.decompress(b) if t == LAYER_GZIP else b) for b, t in layers or []]
    return json.dumps({"architecture": arch, "os": "linux",
                       "config": {"Env": [f"{k}={v}" for k, v in env.items()], "Labels": labels or {}},
                       "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()


def manifest_of(config: bytes, layers: list[tuple[bytes, str]], docker: bool = False) -> bytes:
    """An image manifest: OCI's media types, or Docker's (schema 2, what Docker Hub serves nvidia/cuda with)."""
    if docker:
        return json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                           "config": {"mediaType": DOCKER_CONFIG, "digest": digest(config), "size": len(config)},
                           "layers": [{"mediaType": DOCKER_LAYER if t == LAYER_GZIP else t, "digest": digest(b),
                                       "size": len(b)} for b, t in layers]}, indent=3).encode()
    return json.dumps({"schemaVersion": 2, "mediaType": MANIFEST,
                       "config": {"mediaType": CONFIG, "digest": digest(config), "size": len(config)},
                       "layers": [{"mediaType": t, "digest": digest(b), "size": len(b)} for b, t in layers]}).encode()


def oci_layout(folder: Path, config: bytes, layers: list[tuple[bytes, str]], tag: str = "latest") -> Path:
    """An OCI image layout (image-spec 'image-layout.md') in FOLDER."""
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    manifest = manifest_of(config, layers)
    for blob in [config, manifest, *(b for b, _ in layers)]:
        (blobs / digest(blob).split(":")[1]).write_bytes(blob)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps({
        "schemaVersion": 2, "mediaType": INDEX,
        "manifests": [{"mediaType": MANIFEST, "digest": digest(manifest), "size": len(manifest),
                       "annotations": {"org.opencontainers.image.ref.name": tag}}]}))
    return folder


def docker_archive(path: Path, config: bytes, layers: list[tuple[bytes, str]], tag: str = "app:1") -> Path:
    """A `docker save` archive as Docker before 25 wrote it: manifest.json, <id>.json, <id>/layer.tar (plain tar)."""
    entries: dict[str, bytes] = {}
    names = []
    for blob, media_type in layers:
        plain = gzip.decompress(blob) if media_type == LAYER_GZIP else blob
        layer_id = hashlib.sha256(plain).hexdigest()
        entries[f"{layer_id}/layer.tar"] = plain
        entries[f"{layer_id}/VERSION"] = b"1.0"
        names.append(f"{layer_id}/layer.tar")
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    entries[config_name] = config
    entries["manifest.json"] = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": names}]).encode()
    with tarfile.open(path, "w") as archive:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def saved_earlier(path: Path) -> Path:
    """PATH with its modification time a minute back: an archive saved before the command reads it, as a user's
    `docker save` output is. The doctor watches an archive modified in its last 2 s a second for a writer before it
    says it is damaged (cudnn_doctor/image/sources.py, _still_written; the watch of a recent file nothing writes is
    proven by test_image_hostile.py's test_a_writer_starved_through_the_whole_read_is_still_seen_writing): a family
    of damaged copies written one after the other waited that second for each (85 s in three tests)."""
    earlier = time.time() - 60
    os.utime(path, (earlier, earlier))
    return path


def push(base: str, name: str, tag: str, config: bytes, layers: list[tuple[bytes, str]], docker: bool = False) -> str:
    """Push through the registry HTTP API v2 (monolithic uploads, then the manifest); the manifest's digest."""
    push_blobs(base, name, [config, *(b for b, _ in layers)])
    manifest = manifest_of(config, layers, docker)
    put = urllib.request.Request(f"{base}/v2/{name}/manifests/{tag}", method="PUT", data=manifest,
                                 headers={"Content-Type": DOCKER_MANIFEST if docker else MANIFEST})
    urllib.request.urlopen(put, timeout=10).close()
    return digest(manifest)


def push_list(base: str, name: str, tag: str, images: list[tuple[str, bytes, list[tuple[bytes, str]]]],
              oci: bool = False) -> str:
    """A multi-platform image as Docker Hub serves nvidia/cuda: a manifest list (Docker's media types) of one image
    per (architecture, config, layers), each pushed by its digest first; with OCI, an OCI index of OCI manifests
    (as ghcr.io serves images that buildx pushed); the list's digest."""
    entries = []
    docker = not oci
    for arch, config, layers in images:
        manifest = manifest_of(config, layers, docker)
        manifest_digest = push(base, name, digest(manifest), config, layers, docker=docker)
        entries.append({"mediaType": DOCKER_MANIFEST if docker else MANIFEST, "digest": manifest_digest,
                        "size": len(manifest),
                        "platform": {"architecture": arch, "os": "linux", **({"variant": "v8"} if arch == "arm64" else {})}})
    kind = DOCKER_LIST if docker else INDEX
    listing = json.dumps({"schemaVersion": 2, "mediaType": kind, "manifests": entries}, indent=3).encode()
    put = urllib.request.Request(f"{base}/v2/{name}/manifests/{tag}", method="PUT", data=listing,
                                 headers={"Content-Type": kind})
    urllib.request.urlopen(put, timeout=10).close()
    return digest(listing)


def push_blobs(base: str, name: str, blobs: list[bytes]) -> None:
    for blob in blobs:
        start = urllib.request.Request(f"{base}/v2/{name}/blobs/uploads/", method="POST", data=b"")
        with urllib.request.urlopen(start, timeout=10) as answer:
            location = answer.headers["Location"]
        if location.startswith("/"):
            location = base + location
        separator = "&" if "?" in location else "?"
        put = urllib.request.Request(f"{location}{separator}digest={digest(blob)}", method="PUT", data=blob,
                                     headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(put, timeout=10).close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class TokenService:
    """A token server as Docker Hub's auth.docker.io answers (distribution's docs/spec/auth/token.md): GET
    REALM?service=..&scope=repository:NAME:pull -> {"token": JWT, "access_token": JWT}, the JWT signed RS256 by a
    key whose self-signed certificate the registry trusts (rootcertbundle), the chain in its x5c header."""

    realm: str
    service: str
    issuer: str
    cert: Path
    users: dict[str, str]  # user -> password the realm asks for (Basic); empty: anonymous pulls, as Docker Hub's
    asked: list[dict[str, str]] = field(default_factory=list)  # each request: its query and Authorization


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@contextmanager
def token_service(folder: Path, users: dict[str, str] | None = None) -> Iterator[TokenService]:
    """A token service on 127.0.0.1 (a thread of this process), its key and certificate made by openssl."""
    import http.server
    import threading
    import urllib.parse

    folder.mkdir(parents=True, exist_ok=True)
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=token.test"], check=True, capture_output=True, timeout=60)
    der = subprocess.run(["openssl", "x509", "-in", str(cert), "-outform", "DER"], check=True, capture_output=True,
                         timeout=60).stdout
    service = TokenService("", "registry.test", "token.test", cert, users or {})

    def sign(access: list[dict[str, object]]) -> str:
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [base64.b64encode(der).decode()]}
        claims = {"iss": service.issuer, "sub": "", "aud": service.service, "exp": now + 300, "nbf": now - 10,
                  "iat": now, "jti": os.urandom(8).hex(), "access": access}
        signing = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(key)], input=signing.encode(),
                                   check=True, capture_output=True, timeout=60).stdout
        return f"{signing}.{_b64url(signature)}"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
            service.asked.append({**query, "authorization": self.headers.get("Authorization", "")})
            if service.users:
                given = self.headers.get("Authorization", "")
                allowed = {"Basic " + base64.b64encode(f"{u}:{p}".encode()).decode() for u, p in service.users.items()}
                if given not in allowed:
                    self._answer(401, {"details": "incorrect username or password"})
                    return
            access = []
            for scope in query.get("scope", "").split():
                kind, _, rest = scope.partition(":")
                name, _, actions = rest.rpartition(":")
                access.append({"type": kind, "name": name, "actions": actions.split(",")})
            token = sign(access)
            self._answer(200, {"token": token, "access_token": token, "expires_in": 300})

        def _answer(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.realm = f"http://127.0.0.1:{server.server_address[1]}/token"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def registry(folder: Path, token: TokenService | None = None) -> Iterator[str]:
    """Debian's docker-registry (distribution 2.8) serving FOLDER on 127.0.0.1, with no auth or behind TOKEN; its
    base URL."""
    binary = shutil.which("docker-registry") or shutil.which("registry")
    if binary is None:
        raise RuntimeError("docker-registry is not installed (apt-get install docker-registry)")
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yml"
    auth = (f"auth:\n  token:\n    realm: {token.realm}\n    service: {token.service}\n    issuer: {token.issuer}\n"
            f"    rootcertbundle: {token.cert}\n") if token else ""
    config.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {folder / 'data'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\n{auth}")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"{base}/v2/", timeout=1).close()
                break
            except urllib.error.HTTPError as error:  # 401: up, and asking for a token
                error.close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"docker-registry did not start: {process.stderr.read().decode()[-500:]}"
                                       if process.stderr else "docker-registry did not start") from None
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def tar_header(name: bytes, size: int, typeflag: bytes = b"0") -> bytes:
    """One ustar header block, written by hand: fast enough for 100,000 members, and free to claim any size."""
    block = bytearray(512)
    block[0:len(name)] = name
    block[100:108] = b"0000644\0"
    block[108:116] = block[116:124] = b"0000000\0"
    block[124:136] = b"%011o\0" % size
    block[136:148] = b"%011o\0" % 1_700_000_000
    block[148:156] = b" " * 8
    block[156:157] = typeflag
    block[257:265] = b"ustar\x0000"
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def gzip_stream(parts: Iterator[bytes]) -> bytes:
    """PARTS gzip'd as they come (a layer that inflates to far more than it weighs)."""
    import zlib

    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    return b"".join(packer.compress(part) for part in parts) + packer.flush()
