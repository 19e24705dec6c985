"""`cudnn-doctor fix`: one treatment per machine, exact and consistent, proven by applying it and checking again.

Each closed loop builds the scenario (real cuDNN wheels from PyPI, cached; framework metadata; venvs;
LD_LIBRARY_PATH), runs `fix --yes` offline (pip pointed at a local wheel folder, `install` at a local mirror
folder), and asserts that the findings it resolves are gone and that no new error appeared.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PLACEHOLDER, Machine, check_names_only_known_releases, codes
from tests.fakes.build import fake_cudnn, fake_framework_library, fake_nvml
from tests.install_helpers import cudnn_tree, write_headers
from tests.real_wheels import real_wheel_stored, wheel_sha256

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the plans are applied on Linux hosts")

CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]
WHEEL_BUILDS = {"8.9.7": ("8.9.7.29", 12), "9.19.0": ("9.19.0.56", 13)}


def errors(report: dict) -> set[tuple[str, str | None]]:
    return {(f["code"], f.get("subject")) for f in report["findings"] if f["severity"] == "error"}


def with_driver(machine: Machine, tmp_path: Path, cuda: int = 13000) -> None:
    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=cuda)
    machine.add_library_path(tmp_path / "driver")


def local_mirror(tmp_path: Path, *versions: str) -> Path:
    """NVIDIA's redist layout in a folder, each release's archive the real wheel from PyPI (cached), its members
    stored rather than deflated (tests/real_wheels.py, real_wheel_stored: the same files, without inflating them
    again per test)."""
    folder = tmp_path / "mirror"
    (folder / "cudnn" / "linux-x86_64").mkdir(parents=True, exist_ok=True)
    for version in versions:
        wheel = real_wheel_stored(version)
        target = folder / "cudnn" / "linux-x86_64" / wheel.name
        if not target.exists():
            target.symlink_to(wheel)
        build, cuda = WHEEL_BUILDS[version]
        manifest = {"release_label": version, "release_product": "cudnn",
                    "cudnn": {"name": "NVIDIA CUDA Deep Neural Network library", "version": build,
                              "cuda_variant": [str(cuda)],
                              "linux-x86_64": {f"cuda{cuda}": {"relative_path": f"cudnn/linux-x86_64/{wheel.name}",
                                                               "sha256": wheel_sha256(wheel),
                                                               "size": str(wheel.stat().st_size)}}}}
        (folder / f"redistrib_{version}.json").write_text(json.dumps(manifest))
    return folder


def fix_json(machine: Machine, *args: str, timeout: float = 600) -> dict:
    result = machine.run("fix", "--json", *args, timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    data = result.json
    assert data["schema"] == "cudnn-doctor/plan/1" and data["exit_code"] == result.exit_code, data
    return data


def closed_loop(machine: Machine, *args: str) -> tuple[dict, dict]:
    """check, then `fix --yes`: (the report before, the plan with before/after). Asserts the loop closed."""
    before = machine.check_json(*args)
    data = fix_json(machine, "--yes", *args)
    failed = data.get("failed")
    assert failed is None, failed
    resolved = {code for action in data["actions"] for code in action["resolves"]
                if action["kind"] in ("pip", "conda", "install", "env")}
    after_codes = set(data["after"]["codes"])
    assert not (resolved & after_codes), (resolved, data["after"])
    after_errors = {(f["code"], f.get("subject")) for f in data["after"]["findings"] if f["severity"] == "error"}
    assert after_errors <= errors(before), f"new errors after the fix: {after_errors - errors(before)}"
    return before, data


# --- the treatment of one cause ---------------------------------------------------------------------------------

def test_a_cudnn_shadowed_through_ld_library_path_is_one_env_change(machine: Machine, tmp_path: Path) -> None:
    """torch's pip copy of cuDNN 9.1 and a cuDNN 9.0 in an LD_LIBRARY_PATH folder: torch loads the 9.0 (CD408).
    One cause, one treatment: that folder out of LD_LIBRARY_PATH; nothing is written into site-packages."""
    from tests.test_frameworks import install_torch, python_env

    with_driver(machine, tmp_path, cuda=12040)
    site = python_env(machine, tmp_path)
    install_torch(site)
    fake_cudnn(tmp_path / "stray", version=90000, sublibraries=CUDNN9)
    machine.add_library_path(tmp_path / "stray")
    plan = fix_json(machine)
    assert plan["exit_code"] == 1
    [action] = [a for a in plan["actions"] if "CD408" in a["resolves"]]
    assert action["kind"] == "env" and str(tmp_path / "stray") not in action["text"].split("=", 1)[1]
    assert not any(a["kind"] == "install" or str(site) in " ".join(a.get("argv", [])) for a in plan["actions"])
    check_names_only_known_releases(plan)
    report = machine.check_json()
    [cd408] = [f for f in report["findings"] if f["code"] == "CD408"]
    assert "out of LD_LIBRARY_PATH" in cd408["fix"] and "cudnn-doctor install" not in cd408["fix"]
    _, done = closed_loop(machine)
    assert "CD408" not in done["after"]["codes"]


def test_several_cudnn_on_the_loader_path_closed_loop(machine: Machine, tmp_path: Path) -> None:
    with_driver(machine, tmp_path)
    fake_cudnn(tmp_path / "a", version=91900, cudart=13000, sublibraries=CUDNN9)
    fake_cudnn(tmp_path / "b", version=91400, cudart=13000, sublibraries=CUDNN9)
    machine.add_library_path(tmp_path / "b")
    machine.add_library_path(tmp_path / "a")
    report = machine.check_json()
    assert "CD302" in codes(report)
    plan = fix_json(machine)
    [action] = [a for a in plan["actions"] if "CD302" in a["resolves"]]
    assert action["kind"] == "env"
    closed_loop(machine)


# --- a cuDNN the framework's own environment lacks: pip, through that environment's interpreter -------------------

@pytest.mark.integration
def venv_with_pip(venv: Path) -> None:
    """A virtual environment with its own pip at VENV, as `python -m venv` makes it: copied from one made once into the
    test cache for this base interpreter (ensurepip's install of pip took 3-5 CPU s a venv, twice a run). pyvenv.cfg
    names the base interpreter, not the venv's folder, and the plans run `VENV/bin/python -m pip`, so the copy's pip
    is that venv's own (its bin/pip scripts, which name the first copy, are not what the doctor runs)."""
    import hashlib
    import shutil

    from tests.locks import locked
    from tests.real_wheels import cache_root

    base = getattr(sys, "_base_executable", sys.executable)
    key = hashlib.sha256(f"{os.path.realpath(base)} {sys.version}".encode()).hexdigest()[:12]
    template = cache_root() / "venvs" / f"with-pip-{key}"
    done = template.parent / f"{template.name}.complete"
    if not done.exists():
        with locked(f"venv-with-pip-{key}"):
            if not done.exists():
                shutil.rmtree(template, ignore_errors=True)
                subprocess.run([sys.executable, "-m", "venv", str(template)], check=True, timeout=300)
                done.write_text("ok\n")
    shutil.copytree(template, venv, symlinks=True)


def test_a_venv_torch_without_its_cudnn_wheel_gets_it_from_its_own_pip(machine: Machine, tmp_path: Path) -> None:
    """`--python venv/bin/python`: torch's wheel pins nvidia-cudnn-cu13==9.19.0.56, which is missing (CD401). The
    plan runs that venv's pip (offline, from a local wheel folder: the real wheel, its members stored); after it,
    torch loads the real cuDNN 9.19.0."""
    wheel = real_wheel_stored("9.19.0")
    with_driver(machine, tmp_path)
    venv = tmp_path / "venv"
    venv_with_pip(venv)
    [site] = list((venv / "lib").glob("python3*/site-packages"))
    version = "2.11.0+cu130"
    info = site / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
                                   "Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(f"__version__ = '{version}'\ncuda = '13.0'\n")
    fake_framework_library(site / "torch" / "lib" / "libtorch_cuda.so", site, "$ORIGIN/../../nvidia/cudnn/lib")
    # what torch's own install brought along: the wheel nvidia-cudnn-cu13 needs is there already
    blas = site / "nvidia_cublas-13.1.0.3.dist-info"
    blas.mkdir()
    (blas / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cublas\nVersion: 13.1.0.3\n")
    (blas / "RECORD").write_text("")
    machine.env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheel.parent), "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    python = str(venv / "bin" / "python")
    before = machine.check_json("--python", python)
    assert "CD401" in codes(before)
    plan = fix_json(machine, "--python", python)
    [action] = [a for a in plan["actions"] if "CD401" in a["resolves"]]
    assert action["kind"] == "pip" and action["argv"] == [python, "-m", "pip", "install",
                                                           "nvidia-cudnn-cu13==9.19.0.56"]
    assert not any(a["kind"] == "install" for a in plan["actions"])  # never the toolkit: torch does not load it
    check_names_only_known_releases(plan)
    _, done = closed_loop(machine, "--python", python)
    after = machine.check_json("--python", python)
    [torch] = after["frameworks"]
    assert torch["cudnn_used"] and "site-packages/nvidia/cudnn" in torch["cudnn_used"]
    assert next(i for i in after["cudnn"] if i["library"] == torch["cudnn_used"])["version"] == "9.19.0"


# --- a cuDNN the loader must find: chosen once for every framework, installed, on the path ------------------------

@pytest.mark.integration
def test_tensorflow_215_gets_one_cudnn_8_for_cuda_12(machine: Machine, tmp_path: Path) -> None:
    """TensorFlow 2.15 was built with cuDNN 8.9 for CUDA 12: no cuDNN here (CD301) and none for it (CD401) get one
    action, a cuDNN 8.9 for CUDA 12 that compat/ lists, never a 9.x for CUDA 13 beside a TF-only 8.x."""
    with_driver(machine, tmp_path)
    machine.env["CUDNN_DOCTOR_MIRROR"] = str(local_mirror(tmp_path, "8.9.7"))
    plan = fix_json(machine, "--framework", "tensorflow==2.15.0")
    installs = [a for a in plan["actions"] if a["kind"] == "install"]
    assert len(installs) == 1 and {"CD301", "CD401"} <= set(installs[0]["resolves"])
    argv = installs[0]["argv"]
    assert argv[argv.index("--version") + 1].startswith("8.9.") and argv[argv.index("--cuda") + 1] == "12"
    check_names_only_known_releases(plan)
    report, done = closed_loop(machine, "--framework", "tensorflow==2.15.0")  # its check before: the report
    fixes = {f["code"]: f["fix"] for f in report["findings"]}
    assert fixes["CD301"] == fixes["CD401"]  # one treatment, said the same way in both
    assert not {"CD301", "CD401"} & set(done["after"]["codes"])


@pytest.mark.integration
def test_a_required_cudnn_is_installed_within_the_requirement(machine: Machine, tmp_path: Path) -> None:
    with_driver(machine, tmp_path)
    machine.env["CUDNN_DOCTOR_MIRROR"] = str(local_mirror(tmp_path, "9.19.0"))
    plan = fix_json(machine, "--require", "cudnn==9.19.0")
    [install] = [a for a in plan["actions"] if a["kind"] == "install"]
    assert install["argv"][install["argv"].index("--version") + 1] == "9.19.0" and "CD320" in install["resolves"]
    check_names_only_known_releases(plan)
    closed_loop(machine, "--require", "cudnn==9.19.0")


def planned_as_reinstall(machine: Machine, found: tuple[str, ...], prefix: Path, version: str) -> None:
    """Each code of FOUND is found (one check); the treatment of each is `install --version VERSION --prefix PREFIX`
    (one plan), naming only known releases."""
    report_codes = codes(machine.check_json())
    plan = fix_json(machine)
    for code in found:
        assert code in report_codes, (code, report_codes)
        [install] = [a for a in plan["actions"] if code in a["resolves"]]
        assert install["argv"][install["argv"].index("--prefix") + 1] == str(prefix)
        assert install["argv"][install["argv"].index("--version") + 1] == version
    check_names_only_known_releases(plan)


def damage_prefix(prefix: Path, damage: str) -> None:
    """One damage of a cuDNN 8.9.7 prefix as users make them: "headers" of another release (cuDNN 9.19's) beside
    its libraries (CD303), a sub-library "missing" (CD304), a sub-library "mixed" in from another release (8.6.0's
    file copied over one, CD305)."""
    lib = prefix / "lib64"
    if damage == "headers":
        write_headers(prefix / "include", 91900)
    elif damage == "missing":
        for stale in lib.glob("libcudnn_cnn_infer*"):
            stale.unlink()
    elif damage == "mixed":
        (lib / "libcudnn_ops_infer.so.8.9.7").rename(lib / "libcudnn_ops_infer.so.8.6.0")
        (lib / "libcudnn_ops_infer.so.8").unlink()
        (lib / "libcudnn_ops_infer.so.8").symlink_to("libcudnn_ops_infer.so.8.6.0")


PREFIX_DAMAGES = {"headers": "CD303", "missing": "CD304", "mixed": "CD305"}


@pytest.mark.integration
@pytest.mark.parametrize("damage", list(PREFIX_DAMAGES))
def test_a_damaged_prefix_is_planned_as_one_reinstall_from_one_archive(machine: Machine, tmp_path: Path,
                                                                       damage: str) -> None:
    """Each damage alone is found, and its treatment is the prefix's own release again, headers and libraries from
    one archive (`install --version 8.9.7 --prefix PREFIX`), naming only known releases. That the reinstall repairs
    each one is test_one_reinstall_repairs_every_damage_of_a_prefix's (one real install for the three)."""
    with_driver(machine, tmp_path)
    prefix = tmp_path / "opt" / "cudnn"
    cudnn_tree(prefix, version=8907, cudart=12020, lib_folder="lib64")
    damage_prefix(prefix, damage)
    machine.add_library_path(prefix / "lib64")
    machine.env["CUDNN_DOCTOR_MIRROR"] = str(local_mirror(tmp_path, "8.9.7"))
    planned_as_reinstall(machine, (PREFIX_DAMAGES[damage],), prefix, "8.9.7")


@pytest.mark.integration
def test_one_reinstall_repairs_every_damage_of_a_prefix(machine: Machine, tmp_path: Path) -> None:
    """The three damages in one prefix: one install action resolves the three, and after `fix --yes` (the real
    cuDNN 8.9.7 archive installed) none is found; the 8.6.0 file copied in is gone with the rest of the old copy."""
    with_driver(machine, tmp_path)
    prefix = tmp_path / "opt" / "cudnn"
    cudnn_tree(prefix, version=8907, cudart=12020, lib_folder="lib64")
    for damage in PREFIX_DAMAGES:
        damage_prefix(prefix, damage)
    machine.add_library_path(prefix / "lib64")
    machine.env["CUDNN_DOCTOR_MIRROR"] = str(local_mirror(tmp_path, "8.9.7"))
    planned_as_reinstall(machine, tuple(PREFIX_DAMAGES.values()), prefix, "8.9.7")  # one check and plan, not three
    _, data = closed_loop(machine)
    [install] = [a for a in data["actions"] if a["kind"] == "install"]
    assert set(PREFIX_DAMAGES.values()) <= set(install["resolves"]), install
    assert not set(PREFIX_DAMAGES.values()) & set(data["after"]["codes"]), data["after"]


def test_a_cudnn_off_the_loader_path_gets_an_env_line_that_works(machine: Machine, tmp_path: Path) -> None:
    with_driver(machine, tmp_path)
    fake_cudnn(tmp_path / "found" / "lib", version=91900, cudart=13000, sublibraries=CUDNN9)
    args = ("--search-path", str(tmp_path / "found" / "lib"))
    report = machine.check_json(*args)
    assert "CD310" in codes(report)
    [cd310] = [f for f in report["findings"] if f["code"] == "CD310"]
    assert "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" in cd310["fix"]
    closed_loop(machine, *args)


# --- what a plan may never say --------------------------------------------------------------------------------------

def test_cpu_only_torch_names_a_build_that_exists(machine: Machine, tmp_path: Path) -> None:
    from tests.test_frameworks import install_torch, python_env

    with_driver(machine, tmp_path)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.13.0+cpu", cuda=None, pin="filelock")
    plan = fix_json(machine)
    [action] = [a for a in plan["actions"] if "CD406" in a["resolves"]]
    words = action["argv"] if action["kind"] == "pip" else action["text"].replace("`", " ").split()
    # 2.13.0 has cu126, cu130 (PyPI) and cu132; a +cpu one is replaced by a CUDA build pinned, from its index
    assert "torch==2.13.0+cu130" in words and "cu128" not in " ".join(words)
    check_names_only_known_releases(plan)


@pytest.mark.parametrize("args", [("--framework", "tensorflow==2.15.0"), ("--framework", "torch==2.5.1"),
                                  ("--require", "cudnn>=9.1"), ("--framework", "jax==0.4.30"),
                                  ("--framework", "onnxruntime==1.18.0")])
def test_no_fix_holds_a_placeholder(machine: Machine, tmp_path: Path, args: tuple[str, ...]) -> None:
    for case in ("bare", "driver"):
        if case == "driver":
            with_driver(machine, tmp_path)
        report = machine.check_json(*args)
        for finding in report["findings"]:
            assert not PLACEHOLDER.search(finding["fix"]), finding
        text = machine.run("check", *args).stdout
        assert not PLACEHOLDER.search(text), text
        check_names_only_known_releases(fix_json(machine, *args))


def test_explain_fills_the_values_it_read(machine: Machine) -> None:
    for message in ("Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.9.4.  CuDNN library needs "
                    "to have matching major version and equal or higher minor version.",
                    "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 19, 0) but found "
                    "runtime version (9, 14, 0)."):
        data = json.loads(machine.run("explain", "--json", "--offline-only", message).stdout)
        assert data["matches"], data
        for match in data["matches"]:
            assert not PLACEHOLDER.search(match["fix"]), match


def test_fix_without_yes_changes_nothing_and_json_is_one_object(machine: Machine, tmp_path: Path) -> None:
    with_driver(machine, tmp_path)
    fake_cudnn(tmp_path / "found" / "lib", version=91900, cudart=13000, sublibraries=CUDNN9)
    home_before = sorted(os.listdir(machine.home))
    result = machine.run("fix", "--search-path", str(tmp_path / "found" / "lib"))
    assert result.exit_code == 1 and "export LD_LIBRARY_PATH=" in result.stdout
    assert sorted(os.listdir(machine.home)) == home_before
    bad = machine.run("fix", "--json", "--shell", "tcsh")
    assert bad.exit_code == 2 and json.loads(bad.stdout)["exit_code"] == 2


def test_a_healthy_machine_has_nothing_to_fix(machine: Machine, tmp_path: Path) -> None:
    with_driver(machine, tmp_path)
    toolkit = machine.root / "usr" / "local" / "cuda-13.0"
    (toolkit / "lib64").mkdir(parents=True)
    (toolkit / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "13.0.96"}}))
    fake_cudnn(toolkit / "lib64", version=91900, cudart=13000, sublibraries=CUDNN9)
    machine.add_library_path(toolkit / "lib64")
    data = fix_json(machine)
    assert data["actions"] == [] and data["exit_code"] == 0, data
    assert "Nothing to fix" in machine.run("fix").stdout


