"""The plugins a framework's import loads, asked of its own Python (probes/python_finder.py): a 'torch.backends'
entry point whose module Python does not find, or package metadata Python refuses, stops `import torch` (torch 2.5+
raises "Failed to load the backend extension"); plain check sees it in a child with the user's environment, and
fix's line (the plugin's PYTHONPATH folder out, else TORCH_DEVICE_BACKEND_AUTOLOAD=0) makes the import work. The
stand-in torch below loads its plugins with the code torch's own __init__.py runs; the real interpreter is the
judge."""

from __future__ import annotations

import os
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
    return [f for f in report["findings"] if f["code"] == "CD421" and "torch.backends" in str(f["subject"])]


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
    from cudnn_doctor.probes.python_finder import FinderQuestion

    site = _torch(machine, tmp_path)
    _plugin(site, module=True)
    assert _imports(machine, tmp_path).returncode == 0
    assert not _plugin_findings(machine.check_json())
    torch = Framework("torch", "2.11.0", None, None, None, "dist-info", None, {"site_packages": str(site)})
    env = dict(machine.env)  # the checkout on PYTHONPATH holds none of the packages asked about: no reason to ask
    assert FinderQuestion([torch], env).asked  # a group is named: asked
    assert not FinderQuestion([torch], dict(env, TORCH_DEVICE_BACKEND_AUTOLOAD="0")).asked
    (site / "torch" / "__init__.py").write_text("# a torch before 2.5: no autoload\n")
    assert not FinderQuestion([torch], env).asked  # its own file does not name the mechanism


def _typing_extensions(folder: Path, text: str = "VERSION = 'installed'\n") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "typing_extensions.py").write_text(text)


def _finder_shadows(report: dict) -> list[dict]:  # type: ignore[type-arg]
    return [f for f in report["findings"] if f["code"] == "CD419" and "torch.backends" not in str(f["subject"])]


def test_a_package_in_the_user_site_before_site_packages_is_seen_and_cured(machine: Machine, tmp_path: Path) -> None:
    """Python reads the user's site (~/.local/lib/pythonX.Y/site-packages) before site-packages: an old
    typing_extensions there is what torch imports. Asked of Python's finder; PYTHONNOUSERSITE=1 cures."""
    site = _torch(machine, tmp_path)
    _typing_extensions(site)
    home = tmp_path / "home"
    user = home / ".local" / "lib" / "python3.12" / "site-packages"
    _typing_extensions(user, "VERSION = 'stale'\n")
    machine.env["HOME"] = str(home)
    python = tmp_path / "venv" / "bin" / "python3"  # this stand-in reads the user site as a system Python does
    python.write_text(python.read_text().replace('PYTHONPATH="', f'PYTHONPATH="{user}:'))
    [said] = _finder_shadows(machine.check_json())
    assert said["subject"] == str(user) and said["evidence"] == "seen" and "user site" in said["detail"], said
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert "export PYTHONNOUSERSITE=1" in lines, plan["actions"]


def test_a_zip_on_pythonpath_holding_a_dependency_is_seen(machine: Machine, tmp_path: Path) -> None:
    import zipfile

    site = _torch(machine, tmp_path)
    _typing_extensions(site)
    bundle = tmp_path / "deps.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("typing_extensions.py", "VERSION = 'zipped'\n")
    machine.env["PYTHONPATH"] = str(bundle)
    [said] = _finder_shadows(machine.check_json())
    assert said["subject"] == str(bundle / "typing_extensions") and said["evidence"] == "seen", said
    plan = machine.run("fix", "--json").json
    lines = [line for a in plan["actions"] if a["kind"] == "env" for line in a["env"]["bash"]]
    assert any(line.startswith(("unset PYTHONPATH", "export PYTHONPATH")) for line in lines), plan["actions"]


