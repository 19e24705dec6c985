"""The README's examples cannot drift: each `$ cudnn-doctor ...` line of its text blocks is run on a pretend
machine (fakes) and its output compared with the text shown, or it is listed below with why it cannot run
here (a real GPU, a real wheel). In the text shown, `…` stands for any text within a line, and a line that is
only `...` for any lines. A `$ cat FILE` step writes FILE as shown, for the steps after it."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudnn_doctor.render.formats import NAMES as CHECK_FORMATS
from tests.conftest import Machine
from tests.fakes.build import fake_cudnn, fake_nvml
from tests.test_check import CUDNN9_SUBLIBS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


@dataclass
class Step:
    section: str
    command: str
    shown: list[str]
    setup: list[tuple[str, list[str]]]  # `cat FILE` steps before it in its block: (file, lines)


def steps() -> list[Step]:
    found: list[Step] = []
    section = ""
    for match in re.finditer(r"^(#{2,3} [^\n]*)$|^```text\n(.*?)\n```", README, re.MULTILINE | re.DOTALL):
        if match.group(1):
            section = match.group(1).lstrip("#").strip()
            continue
        setup: list[tuple[str, list[str]]] = []
        current: Step | None = None
        for line in match.group(2).splitlines():
            if line.startswith("$ "):
                command = line[2:].strip()
                current = Step(section, command, [], list(setup))
                if command.startswith("cat "):
                    setup.append((command[4:].strip(), current.shown))
                else:
                    found.append(current)
            elif current is not None:
                current.shown.append(line)
    return found


# Examples that need what a test machine has not: said why, and where they are tested instead.
NOT_RUN = {
    ("`cudnn-doctor check`", "cudnn-doctor check"): "the H100 machine's real driver, GPU and frameworks",
    ("`cudnn-doctor explain`", "python train.py 2>&1 | cudnn-doctor explain -"): "a shell pipeline with a user's program",
    ("Installing cuDNN", "cudnn-doctor install --from nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl "
                         "--prefix /tmp/demo/cudnn --yes"): "the real wheel (tests/test_real_wheels.py installs it)",
    ("Installing cuDNN", "ls -l /tmp/demo/cudnn/lib64 | head -4"): "not a cudnn-doctor command",
    ("Installing cuDNN", "cudnn-doctor uninstall --prefix /tmp/demo/cudnn --yes"): "follows the real wheel's install",
    ("Benchmarking cuDNN", "cudnn-doctor bench"): "a real GPU (H100)",
    ("Benchmarking cuDNN", "cudnn-doctor bench --dtype bf16 --layout nhwc --size large"): "a real GPU (H100)",
    ("Benchmarking cuDNN", "cudnn-doctor bench --device all --size small"): "two real GPUs (H200)",
    ("Many nodes: `fleet merge` and `fleet run --slurm`", "cudnn-doctor fleet run --slurm --keep reports -- --nodes=1"):
        "a Slurm cluster (tests/test_fleet.py starts one and checks this answer)",
    ("Many nodes: `fleet merge` and `fleet run --slurm`",
     "cudnn-doctor fleet run --slurm -- --partition=gpu --nodes=64     # a real partition"): "a real partition",
    ("Fixing: `cudnn-doctor fix`", "LD_LIBRARY_PATH=/lib/x86_64-linux-gnu cudnn-doctor check"):
        "the H100 machine's torch and its two cuDNN copies (benchmarks/gpu_fix_loop.py; tests/test_fix.py with fakes)",
    ("Fixing: `cudnn-doctor fix`", "unset LD_LIBRARY_PATH; python3 -c 'import torch; ...conv2d...; "
                                  "print(torch.backends.cudnn.version())'"): "a real GPU and torch",
    ("Fixing: `cudnn-doctor fix`", "cudnn-doctor fix --yes --python /opt/fix-loop-venv/bin/python --ignore CD406"):
        "the H100 machine's torch (benchmarks/gpu_fix_loop.py; tests/test_fix.py runs the same loop with a real wheel)",
    ("Fixing: `cudnn-doctor fix`", "/opt/fix-loop-venv/bin/python -c 'import torch; ...conv2d...; "
                                  "print(torch.backends.cudnn.version())'"): "a real GPU and torch",
}


def _one_cudnn(machine: Machine, tmp_path: Path) -> None:
    """A GPU node whose frameworks bring their CUDA runtime: a driver, one GPU, cuDNN 9.19.0 in /opt/cudnn/lib."""
    fake_cudnn(tmp_path / "opt" / "cudnn" / "lib", version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(tmp_path / "opt" / "cudnn" / "lib")
    machine.add_library_path(fake_nvml(tmp_path / "driver", driver="580.159.04", cuda=13000).parent)


def _pip_log(machine: Machine, tmp_path: Path) -> None:
    """pip's own log of installing a companion that pins another torch (its lines as pypa/pip prints them)."""
    (machine.cwd / "pip.log").write_text(
        "$ pip install xformers==0.0.22\n"
        "Collecting xformers==0.0.22\n"
        "  Downloading xformers-0.0.22-cp310-cp310-manylinux2014_x86_64.whl (211.8 MB)\n"
        "Collecting torch==2.1.0 (from xformers==0.0.22)\n"
        "  Downloading torch-2.1.0-cp310-cp310-manylinux1_x86_64.whl (670.2 MB)\n"
        "Installing collected packages: torch, xformers\n"
        "  Attempting uninstall: torch\n"
        "    Found existing installation: torch 2.0.1+cu118\n"
        "    Uninstalling torch-2.0.1+cu118:\n"
        "      Successfully uninstalled torch-2.0.1+cu118\n"
        "Successfully installed torch-2.1.0 xformers-0.0.22\n")


