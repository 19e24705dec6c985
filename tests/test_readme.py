"""README.md stays the user's guide: its set-up commands are what CI runs and work as written (from a
checkout or a wheel, as the package is not on PyPI), its links survive a package index page, and it
lists every code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import tomllib

from cudnn_doctor.codes import CODES
from cudnn_doctor.runner import ISSUES_URL

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def code_blocks(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```", text, re.DOTALL)


def test_ci_runs_the_readme_test_command() -> None:
    blocks = code_blocks("bash", README.split("## Set-up", 1)[1])
    install_and_check, install_and_test = blocks[0].strip(), blocks[1].strip()
    assert "cudnn-doctor check" in install_and_check
    assert install_and_test in (ROOT / ".ci" / "run").read_text().splitlines()


def install_lines() -> list[str]:
    """Every pip/pipx command of the README's shell and CI examples, comments dropped."""
    lines = []
    for block in code_blocks("bash") + code_blocks("yaml"):
        for line in block.splitlines():
            for command in re.split(r"&&|- run:", line.split(" #")[0]):
                if re.search(r"\b(pip|pipx)\b", command) and re.search(r"\b(install|inject|wheel)\b", command):
                    lines.append(command.strip())
    return lines


def test_install_lines_work_as_written_without_pypi() -> None:
    """Not on PyPI: each line installs the checkout, its extras or a wheel built from it, never a bare name."""
    lines = install_lines()
    assert len(lines) >= 6, lines
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    for line in lines:
        words = shlex.split(line)
        tool = words.index("pip") if "pip" in words else words.index("pipx")
        verb, targets = words[tool + 1], [w for w in words[tool + 2:] if not w.startswith("-")]
        if verb == "inject":  # pipx inject cudnn-doctor numpy: into the venv pipx made from the checkout
            assert targets[0] == "cudnn-doctor" and targets[1:] == ["numpy"], line
            continue
        if verb == "wheel":
            assert words[-1] == "." and "--no-deps" in words and words[words.index("-w") + 1] == "dist", line
            continue
        assert verb == "install", line
        for target in targets:
            local = re.fullmatch(r"\.(\[([a-z,]+)\])?", target)
            if local:
                assert set(filter(None, (local.group(2) or "").split(","))) <= extras, line
            else:  # a wheel built from the checkout
                assert re.fullmatch(r"(\S+/)?cudnn_doctor-(\*|[0-9.]+-py3-none-any)\.whl", target), line
    assert "not on PyPI" in README and "not announced yet" in README


def test_the_wheel_named_in_the_readme_is_the_one_this_version_builds() -> None:
    from cudnn_doctor import __version__

    assert f"cudnn_doctor-{__version__}-py3-none-any.whl" in README


def test_links_survive_a_package_index_page() -> None:
    """A relative link breaks on PyPI's project page: every link is absolute, or an anchor of the README."""
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        assert target.startswith(("https://", "http://", "#")), target


def test_licence_and_project_urls() -> None:
    licence = (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence and "APPENDIX: How to apply the Apache License" in licence
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    urls = project["urls"]
    assert urls["Issues"] == ISSUES_URL and urls["Source"].startswith("https://")
    assert ISSUES_URL.startswith(urls["Source"])


def test_readme_names_the_json_schemas_that_ship() -> None:
    from cudnn_doctor.schemas import NAMES, schema_path

    for name in NAMES:
        assert schema_path(name).is_file()
        assert f"`{name}.schema.json`" in README and f"cudnn-doctor/{name}/1" in README


def test_ci_example_keeps_the_json_report_when_the_check_fails() -> None:
    [workflow] = [block for block in code_blocks("yaml") if "upload-artifact" in block]
    keep = workflow.split("- name: Keep the report", 1)[1]
    assert "if: always()" in keep and "doctor.json" in keep
    assert "--json --junit-xml doctor.xml > doctor.json" in workflow


def test_every_finding_code_is_in_the_readme() -> None:
    for code in CODES.values():
        assert f"| {code.code} | {code.severity} | {code.title} |" in README, code.code