def test_unchecked_bytecode_compiled_from_another_source_is_seen(machine: Machine, tmp_path: Path) -> None:
    import py_compile

    site = _torch(machine, tmp_path)
    _typing_extensions(site, "VERSION = 'old'\n")
    py_compile.compile(str(site / "typing_extensions.py"),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    _typing_extensions(site, "VERSION = 'new'\n")  # the source changed, the unchecked .pyc did not
    judged = subprocess.run([str(tmp_path / "venv" / "bin" / "python3"), "-c",
                             "import typing_extensions as t; print(t.VERSION)"], env=machine.env,
                            capture_output=True, text=True, timeout=60)
    assert judged.stdout.strip() == "old"  # Python runs the stale bytecode
    [said] = _finder_shadows(machine.check_json())
    assert said["subject"].endswith(".pyc") and "unchecked" in said["detail"], said


def test_a_package_only_outside_site_packages_shadows_nothing(machine: Machine, tmp_path: Path) -> None:
    _torch(machine, tmp_path)
    extra = tmp_path / "extra"
    _typing_extensions(extra)  # torch's site has none: the one found is the only one
    machine.env["PYTHONPATH"] = str(extra)
    assert not _finder_shadows(machine.check_json())


def test_hostile_metadata_files_are_read_bounded_and_never_wait(tmp_path: Path) -> None:
    """The gate reads every distribution's entry_points.txt: a FIFO (no writer), a folder, a 2 MB file and a link to
    nowhere are passed over at once (Python is not sent to a file that would hold it); non-UTF-8 bytes are a reason
    to ask Python (importlib.metadata raises on them); a plain file naming another group is not."""
    import os
    import time

    from cudnn_doctor.probes.python_finder import names_plugin_group

    site = tmp_path / "site"
    for name in ("fifo", "folder", "huge", "dangling", "other"):
        (site / f"{name}-1.0.dist-info").mkdir(parents=True)
    os.mkfifo(site / "fifo-1.0.dist-info" / "entry_points.txt")
    (site / "folder-1.0.dist-info" / "entry_points.txt").mkdir()
    (site / "huge-1.0.dist-info" / "entry_points.txt").write_bytes(b"[torch.backends]\n" + b"#" * (2 << 20))
    (site / "dangling-1.0.dist-info" / "entry_points.txt").symlink_to(tmp_path / "nowhere")
    (site / "other-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n")
    started = time.monotonic()
    assert not names_plugin_group([str(site)], ["torch.backends"])
    assert time.monotonic() - started < 5
    (site / "other-1.0.dist-info" / "entry_points.txt").write_bytes(b"[console_scripts]\nx = y:z  # \xe9t\xe9\n")
    assert names_plugin_group([str(site)], ["torch.backends"])


def test_the_cached_files_asked_are_those_glob_names(tmp_path: Path) -> None:
    """python_finder lists each __pycache__ once and picks a module's .pyc files by their name's start and end, where it
    globbed `MODULE.*.pyc` per module (a pattern compiled each: 36 a check, 1.4 ms): the same files, in the same order,
    in a folder whose own name holds glob's special characters."""
    import glob

    from cudnn_doctor.probes.python_finder import _cached_files

    folder = tmp_path / "site [x]*?" / "__pycache__"
    folder.mkdir(parents=True)
    for name in ("torch.cpython-311.pyc", "torch.pyc", "torch.cpython-311.opt-1.pyc", "torchvision.cpython-311.pyc",
                 ".torch.cpython-311.pyc", "torch.cpython-311.pyc.bak", "torch..pyc", "Torch.cpython-311.pyc",
                 "__init__.cpython-311.pyc", "__init__.pyc"):
        (folder / name).write_bytes(b"")
    for start in ("torch.", "__init__.", "numpy."):
        wanted = glob.glob(os.path.join(glob.escape(str(folder)), f"{start}*.pyc"))
        assert _cached_files(str(folder), start, {}) == wanted, start
    assert _cached_files(str(tmp_path / "none"), "torch.", {}) == []
