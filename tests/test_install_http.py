"""`install --version` through a real redistributable manifest and archives served over HTTP
on 127.0.0.1 (pytest-httpserver): resolution, download, resume, retries and checksums run for real."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from werkzeug import Request, Response

from tests.install_helpers import clean_env, make_archive, run_cli, run_json, snapshot

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="installs are applied on Linux hosts")
pytest.importorskip("pytest_httpserver")


def entry(archive: Path, **override: str) -> dict[str, str]:
    data = archive.read_bytes()
    return {"relative_path": f"cudnn/linux-x86_64/{archive.name}", "sha256": hashlib.sha256(data).hexdigest(),
            "md5": hashlib.md5(data).hexdigest(), "size": str(len(data)), **override}


def manifest(version: str, variants: dict[str, dict[str, str]]) -> dict:  # type: ignore[type-arg]
    return {"release_date": "2026-01-01", "release_label": version, "release_product": "cudnn",
            "cudnn": {"name": "NVIDIA CUDA Deep Neural Network library", "license": "cudnn", "version": version,
                      "cuda_variant": [k.removeprefix("cuda") for k in variants],
                      "linux-x86_64": variants}}


@pytest.fixture
def mirror(httpserver, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A mirror of NVIDIA's redist folder with cuDNN 9.19.0 for CUDA 12 and 13."""
    (tmp_path / "a12").mkdir()
    (tmp_path / "a13").mkdir()
    archives = {12: make_archive("txz", tmp_path / "a12", version=91900, cudart=12040, cuda=12),
                13: make_archive("txz", tmp_path / "a13", version=91900, cudart=13010, cuda=13)}
    httpserver.expect_request("/redist/redistrib_9.19.0.json").respond_with_json(
        manifest("9.19.0.7", {f"cuda{m}": entry(a) for m, a in archives.items()}))
    for archive in archives.values():
        httpserver.expect_request(f"/redist/cudnn/linux-x86_64/{archive.name}").respond_with_data(
            archive.read_bytes(), content_type="application/x-xz")
    return httpserver.url_for("/redist/"), archives