def _setup_log(machine: Machine, tmp_path: Path) -> None:
    """flash-attn's setup.py guessing its prebuilt wheel's URL, then urllib's error (as pip shows the build's output)."""
    (machine.cwd / "setup.log").write_text(
        "      torch.__version__  = 2.2.0+cu121\n"
        "      running bdist_wheel\n"
        "      Guessing wheel URL:  https://github.com/Dao-AILab/flash-attention/releases/download/v2.5.3/"
        "flash_attn-2.5.3+cu122torch2.2cxx11abiFALSE-cp311-cp311-linux_x86_64.whl\n"
        "      error: <urlopen error [Errno -2] Name or service not known>\n"
        "      [end of output]\n")


def _fleet_reports(machine: Machine, tmp_path: Path) -> None:
    """reports/: four nodes' `check --json`, gpu-03 with another cuDNN and gpu-04 with another driver."""
    (machine.cwd / "reports").mkdir()
    for name, version, driver in (("gpu-01", 91900, "580.159.04"), ("gpu-02", 91900, "580.159.04"),
                                  ("gpu-03", 91400, "580.159.04"), ("gpu-04", 91900, "570.86.15")):
        node = Machine(tmp_path / name)
        fake_cudnn(tmp_path / name / "opt" / "cudnn" / "lib", version=version, cudart=13010,
                   sublibraries=CUDNN9_SUBLIBS)
        node.add_library_path(tmp_path / name / "opt" / "cudnn" / "lib")
        node.add_library_path(fake_nvml(tmp_path / name / "driver", driver=driver, cuda=13000).parent)
        report = node.check_json()
        report["host"]["hostname"] = name
        text = json.dumps(report).replace(str(tmp_path / name / "opt"), "/opt").replace(str(tmp_path / name), "/node")
        (machine.cwd / "reports" / f"{name}.json").write_text(text)


def _folder_of_projects(machine: Machine, tmp_path: Path) -> None:
    """/home/me/repo/services/svc-01..10: ten copies of a DL4J Maven project, the working folder /home/me."""
    import shutil

    machine.cwd = tmp_path / "home" / "me"
    for index in range(1, 11):
        shutil.copytree(ROOT / "tests" / "fixtures" / "dl4j" / "m2-cpu-only",
                        machine.cwd / "repo" / "services" / f"svc-{index:02}")


def _wsl(machine: Machine, tmp_path: Path) -> None:
    """WSL 2 with the Windows driver 551.78 (CUDA 12.4) and a CUDA 12.8 toolkit (tests/test_platforms.py)."""
    from tests.test_check import make_toolkit
    from tests.test_platforms import wsl_machine

    wsl_machine(machine, tmp_path)
    make_toolkit(machine.root, "12.8.1", 12080)


def _wsl_shadowed(machine: Machine, tmp_path: Path) -> None:
    """WSL 2 with a Linux driver in /usr/lib/x86_64-linux-gnu put first by LD_LIBRARY_PATH."""
    from tests.test_platforms import wsl_machine

    wsl = wsl_machine(machine, tmp_path, driver="572.61", cuda=12080)
    linux = machine.root / "usr" / "lib" / "x86_64-linux-gnu"
    fake_nvml(linux, driver="580.95.05", cuda=13000, init_error=9)
    machine.env["LD_LIBRARY_PATH"] = f"{linux}:{wsl}"


def _container_without_hook(machine: Machine, tmp_path: Path) -> None:
    from tests.test_platforms import docker_machine

    docker_machine(machine)


