"""The DL4J edit is a diff that the real `patch -p0` (run in /, as README says) applies to the build file as it is:
in a project folder with a space, with CRLF line endings, and in ISO-8859-1 with a non-ASCII byte on the very line."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_nvml
from tests.test_check import make_toolkit

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dl4j" / "m2-cpu-only" / "pom.xml"
OLD = b"<nd4j.backend>nd4j-native</nd4j.backend>"
NEW = b"<nd4j.backend>nd4j-cuda-11.6</nd4j.backend>"


def _project(machine: Machine, tmp_path: Path, folder: str, crlf: bool, latin1: bool) -> Path:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=12040)
    machine.add_library_path(tmp_path / "driver")
    make_toolkit(machine.root, "11.6.2", 11060)
    project = tmp_path / folder
    project.mkdir()
    pom = FIXTURE.read_bytes()
    if latin1:
        pom = pom.replace(b'encoding="UTF-8"', b'encoding="ISO-8859-1"')
        pom = pom.replace(OLD, OLD + b" <!-- r\xe9seau -->")  # \xe9: é in ISO-8859-1, not UTF-8
    if crlf:
        pom = pom.replace(b"\n", b"\r\n")
    (project / "pom.xml").write_bytes(pom)
    return project


@pytest.mark.parametrize("folder, crlf, latin1", [("my project", False, False), ("crlf", True, False),
                                                  ("latin1", False, True), ("all of \"them\" \\ é", True, True)])
def test_the_edit_applies_with_patch(folder: str, crlf: bool, latin1: bool, machine: Machine, tmp_path: Path) -> None:
    if shutil.which("patch") is None:
        pytest.skip("no patch program (.ci/run installs Debian's patch)")
    project = _project(machine, tmp_path, folder, crlf, latin1)
    pom = project / "pom.xml"
    before = pom.read_bytes()
    named = folder if folder == "my project" else str(project)  # relative to the working folder, or absolute
    data = json.loads(machine.run("fix", "--json", "--project", named).stdout)
    [edit] = [a for a in data["actions"] if a["kind"] == "edit"]
    diff = base64.b64decode(edit["diff_base64"])
    if not latin1:  # JSON's text holds the same diff where it is all UTF-8 (CR included)
        assert edit["text"].encode() == diff
    applied = subprocess.run(["patch", "-p0"], input=diff, capture_output=True, cwd="/")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert pom.read_bytes() == before.replace(OLD, NEW)  # that one line, its bytes and line ending kept
    after = machine.check_json("--project", str(project))
    assert "CD406" not in codes(after)


@pytest.mark.parametrize(("declaration", "line", "crlf"), [
    (b"<?xml version='1.0' encoding='iso-8859-1'?>", OLD + b" <!-- r\xe9seau -->", False),
    (b'<?xml version="1.0" encoding="latin1"?>', OLD + b" <!-- \xe9 -->", True),
    (b'<?xml version="1.0" encoding="ISO-8859-1"?>', b"<!-- \xc3 -->" + OLD, False),
    (b'<?xml version="1.0" encoding="ISO-8859-1"?>', OLD + b"<!-- \xc3\xa9\xe9 -->", False),  # é as UTF-8 and Latin-1
    (b'<?xml version="1.0" encoding="ISO-8859-1"?>', OLD + b"\r<!-- \xe9 -->", False),  # a lone CR: not a line end
    (b'<?xml version="1.0" encoding="ISO-8859-1"?>', OLD + b"\x85\xe9\xa0", False),  # NEL, é, NBSP in Latin-1
])
def test_a_latin1_backend_line_is_edited_in_its_own_bytes(declaration: bytes, line: bytes, crlf: bool,
                                                          machine: Machine, tmp_path: Path) -> None:
    """Issue 43, class 8: the very line edited holds Latin-1 bytes (some of which read as UTF-8, or as a line break
    to a reader that is not patch): the diff applies with the real patch and changes that one value."""
    if shutil.which("patch") is None:
        pytest.skip("no patch program (.ci/run installs Debian's patch)")
    project = _project(machine, tmp_path, "p", crlf, True)
    pom = project / "pom.xml"
    latin1 = pom.read_bytes().replace(b'<?xml version="1.0" encoding="ISO-8859-1"?>', declaration)
    pom.write_bytes(latin1.replace(OLD + b" <!-- r\xe9seau -->", line))
    before = pom.read_bytes()
    data = json.loads(machine.run("fix", "--json", "--project", str(project)).stdout)
    [edit] = [a for a in data["actions"] if a["kind"] == "edit"]
    applied = subprocess.run(["patch", "-p0"], input=base64.b64decode(edit["diff_base64"]), capture_output=True,
                             cwd="/")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert pom.read_bytes() == before.replace(OLD, NEW)


def _backend_last(pom: bytes) -> bytes:
    """The backend line made the file's last line (what followed it joined onto it), with nothing after it."""
    lines = pom.rstrip(b"\n").split(b"\n")
    at = next(index for index, line in enumerate(lines) if OLD in line)
    return b"\n".join(lines[:at]) + b"\n" + b" ".join(line.strip() for line in lines[at:])


