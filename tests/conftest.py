"""Shared fixtures: run the CLI as a user would, in an environment the test controls."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what a prescription with a hole in it looks like: a template field, an angle-bracket name, a made-up version
MAVEN_ELEMENTS = ("modules", "module", "parent", "dependency", "dependencies", "dependencyManagement", "properties",
                  "profile", "profiles", "activation", "classifier", "relativePath")  # real names in a pom, not holes
_NOT_HOLES = "|".join(MAVEN_ELEMENTS)
PLACEHOLDER = re.compile(r"(?<![$\w])\{\w+\}|<(?!(?:" + _NOT_HOLES + r")>)[a-z][a-z_ ]*>|\bX\.Y(\.Z)?\b|==VERSION\b"
                         r"|\bVERSION\b")
sys.path.insert(0, str(ROOT))  # tests.fakes and the package from a checkout


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)


class Machine:
    """A pretend machine: an empty system root, a HOME, and the variables a test sets.

    The doctor runs in a subprocess with CUDNN_DOCTOR_SYSTEM_PREFIX pointing at the root,
    so /usr/local/cuda and friends of the real machine stay out of the test.
    """

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "root"
        self.home = tmp_path / "home"
        for folder in (self.root / "etc", self.home):
            folder.mkdir(parents=True, exist_ok=True)
        self.env: dict[str, str] = {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(self.home),
            "CUDNN_DOCTOR_SYSTEM_PREFIX": str(self.root),
            "CUDNN_DOCTOR_CACHE_DIR": str(tmp_path / "cache"),
            "CUDNN_DOCTOR_PROBE_TIMEOUT": "10",
            "LANG": "C.UTF-8",
            "COLUMNS": "200",
            # the package from this checkout also where it is not installed (the GPU machine)
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        self.cwd = tmp_path

    def add_library_path(self, folder: Path) -> None:
        current = self.env.get("LD_LIBRARY_PATH")
        self.env["LD_LIBRARY_PATH"] = f"{folder}:{current}" if current else str(folder)

    def run(self, *args: str, timeout: float = 60) -> Result:
        process = subprocess.run(
            [sys.executable, "-m", "cudnn_doctor", *args],
            capture_output=True, text=True, env=self.env, cwd=self.cwd, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        result = Result(process.returncode, process.stdout, process.stderr)
        assert_no_placeholder(args, result.stdout)
        return result

    def check_json(self, *args: str) -> dict:
        result = self.run("check", "--json", *args)
        assert "Traceback" not in result.stderr, result.stderr
        data = result.json
        assert data["summary"]["exit_code"] == result.exit_code
        return data


def assert_no_placeholder(args: tuple[str, ...], stdout: str) -> None:
    """Every fix a command prints for this machine, in every scenario the tests build, is whole: no template field,
    no <name>, no X.Y.Z (the registry's own templates, `explain CODE`, are the one place they stand)."""
    if not args or args[0] not in ("check", "fix", "explain", "bench"):
        return
    if args[0] == "explain" and any(re.fullmatch(r"\s*CD\d{3}\s*", a or "") for a in args[1:]):
        return
    try:
        data = json.loads(stdout)
    except ValueError:
        data = None
    if isinstance(data, dict):
        plan = data.get("plan") if isinstance(data.get("plan"), dict) else data if "actions" in data else None
        if plan is not None:
            check_names_only_known_releases(plan)
        fixes = [f.get("fix") for f in data.get("findings", []) if isinstance(f, dict)]
        fixes += [m.get("fix") for m in data.get("matches", []) if isinstance(m, dict)]
        fixes += [a.get("text") for a in data.get("actions", []) if isinstance(a, dict)]
        for fix in fixes:
            assert not (isinstance(fix, str) and PLACEHOLDER.search(fix)), f"a placeholder in a fix: {fix}"
    elif args[0] in ("check", "fix"):
        found = PLACEHOLDER.search(stdout)
        assert found is None, f"a placeholder in {' '.join(args[:2])}'s output: {found.group(0)!r}"


def check_names_only_known_releases(plan: dict) -> None:
    """Every cuDNN release or wheel a plan names exists in compat/cudnn.toml for that CUDA major."""
    import tomllib

    data = tomllib.loads((ROOT / "compat" / "cudnn.toml").read_text())
    builds: dict[tuple[str, int], str | None] = {}
    for row in data["release"]:
        for variant in row.get("variant", []):
            cuda = str(variant.get("cuda", "")).split(".")[0]
            if cuda.isdigit():
                builds[(row["version"], int(cuda))] = row.get("build")
    for action in plan.get("actions", []):
        argv = action.get("argv") or []
        if action.get("kind") == "install" and "--version" in argv and "--cuda" in argv:
            version, cuda = argv[argv.index("--version") + 1], int(argv[argv.index("--cuda") + 1])
            assert (version, cuda) in builds, f"cuDNN {version} for CUDA {cuda} is not in compat/cudnn.toml"
        for word in argv:
            pinned = re.fullmatch(r"nvidia-cudnn-cu(\d+)==([\d.]+)", word)
            if pinned:
                known = {b for (_, c), b in builds.items() if c == int(pinned.group(1))}
                wheels = {b for w in data.get("wheel", []) if int(w.get("cuda", -1)) == int(pinned.group(1))
                          for b in w.get("builds", [])}
                assert pinned.group(2) in known | wheels, f"{word} is not a build compat/ knows"


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def codes(report: dict) -> set[str]:
    return {finding["code"] for finding in report["findings"]}


@pytest.fixture(scope="session")
def nobody():  # type: ignore[no-untyped-def]
    """This Python's doctor, startable as user nobody (tests/as_nobody.py); skipped where not root."""
    from tests.as_nobody import can_run_as_nobody, nobody_python

    why = can_run_as_nobody()
    if why:
        pytest.skip(why)
    with nobody_python() as python:
        yield python


INTEGRATION_VARIABLE = "CUDNN_DOCTOR_TEST_INTEGRATION"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """CUDNN_DOCTOR_TEST_INTEGRATION=0 skips the tests that download NVIDIA's wheels (about 1 GB, once)."""
    if os.environ.get(INTEGRATION_VARIABLE, "").strip().lower() not in ("0", "false", "no", "off"):
        return
    skip = pytest.mark.skip(reason=f"{INTEGRATION_VARIABLE}=0: the NVIDIA wheels are not downloaded")
    for item in items:
        if item.get_closest_marker("integration"):
            item.add_marker(skip)
