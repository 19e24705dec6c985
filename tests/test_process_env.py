"""What a program gets when it starts CUDA in the user's own environment (issue 30), on CPU-only machines: a fake
libcuda.so.1 that answers as the real driver was seen to (stub, another release, CUDA_VISIBLE_DEVICES's rules:
benchmarks/gpu_scenarios.py on an H100), the fake NVML with other processes' memory, a real cuDNN wheel with a
truncated sub-library, fake framework installs with their settings, real limits set by a real bash. Each failing
setup: check names the cause; the plan's lines, sourced in a real bash, make check clean of it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine, codes
from tests.fakes.build import fake_cudnn, fake_libcuda, fake_nvml
from tests.real_wheels import real_cudnn
from tests.test_frameworks import install_torch, python_env, real_python_sees

KERNEL = "580.159.04"


def gpu_machine(machine: Machine, tmp_path: Path, gpus: int = 2, **libcuda: object) -> Path:
    """A machine with GPUS GPUs: the kernel module's release in /proc, /dev/nvidia-uvm, NVML and the driver's own
    libcuda (named for the kernel module's release) in the loader's cache folder."""
    (machine.root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (machine.root / "proc" / "driver" / "nvidia" / "version").write_text(
        f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {KERNEL}  Release Build\n")
    (machine.root / "dev").mkdir()
    (machine.root / "dev" / "nvidia-uvm").write_text("")
    driver = tmp_path / "driver"
    fake_nvml(driver, driver=KERNEL, gpus=gpus)
    fake_libcuda(driver, driver_cuda=13000, devices=gpus, file_name=f"libcuda.so.{KERNEL}", **libcuda)  # type: ignore[arg-type]
    machine.add_library_path(driver)
    return driver


def bash(machine: Machine, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=machine.env, cwd=machine.cwd,
                          timeout=120, stdin=subprocess.DEVNULL)


def doctor_line(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "cudnn_doctor", *args])


def plan_lines(machine: Machine, *args: str, before: str = "") -> list[str]:
    """The plan's bash lines for this machine (after BEFORE, a shell line such as a ulimit: then `fix` runs in that
    bash). Without BEFORE, `fix` runs as the machine runs every command (in-process unless the test is marked
    `subprocess`): bash added nothing to it but its own variables."""
    if before or not machine.in_process:
        done = bash(machine, f"{before}{'; ' if before else ''}{doctor_line('fix', '--json', *args)}")
        plan = json.loads(done.stdout)
    else:
        plan = machine.run("fix", "--json", *args).json
    return env_lines(plan)


def env_lines(plan: dict) -> list[str]:
    """The bash lines of a `fix --json` plan's env actions, in order: what plan_lines gives for the same plan."""
    return [line for action in plan["actions"] if action["kind"] == "env" for line in action["env"]["bash"]]


# what a Python start (the doctor's own) or the loader of its process reads: where sourced lines change one of these,
# the check after them is a process of its own, as the user's would be
STARTUP_VARIABLES = ("LD_PRELOAD", "LD_AUDIT", "GLIBC_TUNABLES", "MALLOC_", "PYTHON")


def check_after(machine: Machine, lines: list[str], *args: str, before: str = "") -> dict:
    """check --json in a bash that sourced LINES (the plan's env lines, as a user pastes them). The lines are always
    sourced by a real bash; the check after them runs in the environment that bash exports (its `env -0`, in its
    folder; the same 120 s deadline), as the machine runs every command: in-process unless the test is marked
    `subprocess`, or BEFORE (a ulimit) is given, or the lines change what the doctor's own start reads
    (STARTUP_VARIABLES): then in that bash."""
    if not before and machine.in_process:
        done = bash(machine, "; ".join([*lines, "exec env -0"]))
        env = dict(entry.split("=", 1) for entry in done.stdout.split("\0") if "=" in entry)
        env["_"] = sys.executable  # as bash sets it for the command it starts (doctor_line's)
        changed = {name for name in {*env, *machine.env} if env.get(name) != machine.env.get(name)}
        if done.returncode == 0 and not [name for name in changed if name.startswith(STARTUP_VARIABLES)]:
            from tests.conftest import run_in_process

            result = run_in_process(["check", "--json", *args], env, Path(env.get("PWD") or machine.cwd), 120)
            assert "Traceback" not in result.stderr, result.stderr
            return result.json
    script = "; ".join([*([before] if before else []), *lines, doctor_line("check", "--json", *args)])
    done = bash(machine, script)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout, (script, done.returncode, done.stderr[-2000:])
    return json.loads(done.stdout)


def finding(report: dict, code: str) -> dict:
    return next(f for f in report["findings"] if f["code"] == code)


# --- the CUDA driver a program loads -------------------------------------------------------------------------------

def test_the_toolkits_stub_on_ld_library_path_is_named_and_taken_out(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path)
    stubs = tmp_path / "cuda" / "lib64" / "stubs"
    fake_libcuda(stubs, status=34, file_name="libcuda.so")  # the toolkit ships it as libcuda.so, linked in as .so.1
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "libcuda.so.1").symlink_to(stubs / "libcuda.so")
    machine.add_library_path(linked)
    report = machine.check_json()
    stub = finding(report, "CD111")
    assert stub["severity"] == "error" and str(stubs / "libcuda.so") in stub["detail"]
    assert f"the LD_LIBRARY_PATH folder {linked}" in stub["detail"]
    assert report["process"]["cuinit"] == 34
    lines = plan_lines(machine)
    assert any(str(linked) not in line and "LD_LIBRARY_PATH" in line for line in lines), lines
    after = check_after(machine, lines)
    assert "CD111" not in codes(after) and after["process"]["cuinit"] in (0, None)


