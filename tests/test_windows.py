"""The doctor on Windows, run for real under Wine: a Windows CPython runs this checkout; NVIDIA's real win_amd64
cuDNN DLLs are loaded in its probe children; the driver is the MinGW build of tests/fakes/fake_nvml.c in the
prefix's System32 (where the DCH drivers put nvml.dll, and where the real pynvml looks first).

What Wine cannot give: a GPU and NVIDIA's driver. Every reading of the driver is the fake's; cuDNN's own answers
(cudnnGetVersion, cudnnGetCudartVersion) are the real DLL's, which need no GPU for them.

Set-up and its cache: tests/windows_machine.py (Debian's wine64 and gcc-mingw-w64-x86-64, which .ci/run installs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.windows_machine import (
    CUDNN_VERSION,
    DRIVER,
    Unavailable,
    WindowsMachine,
    cudnn_folder,
    cudnn_wheel,
    fake_cudart,
    fake_cudnn8,
    fake_zlibwapi,
    unavailable,
    windows_machine,
    windows_path,
)

pytestmark = pytest.mark.integration  # NVIDIA's Windows wheel (400 MB, downloaded once)


@pytest.fixture(scope="module")
def windows() -> Iterator[WindowsMachine]:
    why = unavailable()
    if why:
        pytest.skip(why)
    try:
        with windows_machine() as machine:
            yield machine
    except Unavailable as error:
        pytest.skip(str(error))


def toolkit(root: Path, version: str = "13.0.2", runtime: int = 13000) -> Path:
    """A CUDA toolkit as the Windows installer lays it out: version.json, bin\\cudart64_13.dll (the fake)."""
    folder = root / f"CUDA/v{'.'.join(version.split('.')[:2])}"
    (folder / "bin").mkdir(parents=True)
    (folder / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
    shutil.copyfile(fake_cudart(runtime), folder / "bin" / f"cudart64_{runtime // 1000}.dll")
    return folder


def test_check_json_reads_the_driver_the_toolkit_and_the_real_cudnn_dlls(windows: WindowsMachine, tmp_path: Path) -> None:
    cuda = toolkit(tmp_path)
    cudnn_bin = cudnn_folder() / "bin"
    result = windows.run("check", "--json", cwd=tmp_path, path=[cudnn_bin],
                         env={"CUDA_PATH": windows_path(cuda), "CUDA_PATH_V13_0": windows_path(cuda)})
    report = result.json
    assert report["summary"]["exit_code"] == result.exit_code == 0, (result.stdout, result.stderr)
    assert report["host"]["os"] == "windows" and report["host"]["arch"] == "x86_64"
    # the driver: pynvml loaded the fake nvml.dll from System32
    assert report["driver"]["source"] == "nvml" and report["driver"]["version"] == DRIVER
    assert report["driver"]["library"].lower().endswith("\\system32\\nvml.dll")
    assert report["gpus"][0]["name"] == "NVIDIA GeForce RTX 4090" and report["gpus"][0]["compute_capability"] == "8.9"
    # the toolkit from CUDA_PATH (named once, though CUDA_PATH_V13_0 names it too); its cudart64_13.dll asked
    [found] = report["toolkits"]
    assert found["version"] == "13.0.2" and found["source"] == "CUDA_PATH" and found["runtime_version"] == "13.0"
    # the real cuDNN: loaded in a child (cudnnGetVersion), its version resource read, every sub-library beside it
    [cudnn] = report["cudnn"]
    assert cudnn["library"] == windows_path(cudnn_bin / "cudnn64_9.dll")
    assert cudnn["version"] == CUDNN_VERSION and cudnn["file_version"] == CUDNN_VERSION + ".4"
    assert cudnn["cuda_version"].startswith("13.") and cudnn["load_error"] is None
    assert all(cudnn["sublibraries"].values()) and cudnn["sublibrary_versions"]["libcudnn_ops"] == CUDNN_VERSION
    assert cudnn["loaded_by"] == ["ld.so"]  # the system's loader: LoadLibrary found it on PATH
    assert cudnn["header_version"] == CUDNN_VERSION
    # Windows has no /proc: under Wine the doctor's start read the wineserver's own /proc/self/fd as its descriptors,
    # and reading them dropped the server's lock on the prefix: `wineserver -k` then stopped nothing, and the next
    # session raced the server left running (limits.record_inherited)
    assert windows.lock_holder() is not None, "the wineserver lost its prefix's lock during the check"


def test_check_text_speaks_windows(windows: WindowsMachine, tmp_path: Path) -> None:
    """A copy off PATH whose sub-libraries are missing: the fix installs the whole release and puts its bin
    folder on PATH, in PowerShell, cmd and the user's environment; never LD_LIBRARY_PATH or ldconfig."""
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copyfile(cudnn_folder() / "bin" / "cudnn64_9.dll", lone / "cudnn64_9.dll")
    result = windows.run("check", "--search-path", windows_path(lone), cwd=tmp_path)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    out = result.stdout
    assert f"NVIDIA driver {DRIVER}" in out and "NVIDIA GeForce RTX 4090" in out
    assert "CD304" in out and "cudnn_graph64_9.dll" in out  # named by its file
    assert f"cuDNN {CUDNN_VERSION}" in out  # from the version resource: the lone front DLL cannot answer
    assert f"$env:PATH = '{windows_path(tmp_path)}\\bin;' + $env:PATH" in out
    assert f'set "PATH={windows_path(tmp_path)}\\bin;%PATH%"' in out
    assert "[Environment]::SetEnvironmentVariable('PATH'" in out
    assert "LD_LIBRARY_PATH" not in out and "ldconfig" not in out and "export " not in out


