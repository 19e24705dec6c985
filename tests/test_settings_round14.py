"""Issue 45, round eleven's second wave: JAX's GPU client and CUDA's choice of devices. The variables jaxlib reads
as the CUDA plugin starts (a size written with its unit, a switch written as a word) are refused where the installed
plugin's initialize() calls the function that parses them: an error whose rule is proven here against the real
jax 0.4.38 (its xla_bridge catches the plugin's ValueError and registers no CUDA backend). Values the real jax takes,
or never reads (JAX_CUDA_VISIBLE_DEVICES, which is a flag and no variable; JAX_SKIP_CUDA_CONSTRAINTS_CHECK, tested
only for being non-empty), stay silent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Machine
from tests.jax_programs import run_jax_program
from tests.real_wheels import real_jax_cpu
from tests.test_environment_settings import check, closed_loop, real_jax_site, settings_findings
from tests.test_process_env import finding

__all__ = ["real_jax_site"]  # the fixture, used by name

# what jax's CUDA plugin does as it starts (jax-ml/jax jax_plugins/cuda/__init__.py initialize(), jax 0.4.38 to
# 0.11: `options = xla_client.generate_pjrt_gpu_plugin_options()` before register_plugin), the rest left out
PLUGIN = "from jax._src.lib import xla_client\n\n\ndef initialize():\n  options = xla_client.generate_pjrt_gpu_plugin_options()\n"


def with_plugin(site: Path) -> Path:
    """SITE with a JAX CUDA plugin package whose initialize() makes the GPU options as the real one does."""
    folder = site / "jax_plugins" / "xla_cuda13"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text(PLUGIN)
    return site


def jax_backends_with(env: dict[str, str], plugin_site: Path) -> subprocess.CompletedProcess[str]:
    """The real jax 0.4.38 (CPU) with ENV and the plugin of PLUGIN_SITE on its path: its backends started."""
    whole = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{real_jax_cpu()}:{plugin_site}", **env}
    code = "import jax; print(jax.devices())"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=whole, timeout=300)


SIZES = [
    ("1GB", True), ("one", True), ("64MB", True), ("64.0", True),  # a unit, a word, a decimal: int() refuses them
    ("64", False), (" 64 ", False), ("+64", False), ("1_024", False), ("", False),  # int() takes these; '' unread
]
SIZE_VARIABLE = "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB"

# each value asked of its own child, forked from one Python that imported jax (its backends not yet started: the
# plugin's initialize() and its read of the variable come with the first jax.devices()), its environment set and its
# standard output and error its own files before it starts them
EACH_FORKED = """import json, os, sys
import jax
for index, value in enumerate(json.loads(sys.argv[1])):
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.environ[sys.argv[2]] = value
        for fd, name in ((1, "out"), (2, "err")):
            file = os.open(os.path.join(sys.argv[3], f"{index}.{name}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(file, fd)
            os.close(file)
        try:
            print(jax.devices(), flush=True)
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    with open(os.path.join(sys.argv[3], f"{index}.status"), "w") as handle:
        handle.write(str(os.waitstatus_to_exitcode(status)))
"""


@pytest.fixture(scope="module")
def jax_backends_said(tmp_path_factory: pytest.TempPathFactory) -> list[subprocess.CompletedProcess[str]]:
    """jax_backends_with for every value of SIZES, with one jax import: what the real jax 0.4.38's start of its
    backends says (exit status, output, error) with each value of SIZE_VARIABLE. The answers differ by value (its
    plugin refuses four), so a read of the variable before the fork would fail the tests. One import for the nine
    values (it was one per value, about 1.2 CPU s each)."""
    import json

    work = tmp_path_factory.mktemp("jax-backends")
    site = with_plugin(work / "plugin")
    whole = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{real_jax_cpu()}:{site}"}
    values = [value for value, _ in SIZES]
    parent = subprocess.run([sys.executable, "-c", EACH_FORKED, json.dumps(values), SIZE_VARIABLE, str(work)],
                            capture_output=True, text=True, env=whole, timeout=600)
    assert parent.returncode == 0, parent.stderr[-2000:]
    return [subprocess.CompletedProcess([], int((work / f"{index}.status").read_text()),
                                        (work / f"{index}.out").read_text(), (work / f"{index}.err").read_text())
            for index in range(len(values))]


@pytest.mark.parametrize(("value", "refused"), SIZES)
def test_a_size_the_cuda_plugins_start_refuses_is_an_error_with_its_rule(
        machine: Machine, real_jax_site: Path, jax_backends_said: list[subprocess.CompletedProcess[str]], value: str,
        refused: bool) -> None:
    """jaxlib's generate_pjrt_gpu_plugin_options gives XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB to int(); the CUDA
    plugin's initialize() calls it whatever the program: the refusal leaves JAX on the CPU (proven: the real
    jax 0.4.38 logs 'Jax plugin configuration error' and lists the CPU only)."""
    with_plugin(real_jax_site)
    variable = SIZE_VARIABLE
    machine.env[variable] = value
    report = check(machine)
    found = settings_findings(report, variable)
    said = jax_backends_said[SIZES.index((value, refused))]  # jax_backends_with({variable: value}, ...), forked
    assert said.returncode == 0, said.stderr[-600:]  # jax itself starts: on the CPU
    assert ("Jax plugin configuration error" in said.stderr) == refused, said.stderr[-600:]
    if not refused:
        assert not found, found
        return
    assert "invalid literal for int() with base 10" in said.stderr and "CpuDevice" in said.stdout
    made = finding(report, "CD411")  # the same machine's one check
    assert made["subject"] == variable and made["severity"] == "error" and made["evidence"] == "rule", made
    assert "initialize()" in made["detail"] and "CPU" in made["detail"]
    closed_loop(machine, "CD411", variable)


def test_without_a_plugin_calling_it_the_size_stays_a_warning(machine: Machine, real_jax_site: Path) -> None:
    """No installed plugin calls the function: only a program that does proves it (CD414, read)."""
    machine.env["XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB"] = "1GB"
    made = finding(check(machine), "CD414")
    assert made["severity"] == "warning" and made["evidence"] == "read"


def test_a_plugin_that_calls_it_outside_initialize_is_not_taken_for_the_start(machine: Machine,
                                                                                 real_jax_site: Path) -> None:
    folder = real_jax_site / "jax_plugins" / "xla_cuda13"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("def initialize():\n  pass\n\n\ndef later():\n"
                                        "  return xla_client.generate_pjrt_gpu_plugin_options()\n")
    machine.env["XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB"] = "1GB"
    report = check(machine)
    assert finding(report, "CD414")["severity"] == "warning"


# --- what jax never reads, or reads only for being set ----------------------------------------------------------------

@pytest.mark.parametrize("env", [
    {"JAX_CUDA_VISIBLE_DEVICES": "0 , 1"}, {"JAX_CUDA_VISIBLE_DEVICES": "-1"}, {"JAX_CUDA_VISIBLE_DEVICES": ""},
    {"JAX_CUDA_VISIBLE_DEVICES": "GPU-0a1b2c3d-0000-1111-2222-333344445555"},
    {"JAX_CUDA_VISIBLE_DEVICES": "0;1", "CUDA_VISIBLE_DEVICES": "0"},
    {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "0"}, {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "false"},
    {"JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "yes"},
])
def test_what_jax_does_not_parse_is_no_finding(machine: Machine, real_jax_site: Path, env: dict[str, str]) -> None:
    """jax_cuda_visible_devices is a string_flag with the default 'all' (jax/_src/xla_bridge.py, 0.4.38 to 0.11): no
    variable sets it (only --jax_cuda_visible_devices or jax.config.update), so no form of JAX_CUDA_VISIBLE_DEVICES
    is parsed, and int() never sees it (proven: the real jax keeps 'all'). JAX_SKIP_CUDA_CONSTRAINTS_CHECK is read
    with os.getenv for being non-empty (jax_plugins/cuda/__init__.py): '0' and 'false' skip the check too."""
    machine.env.update(env)
    report = check(machine)
    assert not [f for name in env for f in settings_findings(report, name) if name != "CUDA_VISIBLE_DEVICES"], \
        report["findings"]
    whole = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": "cpu", **env}
    code = "import jax; from jax._src import xla_bridge as xb; print(xb.CUDA_VISIBLE_DEVICES.value); jax.devices()"
    said = run_jax_program(whole, code)  # forked where ENV allows (tests/jax_programs.py)
    assert said.returncode == 0 and said.stdout.split() == ["all"], said.stderr[-600:]


# --- CUDA_VISIBLE_DEVICES: a GPU's UUID in another letter case ----------------------------------------------------

UUID = "GPU-00000000-fa4e-0000-0000-000000000000"  # the fake NVML's GPU 0, as nvidia-smi would print it


@pytest.mark.parametrize("value", [UUID.upper(), "gpu-00000000-fa4e", "GPU-00000000-FA4E"])
def test_a_uuid_in_another_case_the_driver_refuses_is_named_and_the_plan_spells_it_as_nvidia_smi(
        machine: Machine, tmp_path: Path, value: str) -> None:
    """Where cuInit refuses a UUID written in other letters (a driver comparing them as written: the fake's
    uuid_exact; benchmarks/uuid_case_probe.py asks the real one), CD113 is cuInit's own answer (seen), its cause
    says the letter case, and the plan sets the UUID as NVML spells it, which cuInit then takes."""
    from tests.test_process_env import check_after, gpu_machine, plan_lines

    gpu_machine(machine, tmp_path, gpus=1, uuid_exact=True)
    machine.env["CUDA_VISIBLE_DEVICES"] = value
    hidden = finding(check(machine), "CD113")
    assert hidden["evidence"] == "seen" and "only in letter case" in hidden["detail"], hidden
    lines = plan_lines(machine)
    assert f"export CUDA_VISIBLE_DEVICES={UUID[:len(value)]}" in lines, lines
    assert not [f for f in check_after(machine, lines)["findings"] if f["code"] in ("CD113", "CD114")]


def test_a_uuid_in_another_case_the_driver_takes_is_no_finding(machine: Machine, tmp_path: Path) -> None:
    """A driver that takes it (the fake's default, comparing without case): cuInit decides, nothing is said."""
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    machine.env["CUDA_VISIBLE_DEVICES"] = UUID.upper()
    report = check(machine)
    assert not [f for f in report["findings"] if f["subject"] == "CUDA_VISIBLE_DEVICES"], report["findings"]


# --- jaxlib's GPU-client variables as generate_pjrt_gpu_plugin_options reads them ---------------------------------

OPTIONS = "from jaxlib import xla_client; print(xla_client.generate_pjrt_gpu_plugin_options())"


@pytest.mark.parametrize("env", [
    {"XLA_PYTHON_CLIENT_ALLOCATOR": "BFC"}, {"XLA_PYTHON_CLIENT_ALLOCATOR": "Platform"},  # .lower() first
    {"XLA_PYTHON_CLIENT_MEM_FRACTION": ""}, {"XLA_CLIENT_MEM_FRACTION": ""},  # `if value:` before float()
    {"XLA_CLIENT_MEM_FRACTION": "", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"},  # an empty one is no conflict
    {"XLA_PYTHON_CLIENT_MEM_FRACTION": "", "XLA_CLIENT_MEM_FRACTION": ".5"},
    {"XLA_PYTHON_CLIENT_PREALLOCATE": ""}, {"XLA_PYTHON_CLIENT_PREALLOCATE": "0"},
    {"XLA_PYTHON_CLIENT_MEM_FRACTION": " .5 "}, {"XLA_PYTHON_CLIENT_MEM_FRACTION": "1e-1"},
])
def test_gpu_client_values_jaxlib_takes_are_no_finding(machine: Machine, real_jax_site: Path,
                                                       env: dict[str, str]) -> None:
    """Each taken by the real jaxlib 0.4.38's generate_pjrt_gpu_plugin_options (asked here), so nothing is said."""
    machine.env.update(env)
    report = check(machine)
    assert not [f for name in env for f in settings_findings(report, name)], report["findings"]
    whole = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), **env}
    said = run_jax_program(whole, OPTIONS)  # forked: the options are made when called (tests/jax_programs.py)
    assert said.returncode == 0, said.stderr[-600:]


@pytest.mark.parametrize(("env", "subject", "words"), [
    ({"XLA_PYTHON_CLIENT_ALLOCATOR": " bfc"}, "XLA_PYTHON_CLIENT_ALLOCATOR", "env var must be"),  # no strip
    ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "2GB"}, "XLA_PYTHON_CLIENT_MEM_FRACTION", "could not convert string to float"),
    ({"XLA_CLIENT_MEM_FRACTION": ".5", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".5"}, "XLA_PYTHON_CLIENT_MEM_FRACTION",
     "is specified together"),
])
def test_gpu_client_values_jaxlib_refuses_are_errors(machine: Machine, real_jax_site: Path, env: dict[str, str],
                                                     subject: str, words: str) -> None:
    machine.env.update(env)
    made = [f for f in settings_findings(check(machine), subject) if f["severity"] == "error"]
    assert made and made[0]["evidence"] in ("rule", "seen"), made
    whole = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), **env}
    said = run_jax_program(whole, OPTIONS)  # forked: the options are made when called (tests/jax_programs.py)
    assert said.returncode != 0 and words in said.stderr, said.stderr[-600:]


