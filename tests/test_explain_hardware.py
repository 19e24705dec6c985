"""Issue 21: `explain` knows GPU hardware and driver faults, toolchains and packaging by the facts in
their own words (compat/errors.toml [[xid]], [[event]], [[ptx_isa]], [[outside]]), and reads a long
log's head as well as its tail. Every message below is copied from the public thread named beside it;
none of these threads is in benchmarks/explain_eval/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from cudnn_doctor.codes import CODES
from cudnn_doctor.explain.reader import read
from cudnn_doctor.knowledge.data import compat_dir
from tests.conftest import Machine


@pytest.fixture
def machine(machine_in_process: Machine) -> Machine:
    """The CLI runs in the test's own process (conftest.run_in_process): nothing here needs a process of its own."""
    return machine_in_process

# (source, code of the first answer, words its cause must contain, message)
REAL = [
    ("pytorch/pytorch#51382 (Xid 31 MMU faults on one GPU of a node, 'Likely a faulty device')", "CD142", "Xid 31",
     "[Fri Jan 29 23:42:34 2021] NVRM: GPU at PCI:0000:db:00: GPU-4a28de72-2645-de9a-eb35-a394cef3f4da\n"
     "[Fri Jan 29 23:42:34 2021] NVRM: Xid (PCI:0000:db:00): 31, pid=13641, Ch 00000008, intr 00000000. MMU Fault: "
     "ENGINE GRAPHICS GPCCLIENT_T1_10 faulted @ 0x7fd7_90743000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"),
    ("madMAx43v3r/chia-gigahorse#301 (Xid 31, then the micro-controller halt Xid 62, then Xid 45 clean-ups)", "CD142",
     "Xid 62",
     "[14328.198504] NVRM: Xid (PCI:0000:0a:00): 31, pid=13332, name=cuda_plot_k32_v, Ch 00000010, intr 00000000. MMU "
     "Fault: ENGINE CE2 HUBCLIENT_CE0 faulted @ 0x7f29_5b8c9000. Fault is of type FAULT_PRIV_VIOLATION ACCESS_TYPE_VIRT_READ\n"
     "[14370.687545] NVRM: Xid (PCI:0000:0a:00): 62, pid='<unknown>', name=<unknown>, 2023b230 20238a3a 2023e8b6 2023eac4 "
     "2023ec3c 2023ea86 00000000 00000000\n"
     "[14370.688139] NVRM: Xid (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008"),
    ("vllm-project/vllm#5901 (Xid 13 graphics exceptions on an A800 node)", "CD142", "Xid 13",
     "[93297.027938] NVRM: Xid (PCI:0000:43:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR "
     "0x52e7b0=0x101000e 0x52e7b4=0x4 0x52e7a8=0xc81eb60 0x52e7ac=0x1174"),
    ("NVIDIA/open-gpu-kernel-modules#1342 ('GPU lost from the bus', then nvidia-smi loses the GPU)", "CD141",
     "unable to determine the device handle",
     "Symptom: nvidia-smi starts reporting Unable to determine the device handle for GPU0: 0000:09:00.0: Unknown Error "
     "/ No devices were found; only a full reboot recovers it"),
    ("NVIDIA/dcgm-exporter#604 (nvidia-smi: the GPU seems disconnected)", "CD141", "stopped answering",
     "Unable to determine the device handle for GPU 000:BA:80.0: Unknown Error"),
    ("jcjohnson/neural-style#312 (Tesla K40c, uncorrectable ECC error after 600 iterations)", "CD130", "ECC",
     "When I run the code, I get an “uncorrectable ECC error encountered”　after 600 iteration."),
    ("microsoft/WSL#9166 (nvidia-smi inside WSL 2 on Windows 11)", "CD104", "WSL 2",
     "# nvidia-smi\n\nFailed to initialize NVML: GPU access blocked by the operating system\n"
     "Failed to properly shut down NVML: GPU access blocked by the operating system"),
    ("hirschmann/nbfc#181 (PCIe AER errors on the GeForce 930M laptop's root port)", "CD143", "PCIe",
     "jan. 29 20:50:17 kevin kernel: pcieport 0000:00:1c.5: AER: Corrected error received: id=00e5\n"
     "jan. 29 20:50:17 kevin kernel: pcieport 0000:00:1c.5: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
     "id=00e5(Receiver ID)"),
    ("adujardin/zed-openpose#6 (CUDA 9.0 with a gcc newer than 6)", "CD209", "gcc 6",
     "/usr/local/cuda-9.0/include/crt/host_config.h:119:2: error: #error -- unsupported GNU version! gcc versions later "
     "than 6 are not supported!"),
    ("NVlabs/instant-ngp#330 (CMake with Visual Studio and CUDA 11.6)", "CD208", "Visual Studio",
     "CMake Error at D:/Program Files/CMake/share/cmake-3.21/Modules/CMakeDetermineCompilerId.cmake:460 (message):\n"
     "  No CUDA toolset found.\nCall Stack (most recent call first):\n"
     "  D:/Program Files/CMake/share/cmake-3.21/Modules/CMakeDeterminecudaCompiler.cmake:283 (CMAKE_DETERMINE_COMPILER_ID)"),
    ("wyf3/llm_related#29 (vLLM's KV-cache budget)", "CD109", "gpu_memory_utilization",
     "报错ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
     "initializing the engine."),
    ("opendatahub-io/notebooks#42 (tensorflow-gpu's removal notice, quoted from PyPI)", "CD522", "retired",
     "tensorflow-gpu has been removed. Please install tensorflow instead. The tensorflow package supports GPU "
     "accelerated operations via Nvidia CUDA."),
    ("pgmpy/pgmpy#1101 (pip installing 'pytorch' from a requirements file)", "CD522", "torch",
     "  File \"/tmp/pip-install-e8ywvbqp/pytorch/setup.py\", line 15, in <module>\n    raise Exception(message)\n"
     "  Exception: You tried to install \"pytorch\". The package named for PyTorch is \"torch\""),
]

