"""install over the network as sites have it: a plain-HTTP download without a checksum is said to be unverified,
an unreachable host is said to be unreachable (not "the manifest lists nothing"), and a mirror behind an
internal CA works once the CA is in the system's trust store (SSL_CERT_FILE) or REQUESTS_CA_BUNDLE."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install_helpers import clean_env, make_archive, run_cli, run_json
from tests.test_install_http import entry, manifest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")
pytest.importorskip("pytest_httpserver")


def test_a_plain_http_download_without_a_checksum_says_it_is_unverified(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = make_archive("wheel", tmp_path, cuda=13)
    httpserver.expect_request(f"/files/{archive.name}").respond_with_data(archive.read_bytes())
    url = httpserver.url_for(f"/files/{archive.name}")
    result = run_cli(["install", "--from", url, "--prefix", str(tmp_path / "cuda"), "--dry-run"], clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert f"--from {url} comes over plain HTTP with no --sha256: the archive is unverified" in result.stderr
    import hashlib

    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    checked = run_cli(["install", "--from", url, "--sha256", digest, "--prefix", str(tmp_path / "other"), "--dry-run"],
                      clean_env(tmp_path))
    assert checked.returncode == 0 and "unverified" not in checked.stderr


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when this returns: nothing listens there


def test_a_short_version_offline_says_the_host_cannot_be_reached(tmp_path: Path) -> None:
    mirror = f"http://127.0.0.1:{_closed_port()}/redist/"
    result = run_cli(["install", "--version", "9.1", "--mirror", mirror, "--prefix", str(tmp_path / "p"), "--dry-run"],
                     clean_env(tmp_path))
    assert result.returncode == 2
    assert "cannot reach 127.0.0.1: the connection was refused" in result.stderr, result.stderr
    assert "lists no redistrib" not in result.stderr and len(result.stderr.splitlines()) == 1


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def internal_ca(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A site's own CA and a server certificate for 127.0.0.1 that it signed, made with openssl."""
    folder.mkdir()
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=cudnn-doctor test internal CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=127.0.0.1", cwd=folder)
    (folder / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                                       "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                                       "authorityKeyIdentifier=keyid\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "server.pem", folder / "server.key")
    return folder / "ca.pem", context


def test_a_mirror_behind_an_internal_ca(tmp_path: Path) -> None:
    from pytest_httpserver import HTTPServer

    ca, context = internal_ca(tmp_path / "pki")
    archive = make_archive("txz", tmp_path)
    server = HTTPServer(host="127.0.0.1", port=0, ssl_context=context)
    server.expect_request("/redist/redistrib_9.19.0.json").respond_with_json(
        manifest("9.19.0.7", {"cuda12": entry(archive)}))
    server.expect_request(f"/redist/cudnn/linux-x86_64/{archive.name}").respond_with_data(archive.read_bytes())
    server.start()
    try:
        mirror = server.url_for("/redist/")
        assert mirror.startswith("https://127.0.0.1:")
        args = ["install", "--version", "9.19.0", "--cuda", "12", "--mirror", mirror, "--prefix", str(tmp_path / "p"),
                "--dry-run"]
        untrusted = run_cli(args, clean_env(tmp_path))
        assert untrusted.returncode == 2
        assert "TLS handshake failed" in untrusted.stderr and "SSL_CERT_FILE" in untrusted.stderr
        for variable in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):  # the system store's file, or requests' bundle
            code, data, err = run_json(args, clean_env(tmp_path, **{variable: str(ca)}))
            assert code == 0, err
            assert data["plan"]["version"] == "9.19.0" and mirror in data["plan"]["source"], json.dumps(data)[:500]
    finally:
        server.clear()
        if server.is_running():
            server.stop()