@pytest.mark.parametrize("value", ["no", "off", "FALSE"])
def test_a_preallocate_word_jaxlib_reads_as_true_is_a_warning(machine: Machine, real_jax_site: Path,
                                                              value: str) -> None:
    """jaxlib preallocates for any value but 'false', 'False' and '0' (asked of the real one): not what was meant."""
    machine.env["XLA_PYTHON_CLIENT_PREALLOCATE"] = value
    made = finding(check(machine), "CD414")
    assert made["severity"] == "warning" and made["evidence"] == "read"
    whole = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), "XLA_PYTHON_CLIENT_PREALLOCATE": value}
    said = run_jax_program(whole, OPTIONS)  # forked: the options are made when called (tests/jax_programs.py)
    assert "'preallocate': True" in said.stdout, said.stdout + said.stderr[-400:]


# --- profile-guided latency estimation: JAX's options, as its config.py defines them -------------------------------

@pytest.mark.parametrize(("variable", "value", "refused"), [
    ("JAX_PGLE_PROFILING_RUNS", "three", True), ("JAX_PGLE_PROFILING_RUNS", "3.0", True),
    ("JAX_PGLE_AGGREGATION_PERCENTILE", "90%", True), ("JAX_ENABLE_PGLE", "enabled", True),
    ("JAX_PGLE_PROFILING_RUNS", " 3 ", False), ("JAX_PGLE_AGGREGATION_PERCENTILE", "+90", False),
    ("JAX_ENABLE_PGLE", "Yes", False), ("JAX_ENABLE_PGLE", "on", False),
])
def test_pgle_options_are_judged_by_the_installed_jaxs_definition(machine: Machine, real_jax_site: Path,
                                                                   variable: str, value: str, refused: bool) -> None:
    """jax_enable_pgle is a bool_state, jax_pgle_profiling_runs and jax_pgle_aggregation_percentile int_states
    (jax/_src/config.py): a value their parser refuses stops `import jax` (CD411, rule), the rest are silent."""
    from tests.test_environment_settings import import_jax_with

    machine.env[variable] = value
    report = check(machine)
    said = import_jax_with(variable, value)
    assert (said.returncode != 0) == refused, said.stderr[-600:]
    if not refused:
        assert not settings_findings(report, variable), report["findings"]
        return
    made = finding(report, "CD411")
    assert made["subject"] == variable and made["evidence"] == "rule"
    closed_loop(machine, "CD411", variable)


