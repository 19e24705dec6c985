"""The configuration and the environment the doctor runs in, as a user's machine breaks them: HOME empty or relative,
XDG_CACHE_HOME relative, CUDNN_DOCTOR_CACHE_DIR relative or a file, a cache the download cannot write, a pyproject.toml
with a byte-order mark or in Latin-1, a requirement of the project file refused by the rule every --require meets, a
number written as Python alone reads it. Each is said in one line naming where it was written, with its fix."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
from pathlib import Path

import pytest

from tests.conftest import Machine


def _home_of_this_user() -> str:
    return pwd.getpwuid(os.getuid()).pw_dir


@pytest.mark.parametrize("home", ["", "relative/home", "  "])
def test_an_empty_or_relative_home_is_not_slash_nor_the_working_folder(home: str) -> None:
    from cudnn_doctor.variables import home_folder

    assert home_folder({"HOME": home}) == _home_of_this_user()
    assert home_folder({}) == _home_of_this_user()
    assert home_folder({"HOME": "/srv/me"}) == "/srv/me"


@pytest.mark.parametrize("home", ["", "relative"])
def test_the_cache_is_never_put_in_slash_or_the_working_folder(home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from cudnn_doctor.cache import cache_folder

    monkeypatch.delenv("CUDNN_DOCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", home)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # relative: invalid, ignored (XDG base directory spec)
    assert cache_folder() == os.path.join(_home_of_this_user(), ".cache", "cudnn-doctor")
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/cache")
    assert cache_folder() == "/srv/cache/cudnn-doctor"


def test_an_empty_home_gives_no_prefix_under_slash(machine: Machine) -> None:
    """HOME="" made the advice `install --prefix /.local/cudnn/cuda12` (Python's expanduser reads '' as /)."""
    machine.env["HOME"] = ""
    machine.env["XDG_CACHE_HOME"] = str(machine.cwd / "xdg")
    result = machine.run("check", "--json")
    fixes = json.dumps(result.json["findings"])
    assert "--prefix /.local" not in fixes and f"--prefix {_home_of_this_user()}/.local/cudnn" in fixes, fixes


@pytest.mark.parametrize("value, words", [
    ("relative/cache", "not an absolute path"), ("file", "not a folder"), ("/dev/null", "not a folder"),
])
def test_a_cache_folder_that_cannot_be_one_is_a_usage_error(machine: Machine, value: str, words: str) -> None:
    (machine.cwd / "file").write_text("")
    machine.env["CUDNN_DOCTOR_CACHE_DIR"] = value if value.startswith("/") or value.startswith("rel") else \
        str(machine.cwd / value)
    for args in (["check"], ["compat", "--list", "cudnn"]):
        result = machine.run(*args)
        assert result.exit_code == 2, result.stderr
        [line] = result.stderr.splitlines()
        assert "CUDNN_DOCTOR_CACHE_DIR" in line and words in line and "fix:" in line, line
    result = machine.run("check", "--json")
    assert result.exit_code == 2 and "CUDNN_DOCTOR_CACHE_DIR" in result.json["error"]["message"]
    assert not (machine.cwd / "relative").exists()


def test_a_cache_folder_under_tilde_is_the_home(machine: Machine) -> None:
    machine.env["CUDNN_DOCTOR_CACHE_DIR"] = "~/doctor-cache"  # quoted where no shell expanded it (a unit file, ENV)
    assert machine.run("compat", "--list", "cudnn").exit_code == 0
    assert not (machine.cwd / "~").exists()


def test_a_cache_the_download_cannot_write_is_said_with_its_own_fix(httpserver, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """It was CD511 "check the network and the URL": the cache, not the network, stopped it."""
    pytest.importorskip("pytest_httpserver")
    from tests.install_helpers import clean_env, run_cli

    archive = b"not read: the download stops before"
    name = "cudnn-linux-x86_64-9.19.0.7_cuda12-archive.tar.xz"
    variant = {"relative_path": f"cudnn/linux-x86_64/{name}", "sha256": hashlib.sha256(archive).hexdigest(),
               "size": str(len(archive))}
    httpserver.expect_request("/r/redistrib_9.19.0.json").respond_with_json(
        {"release_label": "9.19.0", "release_product": "cudnn",
         "cudnn": {"name": "cuDNN", "version": "9.19.0.7", "cuda_variant": ["12"], "linux-x86_64": {"cuda12": variant}}})
    httpserver.expect_request(f"/r/cudnn/linux-x86_64/{name}").respond_with_data(archive)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "downloads").write_text("a file where the downloads folder goes")
    env = clean_env(tmp_path, CUDNN_DOCTOR_CACHE_DIR=str(cache))
    result = run_cli(["install", "--version", "9.19.0", "--cuda", "12", "--mirror", httpserver.url_for("/r/"),
                      "--prefix", str(tmp_path / "prefix"), "--yes"], env)
    [line] = result.stderr.splitlines()
    assert result.returncode == 1, result.stderr
    assert "cannot write it into" in line and "CUDNN_DOCTOR_CACHE_DIR" in line.split("fix:")[1], line
    assert "network" not in line, line


@pytest.mark.parametrize("content, words", [
    (b"\xef\xbb\xbf[tool.cudnn-doctor]\nstrict = true\n", "byte-order mark"),
    (b"[tool.cudnn-doctor]\nignore = [\"CD\xe9\"]\n", "not UTF-8 (byte 0xe9 on line 2)"),
])
def test_a_project_file_not_as_toml_is_written_says_how(machine: Machine, content: bytes, words: str) -> None:
    (machine.cwd / "pyproject.toml").write_bytes(content)
    result = machine.run("check")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert words in line and "fix: save it as UTF-8" in line, line


@pytest.mark.parametrize("spec, words", [
    ("cudnn>=99999999999999999999999999", "a number of 26 digits"),
    ("cudnn>=\u0669", "ARABIC-INDIC DIGIT NINE"),
])
def test_a_bad_requirement_names_where_it_was_written(machine: Machine, spec: str, words: str) -> None:
    """The plain-text rule of every --require refused it later, naming --require, which the user never typed."""
    (machine.cwd / "pyproject.toml").write_text(f'[tool.cudnn-doctor]\nrequire = ["{spec}"]\n', encoding="utf-8")
    result = machine.run("check")
    [line] = result.stderr.splitlines()
    assert result.exit_code == 2 and "[tool.cudnn-doctor] require" in line and words in line, line
    assert "--require" not in line.split("(fix:")[0], line
    (machine.cwd / "pyproject.toml").unlink()
    machine.env["CUDNN_DOCTOR_REQUIRE"] = spec
    result = machine.run("check")
    [line] = result.stderr.splitlines()
    assert result.exit_code == 2 and line.startswith("cudnn-doctor: error: CUDNN_DOCTOR_REQUIRE") and words in line


@pytest.mark.parametrize("value", ["1_000", "0x10", "0b1", "1e309", "\uff15", "٣"])
def test_a_number_only_python_reads_is_refused(value: str) -> None:
    from cudnn_doctor.errors import DoctorError
    from cudnn_doctor.variables import number

    with pytest.raises(DoctorError) as refused:
        number("CUDNN_DOCTOR_PROBE_TIMEOUT", 1.0, {"CUDNN_DOCTOR_PROBE_TIMEOUT": value})
    assert refused.value.exit_code == 2


@pytest.mark.parametrize("value, read", [("20", 20.0), (" 0.5 ", 0.5), ("1e3", 1000.0), (".5", 0.5), ("+5", 5.0)])
def test_a_number_as_people_write_it_is_read(value: str, read: float) -> None:
    from cudnn_doctor.variables import number

    assert number("CUDNN_DOCTOR_PROBE_TIMEOUT", 1.0, {"CUDNN_DOCTOR_PROBE_TIMEOUT": value}) == read


@pytest.mark.parametrize("value", ["https://[::1", "https://\x1b[31m", "https://x\n.y", "https://x\t.y", "https://x:99999",
                                   "https://x:0", "https://x?q=1", "https://x#f"])
def test_a_registry_mirror_that_is_no_address_is_a_usage_error(value: str, machine: Machine) -> None:
    """A bracket left open was an internal error (exit 3); a newline or tab, which urlsplit drops, sent the requests
    to another host; a port TCP does not have ended as 'the registry did not answer'."""
    machine.env["CUDNN_DOCTOR_REGISTRY_MIRROR"] = value
    machine.env["CUDNN_DOCTOR_IMAGE_TIMEOUT"] = "2"
    result = machine.run("image", "ubuntu:22.04")
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("cudnn-doctor: error: CUDNN_DOCTOR_REGISTRY_MIRROR=") and "fix:" in line, line


@pytest.mark.parametrize("text, good", [("x:99999/a:1", "x:5000/a:1"), ("localhost:65536/a", "localhost:65535/a"),
                                        ("127.0.0.1:0/a", "127.0.0.1:1/a")])
def test_a_reference_whose_port_tcp_has_not_is_no_reference(text: str, good: str) -> None:
    from cudnn_doctor.image.registry import parse_reference

    assert parse_reference(text) is None
    assert parse_reference(good) is not None


@pytest.mark.parametrize("table, variable, args, words", [
    ("format = 5", None, ["--json"], "format: 5 is not a format"),
    ('select = ["XX"]', None, ["--json", "--select", "CD1"], "select XX: not a finding code"),
    ('strict = "maybe"', None, ["--json", "--strict"], "strict: 'maybe' is not true or false"),
    (None, ("CUDNN_DOCTOR_FORMAT", "yaml"), ["--json"], "CUDNN_DOCTOR_FORMAT: 'yaml' is not a format"),
    (None, ("CUDNN_DOCTOR_STRICT", "maybe"), ["--json", "--no-strict"], "CUDNN_DOCTOR_STRICT: 'maybe'"),
])
def test_a_wrong_value_is_said_also_where_a_stronger_place_wins(machine: Machine, table: str | None,
                                                               variable: tuple[str, str] | None, args: list[str],
                                                               words: str) -> None:
    """`format = 5` passed every `check --json` (the option wins) and broke the first plain `check`."""
    if table:
        (machine.cwd / "pyproject.toml").write_text(f"[tool.cudnn-doctor]\n{table}\n")
    if variable:
        machine.env[variable[0]] = variable[1]
    result = machine.run("check", *args)
    assert result.exit_code == 2, result.stdout[-300:]
    error = result.json["error"]
    assert words in error["message"] and error["code"] == "CD007", error


@pytest.mark.parametrize("line", ["[" + "a." * 300_000 + "b]", "a." * 300_000 + "b = 1", '"a" . ' * 150_000 + "b = 1"])
def test_a_key_of_many_dotted_parts_is_refused_at_once(machine: Machine, line: str) -> None:
    """Python's TOML reader is quadratic in a key's parts: this 600 kB line took it five minutes."""
    import time

    (machine.cwd / "pyproject.toml").write_text(f"[tool.cudnn-doctor]\n{line}\n")
    started = time.monotonic()
    result = machine.run("check", timeout=60)
    assert time.monotonic() - started < 20
    [error] = result.stderr.splitlines()
    assert result.exit_code == 2 and "line 2 holds more than 128 dotted names" in error, error


def test_keys_of_a_few_dotted_parts_are_read() -> None:
    from cudnn_doctor.settings import _long_dotted_key

    assert _long_dotted_key("tool.cudnn-doctor.ignore = ['CD2']\n" + "a." * 120 + "b = 1\n" + "." * 5000) is None
    assert _long_dotted_key("x = 1\n" + "a ." * 129 + "b = 1\n") == 2


@pytest.mark.parametrize("where", ["pyproject", "variable", "option"])
def test_a_huge_value_in_an_error_is_cut_to_one_readable_line(machine: Machine, where: str) -> None:
    """A 500 kB value was quoted whole: one error line of 500 kB on a terminal or in a CI log."""
    huge = "x" * 100_000
    args = ["check"]
    if where == "pyproject":
        (machine.cwd / "pyproject.toml").write_text(f'[tool.cudnn-doctor]\nstrict = "{huge}"\n')
    elif where == "variable":
        machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = huge
    else:
        args.append(f"--bogus{huge}")
    result = machine.run(*args)
    [line] = result.stderr.splitlines()
    assert result.exit_code == 2 and len(line) < 4500 and "characters cut" in line, len(line)
    result = machine.run(*args, "--json")
    assert len(result.json["error"]["message"]) <= 2000


@pytest.mark.parametrize("kill_at", ["probe.step:abc", "probe.step:1:FOO", "probe.step:\u0663", "probe.step:1:SIG_DFL"])
def test_a_test_kill_point_that_names_nothing_is_none(kill_at: str, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    """CUDNN_DOCTOR_TEST_KILL_AT with a count that is no number or a signal with no such name was an internal error
    in the middle of an install (exit 3); a step log that is a FIFO hung it, a folder ended it."""
    from cudnn_doctor.install import faults

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    monkeypatch.setenv("CUDNN_DOCTOR_TEST_KILL_AT", kill_at)
    for log in (tmp_path / "fifo", tmp_path / "folder", tmp_path / "log"):
        monkeypatch.setenv("CUDNN_DOCTOR_TEST_STEP_LOG", str(log))
        faults.step("probe.step")  # neither killed, nor blocked, nor raising
    assert (tmp_path / "log").read_text().startswith("probe.step:")


@pytest.mark.parametrize("home", ["", "relative"])
def test_a_tilde_prefix_with_an_empty_or_relative_home_is_the_users_home(home: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`install --prefix '~/cudnn'` (quoted: no shell expanded it) with HOME="" installed into /cudnn."""
    from cudnn_doctor.doctor.install import prefix_path
    from cudnn_doctor.variables import expand_user

    monkeypatch.setenv("HOME", home)
    assert str(prefix_path("~/cudnn")) == os.path.join(_home_of_this_user(), "cudnn")
    assert expand_user("~") == _home_of_this_user()
    monkeypatch.setenv("HOME", "/srv/me")
    assert expand_user("~/x") == "/srv/me/x" and expand_user("a/~/b") == "a/~/b"


def test_an_image_archive_of_zeros_is_not_read_to_its_end(machine: Machine, tmp_path: Path) -> None:
    """tarfile's "r:*" tried xz on it, and xz reads zeros as stream padding: 1 GB took 108 s, a sparse 10 GB file
    eighteen minutes. The compression is named by the first bytes now."""
    import time

    archive = tmp_path / "zeros.tar"
    with archive.open("wb") as handle:
        handle.truncate(10 << 30)  # sparse: no disk
    started = time.monotonic()
    result = machine.run("image", str(archive), timeout=60)
    assert time.monotonic() - started < 20 and result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert "nor a docker archive" in line, line
    archive.write_bytes(b"")
    [line] = machine.run("image", str(archive)).stderr.splitlines()
    assert "not a tar archive (empty file)" in line and "method gz" not in line, line


def test_as_nobody_an_unreadable_project_file_and_an_unwritable_cache_and_home(tmp_path: Path, nobody) -> None:  # type: ignore[no-untyped-def]
    """As user nobody: a pyproject.toml it may not read is one line naming it (exit 2; one JSON object with --json);
    a cache folder or a home it may not write only costs the cache: check answers."""
    import shutil
    import subprocess
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="cudnn-doctor-settings-"))  # pytest's tmp folders are 0700
    try:
        base.chmod(0o755)
        project = base / "project"
        project.mkdir(mode=0o755)
        (project / "pyproject.toml").write_text("[tool.cudnn-doctor]\nstrict = true\n")
        os.chmod(project / "pyproject.toml", 0)
        locked = base / "locked"  # root's, 0755: nobody reads it, writes nothing in it
        locked.mkdir(mode=0o755)
        machine = Machine(tmp_path)
        env = nobody.env({**machine.env, "HOME": str(locked), "CUDNN_DOCTOR_CACHE_DIR": str(locked / "cache")})

        def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*nobody.argv, "-m", "cudnn_doctor", *args], env=env, cwd=cwd, capture_output=True,
                                  text=True, timeout=60, stdin=subprocess.DEVNULL)

        result = run("check", cwd=project)
        [line] = result.stderr.splitlines()
        assert result.returncode == 2 and "pyproject.toml: Permission denied" in line and "fix:" in line, line
        result = run("check", "--json", cwd=project)
        assert result.returncode == 2 and json.loads(result.stdout)["error"]["code"] == "CD007"
        for cache in (str(locked / "cache"), None):
            if cache is None:
                del env["CUDNN_DOCTOR_CACHE_DIR"]
            result = run("check", "--json", cwd=base)
            assert result.returncode == 1 and json.loads(result.stdout)["summary"]["exit_code"] == 1, result.stderr
            assert result.stderr == "", result.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("where", ["archive", "part"])
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "link to a file of the user's"])
def test_a_download_kept_in_the_cache_that_is_no_file_is_fetched_again(httpserver, tmp_path: Path, where: str,  # type: ignore[no-untyped-def]
                                                                       kind: str) -> None:
    """A FIFO where the cache keeps an archive (or its .part) hung install; a link to /dev/zero was read without end;
    a .part linked to another file had the download written through the link, into that file."""
    pytest.importorskip("pytest_httpserver")
    from cudnn_doctor.install.download import download, session

    body = b"the archive's bytes" * 100
    httpserver.expect_request("/a.tar.xz").respond_with_data(body)
    folder = tmp_path / "downloads"
    folder.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    kept = folder / ("a.tar.xz" + (".part" if where == "part" else ""))
    if kind == "fifo":
        os.mkfifo(kept)
    else:
        kept.symlink_to("/dev/zero" if kind == "/dev/zero" else victim)
    got = download(session(), httpserver.url_for("/a.tar.xz"), folder, "a.tar.xz", hashlib.sha256(body).hexdigest(),
                   len(body))
    assert got.read_bytes() == body and not got.is_symlink()
    assert victim.read_text() == "mine\n"


@pytest.mark.parametrize("value", ["/no/such/mirror", "\udcf5u\x1b[31m\x01" * 40, "x/" * 3000])
def test_a_mirror_folder_from_the_variable_is_named_by_the_variable(value: str, machine: Machine) -> None:
    """CUDNN_DOCTOR_MIRROR that names no folder was said as '--mirror VALUE', an option the user never gave, with the
    value's bytes raw (round eight's sealed red-team, read after its figure): the variable is named, the value quoted."""
    machine.env["CUDNN_DOCTOR_MIRROR"] = value
    result = machine.run("install", "--version", "9.19.0", "--cuda", "12", "--prefix", str(machine.cwd / "p"), "--dry-run")
    assert result.exit_code == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("cudnn-doctor: error: CUDNN_DOCTOR_MIRROR=") and "no such folder" in line, line
    assert "\x1b" not in line and len(line) < 600, line


@pytest.mark.parametrize("args", [["check", "--json"], ["compat", "torch==2.5.1", "--json"]])
def test_a_user_without_a_home_gets_no_folder_named_tilde(tmp_path: Path, nobody, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    """A CI container's random uid: no password entry, HOME unset, no cache variable. Python's expanduser answers
    '~' there, and the parsed data's cache was written into ./~/.cache/cudnn-doctor of the working folder (round
    nine's red-team, ci.uid[no_home-*]); now nothing is kept and nothing is made where the user stands."""
    import subprocess
    import tempfile

    uid = next(u for u in range(4249, 4400) if not _has_password_entry(u))
    base = Path(tempfile.mkdtemp(prefix="cudnn-doctor-nohome-"))  # pytest's tmp folders are 0700
    try:
        base.chmod(0o755)
        machine = Machine(base / "m")
        for folder in (base / "m", machine.root, machine.home):
            folder.chmod(0o755)
        work = base / "work"
        work.mkdir()
        os.chown(work, uid, uid)
        env = nobody.env({k: v for k, v in machine.env.items() if k not in ("HOME", "CUDNN_DOCTOR_CACHE_DIR")})
        argv = [nobody.argv[0], f"--reuid={uid}", f"--regid={uid}", "--clear-groups", nobody.python]
        result = subprocess.run([*argv, "-m", "cudnn_doctor", *args], env=env, cwd=work, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode in (0, 1) and "Traceback" not in result.stderr, result.stderr
        assert json.loads(result.stdout)["schema"]
        assert os.listdir(work) == []
    finally:
        shutil.rmtree(base)


def _has_password_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
