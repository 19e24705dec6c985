"""Issue 45, round nine: the settings of the classes its sealed set drew on (JAX's memory shares under both names and
with unified memory, its transfer guard and debugging options, torch.compile's cache folders, TORCH_USE_RTLD_GLOBAL,
a launcher's ranks), each judged from the data (compat/process_env.toml) and, where the installed framework can
answer, from its own files: every error carries seen or rule evidence, what is only read is a warning, and each plan
line, sourced in bash, leaves check clean of its finding."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.jax_programs import run_jax_program
from tests.real_wheels import real_jax_cpu
from tests.test_environment_settings import check, closed_loop, real_jax_site, settings_findings  # noqa: F401
from tests.test_frameworks import install_torch, python_env
from tests.test_process_env import bash, doctor_line, finding, gpu_machine, jax_install, plan_lines


@pytest.fixture
def jax_site(real_jax_site: Path) -> Path:  # noqa: F811 (the imported fixture, asked for by name)
    """A machine with one GPU and a Python environment whose jax is the real one (0.4.38, CPU)."""
    return real_jax_site


def jax_says(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    """CODE run by the real jax 0.4.38 (CPU) with ENV: what the data's rule says it does, asked of it."""
    full = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": "cpu", **env}
    return run_jax_program(full, code)  # forked before `import jax` where ENV allows (tests/jax_programs.py)


# --- JAX's share of each GPU: XLA_CLIENT_MEM_FRACTION, read first, and the deprecated name beside it ---------------

@pytest.mark.parametrize(("value", "code", "severity"), [
    # 81 MiB of an 80 GB GPU: seen failing JAX's first convolution of a (8, 128, 56, 56) batch and running a smaller
    # program on an H100 (settings_facts.py round9): whether it fails is the program's, a warning
    (".001", "CD413", "warning"),
    (".01", "CD413", "warning"),  # 815 MiB: under 1 GiB, but not where it was seen to fail
    ("75%", "CD411", "error"),  # float() refuses it: JAX stays on the CPU
])
def test_xla_client_mem_fraction_is_judged_as_the_older_name_is(machine: Machine, jax_site: Path, value: str,
                                                                code: str, severity: str) -> None:
    machine.env["XLA_CLIENT_MEM_FRACTION"] = value
    report = check(machine)
    made = finding(report, code)
    assert made["subject"] == "XLA_CLIENT_MEM_FRACTION" and made["severity"] == severity, made
    if severity == "warning":
        assert made["evidence"] == "read" and "check --deep" in made["detail"]
    closed_loop(machine, code, "XLA_CLIENT_MEM_FRACTION")