# --- explain: the same knowledge, read from JAX's own words -------------------------------------------------------

def test_explain_names_the_gpu_client_variable_and_the_plugins_cuda_major(machine: Machine) -> None:
    """JAX's words when jaxlib refuses a GPU-client variable in the CUDA plugin's start (as the real jax 0.4.38
    prints them above): the variable's entry (CD411), not only the plugin's failure; xla_cuda13 names CUDA 13."""
    words = ("ERROR:2026-12-06 jax._src.xla_bridge:497: Jax plugin configuration error: Exception when calling "
             "jax_plugins.xla_cuda13.initialize()\nTraceback (most recent call last):\n  File \"jaxlib/xla_client.py\", "
             "line 254, in generate_pjrt_gpu_plugin_options\nValueError: invalid literal for int() with base 10: "
             "'1GB'\n")
    said = machine.run("explain", input=words, timeout=120)
    assert said.exit_code in (0, 1), said.stderr[-600:]
    assert "CD411 (jax-gpu-client-variable-refused)" in said.stdout, said.stdout
    plugin = machine.run("explain", input=words.split("\n")[0] + "\n", timeout=120)
    assert "CD409" in plugin.stdout and "CUDA 13" in plugin.stdout and "CUDA 1.3" not in plugin.stdout, plugin.stdout