def test_a_gpu_the_build_lacks_gets_a_release_that_has_it(machine: Machine, tmp_path: Path) -> None:
    """torch 2.6.0+cu124 ships no sm_120 kernels (CD404 on a Blackwell GPU): the plan names a release and CUDA build
    whose architecture list in compat/ holds 12.0, and `compat` agrees it is compatible."""
    from tests.test_frameworks import install_torch, python_env

    fake_nvml(tmp_path / "driver", driver="580.65.06", cuda=13000, name="NVIDIA RTX PRO 6000", compute_capability="12.0")
    machine.add_library_path(tmp_path / "driver")
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.6.0+cu124", cuda="12.4", pin="nvidia-cudnn-cu12==9.1.0.70")
    plan = fix_json(machine)
    [action] = [a for a in plan["actions"] if "CD404" in a["resolves"]]
    words = action.get("argv") or action["text"].split()
    [pinned] = [w for w in words if w.startswith("torch==")]
    version = pinned.removeprefix("torch==").split("+")[0]
    answer = machine.run("compat", f"torch=={version}", "--compute-capability", "12.0", "--json").json
    assert answer["verdict"] == "compatible", answer


def test_a_package_that_cannot_be_had_stops_the_plan_before_anything_changes(machine: Machine, tmp_path: Path) -> None:
    """CPU-only onnxruntime (CD406): the treatment uninstalls it and installs onnxruntime-gpu. Offline, with no such
    wheel at hand, pip's dry run refuses first: nothing is uninstalled, the plan says which step and why."""
    with_driver(machine, tmp_path)
    venv = tmp_path / "venv"
    venv_with_pip(venv)
    [site] = list((venv / "lib").glob("python3*/site-packages"))
    info = site / "onnxruntime-1.18.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: onnxruntime\nVersion: 1.18.0\n")
    (info / "INSTALLER").write_text("pip\n")
    (site / "onnxruntime").mkdir()
    (site / "onnxruntime" / "__init__.py").write_text("")
    (info / "RECORD").write_text("onnxruntime/__init__.py,,\nonnxruntime-1.18.0.dist-info/METADATA,,\n"
                                 "onnxruntime-1.18.0.dist-info/INSTALLER,,\nonnxruntime-1.18.0.dist-info/RECORD,,\n")
    machine.env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "no-wheels"),
                        "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    (tmp_path / "no-wheels").mkdir()
    python = str(venv / "bin" / "python")
    plan = fix_json(machine, "--python", python)
    steps = [a["argv"][3:] for a in plan["actions"] if "CD406" in a["resolves"]]
    assert steps == [["uninstall", "onnxruntime", "-y"], ["install", "onnxruntime-gpu==1.18.0"]], plan
    done = fix_json(machine, "--yes", "--python", python)
    assert done["exit_code"] == 1 and "cannot be installed here, so nothing was changed" in done["failed"]
    assert all(a["outcome"]["status"] == "not run" for a in done["actions"])
    assert (site / "onnxruntime" / "__init__.py").exists() and info.is_dir()