# (source, message): errors that are not the GPU stack's, though they name a CUDA library or a GPU
OUTSIDE = [
    ("thu-ml/tianshou#527 (Windows' paging file too small while importing torch; a memory setting)",
     "E   OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "
     "\"E:\\Anaconda3\\lib\\site-packages\\torch\\lib\\caffe2_detectron_ops_gpu.dll\" or one of its dependencies."),
    ("babysor/MockingBird#689 (the same in Chinese Windows, for cuDNN's DLL)",
     "OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "
     "\"D:\\ProgramData\\Anaconda3\\lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll\" or one of its dependencies."),
    ("PRBonn/lidar-bonnetal#52 (a data-loader worker killed for host memory)",
     "  File \"/home/haoli/.local/lib/python3.6/site-packages/torch/utils/data/_utils/signal_handling.py\", line 63, "
     "in handler\n    _error_if_any_worker_fails()\nRuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed."),
]


@pytest.mark.parametrize(("source", "code", "words", "message"), REAL, ids=[r[0].split(" ")[0] for r in REAL])
def test_a_real_fault_message_gets_its_cause(machine: Machine, source: str, code: str, words: str,
                                             message: str) -> None:
    result = machine.run("explain", message, "--offline-only", "--json")
    assert result.exit_code == 0, (source, result.stderr)
    first = result.json["matches"][0]
    assert first["code"] == code, (source, [m["code"] for m in result.json["matches"]])
    assert words.lower() in (first["cause"] + " " + first["fix"]).lower(), (source, first)
    assert first["source"] and "{" not in first["fix"] and not re.search(r"<(?:fix|detail|gpu|index)>", first["fix"])


@pytest.mark.parametrize(("source", "message"), OUTSIDE, ids=[o[0].split(" ")[0] for o in OUTSIDE])
def test_a_failure_outside_the_stack_is_not_claimed(machine: Machine, source: str, message: str) -> None:
    result = machine.run("explain", message, "--offline-only", "--json")
    assert result.exit_code == 1 and result.json["matches"] == [], (source, result.json["matches"])


def test_xid_numbers_are_read_with_their_gpu_and_the_root_cause_first() -> None:
    # the line format of NVIDIA's kernel driver (NVIDIA Xid catalog, https://docs.nvidia.com/deploy/xid-errors/)
    facts = read("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149")
    assert [(dict(e.values)["xid"], dict(e.values)["pci"]) for e in facts.events] == [("45", "0000:dc:00"),
                                                                                      ("149", "0000:dc:00")]
    from cudnn_doctor.commands.explain import explain_text
    first = explain_text("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
                         None)["matches"][0]
    assert first["code"] == "CD141" and "0000:3b:00" in first["cause"]
    ecc = explain_text("NVRM: Xid (PCI:0000:9b:00): 48, pid=1234, name=python3, An uncorrectable double bit error", None)
    assert ecc["matches"][0]["code"] == "CD130" and "ECC" in ecc["matches"][0]["fix"]