def _image_and_node(machine: Machine, tmp_path: Path) -> None:
    """cuda-app: the CUDA 12.8 image of tests/test_image.py as an OCI layout; this node's driver 550.54.15."""
    from tests.images import config_of, oci_layout
    from tests.test_image import ENV, cuda_image_layers

    machine.add_library_path(fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040).parent)
    layers = cuda_image_layers()
    oci_layout(machine.cwd / "cuda-app", config_of(ENV, layers=layers), layers)


def _jetson_with_cpu_torch(machine: Machine, tmp_path: Path) -> None:
    from tests.test_frameworks import install_torch, python_env
    from tests.test_platforms import jetson_machine

    jetson_machine(machine, tmp_path)
    install_torch(python_env(machine, tmp_path), version="2.5.1", cuda=None, pin="filelock")


def _two_h100_nvl(machine: Machine, tmp_path: Path) -> None:
    """Two H100 NVL joined by a bridge with four of GPU 1's links down; NCCL_SOCKET_IFNAME names no interface."""
    _one_cudnn_folder = tmp_path / "opt" / "cudnn" / "lib"
    fake_cudnn(_one_cudnn_folder, version=91900, cudart=13010, sublibraries=CUDNN9_SUBLIBS)
    machine.add_library_path(_one_cudnn_folder)
    machine.add_library_path(fake_nvml(tmp_path / "driver", gpus=2, name="NVIDIA H100 NVL",
                                       health={"NVLINKS": 12, "NVLINKS_DOWN": 4, "SICK_GPU": 1, "PCI": True}).parent)
    for name in ("eth0", "lo"):
        (machine.root / "sys" / "class" / "net" / name).mkdir(parents=True)
    machine.env["NCCL_SOCKET_IFNAME"] = "ib0"


def _no_gpu(machine: Machine, tmp_path: Path) -> None:
    """A laptop: a host bridge and Intel graphics on the PCI bus, no NVIDIA device, no driver."""
    from tests.test_no_gpu import HOST_BRIDGE, INTEL_GRAPHICS, pci

    pci(machine, HOST_BRIDGE, INTEL_GRAPHICS)


def _docker_hub_mirror(machine: Machine, tmp_path: Path) -> contextlib.ExitStack:
    """nvidia/cuda:TAG as Docker Hub serves it (a manifest list, the token flow), from Debian's docker-registry on
    127.0.0.1 behind a token server (tests/test_image_registries.py); this node's driver 550.54.15."""
    import shutil

    from tests.test_image_registries import hub_behind_tokens

    if shutil.which("docker-registry") is None or shutil.which("openssl") is None:
        pytest.skip("docker-registry and openssl serve this example (.ci/run installs them)")
    machine.add_library_path(fake_nvml(tmp_path / "driver", driver="550.54.15", cuda=12040).parent)
    stack = contextlib.ExitStack()
    host, _tokens = stack.enter_context(hub_behind_tokens(tmp_path))
    machine.env["CUDNN_DOCTOR_REGISTRY_MIRROR"] = f"http://{host}"
    return stack