def test_version_resolves_through_the_manifest_and_installs(mirror, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, archives = mirror
    env = clean_env(tmp_path)
    prefix = tmp_path / "cuda"
    code, data, err = run_json(["install", "--version", "9.19.0", "--cuda", "12", "--mirror", base,
                                "--prefix", str(prefix), "--yes"], env)
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "9.19.0"
    assert data["result"]["installed"]["cuda_version"] == "12.4"
    assert base in data["plan"]["source"]
    cached = tmp_path / "cache" / "downloads" / archives[12].name
    assert cached.read_bytes() == archives[12].read_bytes()
    assert not cached.with_name(cached.name + ".part").exists()


def test_cuda_major_defaults_to_the_toolkit_and_a_mismatch_is_refused_unless_forced(mirror, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, _ = mirror
    toolkit = tmp_path / "cuda-13.0"
    toolkit.mkdir()
    (toolkit / "version.json").write_text(json.dumps({"cuda": {"version": "13.0.96"}}))
    env = clean_env(tmp_path, CUDA_HOME=str(toolkit))
    code, data, err = run_json(["install", "--version", "9.19.0", "--mirror", base, "--dry-run"], env)
    assert code == 0, err
    assert data["plan"]["prefix"] == str(toolkit)  # the toolkit check picks
    assert data["plan"]["cuda_major"] == 13 and "_cuda13-" in data["plan"]["archive"]
    assert data["plan"]["fits"] == []
    code, data, err = run_json(["install", "--version", "9.19.0", "--cuda", "12", "--mirror", base, "--dry-run"], env)
    assert code == 2 and [f["code"] for f in data["findings"]] == ["CD519"], err  # refused without --force
    assert "--cuda 13 --prefix" in data["findings"][0]["fix"]
    code, data, err = run_json(["install", "--version", "9.19.0", "--cuda", "12", "--mirror", base, "--dry-run",
                                "--force"], env)
    assert code == 0, err
    assert [f["code"] for f in data["plan"]["fits"]] == ["CD306"]
    from cudnn_doctor.codes import CODES

    assert data["plan"]["fits"][0]["severity"] == CODES["CD306"].severity  # the registry's, not overwritten


def test_a_partial_version_resolves_when_the_mirror_can_be_listed(mirror, httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, _ = mirror
    listing = "".join(f'<a href="redistrib_{v}.json">redistrib_{v}.json</a>\n' for v in ("8.9.7", "9.1.0", "9.19.0"))
    httpserver.expect_request("/redist/").respond_with_data(listing, content_type="text/html")
    code, data, err = run_json(["install", "--version", "9", "--cuda", "12", "--mirror", base, "--prefix",
                                str(tmp_path / "p"), "--dry-run"], clean_env(tmp_path))
    assert code == 0, err
    assert data["plan"]["version"] == "9.19.0"


def test_a_partial_version_without_a_listing_asks_for_a_full_one(mirror, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, _ = mirror
    result = run_cli(["install", "--version", "9.1", "--mirror", base, "--prefix", str(tmp_path / "p"), "--dry-run"],
                     clean_env(tmp_path))
    assert result.returncode == 2
    assert "give a full version, e.g. --version 9.19.0" in result.stderr


def test_a_wrong_checksum_in_the_manifest_is_refused(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = make_archive("txz", tmp_path)
    httpserver.expect_request("/r/redistrib_9.19.0.json").respond_with_json(
        manifest("9.19.0.7", {"cuda12": entry(archive, sha256="ab" * 32)}))
    httpserver.expect_request(f"/r/cudnn/linux-x86_64/{archive.name}").respond_with_data(archive.read_bytes())
    prefix = tmp_path / "cuda"
    prefix.mkdir()
    result = run_cli(["install", "--version", "9.19.0", "--mirror", httpserver.url_for("/r/"), "--prefix", str(prefix),
                      "--yes"], clean_env(tmp_path))
    assert result.returncode == 2
    assert "CD501" in result.stderr and "ab" * 32 in result.stderr
    assert snapshot(prefix) == {}
    assert list((tmp_path / "cache" / "downloads").iterdir()) == []  # neither the file nor a .part is kept


def test_a_partial_download_is_resumed_with_a_range_request(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = make_archive("txz", tmp_path)
    data = archive.read_bytes()
    ranges: list[str] = []

    def serve(request: Request) -> Response:
        wanted = request.headers.get("Range")
        if wanted:
            ranges.append(wanted)
            start = int(wanted.removeprefix("bytes=").split("-")[0])
            return Response(data[start:], status=206, headers={
                "Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})
        return Response(data, status=200)

    httpserver.expect_request("/r/redistrib_9.19.0.json").respond_with_json(
        manifest("9.19.0.7", {"cuda12": entry(archive)}))
    httpserver.expect_request(f"/r/cudnn/linux-x86_64/{archive.name}").respond_with_handler(serve)
    downloads = tmp_path / "cache" / "downloads"
    downloads.mkdir(parents=True)
    (downloads / (archive.name + ".part")).write_bytes(data[:1000])
    code, out, err = run_json(["install", "--version", "9.19.0", "--mirror", httpserver.url_for("/r/"), "--prefix",
                               str(tmp_path / "cuda"), "--yes"], clean_env(tmp_path))
    assert code == 0, err
    assert ranges == ["bytes=1000-"]
    assert (downloads / archive.name).read_bytes() == data


def test_server_errors_are_retried(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = make_archive("txz", tmp_path)
    httpserver.expect_request("/r/redistrib_9.19.0.json").respond_with_json(
        manifest("9.19.0.7", {"cuda12": entry(archive)}))
    path = f"/r/cudnn/linux-x86_64/{archive.name}"
    httpserver.expect_oneshot_request(path).respond_with_data("busy", status=503)
    httpserver.expect_oneshot_request(path).respond_with_data("busy", status=503)
    httpserver.expect_request(path).respond_with_data(archive.read_bytes())
    code, out, err = run_json(["install", "--version", "9.19.0", "--mirror", httpserver.url_for("/r/"), "--prefix",
                               str(tmp_path / "cuda"), "--yes"], clean_env(tmp_path))
    assert code == 0, err
    assert sum(1 for request, _ in httpserver.log if request.path == path) == 3


@pytest.mark.parametrize("wait", ["999999999", "Fri, 31 Dec 9999 23:59:59 GMT"])
@pytest.mark.parametrize("status", [503, 429])
def test_a_retry_after_past_the_deadline_ends_the_download_at_once(httpserver, tmp_path: Path, wait: str,  # type: ignore[no-untyped-def]
                                                                   status: int) -> None:
    """A mirror that answers 'busy, come back in 31 years' (seconds or an HTTP date): urllib3 slept that long (up to
    its own 6-hour cap) far past CUDNN_DOCTOR_DOWNLOAD_DEADLINE. Now the download ends at once in one line that says
    what the server asked and the deadline; nothing is installed."""
    import time

    archive = make_archive("txz", tmp_path)
    httpserver.expect_request("/r/redistrib_9.19.0.json").respond_with_json(
        manifest("9.19.0.7", {"cuda12": entry(archive)}))
    path = f"/r/cudnn/linux-x86_64/{archive.name}"
    httpserver.expect_request(path).respond_with_data("busy", status=status, headers={"Retry-After": wait})
    env = {**clean_env(tmp_path), "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "10"}
    started = time.monotonic()
    code, out, err = run_json(["install", "--version", "9.19.0", "--mirror", httpserver.url_for("/r/"), "--prefix",
                               str(tmp_path / "cuda"), "--yes"], env)
    assert time.monotonic() - started < 10
    assert code == 2 and out["result"]["status"] == "failed", out
    [finding] = out["findings"]
    assert finding["code"] == "CD511", finding
    message = finding["detail"]
    assert f"HTTP {status}" in message and "asks to be asked again in" in message and "deadline of 10 s" in message
    assert "Traceback" not in err and not list((tmp_path / "cuda").rglob("libcudnn*"))


def test_a_retry_after_within_the_deadline_is_waited_for(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = make_archive("txz", tmp_path)
    httpserver.expect_request("/r/redistrib_9.19.0.json").respond_with_json(
        manifest("9.19.0.7", {"cuda12": entry(archive)}))
    path = f"/r/cudnn/linux-x86_64/{archive.name}"
    httpserver.expect_oneshot_request(path).respond_with_data("busy", status=503, headers={"Retry-After": "1"})
    httpserver.expect_request(path).respond_with_data(archive.read_bytes())
    import time

    started = time.monotonic()
    code, out, err = run_json(["install", "--version", "9.19.0", "--mirror", httpserver.url_for("/r/"), "--prefix",
                               str(tmp_path / "cuda"), "--yes"], {**clean_env(tmp_path),
                                                                  "CUDNN_DOCTOR_DOWNLOAD_DEADLINE": "30"})
    assert code == 0, err
    assert time.monotonic() - started >= 1  # the second ask came after the second the server named
    assert sum(1 for request, _ in httpserver.log if request.path == path) == 2


def test_an_older_manifest_without_per_cuda_keys_is_read(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = make_archive("txz", tmp_path, version=90100)
    flat = manifest("9.1.0.70", {})
    flat["cudnn"]["cuda_variant"] = ["12"]
    flat["cudnn"]["linux-x86_64"] = entry(archive)
    httpserver.expect_request("/r/redistrib_9.1.0.json").respond_with_json(flat)
    httpserver.expect_request(f"/r/cudnn/linux-x86_64/{archive.name}").respond_with_data(archive.read_bytes())
    code, data, err = run_json(["install", "--version", "9.1.0", "--mirror", httpserver.url_for("/r/"), "--prefix",
                                str(tmp_path / "cuda"), "--yes"], clean_env(tmp_path))
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "9.1.0"
    assert data["plan"]["cuda_major"] == 12


def test_from_url_downloads_and_installs(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    archive = make_archive("wheel", tmp_path, cuda=13)
    httpserver.expect_request(f"/files/{archive.name}").respond_with_data(archive.read_bytes())
    code, data, err = run_json(["install", "--from", httpserver.url_for(f"/files/{archive.name}"), "--prefix",
                                str(tmp_path / "cuda"), "--yes"], clean_env(tmp_path))
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "9.19.0"


def test_a_platform_the_release_lacks_is_named(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    only_windows = manifest("9.19.0.7", {})
    del only_windows["cudnn"]["linux-x86_64"]
    only_windows["cudnn"]["windows-x86_64"] = {"cuda12": {"relative_path": "x.zip", "sha256": "0" * 64, "size": "1"}}
    httpserver.expect_request("/r/redistrib_9.19.0.json").respond_with_json(only_windows)
    result = run_cli(["install", "--version", "9.19.0", "--mirror", httpserver.url_for("/r/"), "--prefix",
                      str(tmp_path / "p"), "--dry-run"], clean_env(tmp_path))
    assert result.returncode == 2
    assert "no build for linux-x86_64" in result.stderr and "windows-x86_64" in result.stderr


def test_an_air_gapped_mirror_folder_works_like_the_site(tmp_path: Path) -> None:
    """The recipe: copy redistrib_<v>.json and the archive (same relative path) into a folder."""
    archive = make_archive("txz", tmp_path)
    mirror_folder = tmp_path / "mirror"
    (mirror_folder / "cudnn" / "linux-x86_64").mkdir(parents=True)
    (mirror_folder / "cudnn" / "linux-x86_64" / archive.name).write_bytes(archive.read_bytes())
    (mirror_folder / "redistrib_9.19.0.json").write_text(json.dumps(manifest("9.19.0.7", {"cuda12": entry(archive)})))
    env = clean_env(tmp_path)
    code, data, err = run_json(["install", "--version", "9", "--mirror", str(mirror_folder), "--prefix",
                                str(tmp_path / "cuda"), "--yes"], env)
    assert code == 0, err
    assert data["result"]["installed"]["version"] == "9.19.0"
    # a corrupted copy in the mirror is caught before anything is written
    (mirror_folder / "cudnn" / "linux-x86_64" / archive.name).write_bytes(archive.read_bytes()[:-1] + b"X")
    result = run_cli(["install", "--version", "9.19.0", "--mirror", f"file://{mirror_folder}", "--prefix",
                      str(tmp_path / "other"), "--yes"], env)
    assert result.returncode == 2 and "CD501" in result.stderr
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize(("said", "words"), [
    ("8.9.7.29", "it calls its cuDNN 8.9.7.29 where 9.19.0 was asked for"),  # another release under this name
    ("9" * 1_000_000 + ".19", "is not a version"),  # a megabyte of digits was echoed whole to stdout
])
def test_a_mirror_manifest_that_is_not_the_release_asked_for_is_refused(tmp_path: Path, said: str,
                                                                      words: str) -> None:
    """An air-gapped mirror whose redistrib_9.19.0.json says another release (a copy renamed by hand) was installed
    as asked, exit 0; one whose version is a megabyte of digits printed it whole (round fifteen's sealed red-team,
    read after its figure): refused before anything is fetched, one line naming the manifest, exit 2."""
    archive = make_archive("txz", tmp_path)
    mirror_folder = tmp_path / "mirror"
    (mirror_folder / "cudnn" / "linux-x86_64").mkdir(parents=True)
    (mirror_folder / "cudnn" / "linux-x86_64" / archive.name).write_bytes(archive.read_bytes())
    (mirror_folder / "redistrib_9.19.0.json").write_text(json.dumps(manifest(said, {"cuda12": entry(archive)})))
    result = run_cli(["install", "--version", "9.19.0", "--mirror", str(mirror_folder), "--prefix",
                      str(tmp_path / "cuda"), "--yes"], clean_env(tmp_path))
    assert result.returncode == 2 and words in result.stderr and "CD512" in result.stderr, result.stderr[-600:]
    assert len(result.stdout) + len(result.stderr) < 4096 and not (tmp_path / "cuda").exists()


def test_a_file_url_of_another_host_is_refused(tmp_path: Path) -> None:
    """--mirror file://server/share and --from file://server/x.tar.xz name a file on another host (curl and urllib
    refuse them); they were read as this machine's /share (round fifteen's sealed red-team, read after its figure)."""
    env = clean_env(tmp_path)
    for args in (["--version", "9.19.0", "--mirror", f"file://server{tmp_path}"],
                 ["--from", f"file://server{tmp_path}/cudnn.tar.xz"]):
        result = run_cli(["install", *args, "--prefix", str(tmp_path / "cuda"), "--dry-run"], env)
        assert result.returncode == 2 and "names the host 'server'" in result.stderr, result.stderr[-600:]
    mirror_folder = tmp_path / "mirror"
    mirror_folder.mkdir()
    result = run_cli(["install", "--version", "9.19.0", "--mirror", f"file://localhost{mirror_folder}", "--prefix",
                      str(tmp_path / "cuda"), "--dry-run"], env)
    assert "names the host" not in result.stderr  # localhost is this machine (RFC 8089)


def test_the_download_bar_shows_a_file_s_name_as_it_is(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The progress bar's text is the archive's name: rich markup in it is shown, not applied."""
    from types import SimpleNamespace

    from tests.test_cli_terminal import run_in_terminal

    archive = make_archive("txz", tmp_path)
    name = "cudnn-linux-x86_64-9.19.0.56_cuda12-[bold]x[red]y-archive.tar.xz"
    httpserver.expect_request(f"/{name}").respond_with_data(archive.read_bytes(), content_type="application/x-xz")
    env = clean_env(tmp_path)
    machine = SimpleNamespace(env=env, cwd=str(tmp_path))
    code, screen = run_in_terminal(machine, "install", "--from", httpserver.url_for(f"/{name}"), "--prefix",
                                   str(tmp_path / "cuda"), "--dry-run", "--sha256",
                                   hashlib.sha256(archive.read_bytes()).hexdigest(), columns=300)
    assert code == 0, screen
    assert f"download {name}" in screen


SECRET = "s3cretPW"


def test_a_mirror_behind_a_password_is_fetched_with_it_and_never_printed(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--mirror http://alice:PASSWORD@host/redist/: the password goes to the server (basic auth, as requests sends a
    URL's credentials) and never to the output: the plan's source, the JSON and the text say alice:****, as pip,
    curl and git show such a URL."""
    import base64

    archive = make_archive("txz", tmp_path, version=91900, cudart=12040, cuda=12)
    wanted = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()

    def guarded(body: Response):  # type: ignore[no-untyped-def]
        def handler(request: Request) -> Response:
            return body if request.headers.get("Authorization") == wanted else Response("no", status=401)
        return handler

    httpserver.expect_request("/redist/redistrib_9.19.0.json").respond_with_handler(guarded(Response(
        json.dumps(manifest("9.19.0.7", {"cuda12": entry(archive)})), content_type="application/json")))
    httpserver.expect_request(f"/redist/cudnn/linux-x86_64/{archive.name}").respond_with_handler(guarded(Response(
        archive.read_bytes(), content_type="application/x-xz")))
    base = httpserver.url_for("/redist/").replace("http://", f"http://alice:{SECRET}@")
    env = clean_env(tmp_path)
    args = ["install", "--version", "9.19.0", "--cuda", "12", "--mirror", base, "--yes"]
    code, data, err = run_json([*args, "--prefix", str(tmp_path / "a")], env)
    assert code == 0, err
    assert SECRET not in json.dumps(data) + err and "alice:****@" in data["plan"]["source"]
    text = run_cli([*args, "--prefix", str(tmp_path / "b"), "-v"], env)
    assert text.returncode == 0 and SECRET not in text.stdout + text.stderr, text.stderr


@pytest.mark.parametrize("url", [f"http://alice:{SECRET}@127.0.0.1:9/cudnn.tar.xz",
                                 f"http://{SECRET}@127.0.0.1:9/cudnn.tar.xz",  # a token as the user name
                                 f"https://alice:{SECRET}%40x@127.0.0.1:9/cudnn.tar.xz"])
def test_a_url_whose_download_fails_is_said_without_its_password(tmp_path: Path, url: str) -> None:
    """Nothing listens on port 9: CD511 names the URL, its credentials hidden (text, JSON, the HTTP warning)."""
    env = clean_env(tmp_path)
    code, data, err = run_json(["install", "--from", url, "--prefix", str(tmp_path / "p"), "--yes"], env)
    assert code == 2 and data["result"]["error"].startswith("CD511"), data
    assert SECRET not in json.dumps(data) + err and "****@127.0.0.1" in json.dumps(data)
    text = run_cli(["install", "--from", url, "--prefix", str(tmp_path / "p"), "--dry-run", "-v"], env)
    assert text.returncode == 2 and SECRET not in text.stdout + text.stderr, text.stderr


def test_redacted_url_hides_every_urls_credentials_and_nothing_else() -> None:
    from cudnn_doctor.quoting import redacted_url

    assert redacted_url("a https://u:p@h/x b HTTP://tok@h:1/y") == "a https://u:****@h/x b HTTP://****@h:1/y"
    assert redacted_url("git@github.com:o/r https://h/x?a=b@c") == "git@github.com:o/r https://h/x?a=b@c"