def test_both_names_of_jaxs_share_are_refused_together_as_the_installed_jaxlib_refuses_them(
        machine: Machine, jax_site: Path) -> None:
    """jaxlib reads XLA_CLIENT_MEM_FRACTION and raises where the deprecated XLA_PYTHON_CLIENT_MEM_FRACTION is set
    beside it: the installed jaxlib's own file holds that refusal (asked), so it is an error with that file as its
    rule, and the plan takes the deprecated one away, as jaxlib's words ask."""
    machine.env.update(XLA_CLIENT_MEM_FRACTION=".5", XLA_PYTHON_CLIENT_MEM_FRACTION=".5")
    report = check(machine)
    refused = finding(report, "CD411")
    assert refused["subject"] == "XLA_PYTHON_CLIENT_MEM_FRACTION" and refused["evidence"] == "rule"
    assert "jaxlib/xla_client.py" in refused["proof"] and "is specified together" in refused["detail"]
    said = jax_says({"XLA_CLIENT_MEM_FRACTION": ".5", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"},
                    "from jaxlib import xla_client; xla_client.generate_pjrt_gpu_plugin_options()")
    assert said.returncode != 0 and "is specified together" in said.stderr, said.stderr[-600:]
    assert "unset XLA_PYTHON_CLIENT_MEM_FRACTION" in plan_lines(machine)
    closed_loop(machine, "CD411", "XLA_PYTHON_CLIENT_MEM_FRACTION")


def test_a_share_above_the_gpu_is_intended_with_unified_memory_and_said_without(machine: Machine,
                                                                               jax_site: Path) -> None:
    """XLA oversubscribes the GPU on purpose where TF_FORCE_UNIFIED_MEMORY is on (gpu_helpers.cc CreateBFCAllocator:
    total memory times the fraction, in unified memory): no finding then; without it, more than the GPU is said."""
    machine.env.update(XLA_CLIENT_MEM_FRACTION="2.0", TF_FORCE_UNIFIED_MEMORY="1")
    assert not settings_findings(check(machine), "XLA_CLIENT_MEM_FRACTION")
    del machine.env["TF_FORCE_UNIFIED_MEMORY"]
    said = finding(check(machine), "CD412")
    assert said["subject"] == "XLA_CLIENT_MEM_FRACTION" and "more than the whole GPU" in said["detail"]


def test_an_allocator_word_the_installed_jaxlib_holds_is_taken_and_one_it_lacks_refused(machine: Machine,
                                                                                       tmp_path: Path) -> None:
    """A newer jaxlib takes 'vmm' (its file compares with it); the data lists the words of older ones. Asked of the
    installed files: a jaxlib whose file names the variable and holds 'vmm' takes it; the real 0.4.38 lacks it and
    refuses it (ValueError, JAX on the CPU)."""
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    jax_install(site)
    (site / "jaxlib").mkdir()
    (site / "jaxlib" / "xla_client.py").write_text(
        "allocator = os.getenv('XLA_PYTHON_CLIENT_ALLOCATOR', 'default').lower()\n"
        "if allocator not in ('default', 'platform', 'bfc', 'cuda_async', 'vmm'):\n    raise ValueError(allocator)\n")
    (site / "jax").mkdir()
    (site / "jax" / "version.py").write_text("_version = '0.11.2'\n")
    machine.env["XLA_PYTHON_CLIENT_ALLOCATOR"] = "vmm"
    report = check(machine)
    assert not settings_findings(report, "XLA_PYTHON_CLIENT_ALLOCATOR"), report["findings"]
    machine.env["XLA_PYTHON_CLIENT_ALLOCATOR"] = "vmn"
    assert finding(check(machine), "CD411")["subject"] == "XLA_PYTHON_CLIENT_ALLOCATOR"


def test_the_real_jaxlib_0_4_38_refuses_vmm(machine: Machine, jax_site: Path) -> None:
    machine.env["XLA_PYTHON_CLIENT_ALLOCATOR"] = "vmm"
    refused = finding(check(machine), "CD411")
    assert refused["subject"] == "XLA_PYTHON_CLIENT_ALLOCATOR" and refused["severity"] == "error"
    said = jax_says({"XLA_PYTHON_CLIENT_ALLOCATOR": "vmm"},
                    "from jaxlib import xla_client; xla_client.generate_pjrt_gpu_plugin_options()")
    assert said.returncode != 0 and 'got "vmm"' in said.stderr, said.stderr[-600:]


# --- JAX's transfer guard and debugging options -------------------------------------------------------------------

def test_a_transfer_guard_that_refuses_implicit_transfers_is_an_error_its_gpu_proof_named(machine: Machine,
                                                                                         jax_site: Path) -> None:
    """disallow is a value JAX takes, and with it nearly every program raises (a Python number in an operation is a
    host-to-device transfer it did not ask for): the real jax says so on the CPU, and JAX 0.11's first convolution
    failed with it on an H100 (benchmarks/settings_facts.py --only round9, named in the data's proof): an error, rule."""
    variable = "JAX_TRANSFER_GUARD"
    machine.env[variable] = "disallow"
    report = check(machine)
    warned = finding(report, "CD411")
    assert warned["subject"] == variable and warned["severity"] == "error" and warned["evidence"] == "rule"
    assert "Disallowed host-to-device transfer" in warned["detail"] and "settings_facts" in warned["proof"]
    said = jax_says({variable: "disallow"}, "import jax.numpy as j; print(j.ones(3) + 1)")
    assert said.returncode != 0 and "Disallowed host-to-device transfer" in said.stderr, said.stderr[-600:]
    assert jax_says({variable: "allow"}, "import jax.numpy as j; print(j.ones(3) + 1)").returncode == 0
    # the direction's own variable did not stop it: no finding for it (test below)
    assert jax_says({"JAX_TRANSFER_GUARD_HOST_TO_DEVICE": "disallow"},
                    "import jax.numpy as j; print(j.ones(3) + 1)").returncode == 0
    closed_loop(machine, "CD411", variable)


@pytest.mark.parametrize(("variable", "value"), [
    ("JAX_TRANSFER_GUARD", "log"), ("JAX_TRANSFER_GUARD_DEVICE_TO_DEVICE", "disallow"),  # one GPU: no such transfer
    ("JAX_TRANSFER_GUARD_HOST_TO_DEVICE", "disallow"),  # the real jax 0.4.38 ran jnp.ones(3) + 1 with it
    ("JAX_DEBUG_INFS", "0"), ("JAX_ENABLE_CHECKS", "false"),
])
def test_guard_and_debug_values_that_change_nothing_a_program_does_are_no_finding(
        machine: Machine, jax_site: Path, variable: str, value: str) -> None:
    machine.env[variable] = value
    assert not settings_findings(check(machine), variable)


@pytest.mark.parametrize("variable", ["JAX_DEBUG_INFS", "JAX_ENABLE_CHECKS", "JAX_CHECK_TRACER_LEAKS"])
def test_jax_debugging_options_are_said_as_slow(machine: Machine, jax_site: Path, variable: str) -> None:
    machine.env[variable] = "True"
    slow = finding(check(machine), "CD412")
    assert slow["subject"] == variable and slow["severity"] == "warning" and "slower" in slow["detail"]
    closed_loop(machine, "CD412", variable)


# --- torch.compile's cache folders, and TORCH_USE_RTLD_GLOBAL ------------------------------------------------------

def torch_machine(machine: Machine, tmp_path: Path, gpus: int = 1) -> Path:
    gpu_machine(machine, tmp_path, gpus=gpus)
    site = python_env(machine, tmp_path)
    install_torch(site, version="2.11.0+cu130", cuda="13.0", cudnn=91900, pin="nvidia-cudnn-cu13==9.19.0.56")
    return site


@pytest.mark.parametrize("variable", ["TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"])
def test_a_compile_cache_folder_under_a_file_is_a_warning_naming_its_writer(machine: Machine, tmp_path: Path,
                                                                           variable: str) -> None:
    torch_machine(machine, tmp_path)
    (tmp_path / "file").write_text("a file\n")
    machine.env[variable] = str(tmp_path / "file" / "cache")
    made = finding(check(machine), "CD417")
    assert made["subject"] == variable and made["severity"] == "warning" and "is not a folder" in made["detail"]
    assert ("Inductor" if "INDUCTOR" in variable else "Triton") in made["detail"]
    closed_loop(machine, "CD417", variable)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1) to mount a noexec tmpfs")
