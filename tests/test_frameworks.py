"""Frameworks found by `check` from their files, and the cuDNN each will really load."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn, fake_framework_library, fake_nvml


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process

CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]


def python_env(machine: Machine, tmp_path: Path) -> Path:
    """A Python environment whose python3 is on PATH, so check scans its site-packages."""
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / "venv" / "bin").mkdir()
    (tmp_path / "venv" / "bin" / "python3").write_text("#!/bin/sh\n")
    machine.env["PATH"] = f"{tmp_path / 'venv' / 'bin'}:{machine.env['PATH']}"
    return site


def real_python_sees(site: Path, tmp_path: Path) -> None:
    """The environment's python3 made the real interpreter, seeing SITE (what `check --deep` imports with)."""
    (tmp_path / "venv" / "bin" / "python3").write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} \"$@\"\n")
    (tmp_path / "venv" / "bin" / "python3").chmod(0o755)


def install_torch(site: Path, version: str = "2.5.1+cu124", cuda: str | None = "12.4", cudnn: int = 90100,
                  pin: str = "nvidia-cudnn-cu12==9.1.0.70") -> None:
    info = site / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
                                   f"Requires-Dist: {pin}; platform_system == \"Linux\"\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text(f"__version__ = '{version}'\ncuda: Optional[str] = "
                                               f"{repr(cuda) if cuda else 'None'}\n")
    if cuda:
        fake_framework_library(site / "torch" / "lib" / "libtorch_cuda.so", site, "$ORIGIN/../../nvidia/cudnn/lib")
        fake_cudnn(site / "nvidia" / "cudnn" / "lib", version=cudnn, sublibraries=CUDNN9, versioned_files=False)
        (site / "nvidia_cudnn_cu12-9.1.0.70.dist-info").mkdir()


def test_torch_found_without_import_and_its_cudnn_resolved_through_runpath(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site)
    report = machine.check_json()
    [torch] = report["frameworks"]
    assert (torch["name"], torch["version"], torch["cuda_built_for"]) == ("torch", "2.5.1+cu124", "12.4")
    assert torch["cudnn_expected"] == "9.1.0.70"
    assert torch["cudnn_used"] == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    [install] = report["cudnn"]
    assert install["loaded_by"] == ["torch"] and install["source"] == "pip:nvidia-cudnn-cu12"
    assert not codes(report) & {"CD401", "CD402", "CD408"}


def test_ld_library_path_wins_over_torch_runpath(machine: Machine, tmp_path: Path) -> None:
    """LD_LIBRARY_PATH comes before DT_RUNPATH: a stray cuDNN 9.0 there is what torch loads, and it is too old."""
    site = python_env(machine, tmp_path)
    install_torch(site)
    fake_cudnn(tmp_path / "stray", version=90000, sublibraries=CUDNN9)
    machine.add_library_path(tmp_path / "stray")
    report = machine.check_json()
    [torch] = report["frameworks"]
    assert torch["cudnn_used"] == str(tmp_path / "stray" / "libcudnn.so.9")
    finding = next(f for f in report["findings"] if f["code"] == "CD408")
    assert "9.0.0" in finding["detail"] and "out of LD_LIBRARY_PATH" in finding["fix"]


