"""Issue 44: `image` reaches the registries people use, as docker does: Docker Hub names by the reference grammar,
the anonymous bearer-token flow (Docker Hub, nvcr.io, ghcr.io), a private registry with the user's Docker
credentials (config.json, a credential helper), a manifest list choosing this machine's platform or --platform.
Debian's docker-registry on 127.0.0.1 behind a token server of the test, with Docker Hub's media types; and what it
must refuse (plain http beyond loopback, a realm or redirect there, a server that drips or cuts a body short)."""

from __future__ import annotations

import base64
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_nvml
from tests.images import config_of, push_list, registry, token_service
from tests.test_image import ENV, assert_cuda_image_judged, cuda_image_layers

needs_registry = pytest.mark.skipif(shutil.which("docker-registry") is None and shutil.which("registry") is None,
                                    reason="docker-registry is not installed (.ci/run installs Debian's)")
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl signs the test's tokens")
NAME = "nvidia/cuda"
TAG = "12.8.1-cudnn-runtime-ubuntu24.04"


@pytest.fixture
def node(machine: Machine, tmp_path: Path) -> Machine:
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040)
    machine.add_library_path(tmp_path / "driver")
    return machine


def multi_platform(base: str, oci: bool = False) -> str:
    """nvidia/cuda:TAG as Docker Hub lists it: an amd64 and an arm64 image in a manifest list (or an OCI index)."""
    layers = cuda_image_layers()
    arm = cuda_image_layers()[:1]
    return push_list(base, NAME, TAG, [("amd64", config_of(ENV, layers=layers), layers),
                                       ("arm64", config_of(ENV, arch="arm64", layers=arm), arm)], oci)


@contextmanager
def hub_behind_tokens(tmp_path: Path, users: dict[str, str] | None = None,
                      oci: bool = False) -> Iterator[tuple[str, object]]:
    """The images pushed to a registry without auth, then served from the same storage behind a token service."""
    with registry(tmp_path / "registry") as base:
        multi_platform(base, oci)
    with token_service(tmp_path / "tokens", users) as tokens, registry(tmp_path / "registry", tokens) as base:
        yield base.removeprefix("http://"), tokens


@needs_registry
@needs_openssl
def test_an_oci_index_on_ghcr_style_names(node: Machine, tmp_path: Path) -> None:
    """An OCI index of OCI manifests (what buildx pushes to ghcr.io), read by HOST/OWNER/NAME:TAG, both platforms."""
    with hub_behind_tokens(tmp_path, oci=True) as (host, _tokens):
        amd = node.run("image", f"{host}/{NAME}:{TAG}", "--json").json
        arm = node.run("image", f"{host}/{NAME}:{TAG}", "--platform", "arm64", "--json").json
    assert (amd["image"]["arch"], arm["image"]["arch"]) == ("amd64", "arm64"), (amd, arm)
    assert amd["image"]["digest"] != arm["image"]["digest"]


@needs_registry
@needs_openssl
def test_a_docker_hub_name_through_the_token_flow_and_a_manifest_list(node: Machine, tmp_path: Path) -> None:
    with hub_behind_tokens(tmp_path) as (host, tokens):
        node.env["CUDNN_DOCTOR_REGISTRY_MIRROR"] = f"http://{host}"
        data = node.run("image", f"{NAME}:{TAG}", "--json").json
        assert data["image"]["source"] == "registry", data
        assert_cuda_image_judged(data)
        asked = tokens.asked  # type: ignore[attr-defined]
        assert asked and asked[0]["scope"] == f"repository:{NAME}:pull" and asked[0]["service"] == "registry.test"
        assert asked[0]["authorization"] == ""  # anonymous, as Docker Hub's public images are
        arm = node.run("image", f"docker.io/{NAME}:{TAG}", "--platform", "linux/arm64", "--json").json
        assert arm["image"]["arch"] == "arm64" and "CD155" in codes(arm)
        text = node.run("image", f"{NAME}:{TAG}")
        assert "needs driver >= 570.26" in text.stdout and text.exit_code == 1
        official = node.run("image", "ubuntu:24.04", "--json")  # library/ubuntu, which this registry lacks
        assert official.exit_code == 2 and "library/ubuntu" in official.json["error"]["message"], official.json


