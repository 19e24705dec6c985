"""The plugins a framework's import loads, asked of its own Python (probes/python_plugins.py): a 'torch.backends'
entry point whose module Python does not find, or package metadata Python refuses, stops `import torch` (torch 2.5+
raises "Failed to load the backend extension"); plain check sees it in a child with the user's environment, and
fix's line (the plugin's PYTHONPATH folder out, else TORCH_DEVICE_BACKEND_AUTOLOAD=0) makes the import work. The
stand-in torch below loads its plugins with the code torch's own __init__.py runs; the real interpreter is the
judge."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import Machine
from tests.test_frameworks import install_torch, python_env, real_python_sees

# torch/__init__.py's own mechanism (pytorch torch/__init__.py, 2.5 and later): what compat/python_plugins.toml says
AUTOLOAD = '''import os
from importlib.metadata import entry_points


def _import_device_backends():
    group_name = "torch.backends"
    backend_extensions = entry_points(group=group_name)
    for backend_extension in backend_extensions:
        try:
            entrypoint = backend_extension.load()
            entrypoint()
        except Exception as err:
            raise RuntimeError(
                f"Failed to load the backend extension: {backend_extension.name}. "
                f"You can disable extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0."
            ) from err


def _is_device_backend_autoload_enabled():
    return os.getenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1"


if _is_device_backend_autoload_enabled():
    _import_device_backends()
'''


def _torch(machine: Machine, tmp_path: Path) -> Path:
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "torch" / "__init__.py").write_text(AUTOLOAD)
    real_python_sees(site, tmp_path)
    python = tmp_path / "venv" / "bin" / "python3"  # the user's PYTHONPATH before site-packages, as in a real venv
    python.write_text(python.read_text().replace(f"PYTHONPATH={site}", f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}"'))
    return site


def _plugin(folder: Path, module: bool = False, text: bytes | None = None) -> None:
    info = folder / "torch_fakeaccel-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_fakeaccel\nVersion: 1.0\n")
    (info / "entry_points.txt").write_bytes(text or b"[torch.backends]\nfakeaccel = torch_fakeaccel:_autoload\n")
    if module:
        (folder / "torch_fakeaccel.py").write_text("def _autoload():\n    pass\n")


def _imports(machine: Machine, tmp_path: Path, lines: list[str] = ()) -> subprocess.CompletedProcess:  # type: ignore[assignment]
    return subprocess.run(["bash", "-c", "\n".join([*lines, 'exec "$0" -c "import torch"']),
                           str(tmp_path / "venv" / "bin" / "python3")], env=machine.env, capture_output=True,
                          text=True, timeout=60)


def _plugin_findings(report: dict) -> list[dict]:  # type: ignore[type-arg]
    return [f for f in report["findings"] if f["code"] == "CD409" and "torch.backends" in str(f["subject"])]


def test_a_plugin_whose_module_is_gone_stops_the_import_and_is_seen(machine: Machine, tmp_path: Path) -> None:
    site = _torch(machine, tmp_path)
    _plugin(site)
    assert "Failed to load the backend extension: fakeaccel" in _imports(machine, tmp_path).stderr  # the judge
    [said] = _plugin_findings(machine.check_json())
    assert said["severity"] == "error" and said["evidence"] == "seen", said
    assert "finds no module torch_fakeaccel" in said["proof"] and "TORCH_DEVICE_BACKEND_AUTOLOAD" in said["detail"]
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert "export TORCH_DEVICE_BACKEND_AUTOLOAD=0" in lines, plan["actions"]
    assert _imports(machine, tmp_path, lines).returncode == 0  # the line sourced, torch imports
    machine.env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    assert not _plugin_findings(machine.check_json())  # checked again: nothing left


def test_a_plugin_declared_on_pythonpath_is_cured_by_that_folder_out(machine: Machine, tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    leftover = tmp_path / "leftover"
    _plugin(leftover)
    machine.env["PYTHONPATH"] = str(leftover)
    [said] = _plugin_findings(machine.check_json())
    assert said["severity"] == "error", said
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert any("PYTHONPATH" in line for line in lines) and not any("AUTOLOAD" in line for line in lines), lines
    assert _imports(machine, tmp_path, lines).returncode == 0


def test_package_metadata_python_cannot_read_stops_the_import_and_is_seen(machine: Machine, tmp_path: Path) -> None:
    site = _torch(machine, tmp_path)
    _plugin(site, module=True, text="[console_scripts]\nfakeaccel = torch_fakeaccel:main  # \u00e9t\u00e9\n".encode("latin-1"))
    judged = _imports(machine, tmp_path)
    assert judged.returncode != 0 and "UnicodeDecodeError" in judged.stderr, judged.stderr
    [said] = _plugin_findings(machine.check_json())
    assert said["severity"] == "error" and said["subject"] == "torch.backends: package metadata", said
    assert "UnicodeDecodeError" in said["proof"], said


def test_plugins_that_load_or_are_switched_off_are_no_finding_and_start_nothing(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    from cudnn_doctor.model import Framework
    from cudnn_doctor.probes.python_plugins import PluginChild

    site = _torch(machine, tmp_path)
    _plugin(site, module=True)
    assert _imports(machine, tmp_path).returncode == 0
    assert not _plugin_findings(machine.check_json())
    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None, {"site_packages": str(site)})
    assert PluginChild([torch], dict(machine.env)).asked  # a group is named: asked
    assert not PluginChild([torch], dict(machine.env, TORCH_DEVICE_BACKEND_AUTOLOAD="0")).asked
    (site / "torch" / "__init__.py").write_text("# a torch before 2.5: no autoload\n")
    assert not PluginChild([torch], dict(machine.env)).asked  # its own file does not name the mechanism