def test_a_cpu_only_jax_gets_the_exact_line_for_its_version(machine: Machine, tmp_path: Path) -> None:
    """jax + jaxlib 0.7.1 without a CUDA plugin (CD406): JAX's own install line, for that version and a CUDA build
    compat/ lists for it (jax-ml/jax CHANGELOG.md 0.4.30: plugin-based `pip install jax[cuda12]`)."""
    from tests.test_compat_rules import install_wheel, python_env

    with_driver(machine, tmp_path)
    site = python_env(machine, tmp_path)
    install_wheel(site, "jax", "0.7.1", "jaxlib<=0.7.1,>=0.7.1")
    install_wheel(site, "jaxlib", "0.7.1")
    report = machine.check_json()
    [cd406] = [f for f in report["findings"] if f["code"] == "CD406"]
    assert re.search(r"jax\[cuda1[23]\]==0\.7\.1", cd406["fix"]), cd406["fix"]


@pytest.mark.integration
def test_a_cudnn_for_another_cuda_major_in_a_toolkit_is_replaced_by_one_that_exists(machine: Machine,
                                                                                  tmp_path: Path) -> None:
    """cuDNN 8.9.7 built for CUDA 12 inside a CUDA 13 toolkit (CD306). No cuDNN 8 was ever built for CUDA 13
    (compat/cudnn.toml): the plan names a 9.x release that exists for CUDA 13 and replaces the old major whole
    (`--replace`, which the installer asks for), and after it `check` has no CD306 and no new error."""
    from tests.test_check import make_toolkit

    with_driver(machine, tmp_path)
    toolkit = make_toolkit(machine.root, "13.0.2", 13000)
    cudnn_tree(toolkit, version=8907, cudart=12020, lib_folder="lib64")
    machine.add_library_path(toolkit / "lib64")
    machine.env["CUDNN_DOCTOR_MIRROR"] = str(local_mirror(tmp_path, "9.19.0"))
    args = ("--require", "cudnn==9.19.0")  # the release this test's mirror holds
    assert "CD306" in codes(machine.check_json(*args))
    plan = fix_json(machine, *args)
    [install] = [a for a in plan["actions"] if "CD306" in a["resolves"]]
    argv = install["argv"]
    assert argv[argv.index("--version") + 1] == "9.19.0" and argv[argv.index("--cuda") + 1] == "13"
    assert argv[argv.index("--prefix") + 1] == str(toolkit) and "--replace" in argv
    _, done = closed_loop(machine, *args)
    assert "CD306" not in done["after"]["codes"]


