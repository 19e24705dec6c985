"""Tiny container images built offline in Python, as docker and the OCI image spec lay them out: layers (tar, gzip'd
or not, with links and whiteouts), an OCI layout folder, a `docker save` archive, and a push to a registry through
the registry HTTP API v2 (the one Debian's docker-registry serves on 127.0.0.1)."""

from __future__ import annotations

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
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Union

LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"

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


def manifest_of(config: bytes, layers: list[tuple[bytes, str]]) -> bytes:
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


def push(base: str, name: str, tag: str, config: bytes, layers: list[tuple[bytes, str]]) -> str:
    """Push through the registry HTTP API v2 (monolithic uploads, then the manifest); the manifest's digest."""
    for blob in [config, *(b for b, _ in layers)]:
        start = urllib.request.Request(f"{base}/v2/{name}/blobs/uploads/", method="POST", data=b"")
        with urllib.request.urlopen(start, timeout=10) as answer:
            location = answer.headers["Location"]
        if location.startswith("/"):
            location = base + location
        separator = "&" if "?" in location else "?"
        put = urllib.request.Request(f"{location}{separator}digest={digest(blob)}", method="PUT", data=blob,
                                     headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(put, timeout=10).close()
    manifest = manifest_of(config, layers)
    put = urllib.request.Request(f"{base}/v2/{name}/manifests/{tag}", method="PUT", data=manifest,
                                 headers={"Content-Type": MANIFEST})
    urllib.request.urlopen(put, timeout=10).close()
    return digest(manifest)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def registry(folder: Path) -> Iterator[str]:
    """Debian's docker-registry (distribution 2.8) serving FOLDER on 127.0.0.1, no auth; its base URL."""
    binary = shutil.which("docker-registry") or shutil.which("registry")
    if binary is None:
        raise RuntimeError("docker-registry is not installed (apt-get install docker-registry)")
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yml"
    config.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {folder / 'data'}\n"
                      f"http:\n  addr: 127.0.0.1:{port}\n")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"{base}/v2/", timeout=1).close()
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
