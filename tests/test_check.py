"""`cudnn-doctor check` run as a user would, on pretend machines built from gcc fakes."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PLACEHOLDER, Machine, codes
from tests.fakes.build import fake_cudart, fake_cudnn, fake_libcuda, fake_nvml


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process

CUDNN9_SUBLIBS = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
                  "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]
CUDNN8_SUBLIBS = ["libcudnn_ops_infer", "libcudnn_ops_train", "libcudnn_cnn_infer", "libcudnn_cnn_train",
                  "libcudnn_adv_infer", "libcudnn_adv_train"]


def write_header(include: Path, version: str) -> None:
    major, minor, patch = version.split(".")
    include.mkdir(parents=True, exist_ok=True)
    (include / "cudnn_version.h").write_text(
        f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n#define CUDNN_PATCHLEVEL {patch}\n")


def make_toolkit(root: Path, version: str, runtime: int) -> Path:
    """A CUDA toolkit folder as NVIDIA's installer lays it out, with a fake libcudart."""
    toolkit = root / "usr" / "local" / f"cuda-{'.'.join(version.split('.')[:2])}"
    (toolkit / "include").mkdir(parents=True, exist_ok=True)
    (toolkit / "include" / "cuda_runtime.h").write_text("/* fake */\n")
    (toolkit / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
    fake_cudart(toolkit / "lib64", runtime=runtime)
    return toolkit


def test_machine_without_driver_toolkit_or_cudnn(machine: Machine) -> None:
    result = machine.run("check", "--json")
    report = result.json
    assert result.exit_code == 1
    assert report["schema"] == "cudnn-doctor/report/1"
    assert report["driver"] == {"version": None, "cuda_driver_version": None, "source": "none",
                                "library": None, "error": report["driver"]["error"]}
    assert report["gpus"] == [] and report["toolkits"] == [] and report["cudnn"] == []
    assert {"CD101", "CD201", "CD301"} <= codes(report)
    assert report["summary"]["status"] == "error"
    for finding in report["findings"]:
        assert finding["title"] and finding["detail"] and finding["fix"]
        assert not PLACEHOLDER.search(finding["detail"] + finding["fix"]), finding  # every placeholder filled


def test_text_report_is_one_line_per_area_with_marks(machine: Machine) -> None:
    result = machine.run("check")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[✗] NVIDIA driver: not found")
    assert any(line.startswith("[!] CUDA toolkit: none found") for line in lines)
    assert any(line.startswith("[✗] cuDNN: none found") for line in lines)
    assert "CD301 No cuDNN found" in result.stdout
    assert "        Fix:\n            cudnn-doctor install --version 9." in result.stdout  # the command alone, unquoted
    assert lines[-3].startswith("! Doctor found 2 errors and 1 warning.")
    assert lines[-2:] == ["1 can be fixed here:", "    cudnn-doctor fix --yes"]
    assert result.stderr == ""


def test_gpus_and_driver_through_real_pynvml_on_a_fake_nvml(machine: Machine, tmp_path: Path) -> None:
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040, gpus=2, name="NVIDIA A100-SXM4-80GB",
              compute_capability="8.0")
    machine.add_library_path(tmp_path / "driver")
    report = machine.check_json()
    assert report["driver"]["version"] == "550.54.15"
    assert report["driver"]["cuda_driver_version"] == "12.4"
    assert report["driver"]["source"] == "nvml"
    assert [(g["index"], g["name"], g["compute_capability"]) for g in report["gpus"]] == [
        (0, "NVIDIA A100-SXM4-80GB", "8.0"), (1, "NVIDIA A100-SXM4-80GB", "8.0")]
    assert report["gpus"][0]["memory_total_mib"] == 81559
    assert report["gpus"][1]["uuid"].startswith("GPU-")
    assert not codes(report) & {"CD101", "CD104", "CD105"}


def test_nvml_version_mismatch_is_reported_with_nvml_words(machine: Machine, tmp_path: Path) -> None:
    fake_nvml(tmp_path / "driver", init_error=18)
    machine.add_library_path(tmp_path / "driver")
    report = machine.check_json()
    finding = next(f for f in report["findings"] if f["code"] == "CD104")
    assert "Driver/library version mismatch" in finding["detail"]
    assert "Reboot" in finding["fix"]