@needs_registry
@needs_openssl
def test_a_private_registry_with_the_users_docker_credentials(node: Machine, tmp_path: Path) -> None:
    with hub_behind_tokens(tmp_path, {"alice": "s3cret"}) as (host, tokens):
        ref = f"{host}/{NAME}:{TAG}"
        refused = node.run("image", ref, "--json")
        assert refused.exit_code == 2 and "docker login" in refused.json["error"]["fix"], refused.json
        docker = tmp_path / "docker-config"
        docker.mkdir()
        node.env["DOCKER_CONFIG"] = str(docker)
        (docker / "config.json").write_text(json.dumps(
            {"auths": {host: {"auth": base64.b64encode(b"alice:s3cret").decode()}}}))
        assert node.run("image", ref, "--json").json["image"]["arch"] == "amd64"
        # a credential helper, as `docker login` with credsStore leaves it: asked through its protocol
        helpers = tmp_path / "bin"
        helpers.mkdir()
        helper = helpers / "docker-credential-teststore"
        helper.write_text("#!/bin/sh\nread server\n"
                          f"[ \"$server\" = '{host}' ] || exit 1\n"
                          "printf '{\"ServerURL\":\"%s\",\"Username\":\"alice\",\"Secret\":\"s3cret\"}' \"$server\"\n")
        helper.chmod(0o755)
        node.env["PATH"] = f"{helpers}:{node.env['PATH']}"
        (docker / "config.json").write_text(json.dumps({"credsStore": "teststore"}))
        tokens.asked.clear()  # type: ignore[attr-defined]
        assert node.run("image", ref, "--json").json["image"]["arch"] == "amd64"
        assert tokens.asked[-1]["authorization"].startswith("Basic ")  # type: ignore[attr-defined]


# --- what must be refused, and servers that misbehave ----------------------------------------------------------------

