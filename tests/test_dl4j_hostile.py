"""Project files that would hang, crash or fool a naive reader: each is a finding, never a hang or a traceback."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.conftest import Machine

BACKEND = ("<dependencies><dependency><groupId>org.nd4j</groupId><artifactId>{artifact}</artifactId>"
           "<version>1.0.0-beta7</version></dependency></dependencies>")


def pom(properties: str = "", artifact: str = "nd4j-cuda-10.2-platform", head: str = '<?xml version="1.0"?>',
        extra: str = "") -> str:
    return (f"{head}\n{extra}<project><modelVersion>4.0.0</modelVersion><groupId>g</groupId><artifactId>a</artifactId>"
            f"<version>1</version><properties>{properties}</properties>{BACKEND.format(artifact=artifact)}</project>")


def check(machine: Machine, project: Path, limit: float = 20.0) -> dict:
    started = time.monotonic()
    report = machine.check_json("--project", str(project))
    assert time.monotonic() - started < limit
    return report


def findings(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


def artifacts(report: dict) -> list[str | None]:
    return [f["details"].get("artifact") for f in report["frameworks"] if f["name"] == "dl4j"]


def test_fifos_named_like_build_files_are_not_opened(machine: Machine, tmp_path: Path) -> None:
    for name in ("pom.xml", "build.gradle", "settings.gradle.kts"):
        os.mkfifo(tmp_path / name)
    report = check(machine, tmp_path)
    unread = {Path(f["subject"]).name: f["detail"] for f in findings(report, "CD430")}
    assert set(unread) == {"pom.xml", "build.gradle", "settings.gradle.kts"}
    assert all("not a regular file" in detail for detail in unread.values())


def test_fifo_among_the_sources_of_a_cuda_module(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text(pom())
    sources = tmp_path / "src" / "main" / "java"
    sources.mkdir(parents=True)
    os.mkfifo(sources / "Model.java")
    (sources / "Net.java").write_text("class Net { Object l = new GravesLSTM.Builder(); }\n")
    report = check(machine, tmp_path)
    assert [f["subject"] for f in findings(report, "CD433")] == [f"{sources / 'Net.java'}:1"]


def test_exponential_and_self_referencing_properties_are_bounded(machine: Machine, tmp_path: Path) -> None:
    chain = "<a0>nd4j</a0>" + "".join(f"<a{i}>${{a{i - 1}}}${{a{i - 1}}}</a{i}>" for i in range(1, 60))
    (tmp_path / "pom.xml").write_text(pom(chain + "<loop>x${loop}</loop><b>${c}</b><c>${b}</c>",
                                          artifact="${a59}-${loop}-${b}"))
    report = check(machine, tmp_path, limit=10)
    why = " ".join(f["detail"] for f in findings(report, "CD431"))
    assert "${a59} expands to more than" in why
    assert "${loop} refers to itself (${loop} -> ${loop})" in why
    assert "${b} refers to itself (${b} -> ${c} -> ${b})" in why


def test_gradle_scripts_with_long_blank_runs_and_unclosed_comments(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "build.gradle").write_text("def v = '1.0.0-beta7'" + " " * 900_000 + "\n"
                                           "dependencies { implementation \"org.nd4j:nd4j-native:$v\" }\n"
                                           "/* never closed " + "x = 'y' " * 10_000)
    (tmp_path / "settings.gradle").write_text("include " + "\t" * 500_000 + "'app'\n/*")
    report = check(machine, tmp_path, limit=15)
    assert artifacts(report) == ["nd4j-native"]
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "build.gradle.kts").write_text("val v = \"1\"\n" * 200_000)
    report = check(machine, huge, limit=15)
    assert "larger than" in findings(report, "CD430")[0]["detail"]


def test_encoding_declared_in_the_xml_header_is_honoured(machine: Machine, tmp_path: Path) -> None:
    text = pom("<note>深層学習のバックエンド</note>", head='<?xml version="1.0" encoding="Shift_JIS"?>')
    (tmp_path / "pom.xml").write_bytes(text.encode("shift_jis"))
    report = check(machine, tmp_path)
    assert artifacts(report) == ["nd4j-cuda-10.2-platform"] and not findings(report, "CD430")
    (tmp_path / "pom.xml").write_bytes(pom(head='<?xml version="1.0" encoding="UTF-16"?>').encode("utf-16"))
    assert artifacts(check(machine, tmp_path)) == ["nd4j-cuda-10.2-platform"]
    for data, why in ((pom(head='<?xml version="1.0" encoding="x-no-such"?>').encode(), "unknown"),
                      (pom("<n>caf\xe9</n>").encode("latin-1"), "not valid utf-8"),
                      (b"plain text, no XML", "not well-formed"), (b"\x00\xff\x89PNG", "not valid utf-8")):
        (tmp_path / "pom.xml").write_bytes(data)
        report = check(machine, tmp_path)
        assert why in findings(report, "CD430")[0]["detail"]


def test_doctype_and_entities_are_refused_not_expanded(machine: Machine, tmp_path: Path) -> None:
    laughs = '<!DOCTYPE p [<!ENTITY a "nd4j-cuda-10.2">' + "".join(
        f'<!ENTITY a{i} "&a{i - 1 if i > 1 else ""};&a{i - 1 if i > 1 else ""};">' for i in range(1, 30)) + "]>"
    (tmp_path / "pom.xml").write_text(pom(artifact="&a29;", extra=laughs))
    report = check(machine, tmp_path, limit=10)
    [refused] = findings(report, "CD430")
    assert "refused" in refused["detail"] and "DOCTYPE" in refused["detail"] and "DOCTYPE" in refused["fix"]
    assert artifacts(report) == [None]  # nothing from the refused file is used
    (tmp_path / "pom.xml").write_text(pom(extra='<!DOCTYPE project SYSTEM "file:///etc/passwd">'))
    assert "DOCTYPE" in findings(check(machine, tmp_path), "CD430")[0]["detail"]


def test_deep_nesting_and_cycles_of_parents_and_modules(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text("<project>" + "<a>" * 5000 + "</a>" * 5000 + "</project>")
    assert "nested deeper" in findings(check(machine, tmp_path), "CD430")[0]["detail"]
    loop = tmp_path / "loop"
    (loop / "child").mkdir(parents=True)
    (loop / "pom.xml").write_text(
        "<project><groupId>g</groupId><artifactId>root</artifactId><version>1</version>"
        "<parent><groupId>g</groupId><artifactId>child</artifactId><version>1</version>"
        "<relativePath>child/pom.xml</relativePath></parent>"
        "<modules><module>child</module><module>.</module><module>child/..</module></modules></project>")
    (loop / "child" / "pom.xml").write_text(
        "<project><artifactId>child</artifactId><parent><groupId>g</groupId><artifactId>root</artifactId>"
        "<version>1</version></parent><modules><module>..</module></modules>"
        f"<properties><v>1.0.0-beta7</v></properties>{BACKEND.format(artifact='nd4j-native')}</project>")
    report = check(machine, loop)
    assert artifacts(report) == ["nd4j-native"]


def test_a_long_chain_of_reactor_modules_costs_its_length(machine: Machine, tmp_path: Path) -> None:
    managed = "".join(f"<dependency><groupId>g{i}</groupId><artifactId>a{i}</artifactId><version>${{v}}</version>"
                      "</dependency>" for i in range(200))
    modules = "".join(f"<module>m{i}</module>" for i in range(150))
    (tmp_path / "pom.xml").write_text(
        f"<project><groupId>g</groupId><artifactId>root</artifactId><version>1</version><packaging>pom</packaging>"
        f"<properties><v>1</v></properties><modules>{modules}</modules>"
        f"<dependencyManagement><dependencies>{managed}</dependencies></dependencyManagement></project>")
    for i in range(150):
        (tmp_path / f"m{i}").mkdir()
        first = (f"<dependency><groupId>g</groupId><artifactId>m{i - 1}</artifactId><version>1</version></dependency>"
                 if i else BACKEND.format(artifact="nd4j-native")[len("<dependencies>"):-len("</dependencies>")])
        own = "".join(f"<dependency><groupId>g{j}</groupId><artifactId>a{j}</artifactId></dependency>"
                      for j in range(i % 5, 200, 5))
        (tmp_path / f"m{i}" / "pom.xml").write_text(
            f"<project><parent><groupId>g</groupId><artifactId>root</artifactId><version>1</version></parent>"
            f"<artifactId>m{i}</artifactId><dependencies>{first}{own}</dependencies></project>")
    report = check(machine, tmp_path, limit=15)
    [framework] = [f for f in report["frameworks"] if f["name"] == "dl4j"]
    assert len(framework["details"]["modules"]) == 150  # the backend of m0 reaches m149 through 149 modules


def test_a_property_chain_400_deep_is_cut_at_a_bound_with_a_finding(machine: Machine, tmp_path: Path) -> None:
    chain = "<a0>nd4j-native</a0>" + "".join(f"<a{i}>${{a{i - 1}}}</a{i}>" for i in range(1, 400))
    short = "<b0>nd4j-cuda-11.2</b0>" + "".join(f"<b{i}>${{b{i - 1}}}</b{i}>" for i in range(1, 30))
    (tmp_path / "pom.xml").write_text(pom(chain + short, artifact="${b29}") .replace(
        "</dependencies>", "<dependency><groupId>x</groupId><artifactId>${a399}</artifactId></dependency></dependencies>"))
    report = machine.check_json("--project", str(tmp_path))
    [cut] = findings(report, "CD439")
    assert "${a399} refers through more than 64 other properties" in cut["detail"]
    assert "mvn dependency:tree" in cut["fix"]
    assert artifacts(report) == ["nd4j-cuda-11.2"]  # a 30-deep chain is read whole


def test_twenty_thousand_modules_are_read_to_a_bound_with_findings(machine: Machine, tmp_path: Path) -> None:
    modules = "".join(f"<module>m{i}</module>" for i in range(20_000))
    (tmp_path / "pom.xml").write_text(
        f"<project><groupId>g</groupId><artifactId>root</artifactId><version>1</version><packaging>pom</packaging>"
        f"<modules>{modules}</modules></project>")
    for i in range(401):  # the first 401 exist, the rest are missing
        (tmp_path / f"m{i}").mkdir()
        (tmp_path / f"m{i}" / "pom.xml").write_text(
            f"<project><parent><groupId>g</groupId><artifactId>root</artifactId><version>1</version></parent>"
            f"<artifactId>m{i}</artifactId>{BACKEND.format(artifact='nd4j-native')}</project>")
    report = machine.check_json("--project", str(tmp_path))
    limits = sorted(f["detail"] for f in findings(report, "CD439"))
    assert any("its reactor has more than 400 modules; the doctor read the first 400" in d for d in limits), limits
    assert any("19399 more problems than the 200 listed" in d for d in limits), limits
    assert len(findings(report, "CD430")) == 200  # each missing module once, to the bound
    [framework] = [f for f in report["frameworks"] if f["name"] == "dl4j"]
    assert len(framework["details"]["modules"]) == 399  # the root (a pom) and 399 modules, all nd4j-native


def test_a_hundred_thousand_gradle_includes_and_huge_templates_are_bounded(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "settings.gradle").write_text("include " + ",".join(f"'m{i}'" for i in range(100_000)) + "\n")
    for i in range(3):
        (tmp_path / f"m{i}").mkdir()
        (tmp_path / f"m{i}" / "build.gradle").write_text("dependencies { implementation 'org.nd4j:nd4j-native:1.0.0-M2' }\n")
    # one round of `$b` (400 KB) put in 200,000 times would be 80 GB
    (tmp_path / "build.gradle").write_text(f"def b = \"{'x' * 400_000}\"\ndef v = '1.0.0-M2'\n"
                                           f"dependencies {{ implementation \"org.nd4j:nd4j-native:{'$b' * 200_000}\"\n"
                                           "  implementation \"org.nd4j:nd4j-native:$v\" }\n")
    report = machine.check_json("--project", str(tmp_path))
    limits = {Path(f["subject"]).name: f["detail"] for f in findings(report, "CD439")}
    assert "it includes 100000 subprojects; the doctor read the first 399" in limits["settings.gradle"]
    assert "expands to more than 4096 characters, so it was left as written" in limits["build.gradle"]
    modules = {m for f in report["frameworks"] if f["name"] == "dl4j" for m in f["details"]["modules"]}
    assert modules == {".", "m0", "m1", "m2"}


def test_parent_chains_and_source_trees_past_their_bounds_are_findings(machine: Machine, tmp_path: Path) -> None:
    """A pom 25 parents deep (read to the nearest 20), and a CUDA module with more source files than are
    scanned: each bound reached is a CD439, and what was read is still used."""
    folder = tmp_path
    for depth in range(25):  # p0 is the farthest parent; each pN/ holds pN+1/
        parent = (f"<parent><groupId>g</groupId><artifactId>p{depth - 1}</artifactId><version>1</version></parent>"
                  if depth else "")
        body = BACKEND.format(artifact="nd4j-cuda-11.2") if depth == 24 else "<packaging>pom</packaging>"
        modules = f"<modules><module>p{depth + 1}</module></modules>" if depth < 24 else ""
        folder.mkdir(exist_ok=True)
        (folder / "pom.xml").write_text(f"<project>{parent}<groupId>g</groupId><artifactId>p{depth}</artifactId>"
                                        f"<version>1</version>{body}{modules}</project>")
        folder = folder / f"p{depth + 1}"
    sources = tmp_path.joinpath(*[f"p{d}" for d in range(1, 25)], "src", "main", "java")
    sources.mkdir(parents=True)
    for i in range(4001):
        (sources / f"C{i:04d}.java").write_text("class C {}\n")
    report = machine.check_json("--project", str(tmp_path))
    limits = [f["detail"] for f in findings(report, "CD439")]
    assert any("its parents go more than 20 poms deep; the doctor read the nearest 20" in d for d in limits), limits
    assert any("more than 4000 source files" in d for d in limits), limits
    assert artifacts(report) == ["nd4j-cuda-11.2"]