def test_a_compile_cache_folder_on_a_noexec_mount_is_said_as_the_kernel_says_it(machine: Machine,
                                                                                tmp_path: Path) -> None:
    """A tmpfs mounted noexec in a mount namespace of the test's own: statvfs says ST_NOEXEC of the folder (or of
    the nearest one above it that exists), where Inductor's .so files could not be mapped back."""
    torch_machine(machine, tmp_path)
    (tmp_path / "mnt").mkdir()
    if subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True).returncode:
        pytest.skip("this user cannot make a mount namespace")
    inside = tmp_path / "mnt" / "inductor"
    script = (f"mount -t tmpfs -o noexec none {tmp_path / 'mnt'} && TORCHINDUCTOR_CACHE_DIR={inside} "
              f"TRITON_CACHE_DIR={tmp_path / 'exec-ok'} {doctor_line('check', '--json')}")
    done = bash(machine, f"unshare --mount --propagation private bash -c {__import__('shlex').quote(script)}")
    report = __import__("json").loads(done.stdout)
    made = next(f for f in report["findings"] if f["subject"] == "TORCHINDUCTOR_CACHE_DIR")
    assert made["code"] == "CD417" and "mounted noexec" in made["detail"] and made["severity"] == "warning"
    assert not [f for f in report["findings"] if f["subject"] == "TRITON_CACHE_DIR"]