def test_ptx_isa_against_ptxas_and_against_the_driver_jit() -> None:
    # ptxas's and the driver JIT's words (NVIDIA PTX ISA release notes give which CUDA knows which ISA)
    from cudnn_doctor.commands.explain import explain_text
    toolkit = explain_text("ptxas /tmp/k.ptx, line 5; fatal   : Unsupported .version 8.7; current version is '8.4'", None)
    first = toolkit["matches"][0]
    assert first["code"] == "CD207" and first["values"]["needs_cuda"] == "12.8" and "CUDA 12.8" in first["fix"]
    driver = explain_text("ptxas application ptx input, line 9; fatal   : Unsupported .version 8.5; current version "
                          "is '8.4'", None)["matches"][0]
    assert driver["code"] == "CD103" and "CUDA 12.4" in driver["fix"] and "<" not in driver["fix"]


def test_mangled_framework_types_nested_in_an_extensions_own_symbol() -> None:
    # vLLM's kernels take at::Tensor: the namespace is inside the mangled parameters (pytorch/pytorch aten/)
    facts = read("ImportError: /x/vllm/_C.abi3.so: undefined symbol: _Z24silu_and_mul_nvfp4_quantRN2at6TensorES1_S1_S1_")
    assert [s.owner for s in facts.symbols] == ["PyTorch (ATen)"]
    wrapped = read("/opt/x/fused_layer_norm_cuda.cpython-38-x86_64-linux-gnu.so: undefined\nsymbol: \n"
                   "_ZN2at4_ops19empty_memory_format4callEN3c108ArrayRefIlEE")
    assert [s.finding for s in wrapped.symbols] == ["CD410"]


def test_the_new_data_tables_are_whole_and_cited() -> None:
    with (compat_dir() / "errors.toml").open("rb") as handle:
        data = tomllib.load(handle)
    for row in data["xid"] + data["event"]:
        assert row["code"] in CODES, row
        assert re.search(r"https://|[\w.-]+/[\w.-]+#\d+|[\w.-]+/[\w.-]+ ", row["source"]), row
    numbers = [row["number"] for row in data["xid"]]
    assert len(numbers) == len(set(numbers)) and {48, 63, 64, 79, 94, 95} <= set(numbers)
    isa = [row["version"] for row in data["ptx_isa"]]
    assert len(isa) == len(set(isa)) and isa == sorted(isa, key=lambda v: tuple(int(p) for p in v.split(".")))
    for code in ("CD141", "CD142", "CD143", "CD144", "CD207", "CD208", "CD209", "CD522"):
        assert code in CODES and CODES[code].severity == "error"


HEAD = (b"2021-01-19 21:40:57.616373: W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load "
        b"dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or "
        b"directory; LD_LIBRARY_PATH: /usr/local/cuda/lib64\n")  # jax-ml/jax#5464, the catalog's tf-dlopen-cudnn