def test_every_code_has_its_advice_and_the_registry_holds_no_fix() -> None:
    """The fix knowledge is in one place: compat/fixes.toml has one advice row (with a source) per code, codes.py
    keeps titles and explanations only, and every advice is whole once its rule's values are in."""
    import dataclasses

    import tomllib

    from cudnn_doctor.codes import CODES, Code
    from cudnn_doctor.knowledge.advice import FIELD

    rows = tomllib.loads((Path(__file__).resolve().parents[1] / "compat" / "fixes.toml").read_text())["advice"]
    # one general row per code; a system's own row (os = "windows") replaces it there, for codes that exist
    assert sorted(row["code"] for row in rows if "os" not in row) == sorted(CODES)
    assert {row["code"] for row in rows if "os" in row} <= set(CODES)
    assert all(row["source"].strip() for row in rows)
    assert "fix" not in {f.name for f in dataclasses.fields(Code)}
    for row in rows:
        assert not PLACEHOLDER.search(FIELD.sub("value", row["text"])), row  # only {fields} the rule fills


def test_a_dl4j_cpu_backend_gets_the_edit_of_its_own_build_file(machine: Machine, tmp_path: Path) -> None:
    """A DL4J 1.0.0-M2 project on nd4j-native (CD406) on a machine with a CUDA 11.6 toolkit: the plan is an edit of
    the very line that names the backend, shown as a diff (the commented-out lines above it left alone). Applied with
    `patch`, as a user would, `check` finds the CUDA backend and no CD406."""
    import shutil

    from tests.test_check import make_toolkit

    project = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "dl4j" / "m2-cpu-only", project)
    with_driver(machine, tmp_path, cuda=12040)
    make_toolkit(machine.root, "11.6.2", 11060)
    before = machine.check_json("--project", str(project))
    assert "CD406" in codes(before)
    plan = fix_json(machine, "--project", str(project))
    [edit] = [a for a in plan["actions"] if "CD406" in a["resolves"]]
    assert edit["kind"] == "edit"
    changed = [line for line in edit["text"].splitlines() if line[:1] in "-+" and line[:3] not in ("---", "+++")]
    assert changed == ["-        <nd4j.backend>nd4j-native</nd4j.backend>",
                       "+        <nd4j.backend>nd4j-cuda-11.6</nd4j.backend>"], edit["text"]
    if shutil.which("patch") is None:
        pytest.skip("no patch program to apply the diff with")
    applied = subprocess.run(["patch", "-p0"], input=edit["text"], text=True, capture_output=True, cwd="/")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after = machine.check_json("--project", str(project))
    assert "CD406" not in codes(after) and errors(after) <= errors(before), after["findings"]
    assert any(f["name"] == "dl4j" and f["details"].get("artifact") == "nd4j-cuda-11.6" for f in after["frameworks"])