def test_a_preloaded_stub_is_dropped_from_ld_preload(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path)
    stub = fake_libcuda(tmp_path / "stubs", status=34, file_name="libcuda.so")
    machine.env["LD_PRELOAD"] = str(stub.resolve())
    report = machine.check_json()
    assert "LD_PRELOAD" in finding(report, "CD111")["detail"]
    lines = plan_lines(machine)
    assert "unset LD_PRELOAD" in lines
    assert "CD111" not in codes(check_after(machine, lines))


def test_a_user_space_driver_of_another_release_than_the_kernel_module(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path)
    compat = tmp_path / "cuda-12.2" / "compat"
    fake_libcuda(compat, driver_cuda=12020, status=803, file_name="libcuda.so.535.261.03")
    machine.add_library_path(compat)
    report = machine.check_json()
    mismatch = finding(report, "CD112")
    assert "535.261.03" in mismatch["detail"] and KERNEL in mismatch["detail"]
    assert "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" in mismatch["detail"]
    after = check_after(machine, plan_lines(machine))
    assert "CD112" not in codes(after)


# --- which GPUs a program sees -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "code", "fixed"), [
    ("", "CD113", None),
    ("-1", "CD113", None),
    ("2", "CD113", None),
    ("GPU-0badc0de", "CD113", None),
    ("GPU-", "CD113", None),  # a prefix of every GPU's UUID names none
    ("x,0", "CD113", "0"),  # CUDA stops at the first entry it cannot use
    ("MIG-0badc0de-0000-0000-0000-000000000000", "CD113", None),
    ("0,0", "CD113", "0"),  # the same GPU twice: CUDA_ERROR_INVALID_DEVICE
    ("0,x", "CD114", "0"),  # the GPU before the bad entry stays visible
])
def test_cuda_visible_devices_as_cuda_reads_it(machine: Machine, tmp_path: Path, value: str, code: str,
                                               fixed: str | None) -> None:
    gpu_machine(machine, tmp_path)
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    report = machine.check_json()
    assert code in codes(report), report["findings"]
    assert finding(report, code)["severity"] == ("error" if code == "CD113" else "warning")
    lines = plan_lines(machine)
    assert (f"export CUDA_VISIBLE_DEVICES={fixed}" if fixed else "unset CUDA_VISIBLE_DEVICES") in lines
    after = check_after(machine, lines)
    assert not {"CD113", "CD114"} & codes(after)
    assert after["process"]["visible"] or after["process"]["cuinit"] is None


def test_the_gpus_a_program_sees_in_cudas_order(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path)
    machine.env["CUDA_VISIBLE_DEVICES"] = "GPU-00000000-fa4e-0000-0000-000000000001,0"
    report = machine.check_json()
    visible = report["process"]["visible"]
    # seen on 2 x H100: an index after a UUID is ignored (CUDA stops at the first entry of the other kind)
    assert [(g["ordinal"], g["nvml_index"]) for g in visible] == [(0, 1)]
    assert report["process"]["visible_from"] == "cuda" and report["process"]["ignored_entries"] == ["0"]
    assert "CD114" in codes(report) and "CD113" not in codes(report)


UUID_0 = "GPU-00000000-fa4e-0000-0000-000000000000"  # the fakes' GPU 0 (fake_nvml.c and fake_libcuda.c agree)


UUID_1 = UUID_0[:-1] + "1"


@pytest.mark.parametrize(("value", "named"), [("1,0", [1, 0]), ("0", [0]), ("1", [1]), (UUID_0, [0]),
                                              (f"{UUID_1},{UUID_0}", [1, 0])])
def test_indices_alone_are_read_from_nvml_as_cuda_would(machine: Machine, tmp_path: Path, value: str,
                                                        named: list[int]) -> None:
    """What Slurm sets (indices alone), or whole UUIDs, needs no cuInit (0.2 s a GPU): NVML's GPUs in the order
    named; the same list CUDA itself gives, asked under --deep."""
    gpu_machine(machine, tmp_path)
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    report = machine.check_json()
    process = report["process"]
    assert process["asked_because"] == [] and process["cuinit"] is None and process["visible_from"] == "nvml"
    assert [(g["ordinal"], g["nvml_index"]) for g in process["visible"]] == list(enumerate(named))
    assert not {"CD113", "CD114"} & codes(report)
    deep = machine.check_json("--deep")["process"]
    assert deep["cuinit"] == 0 and deep["visible_from"] == "cuda"
    assert [(g["ordinal"], g["uuid"], g["nvml_index"]) for g in deep["visible"]] == \
        [(g["ordinal"], g["uuid"], g["nvml_index"]) for g in process["visible"]]
    assert machine.run("check", "-v").stdout.count("sees cuda:0 = GPU ") == 1