def _long_log(path: Path) -> int:
    """A 30 MB training log whose only error is TensorFlow's, printed at start-up."""
    line = b"2021-01-19 22:00:00 INFO epoch 3 step 1200 loss 0.2531 lr 0.0001 on the CPU\n"
    with path.open("wb") as handle:
        handle.write(HEAD)
        handle.write(line * (30_000_000 // len(line)))
    return path.stat().st_size


def test_a_long_logs_head_is_read_and_the_skipped_middle_is_said(machine: Machine, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    size = _long_log(log)
    result = machine.run("explain", "--from-file", str(log), "--offline-only", "--json")
    assert result.exit_code == 0 and result.json["matches"][0]["code"] == "CD301"
    skipped = result.json["input"]["skipped"]
    assert skipped["start"] > 0 and skipped["end"] < size and skipped["bytes"] == skipped["end"] - skipped["start"]
    assert skipped["bytes"] > size - 2_100_000
    text = machine.run("explain", "--from-file", str(log), "--offline-only")
    assert text.exit_code == 0 and "were skipped" in text.stdout and "CD301" in text.stdout


def test_a_short_log_says_nothing_was_skipped(machine: Machine) -> None:
    result = machine.run("explain", HEAD.decode(), "--offline-only", "--json")
    assert result.exit_code == 0 and result.json["input"] == {"skipped": None, "note": None}


def test_standard_input_keeps_its_head_too(machine: Machine, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    _long_log(log)
    process = machine.run("explain", "-", "--offline-only", "--json", input=log.read_bytes())
    assert process.exit_code == 0, process.stderr
    assert '"CD301"' in process.stdout and '"skipped": {' in process.stdout


def test_a_long_fifo_is_read_head_and_tail(tmp_path: Path) -> None:
    """The writer is another program, as a user's pipe is: the CLI runs in a process of its own here (in this
    process it could open the FIFO before the writer thread does, and read an empty pipe)."""
    import os
    import threading

    machine = Machine(tmp_path)

    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    body = HEAD + b"noise line of a long run on the cpu\n" * 200_000  # 7 MB through a pipe

    def write() -> None:
        with fifo.open("wb") as handle:
            handle.write(body)

    writer = threading.Thread(target=write)
    writer.start()
    result = machine.run("explain", "--from-file", str(fifo), "--offline-only", "--json", timeout=60)
    writer.join(timeout=30)
    assert result.exit_code == 0 and result.json["matches"][0]["code"] == "CD301"
    skipped = result.json["input"]["skipped"]
    assert skipped["bytes"] > 4_000_000 and skipped["start"] > len(HEAD) and skipped["end"] < len(body)


def test_a_hardware_fault_is_set_against_checks_health_probes(machine: Machine, tmp_path: Path) -> None:
    from tests.fakes.build import fake_nvml

    # GPU 1 of a fake NVML has 3 uncorrectable ECC errors and runs its PCIe link at x8 of x16 (tests/test_health.py)
    machine.add_library_path(fake_nvml(tmp_path / "nvml", gpus=2,
                                       health={"SICK_GPU": 1, "ECC_VOLATILE": 3, "ECC_AGGREGATE": 7,
                                               "PCIE_WIDTH": 8}).parent)
    # jcjohnson/neural-style#312
    result = machine.run("explain", "I get an “uncorrectable ECC error encountered” after 600 iteration.", "--json")
    assert result.exit_code == 0 and result.json["matches"][0]["code"] == "CD130"
    summary = " ".join(result.json["machine"]["summary"])
    assert "GPU 1" in summary and "3 uncorrectable ECC error(s)" in summary and "x8 of x16" in summary
    assert {"CD130", "CD134"} <= {f["code"] for f in result.json["machine"]["findings"]}


@pytest.mark.parametrize(("message", "code"), [
    # NVIDIA's driver before 2015 printed the bus id without "PCI:" (NVIDIA Xid catalog's examples)
    ("NVRM: Xid (0000:01:00): 79, GPU has fallen off the bus.", "CD141"),
    # kmod's modprobe and the kernel's driver core (sources in compat/errors.toml [[event]])
    ("modprobe: ERROR: could not insert 'nvidia': No such device", "CD101"),
    ("nvidia: probe of 0000:01:00.0 failed with error -1", "CD102"),
    # Kitware CMake Modules/CMakeDetermineCUDACompiler.cmake
    ("CMake Error at CMakeLists.txt:5 (project):\n  No CMAKE_CUDA_COMPILER could be found.", "CD201"),
    # NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/nv.c
    ("NVRM: API mismatch: the client has the version 535.104.05, but\nNVRM: this kernel module has the version "
     "535.86.10.  Please", "CD110"),
    # vllm-project/vllm vllm/v1/core/kv_cache_utils.py and sgl-project/sglang model_runner.py: memory budgets
    ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "CD109"),
    # Dao-AILab/flash-attention setup.py
    ("OSError: nvcc was not found.  Are you sure your environment has nvcc available?", "CD201"),
    # CUDA's include/crt/host_config.h on Windows
    ("error: #error -- unsupported Microsoft Visual Studio version! Only the versions between 2017 and 2022 "
     "(inclusive) are supported!", "CD209"),
])
def test_the_drivers_and_tools_own_words(message: str, code: str) -> None:
    from cudnn_doctor.commands.explain import explain_text
    first = explain_text(message, None)["matches"][0]
    assert first["code"] == code, first
    assert first["source"] and "<" not in first["fix"].replace("<driver>", "")


def test_a_context_longer_than_the_kv_cache_is_not_claimed() -> None:
    """vLLM's max_model_len over what its KV cache holds is a serving choice (lower max_model_len), not a GPU, driver or
    library fault: vllm-project/vllm vllm/v1/core/kv_cache_utils.py."""
    from cudnn_doctor.commands.explain import explain_text
    assert explain_text("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that "
                        "can be stored in KV cache (20000). Try increasing `gpu_memory_utilization` or decreasing "
                        "`max_model_len` when initializing the engine.", None)["matches"] == []


def test_a_package_deprecation_outside_the_gpu_stack_is_not_claimed() -> None:
    from cudnn_doctor.commands.explain import explain_text
    # scikit-learn's placeholder package 'sklearn' (pypi.org/project/sklearn): retired, but not the GPU stack's
    assert explain_text("ERROR: The 'sklearn' PyPI package is deprecated, use 'scikit-learn' rather than 'sklearn' "
                        "for pip commands.", None)["matches"] == []