def test_cpu_only_torch(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.5.1+cpu", cuda=None, pin="filelock")
    report = machine.check_json()
    assert "CD406" in codes(report)


def test_cpu_only_onnxruntime_beside_a_cuda_torch_is_information(machine: Machine, tmp_path: Path) -> None:
    """ONNX Runtime's CPU package beside torch's CUDA build in one environment (the GPU machine's own image has
    both; faster-whisper requires `onnxruntime` by that name): CD406 is information that names the GPU build, not a
    warning, and the plan does not swap it (round fourteen's GPU runs warned on every working setup for it, and
    the harness's sourced plan uninstalled it). Alone in an environment, it stays a warning with a plan step."""
    from tests.test_compat_rules import install_wheel

    site = python_env(machine, tmp_path)
    install_wheel(site, "onnxruntime", "1.30.0", "numpy>=1.21.6")
    alone = [f for f in machine.check_json()["findings"] if f["code"] == "CD406"]
    assert [f["severity"] for f in alone] == ["warning"], alone
    install_torch(site)
    report = machine.check_json()
    [cd406] = [f for f in report["findings"] if f["code"] == "CD406"]
    assert cd406["severity"] == "info" and "PyTorch 2.5.1+cu124" in cd406["detail"], cd406
    assert "onnxruntime==1.30.0" in cd406["detail"] and cd406["refs"] and "onnxruntime.ai" in cd406["refs"][0]
    plan = machine.run("fix", "--json").json
    assert not [a for a in plan["actions"] if "CD406" in a["resolves"]], plan


def test_torch_built_for_a_newer_cuda_than_the_driver(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.9.0+cu130", cuda="13.0", pin="nvidia-cudnn-cu13==9.13.0.50", cudnn=91300)
    fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040, compute_capability="7.0")
    machine.add_library_path(tmp_path / "driver")
    report = machine.check_json()
    found = {f["code"]: f for f in report["findings"]}
    assert "CUDA 13.0" in found["CD403"]["detail"] and "580" in found["CD403"]["fix"]
    assert "compute capability" in found["CD404"]["title"].lower() or "7.0" in found["CD404"]["detail"]


def test_tensorflow_build_info_read_as_a_file(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    (site / "tensorflow-2.15.0.dist-info").mkdir()
    (site / "tensorflow-2.15.0.dist-info" / "METADATA").write_text("Name: tensorflow\nVersion: 2.15.0\n")
    platform_dir = site / "tensorflow" / "python" / "platform"
    platform_dir.mkdir(parents=True)
    (platform_dir / "build_info.py").write_text(
        "import collections\nbuild_info = collections.OrderedDict()\n"
        "build_info = {'cpu_compiler': '/usr/lib/llvm-16/bin/clang', 'cuda_version': '12.2', 'cudnn_version': '8', "
        "'is_cuda_build': True, 'is_rocm_build': False}\n")
    fake_cudnn(tmp_path / "cudnn8", version=8907, cudart=12020)
    machine.add_library_path(tmp_path / "cudnn8")
    report = machine.check_json()
    [tf] = report["frameworks"]
    assert (tf["version"], tf["cuda_built_for"], tf["cudnn_expected"]) == ("2.15.0", "12.2", "8")
    assert tf["cudnn_used"] == str(tmp_path / "cudnn8" / "libcudnn.so.8")
    assert not codes(report) & {"CD401", "CD408"}


def test_assumed_framework_checked_against_this_machine(machine: Machine, tmp_path: Path) -> None:
    fake_cudnn(tmp_path / "cudnn", version=8600, cudart=11080)
    machine.add_library_path(tmp_path / "cudnn")
    report = machine.check_json("--framework", "tensorflow==2.15.0")
    [tf] = report["frameworks"]
    assert tf["found_via"] == "--framework" and tf["cudnn_expected"] == "8.9"
    finding = next(f for f in report["findings"] if f["code"] == "CD408")
    assert "8.6.0" in finding["detail"]
    bad = machine.run("check", "--framework", "tensorflow==0.0.1")
    assert bad.exit_code == 2 and "no data for tensorflow 0.0.1" in bad.stderr


POM_PARENT = """<?xml version="1.0"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <groupId>org.example</groupId><artifactId>parent</artifactId><version>1</version>
  <properties><nd4j.version>1.0.0-beta7</nd4j.version><cuda.version>10.2</cuda.version></properties>
</project>"""
POM_CHILD = """<?xml version="1.0"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <parent><groupId>org.example</groupId><artifactId>parent</artifactId><version>1</version></parent>
  <artifactId>app</artifactId>
  <properties><nd4j.backend>nd4j-cuda-${cuda.version}-platform</nd4j.backend></properties>
  <dependencies>
    <!-- <dependency><groupId>org.nd4j</groupId><artifactId>nd4j-cuda-8.0</artifactId><version>0.9.1</version></dependency> -->
    <dependency><groupId>org.nd4j</groupId><artifactId>${nd4j.backend}</artifactId><version>${nd4j.version}</version></dependency>
  </dependencies>
</project>"""


def test_dl4j_backend_from_a_maven_project_with_parent_and_properties(machine: Machine, tmp_path: Path) -> None:
    project = tmp_path / "project" / "app"
    project.mkdir(parents=True)
    (tmp_path / "project" / "pom.xml").write_text(POM_PARENT)
    (project / "pom.xml").write_text(POM_CHILD)
    report = machine.check_json("--project", str(project))
    [dl4j] = report["frameworks"]
    assert (dl4j["version"], dl4j["cuda_built_for"], dl4j["details"]["artifact"]) == (
        "1.0.0-beta7", "10.2", "nd4j-cuda-10.2-platform")
    finding = next(f for f in report["findings"] if f["code"] == "CD405")
    assert "CUDA 10.2" in finding["detail"] and finding["refs"]


def test_dl4j_from_gradle(machine: Machine, tmp_path: Path) -> None:
    (tmp_path / "build.gradle").write_text(
        "def nd4jVersion = '1.0.0-beta6'\n// implementation 'org.nd4j:nd4j-cuda-9.2:1.0.0-beta3'\n"
        "dependencies { implementation \"org.nd4j:nd4j-cuda-10.1-platform:${nd4jVersion}\" }\n")
    report = machine.check_json("--project", str(tmp_path))
    assert [(f["version"], f["cuda_built_for"]) for f in report["frameworks"]] == [("1.0.0-beta6", "10.1")]


def test_theano_flags(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    (site / "Theano-0.9.0.dist-info").mkdir()
    fake_cudnn(tmp_path / "cudnn4", version=4007, cudart=7050)
    machine.env["THEANO_FLAGS"] = f"device=cuda,dnn.library_path={tmp_path / 'cudnn4'}"
    report = machine.check_json()
    [theano] = report["frameworks"]
    assert theano["details"]["theano_flags"]["device"] == "cuda"
    assert theano["cudnn_used"].endswith("cudnn4/libcudnn.so.4")
    finding = next(f for f in report["findings"] if f["code"] == "CD408")
    assert "4.0.7" in finding["detail"]
    assert json.dumps(finding)


FAKE_TORCH = '''
"""A stand-in for torch for `check --deep`: it loads cuDNN the way torch's wheel does (the pip copy
beside it) so that the child really has it mapped, and answers like torch.backends.cudnn.version()."""
import ctypes, os
__version__ = "2.5.1+cu124"
_here = os.path.dirname(__file__)
_cudnn = ctypes.CDLL(os.path.join(_here, "..", "nvidia", "cudnn", "lib", "libcudnn.so.9"))
_cudnn.cudnnGetVersion.restype = ctypes.c_size_t
class version:
    cuda = "12.4"
class backends:
    class cudnn:
        @staticmethod
        def version():
            return int(_cudnn.cudnnGetVersion())
class cuda:
    @staticmethod
    def is_available():
        return False
    @staticmethod
    def device_count():
        return 0
'''


def test_deep_imports_the_framework_and_reads_what_it_mapped(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    # the environment's python3: the real interpreter, seeing that site-packages
    real_python_sees(site, tmp_path)
    report = machine.check_json("--deep")
    [torch] = report["frameworks"]
    deep = torch["details"]["deep"]
    assert deep["version"] == "2.5.1+cu124" and deep["cudnn_version"] == 90100 and deep["cuda"] == "12.4"
    mapped = [p for p in deep["mapped_cudnn"] if p.endswith("libcudnn.so.9")]
    assert mapped == [str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")]
    assert torch["cudnn_used"] == str(site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9")
    [install] = report["cudnn"]
    assert install["loaded_by"] == ["torch"]


RENDEZVOUS = '''
import os as _os, time as _time


def _meet(me, other):
    """Wait (at most 20 s) for OTHER's import child to start: it can only if the children run side by side."""
    folder = _os.environ["DEEP_RENDEZVOUS"]
    open(_os.path.join(folder, me), "w").close()
    for _ in range(400):
        if _os.path.exists(_os.path.join(folder, other)):
            return
        _time.sleep(0.05)
    raise RuntimeError(other + " never started while " + me + " was importing: one import after the other")
'''


def test_deep_imports_every_framework_side_by_side(machine: Machine, tmp_path: Path) -> None:
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(RENDEZVOUS + '_meet("torch", "jax")\n' + FAKE_TORCH)
    (site / "jax_cuda12_plugin-0.4.30.dist-info").mkdir()  # JAX is found by its CUDA plugin
    (site / "jax_cuda12_plugin-0.4.30.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: jax-cuda12-plugin\nVersion: 0.4.30\n")
    (site / "jax").mkdir()
    (site / "jax" / "__init__.py").write_text(RENDEZVOUS + '_meet("jax", "torch")\n__version__ = "0.4.30"\n\n\n'
                                              'def devices():\n    return ["CpuDevice(id=0)"]\n')
    real_python_sees(site, tmp_path)
    (tmp_path / "meet").mkdir()
    machine.env["DEEP_RENDEZVOUS"] = str(tmp_path / "meet")
    report = machine.check_json("--deep")
    deep = {f["name"]: f["details"]["deep"] for f in report["frameworks"]}
    assert set(deep) == {"torch", "jax"}, deep
    # no GPU here: each framework's own words are the evidence of the error that explains it (CD101)
    assert deep["torch"]["error"] == "RuntimeError: torch.cuda.is_available() is False (torch.cuda.device_count() is 0)"
    assert deep["jax"]["error"] == "RuntimeError: JAX has no GPU: it runs on CpuDevice(id=0)"
    assert deep["torch"]["version"] == "2.5.1+cu124" and deep["jax"]["devices"] == ["CpuDevice(id=0)"]
    no_driver = next(f for f in report["findings"] if f["code"] == "CD101")
    assert "PyTorch under --deep: RuntimeError: torch.cuda.is_available() is False" in " ".join(no_driver["refs"])
    assert "CD415" not in {f["code"] for f in report["findings"]}


def test_deep_starts_the_frameworks_first_and_each_child_before_this_thread_goes_on(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """--deep's framework children (its longest wait: seconds) start as soon as the frameworks are found, before the
    other probes' modules load and their children start; the cuDNN copies' child too, before the thread goes on (it
    was left to the batch's thread, which waits for the interpreter's lock while this one works: 5 ms a turn)."""
    import subprocess

    from tests.test_nvml_first import RECORD

    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    real_python_sees(site, tmp_path)
    for deep in ((), ("--deep",)):
        done = subprocess.run([sys.executable, "-c", RECORD, "check", "--json", *deep], capture_output=True, text=True,
                              env=machine.env, cwd=tmp_path, timeout=120)
        events = eval(next(x for x in done.stderr.splitlines() if x.startswith("EVENTS "))[7:])  # noqa: S307
        later = events.index("import cudnn_doctor.probes.loading")  # the next probes' modules, after the scan
        cudnn = next(i for i, e in enumerate(events) if e.startswith("start _job_child.py _probe_jobs ") and
                     not e.endswith(" nvml"))  # the copies' batch
        assert cudnn < later, events
        if deep:
            framework = next(i for i, e in enumerate(events) if e.startswith("start ") and "_deep_child.py" in e)
            assert framework < later, events  # the next child this check starts, once the frameworks are read
            assert not any(e.startswith("start ") for e in events[cudnn + 1:framework]), events


def test_a_requirement_without_a_marker_ends_at_its_line() -> None:
    """METADATA is one field a line: a cuDNN Requires-Dist with no ';' marker, the next line another requirement,
    once read as one spec across both lines (CD401 named "...>=9.8\\nRequires-Dist: nvidia-cuda-nvcc-cu12...")."""
    from cudnn_doctor.probes.frameworks import REQUIRES_CUDNN, REQUIRES_NVIDIA

    metadata = ("Name: jax-cuda12-plugin\nRequires-Dist: nvidia-cudnn-cu12<10.0,>=9.8\n"
                "Requires-Dist: nvidia-cuda-nvcc-cu12>=12.6.85\r\nRequires-Dist: nvidia-cublas-cu12 (>=12.1.3.1)\n")
    assert [spec for _, _, spec, _ in REQUIRES_CUDNN.findall(metadata)] == ["<10.0,>=9.8"]
    assert REQUIRES_NVIDIA.findall(metadata) == [("nvidia-cuda-nvcc-cu12", ">=12.6.85"),
                                                 ("nvidia-cublas-cu12", ">=12.1.3.1")]