def test_driver_read_from_libcuda_when_nvml_is_absent(machine: Machine, tmp_path: Path) -> None:
    fake_libcuda(tmp_path / "driver", driver_cuda=12020)
    machine.add_library_path(tmp_path / "driver")
    report = machine.check_json()
    assert report["driver"]["source"] == "libcuda"
    assert report["driver"]["cuda_driver_version"] == "12.2"
    assert "CD105" in codes(report) and "CD101" not in codes(report)


def test_cudnn_in_a_toolkit_read_by_loading_it(machine: Machine) -> None:
    toolkit = make_toolkit(machine.root, "12.4.1", 12040)
    fake_cudnn(toolkit / "lib64", version=90100, cudart=12040, sublibraries=CUDNN9_SUBLIBS)
    write_header(toolkit / "include", "9.1.0")
    report = machine.check_json()
    assert [(t["path"], t["version"], t["version_from"], t["runtime_version"]) for t in report["toolkits"]] == [
        (str(toolkit), "12.4.1", "version.json", "12.4")]
    [install] = report["cudnn"]
    assert install["library"] == str(toolkit / "lib64" / "libcudnn.so.9")
    assert install["version"] == "9.1.0"
    assert install["header_version"] == "9.1.0"
    assert install["cuda_version"] == "12.4"
    assert install["source"] == "toolkit"
    assert install["sublibraries"] == {name: True for name in CUDNN9_SUBLIBS}
    assert set(install["sublibrary_versions"].values()) == {"9.1.0"}
    assert not codes(report) & {"CD301", "CD303", "CD304", "CD305", "CD306", "CD307"}
    assert "CD310" in codes(report)  # not on the loader's path: said, as info


def test_header_and_library_of_different_versions(machine: Machine) -> None:
    toolkit = make_toolkit(machine.root, "12.4.1", 12040)
    fake_cudnn(toolkit / "lib64", version=90100, sublibraries=CUDNN9_SUBLIBS)
    write_header(toolkit / "include", "8.9.7")
    report = machine.check_json()
    finding = next(f for f in report["findings"] if f["code"] == "CD303")
    assert "8.9.7" in finding["detail"] and "9.1.0" in finding["detail"]
    assert f"--prefix {toolkit}" in finding["fix"]
    assert report["summary"]["exit_code"] == 1


def test_missing_and_stale_sublibraries(machine: Machine, tmp_path: Path) -> None:
    folder = tmp_path / "cudnn" / "lib"
    fake_cudnn(folder, version=90100, sublibraries=CUDNN9_SUBLIBS)
    (folder / "libcudnn_cnn.so.9").unlink()
    (folder / "libcudnn_adv.so.9").unlink()
    (folder / "libcudnn_adv.so.9").symlink_to("libcudnn_adv.so.9.0.0")
    shutil.copyfile(folder / "libcudnn_adv.so.9.1.0", folder / "libcudnn_adv.so.9.0.0")
    report = machine.check_json("--search-path", str(tmp_path / "cudnn"))
    [install] = report["cudnn"]
    assert install["source"] == "search-path"
    assert install["sublibraries"]["libcudnn_cnn"] is False
    missing = next(f for f in report["findings"] if f["code"] == "CD304")
    assert "libcudnn_cnn" in missing["detail"]
    stale = next(f for f in report["findings"] if f["code"] == "CD305")
    assert "libcudnn_adv (9.0.0)" in stale["detail"]


def test_several_versions_on_the_loader_path_and_the_one_it_picks(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "old", version=8907, cudart=12020, sublibraries=CUDNN8_SUBLIBS)
    fake_cudnn(tmp_path / "new-a", version=90100, sublibraries=CUDNN9_SUBLIBS)
    fake_cudnn(tmp_path / "new-b", version=91900, sublibraries=CUDNN9_SUBLIBS)
    for folder in ("new-b", "new-a", "old"):
        machine.add_library_path(tmp_path / folder)  # LD_LIBRARY_PATH=old:new-a:new-b
    report = machine.check_json()
    by_version = {i["version"]: i for i in report["cudnn"]}
    assert set(by_version) == {"8.9.7", "9.1.0", "9.19.0"}
    assert by_version["9.1.0"]["loaded_by"] == ["ld.so"]  # first libcudnn.so.9 in LD_LIBRARY_PATH
    assert by_version["9.19.0"]["loaded_by"] == []
    assert by_version["8.9.7"]["loaded_by"] == ["ld.so"]  # the loader's pick for libcudnn.so.8
    assert all(i["source"] == "env" for i in report["cudnn"])
    finding = next(f for f in report["findings"] if f["code"] == "CD302")
    assert "9.19.0" in finding["detail"] and str(tmp_path / "new-b") in finding["fix"]


