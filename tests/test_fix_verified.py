"""`fix --yes` believes the environment, not pip's exit status: a step is done when its package is where it was meant.

A venv its user may not write (root's, run as nobody): pip falls back to a user install in ~/.local and exits 0.
The step must be reported failed with where pip put the package, and the steps after it not run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from tests.conftest import Machine
from tests.fakes.build import fake_framework_library, fake_nvml

PIN = "nvidia-cudnn-cu13==9.19.0.56"


def _metadata_wheel(folder: Path, name: str, version: str) -> Path:
    """A wheel of NAME VERSION that holds only its metadata: enough for pip to install and record it."""
    stem = f"{name.replace('-', '_')}-{version}"
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{stem}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{stem}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                    "Tag: py3-none-any\n")
        archive.writestr(f"{stem}.dist-info/RECORD", "")
    return wheel


def _torch_venv(python: str, venv: Path) -> str:
    """A venv (seeing its base's pip) holding torch 2.11.0+cu130, whose wheel pins PIN, without PIN (CD401)."""
    subprocess.run([python, "-m", "venv", "--without-pip", "--system-site-packages", "--copies", str(venv)], check=True,
                   timeout=120)
    [site] = list((venv / "lib").glob("python3*/site-packages"))
    version = "2.11.0+cu130"
    info = site / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
                                   f"Requires-Dist: {PIN}; platform_system == \"Linux\"\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(f"__version__ = '{version}'\ncuda = '13.0'\n")
    fake_framework_library(site / "torch" / "lib" / "libtorch_cuda.so", site, "$ORIGIN/../../nvidia/cudnn/lib")
    return str(venv / "bin" / "python")


def test_a_user_install_pip_falls_back_to_is_not_done(nobody) -> None:  # type: ignore[no-untyped-def]
    base = Path(tempfile.mkdtemp(prefix="cudnn-doctor-readonly-venv-"))  # pytest's tmp folders are 0700
    try:
        base.chmod(0o755)
        machine = Machine(base / "m")
        for folder in (base / "m", machine.root):
            folder.chmod(0o755)
        shutil.chown(machine.home, 65534, 65534)
        fake_nvml(base / "driver", driver="580.65.06", cuda=13000)
        machine.add_library_path(base / "driver")
        python = _torch_venv(nobody.python, base / "venv")  # root's: nobody may not write it
        wheels = base / "wheels"
        wheels.mkdir()
        _metadata_wheel(wheels, "nvidia-cudnn-cu13", "9.19.0.56")
        machine.env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                            "CUDNN_DOCTOR_CACHE_DIR": str(machine.home / "cache")})
        env = nobody.env(machine.env)
        env.pop("PYTHONNOUSERSITE")  # the user's own setting: pip may fall back to ~/.local
        result = subprocess.run([*nobody.argv, "-m", "cudnn_doctor", "fix", "--yes", "--json", "--python", python],
                                env=env, cwd=base, capture_output=True, text=True, timeout=300)
        data = json.loads(result.stdout)
        assert "actions" in data, (data, result.stderr)
        [step] = [(a, a["outcome"]) for a in data["actions"] if a["kind"] == "pip"]
        action, outcome = step
        assert action["argv"] == [python, "-m", "pip", "install", PIN]
        assert list(machine.home.glob(".local/lib/python3*/site-packages/nvidia_cudnn_cu13-9.19.0.56.dist-info"))
        assert outcome["status"] == "failed", outcome
        assert "not in " + str(base / "venv") in outcome["why"] and ".local" in outcome["why"]
        assert data["failed"] and result.returncode == 1
        # its owner may write it (and has no copy in a ~/.local of its own): the step is done, in the venv
        machine.env["HOME"] = str(base / "root-home")
        done = json.loads(machine.run("fix", "--yes", "--json", "--python", python, timeout=300).stdout)
        assert [a["outcome"]["status"] for a in done["actions"] if a["kind"] == "pip"] == ["done"]
        assert list((base / "venv").glob("lib/python3*/site-packages/nvidia_cudnn_cu13-9.19.0.56.dist-info"))
    finally:
        shutil.rmtree(base, ignore_errors=True)