@pytest.mark.parametrize("value", ["1", "0"])
def test_torch_use_rtld_global_is_known_and_raises_nothing(machine: Machine, tmp_path: Path, value: str) -> None:
    torch_machine(machine, tmp_path)
    machine.env["TORCH_USE_RTLD_GLOBAL"] = value
    report = check(machine)
    assert report["process"]["settings"]["TORCH_USE_RTLD_GLOBAL"] == value
    assert not settings_findings(report, "TORCH_USE_RTLD_GLOBAL")


# --- a launcher's ranks --------------------------------------------------------------------------------------------

def test_a_launchers_consistent_ranks_are_no_finding(machine: Machine, tmp_path: Path) -> None:
    torch_machine(machine, tmp_path)
    machine.env.update(RANK="1", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                       MASTER_PORT="29500", SLURM_PROCID="1", OMPI_COMM_WORLD_RANK="1")
    report = check(machine)
    assert not [f for f in report["findings"] if f["subject"] in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")]
    assert "RANK" in report["process"]["settings"]


@pytest.mark.parametrize(("env", "variable", "words", "severity"), [
    ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK", "2 is not below WORLD_SIZE=2", "warning"),
    ({"LOCAL_RANK": "1"}, "LOCAL_RANK", "not below the 1 GPU a program started here sees (cuda:1 does not exist)",
     "warning"),  # a program may pick its GPU by it, collective or not
    # one GPU and no launcher's count above 1: no collective runs, said (info) with when it would matter
    ({"MASTER_PORT": "99999"}, "MASTER_PORT", "99999 is above 65535", "info"),
    ({"WORLD_SIZE": "two"}, "WORLD_SIZE", "'two' is not a whole number", "info"),
    ({"RANK": "-1", "WORLD_SIZE": "9" * 5000}, "RANK", "-1 is below 0", "warning"),  # a hostile count, compared as text
])
def test_ranks_that_do_not_fit_are_a_warning(machine: Machine, tmp_path: Path, env: dict[str, str], variable: str,
                                            words: str, severity: str) -> None:
    """Read only by a program that starts torch.distributed or picks its GPU by LOCAL_RANK: a warning, never an
    error (the frameworks' own first steps never read them), and never unset alone by --deep's bisection."""
    torch_machine(machine, tmp_path)
    machine.env.update(env)
    report = check(machine)
    warned = finding(report, "CD414")
    assert warned["subject"] == variable and warned["severity"] == severity and words in warned["detail"], warned
    assert "error" not in {f["severity"] for f in report["findings"] if f["subject"] == variable}
    from cudnn_doctor.knowledge.environment import bisected

    assert variable not in bisected(machine.env)
    if severity == "warning":
        closed_loop(machine, "CD414", variable)
    else:  # what is only said is not the plan's to change
        assert not any(variable in line for line in plan_lines(machine))


def test_local_rank_is_judged_against_the_gpus_cuda_visible_devices_leaves(machine: Machine, tmp_path: Path) -> None:
    """Two GPUs: LOCAL_RANK=1 is the second; with CUDA_VISIBLE_DEVICES=1 a program sees one, and cuda:1 is gone."""
    torch_machine(machine, tmp_path, gpus=2)
    machine.env["LOCAL_RANK"] = "1"
    assert not settings_findings(check(machine), "LOCAL_RANK")
    machine.env["CUDA_VISIBLE_DEVICES"] = "1"
    warned = finding(check(machine), "CD414")
    assert warned["subject"] == "LOCAL_RANK" and "the 1 GPU a program started here sees" in warned["detail"]


def test_a_transfer_guard_word_is_asked_of_the_installed_jaxs_definition(machine: Machine, jax_site: Path) -> None:
    """The row's words are the data's; a word it lacks is asked of the installed jax's config.py (optional_enum_state's
    enum_values): the real 0.4.38 refuses 'deny' at import, so it is an error with that file as its rule."""
    machine.env["JAX_TRANSFER_GUARD"] = "deny"
    report = check(machine)
    refused = finding(report, "CD411")
    assert refused["subject"] == "JAX_TRANSFER_GUARD" and refused["severity"] == "error"
    assert report["process"]["setting_answers"]["JAX_TRANSFER_GUARD"]["values"][:3] == ["allow", "log", "disallow"]
    said = jax_says({"JAX_TRANSFER_GUARD": "deny"}, "import jax")
    assert said.returncode != 0 and "Invalid value" in said.stderr, said.stderr[-600:]
    closed_loop(machine, "CD411", "JAX_TRANSFER_GUARD")


def test_a_transfer_guard_word_a_newer_jax_defines_is_taken(machine: Machine, tmp_path: Path) -> None:
    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    jax_install(site)
    (site / "jax" / "_src").mkdir(parents=True)
    (site / "jax" / "_src" / "config.py").write_text(
        "transfer_guard = optional_enum_state(\n    name='jax_transfer_guard',\n"
        "    enum_values=['allow', 'log', 'disallow', 'log_explicit', 'disallow_explicit', 'warn_once'],\n"
        "    default=None)\n")
    machine.env["JAX_TRANSFER_GUARD"] = "warn_once"
    report = check(machine)
    assert not settings_findings(report, "JAX_TRANSFER_GUARD"), report["findings"]


def test_inductor_and_triton_names_are_asked_of_their_installed_files(machine: Machine, tmp_path: Path) -> None:
    """TORCHINDUCTOR_* and TRITON_* are read by name in Inductor's and Triton's Python files: a name none of them holds
    is read by nobody (CD418, a warning); one they hold, no finding; Triton Inference Server's own, not theirs."""
    site = torch_machine(machine, tmp_path)
    (site / "torch" / "_inductor").mkdir()
    (site / "torch" / "_inductor" / "config.py").write_text(
        'max_autotune = os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE") == "1"\n')
    (site / "triton").mkdir()
    (site / "triton" / "knobs.py").write_text('    debug: env_bool = env_bool("TRITON_DEBUG")\n')
    machine.env.update(TORCHINDUCTOR_MAX_AUTOTUNE="1", TORCHINDUCTOR_MAX_AUTOTUNING="1", TRITON_DEBUG="1",
                       TRITON_DEBUGG="1", TRITON_SERVER_URL="localhost:8000")
    report = check(machine)
    unread = sorted(f["subject"] for f in report["findings"] if f["code"] == "CD418")
    assert unread == ["TORCHINDUCTOR_MAX_AUTOTUNING", "TRITON_DEBUGG"], report["findings"]
    assert all(f["severity"] == "warning" for f in report["findings"] if f["code"] == "CD418")
    assert "TRITON_SERVER_URL" not in report["process"]["settings"]
    closed_loop(machine, "CD418", "TRITON_DEBUGG")


@pytest.mark.parametrize(("variable", "target", "problem"), [
    ("TRITON_PTXAS_PATH", "missing/ptxas", "does not exist"),
    ("TRITON_LIBCUDA_PATH", "missing", "does not exist"),
    ("TRITON_LIBCUDA_PATH", "empty", "holds no libcuda.so"),  # Triton links its launcher against it there alone
    ("TRITON_HOME", "file/home", "is not a folder"),
    # TMPDIR naming no folder is not here: Python's tempfile skips it for the next candidate (TMP, then /tmp), so
    # Inductor's cache folder is made there and nothing fails (round seventeen, k23: tests/test_evidence_round17.py)
])
def test_tritons_paths_and_the_temporary_folder_inductor_caches_in(machine: Machine, tmp_path: Path, variable: str,
                                                                   target: str, problem: str) -> None:
    torch_machine(machine, tmp_path)
    (tmp_path / "file").write_text("a file\n")
    (tmp_path / "empty").mkdir()
    machine.env[variable] = str(tmp_path / target)
    made = finding(check(machine), "CD417")
    assert made["subject"] == variable and made["severity"] == "warning" and problem in made["detail"], made
    assert "Triton" in made["detail"] or "Inductor" in made["detail"]
    closed_loop(machine, "CD417", variable)


@pytest.mark.parametrize("where", ["/proc", "/proc/inductor-cache"])
def test_a_folder_access_allows_but_where_nothing_can_be_made_is_said(machine: Machine, tmp_path: Path,
                                                                      where: str) -> None:
    """/proc is writable to access(2) for root, and no file or folder can be made there: TMPDIR=/proc failed JAX's
    first convolution on an H100 ('Unable to write PTX contents to: /proc/tempfile-...'). Asked by making one."""
    torch_machine(machine, tmp_path)
    variable = "TMPDIR" if where == "/proc" else "TORCHINDUCTOR_CACHE_DIR"
    machine.env[variable] = where
    made = finding(check(machine), "CD417")
    assert made["subject"] == variable and "can be made in /proc" in made["detail"], made
    closed_loop(machine, "CD417", variable)


def test_a_usable_temporary_folder_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    torch_machine(machine, tmp_path)
    machine.env["TMPDIR"] = str(tmp_path)
    assert not settings_findings(check(machine), "TMPDIR")


def test_a_libcuda_folder_for_triton_that_holds_it_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    torch_machine(machine, tmp_path)
    (tmp_path / "libcuda").mkdir()
    (tmp_path / "libcuda" / "libcuda.so").symlink_to("libcuda.so.1")  # as a driver's folder holds it
    (tmp_path / "libcuda" / "libcuda.so.1").write_bytes(b"")
    machine.env["TRITON_LIBCUDA_PATH"] = str(tmp_path / "libcuda")
    assert not settings_findings(check(machine), "TRITON_LIBCUDA_PATH")


@pytest.mark.parametrize("variable", ["CUDA_DEVICE_MAX_CONNECTIONS", "CUDNN_LOGLEVEL_DBG", "TF_CPP_MIN_LOG_LEVEL",
                                      "WORLD_SIZE"])
def test_a_whole_number_of_thousands_of_digits_is_judged_not_a_traceback(machine: Machine, tmp_path: Path,
                                                                        variable: str) -> None:
    """Python's int() refuses more than 4300 digits: a value of 5000 is taken as beyond every bound (clipped where
    its reader clips), and every other setting is still judged."""
    torch_machine(machine, tmp_path)
    machine.env.update({variable: "9" * 5000, "RANK": "-1"})
    report = check(machine)
    assert finding(report, "CD414")["subject"] in ("RANK", variable)
    assert "RANK" in {f["subject"] for f in report["findings"]}, report["findings"]


def test_a_share_the_platform_allocator_does_not_use_is_not_judged(machine: Machine, jax_site: Path) -> None:
    """XLA_PYTHON_CLIENT_ALLOCATOR=platform allocates each buffer on demand: no pool, so no share starves it."""
    machine.env.update(XLA_CLIENT_MEM_FRACTION=".001", XLA_PYTHON_CLIENT_ALLOCATOR="platform")
    assert not settings_findings(check(machine), "XLA_CLIENT_MEM_FRACTION")