@contextmanager
def server(answer: bytes | None = None, drip: bytes | None = None, reset: bool = False,
           tls: Any = None, bind: str = "127.0.0.1", hits: list[bytes] | None = None) -> Iterator[str]:
    """A one-thread HTTP server on BIND (HTTPS with the ssl context TLS) that gives every request ANSWER (then
    closes), or DRIP a byte a quarter-second, or a reset after its headers; its HOST:PORT. HITS: each request got."""
    listener = socket.socket()
    listener.bind((bind, 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                if tls is not None:
                    conn.settimeout(5)
                    conn = tls.wrap_socket(conn, server_side=True)
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    request = conn.recv(65536)
                    if hits is not None:
                        hits.append(request)
                    if answer is not None:
                        conn.sendall(answer)
                    if reset:
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                    for byte in drip or b"":
                        if stop.is_set():
                            break
                        conn.sendall(bytes([byte]))
                        time.sleep(0.25)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"{bind}:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        listener.close()


def head(status: str, headers: dict[str, str]) -> bytes:
    """A status line and HEADERS, with `Connection: close`: the server closes after each answer, and says so, so that
    no client sends its next request on a connection being closed."""
    headers = {**headers, "Connection": "close"}
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()


@pytest.mark.parametrize(("case", "answer"), [
    ("realm", head("401 Unauthorized", {"WWW-Authenticate": 'Bearer realm="http://auth.example.com/token",'
                                                            'service="registry.example.com"', "Content-Length": "0"})),
    ("redirect", head("307 Temporary Redirect", {"Location": "http://blobs.example.com/v2/x", "Content-Length": "0"})),
])
def test_plain_http_beyond_loopback_is_refused(node: Machine, case: str, answer: bytes) -> None:
    with server(answer) as host:
        result = node.run("image", f"{host}/team/app:1", "--json")
    assert result.exit_code == 2 and "plain http beyond this machine" in result.json["error"]["message"], result.json
    assert "example.com" in result.json["error"]["message"]


@pytest.mark.parametrize("case", ["realm", "redirect"])
def test_plain_http_to_another_loopback_host_is_refused_unasked(node: Machine, case: str) -> None:
    """Issue 43, class 6: plain http is read from the loopback host the registry was named by, not from another
    address of the loopback (127.0.0.2 is another server): a realm or a redirect there is refused, never asked."""
    hits: list[bytes] = []
    with server(head("200 OK", {"Content-Length": "2"}) + b"{}", bind="127.0.0.2", hits=hits) as elsewhere:
        answer = (head("401 Unauthorized", {"WWW-Authenticate": f'Bearer realm="http://{elsewhere}/token"',
                                            "Content-Length": "0"}) if case == "realm" else
                  head("307 Temporary Redirect", {"Location": f"http://{elsewhere}/v2/team/app/manifests/1",
                                                  "Content-Length": "0"}))
        with server(answer) as host:
            result = node.run("image", f"{host}/team/app:1", "--json")
    assert result.exit_code == 2 and "another host than the registry's own" in result.json["error"]["message"], \
        result.json
    assert hits == []


@pytest.mark.parametrize("answer", [
    head("401 Unauthorized", {"WWW-Authenticate": 'Bearer realm="http://127.0.0.1:1/token"', "Content-Length": "0"}),
    head("401 Unauthorized", {"Content-Length": "0"}), head("404 Not Found", {"Content-Length": "0"}),
    head("500 Oops", {"Content-Length": "0"}), b"garbage\r\n\r\n",
])
def test_every_registry_refusal_names_the_way_without_it(node: Machine, answer: bytes) -> None:
    """Whatever stops a registry read (no token service, no credentials, no image, a server error, garbage), the fix
    ends with the way that needs no registry from here: docker pull and docker save where docker can reach it."""
    with server(answer) as host:
        result = node.run("image", f"{host}/team/app:1", "--json")
    assert result.exit_code == 2, result.json
    assert "docker pull" in result.json["error"]["fix"] and "docker save" in result.json["error"]["fix"], result.json


def test_a_drip_a_body_cut_short_and_a_reset_end_in_one_line(node: Machine) -> None:
    node.env["CUDNN_DOCTOR_IMAGE_TIMEOUT"] = "2"
    ok = head("200 OK", {"Content-Type": "application/vnd.oci.image.manifest.v1+json", "Content-Length": "4000"})
    with server(ok, drip=b"{" * 400) as host:
        started = time.monotonic()
        dripped = node.run("image", f"{host}/team/app:1", "--json")
        took = time.monotonic() - started
    assert dripped.exit_code == 2 and "deadline" in dripped.json["error"]["message"], dripped.json
    assert took < 20, took  # the drip would take 100 s; its deadline is 2 s
    with server(drip=b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 400) as host:  # its status line and headers
        started = time.monotonic()
        headers = node.run("image", f"{host}/team/app:1", "--json")
        took = time.monotonic() - started
    assert headers.exit_code == 2 and "within 2 s" in headers.json["error"]["message"], headers.json
    assert took < 20, took
    with server(ok + b'{"schemaVersion": 2') as host:
        short = node.run("image", f"{host}/team/app:1", "--json")
    assert short.exit_code == 2 and "cut short" in short.json["error"]["message"], short.json
    with server(ok + b'{"sch', reset=True) as host:
        reset = node.run("image", f"{host}/team/app:1", "--json")
    assert reset.exit_code == 2 and "Traceback" not in reset.stderr, reset.json


@pytest.mark.parametrize(("variable", "value"), [
    ("CUDNN_DOCTOR_IMAGE_TIMEOUT", "abc"), ("CUDNN_DOCTOR_IMAGE_TIMEOUT", "-1"), ("CUDNN_DOCTOR_IMAGE_TIMEOUT", "nan"),
    ("CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES", "64G"), ("CUDNN_DOCTOR_IMAGE_MAX_LAYER_BYTES", "0"),
    ("CUDNN_DOCTOR_REGISTRY_MIRROR", "http://mirror.example.com"), ("CUDNN_DOCTOR_REGISTRY_MIRROR", "ftp://127.0.0.1"),
])
def test_image_variables_are_checked(node: Machine, variable: str, value: str) -> None:
    """Each is a usage error in one line, before any request (the numbers with the other variables); a good timeout
    is honoured (the drip tests set one), where any value was an internal error before."""
    node.env[variable] = value
    result = node.run("image", "ubuntu:24.04", "--json")
    assert result.exit_code == 2 and variable in result.json["error"]["message"], result.json


@pytest.mark.parametrize(("ref", "said"), [
    ("./missing.tar", "no such file or folder"), ("missing.tar", "no such file or folder"),
    ("/srv/images/app/", "no such file or folder"), ("Team/App:1", "not an image reference"),
])
def test_a_missing_file_is_said_so(node: Machine, ref: str, said: str) -> None:
    result = node.run("image", ref, "--json")
    assert result.exit_code == 2 and said in result.json["error"]["message"] and "registry" not in result.json["error"]["message"], \
        result.json


@needs_openssl
@pytest.mark.parametrize("case", ["realm", "redirect"])
def test_https_is_never_turned_into_plain_http(node: Machine, tmp_path: Path, case: str) -> None:
    """A mirror over https (a certificate this machine trusts through SSL_CERT_FILE) whose token realm, or a
    redirect, turns to plain http, even on this machine: refused before it is asked."""
    import ssl
    import subprocess

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    answer = (head("401 Unauthorized", {"WWW-Authenticate": 'Bearer realm="http://127.0.0.1:9/token"',
                                        "Content-Length": "0"}) if case == "realm" else
              head("307 Temporary Redirect", {"Location": "http://127.0.0.1:9/v2/x", "Content-Length": "0"}))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with server(answer, tls=context) as host:
        node.env.update({"CUDNN_DOCTOR_REGISTRY_MIRROR": f"https://{host}", "SSL_CERT_FILE": str(cert)})
        result = node.run("image", "nvidia/cuda:12.8.1-runtime-ubuntu24.04", "--json")
    assert result.exit_code == 2 and "turns https into plain http" in result.json["error"]["message"], result.json


@pytest.mark.parametrize("platform", ["windows/amd64", "linux/", "linux/amd64/v3/x", "sparc"])
def test_a_platform_that_is_no_linux_one_is_refused(node: Machine, platform: str) -> None:
    result = node.run("image", "127.0.0.1:9/team/app:1", "--platform", platform, "--json")
    assert result.exit_code == 2 and "--platform" in result.json["error"]["message"], result.json


def test_a_manifest_the_server_gzips_is_read(node: Machine) -> None:
    """A registry behind a CDN may gzip its JSON (requests asks for it): the manifest is read decoded; here every
    request gets that manifest, so the configuration is then refused for its digest, not for its encoding."""
    import gzip

    from tests.images import manifest_of

    body = gzip.compress(manifest_of(config_of(ENV), []))
    answer = head("200 OK", {"Content-Type": "application/vnd.oci.image.manifest.v1+json", "Content-Encoding": "gzip",
                             "Content-Length": str(len(body))}) + body
    with server(answer) as host:
        result = node.run("image", f"{host}/team/app:1", "--json")
    assert result.exit_code == 2 and "configuration does not match its digest" in result.json["error"]["message"], \
        result.json


@contextmanager
def routed(answers: dict[str, bytes], stall: str, drip_every: float = 0.0) -> Iterator[str]:
    """A registry on 127.0.0.1 that answers each path ending in a key of ANSWERS with its body (as a registry does),
    and on the path ending in STALL sends its headers and half its body, then nothing (DRIP_EVERY: then the rest,
    one byte each DRIP_EVERY seconds). Its stalls and drips end with the block: no thread of it outlives the test
    (a drip into a closed connection printed a traceback into the next in-process test's standard error)."""
    import http.server

    stop = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            for end, body in answers.items():
                if self.path.endswith(end):
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Content-Type", json.loads(body).get("mediaType", "application/json")
                                     if body.startswith(b"{") else "application/octet-stream")
                    self.end_headers()
                    if end == stall:
                        self.wfile.write(body[:len(body) // 2])
                        self.wfile.flush()
                        if not drip_every:
                            stop.wait(30)
                        for at in range(len(body) // 2, min(len(body), len(body) // 2 + int(30 / (drip_every or 1)))):
                            if stop.wait(drip_every):
                                break
                            try:
                                self.wfile.write(body[at:at + 1])
                                self.wfile.flush()
                            except OSError:  # the doctor gave up on it and closed the connection
                                break
                        self.close_connection = True
                        return
                    self.wfile.write(body)
                    return
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    listener.daemon_threads = True
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.server_address[1]}"
    finally:
        stop.set()
        listener.shutdown()
        listener.server_close()


@pytest.mark.parametrize("declared", ["true", "huge"])
def test_a_layer_that_stalls_halfway_ends_at_its_deadline(node: Machine, declared: str) -> None:
    """A blob that stops sending halfway: cut off when nothing came for CUDNN_DOCTOR_IMAGE_TIMEOUT, however much
    time its declared size would buy (a manifest may declare 1 EB)."""
    from tests.images import digest, manifest_of

    layers = cuda_image_layers()
    config = config_of(ENV, layers=layers)
    manifest = manifest_of(config, layers)
    if declared == "huge":
        document = json.loads(manifest)
        document["layers"][0]["size"] = 10 ** 18
        manifest = json.dumps(document).encode()
    answers = {"/manifests/1": manifest, f"/blobs/{digest(config)}": config,
               **{f"/blobs/{digest(blob)}": blob for blob, _ in layers}}
    node.env["CUDNN_DOCTOR_IMAGE_TIMEOUT"] = "2"
    with routed(answers, stall=f"/blobs/{digest(layers[0][0])}") as host:
        started = time.monotonic()
        result = node.run("image", f"{host}/team/app:1", "--json")
        took = time.monotonic() - started
    assert result.exit_code == 2 and "deadline" in result.json["error"]["message"], result.json
    assert took < 20, took


@pytest.mark.parametrize("declared", ["true", "huge"])
def test_a_layer_that_drips_is_cut_off_whatever_size_it_declares(node: Machine, declared: str) -> None:
    """A blob that sends half, then a byte every half second: never silent for the stall limit, so only its pace
    can end it; a declared 1 EB (each MiB declared buys a second) buys a drip no time: past the first
    CUDNN_DOCTOR_IMAGE_TIMEOUT seconds each second must bring a MiB."""
    from tests.images import digest, manifest_of

    layers = cuda_image_layers()
    config = config_of(ENV, layers=layers)
    manifest = manifest_of(config, layers)
    if declared == "huge":
        document = json.loads(manifest)
        document["layers"][0]["size"] = 1 << 60
        manifest = json.dumps(document).encode()
    answers = {"/manifests/1": manifest, f"/blobs/{digest(config)}": config,
               **{f"/blobs/{digest(blob)}": blob for blob, _ in layers}}
    node.env["CUDNN_DOCTOR_IMAGE_TIMEOUT"] = "2"
    with routed(answers, stall=f"/blobs/{digest(layers[0][0])}", drip_every=0.5) as host:
        started = time.monotonic()
        result = node.run("image", f"{host}/team/app:1", "--json")
        took = time.monotonic() - started
    message = result.json["error"]["message"]
    assert result.exit_code == 2 and ("a second" in message or "deadline" in message), message
    assert took < 15, took