@pytest.mark.parametrize("name, transform", [
    ("cr_only", lambda pom: pom.replace(b"\n", b"\r")),  # a classic Mac OS file: one line to patch
    ("cr_only_no_final_cr", lambda pom: pom.replace(b"\n", b"\r").rstrip(b"\r")),
    ("backend_line_last_no_newline", _backend_last),
    ("backend_line_last_crlf_no_newline", lambda pom: _backend_last(pom).replace(b"\n", b"\r\n")),
    ("backend_line_last_ends_in_cr", lambda pom: _backend_last(pom) + b"\r"),
])
def test_the_edit_applies_whatever_the_line_endings(name: str, transform, machine: Machine,  # type: ignore[no-untyped-def]
                                                    tmp_path: Path) -> None:
    """Issue 43, class 8: patch counts lines at LF only, so a CR-only file is one line and a last line has no LF
    after it; the diff marks such a line as diff does ("\\ No newline at end of file") and patch applies it."""
    if shutil.which("patch") is None:
        pytest.skip("no patch program (.ci/run installs Debian's patch)")
    project = _project(machine, tmp_path, name, False, True)
    pom = project / "pom.xml"
    pom.write_bytes(transform(pom.read_bytes()))
    before = pom.read_bytes()
    data = json.loads(machine.run("fix", "--json", "--project", str(project)).stdout)
    [edit] = [a for a in data["actions"] if a["kind"] == "edit"]
    applied = subprocess.run(["patch", "-p0"], input=base64.b64decode(edit["diff_base64"]), capture_output=True,
                             cwd="/")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert pom.read_bytes() == before.replace(OLD, NEW)


def test_a_build_file_that_is_a_link_is_edited_where_its_bytes_are(machine: Machine, tmp_path: Path) -> None:
    """GNU patch refuses to patch through a symbolic link ("not a regular file"): a pom.xml linked from a
    dotfiles-style checkout gets a diff that names the file itself, which patch applies; the link stays a link."""
    if shutil.which("patch") is None:
        pytest.skip("no patch program (.ci/run installs Debian's patch)")
    project = _project(machine, tmp_path, "linked", False, True)
    real = tmp_path / "elsewhere" / "pom.xml"
    real.parent.mkdir()
    (project / "pom.xml").rename(real)
    (project / "pom.xml").symlink_to(real)
    before = real.read_bytes()
    data = json.loads(machine.run("fix", "--json", "--project", str(project)).stdout)
    [edit] = [a for a in data["actions"] if a["kind"] == "edit"]
    applied = subprocess.run(["patch", "-p0"], input=base64.b64decode(edit["diff_base64"]), capture_output=True,
                             cwd="/")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert real.read_bytes() == before.replace(OLD, NEW) and (project / "pom.xml").is_symlink()