def test_explain_reads_the_windows_messages(windows: WindowsMachine, tmp_path: Path) -> None:
    message = ("Could not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found")
    result = windows.run("explain", "--json", "--offline-only", message, cwd=tmp_path)
    answer = result.json
    assert result.exit_code == 0 and answer["schema"] == "cudnn-doctor/explain/1", result.stdout
    assert any(m["code"] == "CD301" for m in answer["matches"])
    text = windows.run("explain", "CD304", cwd=tmp_path)
    assert text.exit_code == 0 and "cuDNN sub-library missing" in text.stdout
    crashed = windows.run("explain", "--json", "--offline-only",
                          "Invalid handle. Cannot load symbol cudnnGetVersion", cwd=tmp_path)
    assert crashed.exit_code == 0 and crashed.json["matches"], crashed.stdout
    usage = windows.run("check", "--json", "--no-such-option", cwd=tmp_path)
    assert usage.exit_code == 2 and usage.json["exit_code"] == 2, usage.stdout  # one JSON object, as on Linux


def test_install_from_the_real_windows_wheel_then_uninstall(windows: WindowsMachine, tmp_path: Path) -> None:
    prefix = tmp_path / "cudnn"
    prefix.mkdir()
    result = windows.run("install", "--from", windows_path(cudnn_wheel()), "--prefix", windows_path(prefix),
                         "--yes", "--json", cwd=tmp_path)
    answer = result.json
    assert result.exit_code == 0, (result.stdout[-2000:], result.stderr[-2000:])
    assert answer["version"] == CUDNN_VERSION if "version" in answer else True
    dlls = sorted(p.name for p in (prefix / "bin").iterdir())
    assert "cudnn64_9.dll" in dlls and "cudnn_graph64_9.dll" in dlls and (prefix / "include" / "cudnn_version.h").exists()
    assert (prefix / "bin" / "cudnn64_9.dll").read_bytes() == (cudnn_folder() / "bin" / "cudnn64_9.dll").read_bytes()
    # check finds it there, loads it and reads it as the wheel's release
    report = windows.run("check", "--json", "--search-path", windows_path(prefix), cwd=tmp_path).json
    [cudnn] = [c for c in report["cudnn"] if c["path"] == windows_path(prefix / "bin")]
    assert cudnn["version"] == CUDNN_VERSION and all(cudnn["sublibraries"].values())
    removed = windows.run("uninstall", "--prefix", windows_path(prefix), "--yes", cwd=tmp_path)
    assert removed.exit_code == 0, removed.stdout
    assert not (prefix / "bin").exists() and not (prefix / "include").exists()