SETUPS = {  # (section, command) -> how its pretend machine is made (a context to close after it, where it returns one)
    ("Nodes with several GPUs", "cudnn-doctor check"): _two_h100_nvl,
    ("WSL 2", "cudnn-doctor check"): _wsl,
    ("WSL 2", "cudnn-doctor check -q"): _wsl_shadowed,
    ("Containers", "cudnn-doctor check"): _container_without_hook,
    ("Images: `cudnn-doctor image`", "cudnn-doctor image cuda-app"): _image_and_node,
    ("Images: `cudnn-doctor image`", "cudnn-doctor image nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"):
        _docker_hub_mirror,
    ("A machine without an NVIDIA GPU", "cudnn-doctor check"): _no_gpu,
    ("Jetson", "cudnn-doctor check"): _jetson_with_cpu_torch,
    ("`cudnn-doctor compat`", "cudnn-doctor compat tensorflow==2.15.0 --cuda 12.2 --cudnn 8.6.0 --driver 535.54.03"): None,
    ("`cudnn-doctor compat`", "cudnn-doctor compat torch==2.5.1+cu124 --cuda 11.8 --compute-capability 3.7"): None,
    ("`cudnn-doctor compat`", "cudnn-doctor compat cudnn==7.6.5 --cuda 9.0 --driver 384.81"): None,
    ("`cudnn-doctor compat`", "cudnn-doctor compat vllm==0.11.0 --compute-capability 6.1"): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain \"Could not load dynamic library 'libcudnn.so.8'; dlerror: "
                               "libcudnn.so.8: cannot open shared object file\""): _one_cudnn,
    ("`cudnn-doctor explain`", "cudnn-doctor explain CD303"): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only --from-file pip.log"): _pip_log,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only --from-file setup.log"): _setup_log,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"subprocess.CalledProcessError: Command "
                               "'['/venv/lib/python3.12/site-packages/triton/backends/nvidia/bin/ptxas', '-lineinfo', "
                               "'-v', '--gpu-name=sm_120a', '/tmp/t.ptx', '-o', '/tmp/t.ptx.o']' returned non-zero exit "
                               "status 255.\""): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"Mismatched GPU Architecture: The installed "
                               "PaddlePaddle package was compiled for 75 80 86 89 ,but your current GPU is 120\""): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"Error Code 9: API Usage Error (Target GPU SM 120 "
                               "is not supported by this TensorRT release.)\""): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"This container was built for NVIDIA Driver "
                               "Release 545.23 or later, butversion 535.104.05 was detected and compatibility mode is "
                               "UNAVAILABLE\""): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"nv-fabricmanager[3228]: fabric manager NVIDIA GPU "
                               "driver interface version 530.30.02 don't match with driver version 530.41.03. Please "
                               "update with matching NVIDIA driver package.\""): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"F1127 10:48:39.644999 18156 im2col.cu:59] Check "
                               "failed: error == cudaSuccess (8 vs. 0)  invalid device function\""): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"RuntimeError: HIP error: invalid device function\""):
        None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only \"pynvml.NVMLError_DriverNotLoaded: Driver Not "
                               "Loaded\""): None,
    ("`cudnn-doctor explain`", "cudnn-doctor explain --offline-only 'File \"/Users/me/venv/lib/python3.12/site-packages/"
                               "torch/cuda/__init__.py\", line 403, in _lazy_init: AssertionError: Torch not compiled "
                               "with CUDA enabled'"): None,
    ("Many nodes: `fleet merge` and `fleet run --slurm`", "cudnn-doctor fleet merge reports/"): _fleet_reports,
    ("Choosing findings", "cudnn-doctor check"): _one_cudnn,
    ("`cudnn-doctor check`", "cudnn-doctor check --project repo --select CD43 -q"): _folder_of_projects,
    ("Exit codes", "cudnn-doctor chek"): None,
    ("Exit codes", "cudnn-doctor check --jsn"): None,
    ("Exit codes", "cudnn-doctor install --cuda twelve"): None,
    ("Exit codes", "cudnn-doctor check -q -v"): None,
    ("Exit codes", "cudnn-doctor check --json --project /tmp/nowhere"): None,
    ("Fixing: `cudnn-doctor fix`", "cudnn-doctor fix --framework tensorflow==2.15.0"): None,
}


def _pattern(shown: list[str]) -> re.Pattern[str]:
    parts = []
    for line in shown:
        line = line.rstrip()
        if line.strip() in ("...", "…"):
            parts.append(r"(?:[^\n]*\n)*?[^\n]*")
        else:
            parts.append("[^\n]*?".join(re.escape(piece) for piece in line.split("…")))
    return re.compile("\n".join(parts))


def test_every_example_is_run_or_said_why_not() -> None:
    keys = {(step.section, step.command) for step in steps()}
    assert keys == set(SETUPS) | set(NOT_RUN), (keys - set(SETUPS) - set(NOT_RUN), set(SETUPS) | set(NOT_RUN) - keys)


@pytest.mark.parametrize("key", sorted(SETUPS), ids=[command[:60] for _, command in sorted(SETUPS)])
def test_example_output_is_what_the_readme_shows(key: tuple[str, str], machine: Machine, tmp_path: Path) -> None:
    import shlex

    [step] = [step for step in steps() if (step.section, step.command) == key]
    assert step.shown, f"the README shows no output for {step.command}"
    for name, lines in step.setup:
        (machine.cwd / name).write_text("\n".join(lines) + "\n")
    setup = SETUPS[key]
    with contextlib.ExitStack() as stack:
        made = setup(machine, tmp_path) if setup is not None else None
        if isinstance(made, contextlib.ExitStack):
            stack.enter_context(made)
        args = shlex.split(step.command, comments=True)
        assert args[0] == "cudnn-doctor"
        result = machine.run(*args[1:])
    assert "Traceback" not in result.stderr, result.stderr
    shown = result.stdout + result.stderr  # a terminal shows both; a usage error is on standard error alone
    actual = "\n".join(line.rstrip() for line in shown.replace(str(tmp_path), "").splitlines()).strip("\n")
    assert _pattern(step.shown).fullmatch(actual), "README shows:\n" + "\n".join(step.shown) + f"\n\nit prints:\n{actual}"


def test_the_format_lists_name_every_format() -> None:
    lists = re.findall(r"--format ((?:[a-z]+\|)+[a-z]+)", README)
    assert lists and all(set(found.split("|")) == set(CHECK_FORMATS) for found in lists), lists