def test_symlinked_copies_are_one_install(machine: Machine, tmp_path: Path) -> None:
    real = tmp_path / "real" / "lib"
    fake_cudnn(real, version=90100, sublibraries=CUDNN9_SUBLIBS)
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    report = machine.check_json("--search-path", str(tmp_path / "real"), "--search-path", str(tmp_path / "alias"))
    assert len(report["cudnn"]) == 1


def test_crashing_and_hanging_libraries_are_findings_not_crashes(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "crash", version=90100, crash=True)
    fake_cudnn(tmp_path / "hang" , version=8907, hang=True)
    machine.env["CUDNN_DOCTOR_PROBE_TIMEOUT"] = "2"
    report = machine.check_json("--search-path", str(tmp_path / "crash"), "--search-path", str(tmp_path / "hang"))
    details = {f["subject"]: f for f in report["findings"] if f["code"] == "CD309"}
    assert "crashed with SIGSEGV" in details[str(tmp_path / "crash" / "libcudnn.so.9")]["detail"]
    assert "did not answer within 2 s" in details[str(tmp_path / "hang" / "libcudnn.so.8")]["detail"]


def test_broken_files_and_wrong_architecture(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "libcudnn.so.9").write_text("this is not a library\n")
    good = fake_cudnn(tmp_path / "trunc", version=90100)
    data = Path(os.path.realpath(good)).read_bytes()
    Path(os.path.realpath(good)).write_bytes(data[: len(data) // 3])
    arm = fake_cudnn(tmp_path / "arm", version=90100)
    blob = bytearray(Path(os.path.realpath(arm)).read_bytes())
    struct.pack_into("<H", blob, 18, 183)  # e_machine = EM_AARCH64
    Path(os.path.realpath(arm)).write_bytes(bytes(blob))
    report = machine.check_json(*[a for d in ("text", "trunc", "arm") for a in ("--search-path", str(tmp_path / d))])
    broken = {Path(f["subject"]).parent.name: f["detail"] for f in report["findings"] if f["code"] == "CD308"}
    assert "not an ELF file" in broken["text"]
    assert "truncated" in broken["trunc"]
    assert "built for aarch64" in broken["arm"]


def test_bad_search_path_is_a_finding(machine: Machine, tmp_path: Path) -> None:
    missing = tmp_path / "does-not-exist"
    report = machine.check_json("--search-path", str(missing))
    finding = next(f for f in report["findings"] if f["code"] == "CD313")
    assert finding["subject"] == str(missing) and "no such folder" in finding["detail"]


def test_cudnn_built_for_another_cuda_major_than_its_toolkit(machine: Machine) -> None:
    toolkit = make_toolkit(machine.root, "12.4.1", 12040)
    fake_cudnn(toolkit / "lib64", version=8907, cudart=11080, sublibraries=CUDNN8_SUBLIBS)
    report = machine.check_json()
    finding = next(f for f in report["findings"] if f["code"] == "CD306")
    assert "CUDA 11.8" in finding["detail"] and "--cuda 12" in finding["fix"]


@pytest.mark.parametrize(("driver_cuda", "code"), [(12020, "CD106"), (11080, "CD103")])
def test_driver_older_than_the_toolkit(machine: Machine, tmp_path: Path, driver_cuda: int, code: str) -> None:
    make_toolkit(machine.root, "12.4.1", 12040)
    fake_nvml(tmp_path / "driver", driver="520.61.05", cuda=driver_cuda)
    machine.add_library_path(tmp_path / "driver")
    report = machine.check_json()
    finding = next(f for f in report["findings"] if f["code"] == code)
    assert "550.54.14" in finding["fix"]  # NVIDIA's minimum for CUDA 12.4 (compat/cuda.toml)
    assert finding["refs"] and "Release Notes" in finding["refs"][0]


def test_cudnn_from_a_pip_wheel_and_a_conda_environment(machine: Machine, tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS,
               versioned_files=False)
    write_header(site / "nvidia" / "cudnn" / "include", "9.19.0")
    (site / "nvidia_cudnn_cu13-9.19.0.56.dist-info").mkdir()
    (tmp_path / "venv" / "bin").mkdir()
    (tmp_path / "venv" / "bin" / "python3").write_text("#!/bin/sh\n")
    machine.env["PATH"] = f"{tmp_path / 'venv' / 'bin'}:{machine.env['PATH']}"
    env = machine.home / "miniconda3" / "envs" / "dl"
    fake_cudnn(env / "lib", version=8907, cudart=11080)
    report = machine.check_json()
    by_source = {i["source"]: i for i in report["cudnn"]}
    assert by_source["pip:nvidia-cudnn-cu13"]["version"] == "9.19.0"
    assert by_source["pip:nvidia-cudnn-cu13"]["header_version"] == "9.19.0"
    assert by_source["conda"]["version"] == "8.9.7"


def test_requirements(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "lib", version=90100, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "lib")
    ok = machine.run("check", "--json", "--require", "cudnn>=9.1", "--require", "cudnn<10")
    assert "CD320" not in codes(ok.json)
    failed = machine.run("check", "--json", "--require", "cudnn>=9.2", "--require", "gpu", "--require", "cuda>=12")
    assert failed.exit_code == 1
    found = {f["code"]: f for f in failed.json["findings"]}
    assert "found 9.1.0" in found["CD320"]["detail"]
    assert "none found" in found["CD121"]["detail"] and "none found" in found["CD220"]["detail"]


def test_bad_requirement_is_one_line_and_exit_2(machine: Machine) -> None:
    result = machine.run("check", "--require", "cudnn>>9")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "--require 'cudnn>>9'" in result.stderr
    unknown = machine.run("check", "--require", "banana>=1")
    assert unknown.exit_code == 2 and "not a requirement I understand" in unknown.stderr


def test_strict_turns_warnings_into_failure(machine: Machine, tmp_path: Path) -> None:
    fake_libcuda(tmp_path / "driver", driver_cuda=12040)
    fake_nvml(tmp_path / "nvml", cuda=12040)
    machine.add_library_path(tmp_path / "nvml")
    fake_cudnn(tmp_path / "lib", version=90100, cudart=12040, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "lib")
    relaxed = machine.run("check", "--json")
    assert relaxed.json["summary"]["status"] == "warning"  # CD201: no toolkit
    assert relaxed.exit_code == 0
    assert machine.run("check", "--json", "--strict").exit_code == 1


def test_verbose_text_shows_details(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "lib", version=90100, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "lib")
    result = machine.run("check", "-v")
    assert "sub-libraries 7/7" in result.stdout
    assert "loaded by ld.so" in result.stdout
    assert "Loader search order:" in result.stdout


def test_unreadable_folders_are_findings_for_an_ordinary_user(tmp_path: Path, nobody) -> None:  # type: ignore[no-untyped-def]
    """As user nobody: a --search-path it may not read is CD313, and an unreadable folder on
    LD_LIBRARY_PATH and an unreadable ~/.m2 are passed over; no traceback."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="cudnn-doctor-unreadable-"))  # pytest's tmp folders are 0700
    locked, home = base / "locked", base / "home"
    try:
        base.chmod(0o755)
        fake_cudnn(locked / "lib", version=90100)
        locked.chmod(0o700)
        (home / ".m2" / "repository" / "org" / "nd4j").mkdir(parents=True)
        (home / ".m2").chmod(0o700)
        machine = Machine(base / "m")
        for folder in (base / "m", machine.root, machine.home):
            folder.chmod(0o755)
        machine.env.update({"HOME": str(home), "CUDNN_DOCTOR_CACHE_DIR": str(base / "cache"),
                            "LD_LIBRARY_PATH": str(locked / "lib")})
        result = subprocess.run([*nobody.argv, "-m", "cudnn_doctor", "check", "--json", "--search-path", str(locked)],
                                env=nobody.env(machine.env), cwd=base, capture_output=True, text=True, timeout=60)
        assert "Traceback" not in result.stderr and result.stderr == ""
        report = json.loads(result.stdout)
        finding = next(f for f in report["findings"] if f["code"] == "CD313")
        assert finding["subject"] == str(locked) and "permission denied" in finding["detail"]
        assert report["cudnn"] == []
    finally:
        for folder in (locked, home / ".m2"):
            if folder.exists():
                folder.chmod(0o755)
        shutil.rmtree(base)