def test_fix_plans_the_path_edit_and_applies_it(windows: WindowsMachine, tmp_path: Path) -> None:
    """A whole cuDNN off PATH (CD310): fix's plan is the PATH line for each Windows shell; --yes checks again with
    it in force, and the copy is then what LoadLibrary finds."""
    copy = tmp_path / "cudnn"
    copy.mkdir()
    (copy / "bin").symlink_to(cudnn_folder() / "bin")  # Wine follows it; 576 MB not copied
    plan = windows.run("fix", "--json", "--search-path", windows_path(copy), "--select", "CD310", cwd=tmp_path)
    answer = plan.json
    assert answer["schema"] == "cudnn-doctor/plan/1", plan.stdout
    [action] = [a for a in answer["actions"] if a["kind"] == "env"]
    assert action["resolves"] == ["CD310"]
    folder = windows_path(copy / "bin")
    assert action["env"]["powershell"] == [f"$env:PATH = '{folder};' + $env:PATH"]
    assert action["env"]["cmd"] == [f'set "PATH={folder};%PATH%"']
    applied = windows.run("fix", "--yes", "--json", "--search-path", windows_path(copy), "--select", "CD310",
                          cwd=tmp_path)
    after = applied.json
    assert applied.exit_code == 0, applied.stdout
    assert "CD310" in after["before"]["codes"] and "CD310" not in after["after"]["codes"]


CUDNN8_SUBLIBRARIES = tuple(f"cudnn_{part}64_8.dll" for part in
                            ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train"))


def test_a_missing_zlibwapi_dll_is_named_from_the_import_tables(windows: WindowsMachine, tmp_path: Path) -> None:
    """cuDNN 8.9's sub-libraries import zlibwapi.dll, which its archive lacks: CD330 names it, read from the PE
    import tables without loading anything; with zlibwapi.dll beside them it is gone."""
    folder = tmp_path / "cudnn-8.9" / "bin"
    fake_cudnn8(folder, 8907, CUDNN8_SUBLIBRARIES)
    report = windows.run("check", "--json", "--search-path", windows_path(folder), cwd=tmp_path).json
    [cudnn] = report["cudnn"]
    assert cudnn["version"] == "8.9.7" and all(cudnn["sublibraries"].values())
    assert cudnn["missing_dlls"] == ["zlibwapi.dll"]
    [missing] = [f for f in report["findings"] if f["code"] == "CD330"]
    assert "zlibwapi.dll" in missing["detail"] and "zlibwapi.dll" in missing["fix"]
    shutil.copyfile(fake_zlibwapi(), folder / "zlibwapi.dll")
    report = windows.run("check", "--json", "--search-path", windows_path(folder), cwd=tmp_path).json
    assert report["cudnn"][0]["missing_dlls"] == [] and "CD330" not in {f["code"] for f in report["findings"]}


def test_a_hanging_dll_is_stopped_at_its_deadline_with_what_it_started(windows: WindowsMachine, tmp_path: Path) -> None:
    """cudnnGetVersion never returns: the probe child is killed at CUDNN_DOCTOR_PROBE_TIMEOUT (its job object
    ends it and whatever it started), check says so (CD309) and returns; no python.exe of it is left."""
    folder = tmp_path / "stuck"
    fake_cudnn8(folder, hang=True)
    result = windows.run("check", "--json", "--search-path", windows_path(folder), cwd=tmp_path,
                         env={"CUDNN_DOCTOR_PROBE_TIMEOUT": "3"})
    report = result.json
    [cudnn] = report["cudnn"]
    assert cudnn["timed_out"] and result.exit_code == 1
    assert any(f["code"] == "CD309" and "3 s" in f["detail"] for f in report["findings"])
    left = subprocess.run(["ps", "-eo", "args", "--cols", "10000"], capture_output=True, text=True).stdout
    assert windows_path(folder) not in left  # the child's command line named the DLL it loaded