@pytest.mark.parametrize(("nvml", "value", "why"), [
    ({"health": {"MIG": 1}}, "0", "MIG mode: CUDA shows its instances"),
    ({"health": {"MIG_PENDING": 1}}, "0", "MIG mode at the next reset"),
    ({}, "2", "an index NVML has no GPU for: CUDA stops there"),
    ({}, "GPU-00000000-fa4e", "a UUID's prefix: CUDA's own rules decide"),
    ({}, f"0,{UUID_0}", "an index, then a UUID: CUDA stops at the UUID"),
    ({}, f"{UUID_1},{UUID_1}", "one GPU named twice: CUDA_ERROR_INVALID_DEVICE"),
    ({}, "GPU-0badc0de-0000-0000-0000-000000000000", "a UUID of no GPU here"),
])
def test_cuda_is_asked_where_nvml_cannot_say_what_indices_leave(machine: Machine, tmp_path: Path,
                                                                  nvml: dict[str, object], value: str, why: str) -> None:
    driver = gpu_machine(machine, tmp_path)
    fake_nvml(driver, driver=KERNEL, gpus=2, **nvml)  # type: ignore[arg-type]
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    process = machine.check_json()["process"]
    assert process["cuinit"] is not None and process["asked_because"], why
    assert process["visible_from"] in ("cuda", None)


def test_cuda_is_not_asked_where_nothing_can_change_its_answer(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path)
    report = machine.check_json()
    assert report["process"]["asked_because"] == [] and report["process"]["cuinit"] is None
    deep = machine.check_json("--deep")
    assert deep["process"]["asked_because"] == ["--deep"] and deep["process"]["cuinit"] == 0
    assert len(deep["process"]["visible"]) == 2


# --- GPU memory and process limits ---------------------------------------------------------------------------------

def test_memory_other_processes_hold_is_a_warning_that_names_them(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    fake_nvml(tmp_path / "driver", driver=KERNEL, gpus=1,
              health={"MEMORY_USED": 66 * 1024 ** 3, "PROCS": 1, "SICK_GPU": 0})
    report = machine.check_json()
    held = finding(report, "CD115")
    assert held["severity"] == "warning" and "process 4242" in held["detail"] and "67584 MiB" in held["detail"]


def jax_install(site: Path) -> None:
    info = site / "jax_cuda13_plugin-0.11.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax-cuda13-plugin\nVersion: 0.11.2\n"
                                   "Requires-Dist: nvidia-cudnn-cu13<10.0,>=9.8\n")


def test_too_few_open_files_for_jax_and_the_soft_limit_raised(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    before = "ulimit -S -n 64"
    report = check_after(machine, [], before=before)
    limit = finding(report, "CD116")
    assert "ulimit -S -n is 64" in limit["detail"] and "JAX" in limit["detail"]
    lines = plan_lines(machine, before=before)
    assert "ulimit -S -n 4096" in lines, lines
    assert "CD116" not in codes(check_after(machine, lines, before=before))


def test_an_open_file_limit_jax_starts_under_is_no_error(machine: Machine, tmp_path: Path) -> None:
    """128 open files: JAX 0.11 starts and runs a cuDNN convolution from 87 up (benchmarks/limits_probe.py on 2 x
    H100), so no CD116 (the first bound, 256, called this a failure)."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    assert "CD116" not in codes(check_after(machine, [], before="ulimit -S -n 128"))


# --- the frameworks' own settings ----------------------------------------------------------------------------------

def test_an_allocator_setting_torch_refuses_is_an_error_in_torchs_words(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:maybe,max_split_mb:128,max_split_size_mb:256"
    report = machine.check_json()
    refused = finding(report, "CD411")
    assert "Unrecognized key 'max_split_mb' in CUDA allocator config" in refused["detail"]
    assert "Expected 'True' or 'False'" in refused["detail"] and "PyTorch raises" in refused["detail"]
    lines = plan_lines(machine)
    assert "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256" in lines
    assert "CD411" not in codes(check_after(machine, lines))


@pytest.mark.parametrize(("variable", "value", "code"), [
    ("XLA_PYTHON_CLIENT_MEM_FRACTION", "75%", "CD411"),
    ("XLA_PYTHON_CLIENT_ALLOCATOR", "cuda", "CD411"),
    ("JAX_PLATFORMS", "gpuu", "CD411"),
    ("XLA_PYTHON_CLIENT_MEM_FRACTION", ".001", "CD413"),
    ("JAX_PLATFORMS", "cpu", "CD412"),
    ("JAX_PLATFORM_NAME", "CPU", "CD412"),  # the older single-platform form: JAX's arrays on the CPU, said
    ("JAX_DEFAULT_DEVICE", "cuda:0", "CD411"),  # a string must be cpu, gpu or tpu (JAX 0.11.2 raised on an H100)
    ("JAX_DEFAULT_DEVICE", "cuda", "CD411"),
    ("JAX_DEFAULT_DEVICE", "cpu", "CD412"),  # JAX's arrays on the CPU by default
])
def test_jax_settings(machine: Machine, tmp_path: Path, variable: str, value: str, code: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env[variable] = value
    report = machine.check_json()
    assert code in codes(report), report["findings"]
    lines = plan_lines(machine)
    # an enum's value cut short at a word's end: the value it was written for
    meant = {("XLA_PYTHON_CLIENT_ALLOCATOR", "cuda"): "cuda_async"}.get((variable, value))
    assert (f"export {variable}={meant}" if meant else f"unset {variable}") in lines, lines
    assert code not in codes(check_after(machine, lines))


def test_jax_platform_name_of_the_gpu_says_nothing(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env["JAX_PLATFORM_NAME"] = "cuda"
    assert not {"CD411", "CD412"} & codes(machine.check_json())


def test_a_setting_for_a_framework_not_installed_is_a_warning(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsyn"
    warned = finding(machine.check_json(), "CD414")
    assert warned["severity"] == "warning" and "not installed" in warned["detail"]


# --- the cuDNN each framework loads --------------------------------------------------------------------------------

def test_a_truncated_sublibrary_of_a_real_cudnn_in_the_copy_torch_loads(machine: Machine, tmp_path: Path) -> None:
    """The real 9.19.0 wheel's files; a copy of them first on LD_LIBRARY_PATH with libcudnn_graph.so.9 cut in half."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", pin="nvidia-cudnn-cu13==9.19.0.56")
    real = real_cudnn("9.19.0") / "lib"
    copy = tmp_path / "copy"
    copy.mkdir()
    for library in real.iterdir():
        (copy / library.name).symlink_to(library)
    (copy / "libcudnn_graph.so.9").unlink()
    data = (real / "libcudnn_graph.so.9").read_bytes()
    (copy / "libcudnn_graph.so.9").write_bytes(data[: len(data) // 2])
    machine.add_library_path(copy)
    report = machine.check_json()
    broken = finding(report, "CD308")
    assert "libcudnn_graph.so.9" in broken["detail"] and "truncated" in broken["detail"]
    assert broken["severity"] == "error"
    lines = plan_lines(machine)
    removal = [line for line in lines if line.startswith(("export LD_LIBRARY_PATH=", "unset LD_LIBRARY_PATH"))]
    assert removal and all(str(copy) not in line for line in removal), lines
    assert "CD308" not in codes(check_after(machine, lines))


def test_a_sublibrary_of_another_release_in_the_copy_torch_loads(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site)
    mixed = tmp_path / "mixed"
    fake_cudnn(mixed, version=90100, sublibraries=[n for n in CUDNN9 if n != "libcudnn_ops"])
    fake_cudnn(tmp_path / "older", version=90000, sublibraries=["libcudnn_ops"])
    shutil.copyfile(tmp_path / "older" / "libcudnn_ops.so.9.0.0", mixed / "libcudnn_ops.so.9.0.0")
    (mixed / "libcudnn_ops.so.9").symlink_to("libcudnn_ops.so.9.0.0")
    machine.add_library_path(mixed)
    report = machine.check_json()
    stale = finding(report, "CD305")
    assert "libcudnn_ops.so.9 (cuDNN 9.0.0" in stale["detail"]
    assert "CD305" not in codes(check_after(machine, plan_lines(machine)))


def test_dangling_links_the_loader_skips_are_only_a_warning(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    for name in ("libcudnn.so.9", "libcudnn_ops.so.9"):
        (dangling / name).symlink_to(f"/nonexistent/{name}")
    machine.add_library_path(dangling)
    report = machine.check_json()
    assert "CD318" in codes(report)
    assert not {"CD304", "CD308"} & codes(report)


CUDNN9 = ["libcudnn_graph", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv", "libcudnn_engines_precompiled",
          "libcudnn_engines_runtime_compiled", "libcudnn_heuristic"]



FAILING_TORCH = '''
__version__ = "2.11.0+cu130"
class version:
    cuda = "13.0"
class backends:
    class cudnn:
        @staticmethod
        def version():
            return 91900
class cuda:
    @staticmethod
    def is_available():
        return True
    @staticmethod
    def device_count():
        return 1
def randn(*shape, device=None):
    raise RuntimeError("cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH")
'''


def test_deep_quotes_what_the_framework_said_where_no_other_error_explains_it(machine: Machine,
                                                                              tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(FAILING_TORCH)
    real_python_sees(site, tmp_path)
    report = machine.check_json("--deep")
    failed = finding(report, "CD305")  # the class explain reads in its words, where no finding of it was read
    assert failed["severity"] == "error" and failed["evidence"] == "seen", failed
    assert "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" in failed["detail"] and "PyTorch" in failed["detail"]
    assert "{" not in failed["detail"] and "{" not in (failed.get("fix") or "")
    text = machine.run("check", "--deep")
    assert "{" not in text.stdout, text.stdout


def test_deep_quotes_what_the_framework_said_where_nothing_explains_it(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text(FAILING_TORCH.replace(
        "cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "the flux capacitor is not charged"))
    real_python_sees(site, tmp_path)
    report = machine.check_json("--deep")
    failed = finding(report, "CD415")
    assert failed["severity"] == "error" and "flux capacitor" in failed["detail"] and "PyTorch" in failed["detail"]


def test_gpus_of_different_kinds_numbered_otherwise_by_cuda(machine: Machine, tmp_path: Path) -> None:
    driver = gpu_machine(machine, tmp_path, reversed_order=True)
    fake_nvml(driver, driver=KERNEL, gpus=2, health={"GPU1_NAME": '"NVIDIA L4"'})
    report = machine.check_json()
    order = finding(report, "CD117")
    assert "cuda:0 = nvidia-smi's GPU 1, cuda:1 = nvidia-smi's GPU 0" in order["detail"]
    assert "CD117" not in codes(check_after(machine, ["export CUDA_DEVICE_ORDER=PCI_BUS_ID"]))


@pytest.mark.parametrize(("preloaded", "refused"), [(90000, True), (90200, False)])
def test_a_preloaded_cudnn_older_than_torch_was_built_with(machine: Machine, tmp_path: Path, preloaded: int,
                                                         refused: bool) -> None:
    """torch refuses an older minor of its cuDNN major and takes a newer one (torch/backends/cudnn/__init__.py)."""
    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))  # built with 9.1.0 (its pinned wheel)
    other = tmp_path / f"cudnn-{preloaded}"
    fake_cudnn(other, version=preloaded, sublibraries=CUDNN9)
    machine.env["LD_PRELOAD"] = str(other / "libcudnn.so.9")
    report = machine.check_json()
    assert ("CD317" in codes(report)) is refused, report["findings"]
    if refused:
        assert "cuDNN 9.0.0" in finding(report, "CD317")["detail"]
        lines = plan_lines(machine)
        assert "unset LD_PRELOAD" in lines
        assert "CD317" not in codes(check_after(machine, lines))


def test_hostile_environment_values_and_a_fifo_for_the_kernel_version(machine: Machine, tmp_path: Path) -> None:
    """Values no framework would take, of every kind at once: bytes that are not UTF-8, a newline, an ESC, a
    megabyte of allocator configuration; /proc/driver/nvidia/version a FIFO with no writer. check answers at once
    with one JSON object, every value kept as given, and the plan's line sets exactly those bytes back in bash."""
    gpu_machine(machine, tmp_path, gpus=1)
    version = machine.root / "proc" / "driver" / "nvidia" / "version"
    version.unlink()
    os.mkfifo(version)
    install_torch(python_env(machine, tmp_path))
    machine.env["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:128," + "x" * 100_000
    machine.env["CUDA_VISIBLE_DEVICES"] = "0,\n\x1b[31m"
    machine.env["JAX_PLATFORMS"] = os.fsdecode(b"cu\xffda")
    report = machine.check_json()
    assert report["process"]["kernel_driver"] is None
    assert "CD411" in codes(report) and "CD114" in codes(report)
    lines = plan_lines(machine)
    assert "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128" in lines
    shown = bash(machine, "; ".join([*lines, 'printf %s "$CUDA_VISIBLE_DEVICES"']))
    assert shown.stdout == "0", shown


# --- the ptxas JAX compiles with -------------------------------------------------------------------------------------

def _ptxas(folder: Path, release: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ptxas"
    script.write_text(f'#!/bin/sh\necho "ptxas: NVIDIA (R) Ptx optimizing assembler"\n'
                      f'echo "Cuda compilation tools, release {release}, V{release}.89"\n')
    script.chmod(0o755)
    return script


@pytest.mark.parametrize(("release", "fails"), [("11.8", True), ("12.0", False), ("13.0", False)])
def test_a_ptxas_on_path_too_old_for_xlas_target_is_an_error_the_plan_takes_off_path(
        machine: Machine, tmp_path: Path, release: str, fails: bool) -> None:
    """XLA runs the first ptxas on PATH: a CUDA 11.8 one knows PTX ISA 7.8, and XLA's target on a 9.0 GPU
    (sm_90a) needs 8.0 (seen on an H100: JAX failed at its first compilation). The release is asked of the file
    itself; the plan takes its folder out of PATH."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    tools = tmp_path / "old-cuda" / "bin"
    _ptxas(tools, release)
    machine.env["PATH"] = f"{tools}:{machine.env['PATH']}"
    report = machine.check_json()
    assert report["process"]["ptxas_release"] == release
    if not fails:
        assert "CD206" not in codes(report), report["findings"]
        return
    said = finding(report, "CD206")
    assert said["severity"] == "error" and said["evidence"] == "rule" and "sm_90a" in said["detail"], said
    lines = plan_lines(machine)
    assert any(line.startswith("export PATH=") and str(tools) not in line for line in lines), lines
    # the rest of PATH kept: the line once wrote LD_LIBRARY_PATH's folders as PATH, and a shell lost every command
    assert f"export PATH={machine.env['PATH'].split(':', 1)[1]}" in lines, lines
    assert "CD206" not in codes(check_after(machine, lines))


def test_a_preloaded_cuda_library_of_another_release_than_the_frameworks_wheel_is_a_warning(
        machine: Machine, tmp_path: Path) -> None:
    """LD_PRELOAD=<toolkit>/libcublas.so.13 (release 13.0.2.14) where torch's wheels hold libcublas.so.13 of
    nvidia-cublas 13.1.0.3: torch's libraries bind to the preloaded one. Read from the files' names, so a warning
    (--deep proves it); the plan takes the entry out of LD_PRELOAD."""
    import glob
    import shutil

    libz = next(iter(sorted(glob.glob("/usr/lib/*/libz.so.1") + glob.glob("/lib/*/libz.so.1"))), None)
    if libz is None:
        pytest.skip("no libz.so.1 to stand in for a library")
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    (site / "nvidia" / "cublas" / "lib").mkdir(parents=True)
    shutil.copyfile(libz, site / "nvidia" / "cublas" / "lib" / "libcublas.so.13")
    (site / "nvidia_cublas-13.1.0.3.dist-info").mkdir()
    toolkit = tmp_path / "cuda-13.0" / "lib64"
    toolkit.mkdir(parents=True)
    shutil.copyfile(libz, toolkit / "libcublas.so.13.0.2.14")
    (toolkit / "libcublas.so.13").symlink_to("libcublas.so.13.0.2.14")
    machine.env["LD_PRELOAD"] = str(toolkit / "libcublas.so.13")
    report = machine.check_json()
    said = finding(report, "CD203")
    assert said["severity"] == "warning" and "13.0.2.14" in said["detail"] and "13.1.0.3" in said["detail"], said["detail"]

@pytest.mark.parametrize(("preloaded", "refused"), [(90000, True), (90100, False)])
def test_a_preloaded_cudnn_sublibrary_of_another_release(machine: Machine, tmp_path: Path, preloaded: int,
                                                         refused: bool) -> None:
    """LD_PRELOAD of another release's libcudnn_adv.so.9 (a forum's workaround for an RNN error; on an H100 the
    system's 9.14 adv failed torch 2.11 'cuDNN version incompatibility' while plain check named only the version torch
    then found, round fifteen's GPU set): CD317 names the preloaded file, from its release (its file name here), and
    the plan takes it out of LD_PRELOAD. Torch's own release preloaded is no finding."""
    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))  # built with 9.1.0 (its pinned wheel)
    other = tmp_path / f"cudnn-{preloaded}"
    fake_cudnn(other, version=preloaded, sublibraries=CUDNN9)
    machine.env["LD_PRELOAD"] = str(other / "libcudnn_adv.so.9")
    report = machine.check_json()
    said = [f for f in report["findings"] if f["code"] == "CD317" and f["subject"] == str(other / "libcudnn_adv.so.9")]
    assert bool(said) is refused, report["findings"]
    if refused:
        assert "cuDNN 9.0.0" in said[0]["detail"] and said[0]["evidence"] == "rule", said
        lines = plan_lines(machine)
        assert "unset LD_PRELOAD" in lines
        assert "CD317" not in codes(check_after(machine, lines))


@pytest.mark.parametrize("token", ["$LIB", "${LIB}", "bare"])
def test_a_preloaded_cudnn_named_with_a_loader_token_is_still_the_preloaded_one(machine: Machine, tmp_path: Path,
                                                                              token: str) -> None:
    """ld.so expands $LIB (and ${LIB}, $PLATFORM, $ORIGIN) in LD_PRELOAD and searches for a bare name: an entry
    written so still brought the copy the program maps, so the finding and the plan's removal name that entry as the
    user wrote it."""
    import subprocess

    gpu_machine(machine, tmp_path, gpus=1)
    install_torch(python_env(machine, tmp_path))
    probe = subprocess.run(["sh", "-c", "cat /proc/self/maps"], env={"LD_PRELOAD": "/nowhere/$LIB/x.so"},
                           capture_output=True, text=True)
    lib = next((line.split()[-1] for line in probe.stdout.splitlines() if "/libc.so" in line), "")
    expanded = lib.rsplit("/libc.so", 1)[0].removeprefix("/usr").lstrip("/") or "lib"  # what $LIB is here
    other = tmp_path / "pre" / expanded
    fake_cudnn(other, version=90000, sublibraries=CUDNN9)
    machine.env["LD_PRELOAD"] = f"{tmp_path}/pre/{token}/libcudnn.so.9"
    if token == "bare":  # a name without a slash: searched for as a needed library, here on LD_LIBRARY_PATH
        machine.env["LD_PRELOAD"] = "libcudnn.so.9"
        machine.add_library_path(other)
    report = machine.check_json()
    assert "CD317" in codes(report), report["findings"]
    lines = plan_lines(machine)
    assert "unset LD_PRELOAD" in lines
    assert "CD203" not in codes(check_after(machine, lines))


def test_a_toolkits_own_ptxas_is_of_the_toolkits_release_without_running_it(machine: Machine, tmp_path: Path) -> None:
    """The ptxas of a CUDA toolkit found on disk (its bin/ on PATH) is of the toolkit's release, which its files say:
    it is not run (every check would pay for it); a ptxas anywhere else is asked."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    kit = tmp_path / "cuda-11.8"
    _ptxas(kit / "bin", "12.9")  # what it would say if it were run: not asked
    (kit / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "11.8.89"}}\n')
    machine.env["CUDA_HOME"] = str(kit)
    machine.env["PATH"] = f"{kit / 'bin'}:{machine.env['PATH']}"
    report = machine.check_json()
    assert report["process"]["ptxas_release"] == "11.8", report["process"]
    assert finding(report, "CD206")["severity"] == "error"


@pytest.mark.parametrize(("value", "code", "words"), [
    ("gpu", "CD411", "refused by JAX"),  # JAX 0.11 names cuda and rocm for it: 'rocm' is not a known backend
    ("cpu,cuda", "CD412", "first backend listed"),  # the first is where arrays go: jax.devices() lists the CPU
])
def test_jax_platforms_as_jax_0_11_reads_them(machine: Machine, tmp_path: Path, value: str, code: str,
                                               words: str) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env["JAX_PLATFORMS"] = value
    report = machine.check_json()
    said = finding(report, code)
    assert words in said["detail"], said["detail"]
    lines = plan_lines(machine)
    assert "unset JAX_PLATFORMS" in lines
    assert code not in codes(check_after(machine, lines))


@pytest.mark.parametrize("content", [b"", b"version https://git-lfs.github.com/spec/v1\n"])
def test_a_libcuda_file_before_the_drivers_on_the_path_is_asked_of_the_loader(machine: Machine, tmp_path: Path,
                                                                              content: bytes) -> None:
    """An empty (or text) libcuda.so.1 in a folder first on LD_LIBRARY_PATH: the loader stops there and every
    program loses the GPU (seen on an H100: torch.cuda.is_available() False, JAX on the CPU). The CUDA child is asked
    because of it, and the loader's refusal is the error; the plan takes the folder out."""
    gpu_machine(machine, tmp_path, gpus=1)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libcuda.so.1").write_bytes(content)
    machine.add_library_path(bad)
    report = machine.check_json()
    assert report["process"]["asked_because"], report["process"]
    said = finding(report, "CD110")
    assert said["evidence"] == "seen" and str(bad) in said["detail"], said
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(bad) not in line for line in lines), lines
    assert "CD110" not in codes(check_after(machine, lines))


def test_a_pythonpath_folder_holding_a_package_the_framework_imports_is_a_warning(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """A folder on PYTHONPATH with a jax_plugins package (seen on an H100: JAX then finds no CUDA plugin and runs
    on the CPU): Python takes it before site-packages; a warning (read; --deep proves), the folder out as the line."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    shadow = tmp_path / "mine"
    (shadow / "jax_plugins").mkdir(parents=True)
    machine.env["PYTHONPATH"] = f"{shadow}:{machine.env['PYTHONPATH']}"
    report = machine.check_json()
    said = finding(report, "CD419")
    assert said["severity"] == "warning" and "jax_plugins" in said["detail"], said
    lines = plan_lines(machine)
    assert any(line.startswith("export PYTHONPATH=") and str(shadow) not in line for line in lines)
    assert f"export PYTHONPATH={machine.env['PYTHONPATH'].split(':', 1)[1]}" in lines, lines  # the rest kept
    assert "CD419" not in codes(check_after(machine, lines))


def test_an_empty_folder_named_like_a_regular_package_shadows_nothing(machine: Machine, tmp_path: Path) -> None:
    """Python takes a folder without __init__.py as a namespace portion and goes on looking: torch/ (regular, with
    its __init__.py) in site-packages wins over an empty torch/ earlier on PYTHONPATH, and loses to a torch/ with an
    __init__.py (or a torch.py) after it. The shadow named is the one that imports."""
    from tests.test_frameworks import install_torch

    site = python_env(machine, tmp_path)
    install_torch(site)
    (site / "torch" / "__init__.py").write_text("")
    empty, regular = tmp_path / "empty", tmp_path / "regular"
    (empty / "torch").mkdir(parents=True)
    (regular / "torch").mkdir(parents=True)
    (regular / "torch" / "__init__.py").write_text("")
    machine.env["PYTHONPATH"] = f"{empty}:{regular}:{machine.env['PYTHONPATH']}"
    said = finding(machine.check_json(), "CD419")
    assert str(regular) in said["detail"] and str(empty) not in said["detail"], said
    machine.env["PYTHONPATH"] = f"{empty}:{machine.env['PYTHONPATH'].split(':', 2)[2]}"
    assert "CD419" not in codes(machine.check_json())


@pytest.mark.parametrize("kind", ["cut", "foreign"])
def test_a_cuda_library_on_the_path_the_loader_cannot_use_is_a_warning(machine: Machine, tmp_path: Path,
                                                                       kind: str) -> None:
    """A cut-short libcublasLt.so.13, or another library saved as libnvJitLink.so.13, in a folder on
    LD_LIBRARY_PATH (seen on an H100: JAX finds no GPU, torch works): a warning naming what is wrong, the folder out
    of the path as its line."""
    import glob
    import shutil

    libz = next(iter(sorted(glob.glob("/usr/lib/*/libz.so.1") + glob.glob("/lib/*/libz.so.1"))), None)
    if libz is None:
        pytest.skip("no libz.so.1 to stand in for a library")
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    folder = tmp_path / "libs"
    folder.mkdir()
    if kind == "cut":
        (folder / "libcublasLt.so.13").write_bytes(Path(libz).read_bytes()[:200])
    else:
        shutil.copyfile(libz, folder / "libnvJitLink.so.13")
    machine.add_library_path(folder)
    report = machine.check_json()
    said = [f for f in report["findings"] if f["code"] == "CD203" and str(folder) in f["subject"]]
    assert said and said[0]["severity"] == "warning", report["findings"]
    assert ("soname is libz" in said[0]["detail"]) == (kind == "foreign")
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(folder) not in line for line in lines)
    assert not [f for f in check_after(machine, lines)["findings"] if f["code"] == "CD203"]


def test_a_cuda_math_library_link_stub_first_on_the_path_under_its_soname_is_a_warning(machine: Machine,
                                                                                       tmp_path: Path) -> None:
    """The toolkit's lib64/stubs/libcublasLt.so (and libnvJitLink.so), linked in as their sonames in a folder first
    on LD_LIBRARY_PATH: loadable, so no loader refuses them, and they do no work. Read from where the file really
    is: a warning that --deep proves, the folder out of the path as its line, and check again clean. The stub
    folder itself on the path (bare names only) is no finding: the loader never opens a bare name."""
    from tests.fakes.build import compile_library

    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    stubs = tmp_path / "cuda" / "lib64" / "stubs"
    stubs.mkdir(parents=True)
    linked = tmp_path / "linked"
    linked.mkdir()
    for soname in ("libcublasLt.so.13", "libnvJitLink.so.13"):
        bare = soname.rsplit(".", 1)[0]
        shutil.copyfile(compile_library("fake_cuda_library.c", bare, soname=soname), stubs / bare)
        (linked / soname).symlink_to(stubs / bare)
    machine.add_library_path(stubs)
    before = [f for f in machine.check_json()["findings"] if f["code"] == "CD203"]
    assert not before, before
    machine.add_library_path(linked)
    report = machine.check_json()
    said = [f for f in report["findings"] if f["code"] == "CD203" and str(linked) in f["subject"]]
    assert len(said) == 2 and all(f["severity"] == "warning" and f["evidence"] == "read" for f in said), said
    assert "link stub" in said[0]["detail"] and "--deep" in said[0]["detail"], said[0]
    lines = plan_lines(machine)
    assert any(line.startswith("export LD_LIBRARY_PATH=") and str(linked) not in line for line in lines), lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["code"] == "CD203"]


def test_test_tmpdir_where_xla_cannot_write_fails_jax_first_convolution(machine: Machine, tmp_path: Path) -> None:
    """TEST_TMPDIR (Bazel's, left in a shell), which XLA takes before TMPDIR for the PTX it hands to ptxas: /proc,
    where no file can be made, failed JAX 0.11.2's first convolution on an H100 (round fifteen's GPU set): an error
    from the row (rule), and the plan unsets it. A folder that is not there is skipped by XLA: nothing said."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env["TEST_TMPDIR"] = "/proc"
    report = machine.check_json()
    [made] = [f for f in report["findings"] if f["subject"] == "TEST_TMPDIR"]
    assert made["severity"] == "error" and made["evidence"] == "rule", made
    lines = plan_lines(machine)
    assert "unset TEST_TMPDIR" in lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["subject"] == "TEST_TMPDIR"]
    machine.env["TEST_TMPDIR"] = str(tmp_path / "sandbox-gone")
    assert not [f for f in machine.check_json()["findings"] if f["subject"] == "TEST_TMPDIR"]


def test_jax_platforms_set_and_empty_is_jax_choosing_its_backends(machine: Machine, tmp_path: Path) -> None:
    """JAX_PLATFORMS='' is unset to JAX (its own error says "set JAX_PLATFORMS='' to automatically choose"; JAX 0.11.2
    ran on an H100 with it, round sixteen's GPU set): no finding; an empty name after a ',' is still refused."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env["JAX_PLATFORMS"] = ""
    assert not [f for f in machine.check_json()["findings"] if f["subject"] == "JAX_PLATFORMS"]
    machine.env["JAX_PLATFORMS"] = "cuda,"
    assert "CD411" in codes(machine.check_json())


def test_tmp_where_xla_cannot_write_is_said_where_xla_takes_it(machine: Machine, tmp_path: Path) -> None:
    """TMP naming a folder that exists and cannot be written failed JAX's first convolution on an H100 (round
    sixteen's GPU set): XLA takes TEST_TMPDIR, then TMPDIR, then TMP. Said (CD417) where JAX is installed and neither
    of the first two is set; the plan unsets it and check is clean after."""
    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["TMP"] = "/proc"  # a folder in which no file can be made, even by root
    assert not [f for f in machine.check_json()["findings"] if f["subject"] == "TMP"]  # no JAX here: not judged
    jax_install(python_env(machine, tmp_path))
    [made] = [f for f in machine.check_json()["findings"] if f["subject"] == "TMP"]
    assert made["code"] == "CD417", made
    lines = plan_lines(machine)
    assert "unset TMP" in lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["subject"] == "TMP"]
    machine.env["TMPDIR"] = str(tmp_path)  # XLA takes TMPDIR first
    assert not [f for f in machine.check_json()["findings"] if f["subject"] == "TMP"]


def test_test_tmpdir_where_xla_cannot_write_is_its_path_class(machine: Machine, tmp_path: Path) -> None:
    """TEST_TMPDIR naming a folder XLA cannot write its PTX in (its reader raises: JAX's first convolution failed on an
    H100, round fifteen's set and round eighteen's published one, a folder too deep for a file name) is the class the
    data gives it and --deep's cure names (CD417, an error on the row's rule), not a framework's refused value
    (CD411); the plan unsets it."""
    gpu_machine(machine, tmp_path, gpus=1)
    jax_install(python_env(machine, tmp_path))
    machine.env["TEST_TMPDIR"] = "/proc"
    [made] = [f for f in machine.check_json()["findings"] if f["subject"] == "TEST_TMPDIR"]
    assert made["code"] == "CD417" and made["severity"] == "error" and made["evidence"] == "rule", made
    lines = plan_lines(machine)
    assert "unset TEST_TMPDIR" in lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["subject"] == "TEST_TMPDIR"]

def test_a_stub_preloaded_by_a_relative_path_is_found_from_the_working_folder(machine: Machine, tmp_path: Path) -> None:
    """LD_PRELOAD=lib/libcuda.so.1, started in a build folder whose lib/libcuda.so.1 is the toolkit's link stub: every
    program started there preloads the stub (ld.so opens an entry with a slash from the working folder), and the
    doctor's children, which start from "/", preloaded nothing and saw a working driver (round seventeen's GPU set,
    published: missed on the H100; the NVML stub alike)."""
    gpu_machine(machine, tmp_path)
    project = tmp_path / "project"
    fake_libcuda(project / "lib", status=34, file_name="libcuda.so")  # with lib/libcuda.so.1 a link to it
    machine.cwd = project
    machine.env["LD_PRELOAD"] = "lib/libcuda.so.1"
    report = machine.check_json()
    assert "LD_PRELOAD" in finding(report, "CD111")["detail"], report["findings"]
    lines = plan_lines(machine)
    assert "unset LD_PRELOAD" in lines
    assert "CD111" not in codes(check_after(machine, lines))


def test_a_relative_preload_that_names_nothing_from_the_working_folder_is_not_said(machine: Machine,
                                                                                   tmp_path: Path) -> None:
    """The same LD_PRELOAD started where lib/ does not exist: ld.so ignores the entry ('cannot be preloaded ...
    ignored'), the driver works: no finding of a stub."""
    gpu_machine(machine, tmp_path)
    fake_libcuda(tmp_path / "project" / "lib", status=34, file_name="libcuda.so")
    (tmp_path / "elsewhere").mkdir()
    machine.cwd = tmp_path / "elsewhere"
    machine.env["LD_PRELOAD"] = "lib/libcuda.so.1"
    assert "CD111" not in codes(machine.check_json())
