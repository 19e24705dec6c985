"""Settings a framework's own installed files refuse (issue 45, round eleven): JAX's options as its files define
them (int_state, bool_env, int_env, enum_class_state; a *_flag reads no variable), the folder JAX_DUMP_IR_TO names,
which the installed jax makes at its first compilation, and JAX_PJRT_CLIENT_CREATE_OPTIONS as its parser and its CUDA
plugin take it. Each refusal is proven against the real jax 0.4.38 on the CPU where it can be (its import, its first
compilation, its parser called as the CUDA plugin's factory calls it), the values it takes stay silent, and the
plan's lines sourced in bash leave check clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_doctor.model import Framework
from cudnn_doctor.probes.settings import jax_options
from tests.conftest import Machine, codes
from tests.fakes.build import compile_library
from tests.jax_programs import run_jax_program
from tests.real_wheels import real_jax_cpu
from tests.test_environment_settings import check, closed_loop, import_jax_with, real_jax_site, settings_findings
from tests.test_process_env import finding

__all__ = ["real_jax_site"]  # the fixture, used by name


def run_jax_with(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    """CODE run by the real jax (0.4.38, CPU) with ENV."""
    whole = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(real_jax_cpu()), "JAX_PLATFORMS": "cpu", **env}
    return run_jax_program(whole, code)  # forked before `import jax` where ENV allows (tests/jax_programs.py)


COMPILE = "import jax; print(jax.jit(lambda x: x + 1)(1.0))"  # the first compilation every JAX program reaches


def filled_jax_cache(tmp_path: Path) -> tuple[dict[str, str], list[Path]]:
    """A JAX persistent cache under TMP_PATH written by one real compilation (every entry kept): the variables that
    name it, and its entries."""
    cache = tmp_path / "jax-cache"
    fill = {"JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}
    assert run_jax_with(fill, COMPILE).returncode == 0
    entries = [p for p in cache.iterdir() if p.name.endswith("-cache")]
    assert entries, list(cache.iterdir())
    return fill, entries


# --- JAX's options: the definition, wherever it is, and the parser that reads the variable --------------------------

@pytest.mark.parametrize(("variable", "value", "jax_says"), [
    ("JAX_COMPILATION_CACHE_MAX_SIZE", "", 'Invalid value "" for JAX flag jax_compilation_cache_max_size'),  # empty
    ("JAX_COMPILATION_CACHE_MAX_SIZE", "0x10", 'Invalid value "0x10" for JAX flag'),  # int() takes no base prefix
    ("JAX_TRACER_ERROR_NUM_TRACEBACK_FRAMES", "ten", "invalid literal for int() with base 10: 'ten'"),  # int_env
    ("JAX_DISABLE_MOST_OPTIMIZATIONS", " true", "invalid truth value ' true' for environment"),  # bool_env, no strip
    ("JAX_LOG_COMPILES", "", "invalid truth value '' for environment 'JAX_LOG_COMPILES'"),  # bool_state, empty
    ("JAX_TRACEBACK_FILTERING", "", 'Invalid value "" for JAX flag jax_traceback_filtering'),  # enum_state, empty
])
def test_a_value_the_installed_jax_refuses_at_import_is_an_error_with_its_rule(
        machine: Machine, real_jax_site: Path, variable: str, value: str, jax_says: str) -> None:
    machine.env[variable] = value
    report = check(machine)
    refused = finding(report, "CD411")
    assert refused["subject"] == variable and refused["severity"] == "error" and refused["evidence"] == "rule"
    assert jax_says.split(" for ")[0].split(":")[0] in refused["detail"], refused["detail"]
    said = import_jax_with(variable, value)  # the rule, proven against the real jax
    assert said.returncode != 0 and jax_says in said.stderr, said.stderr[-600:]
    closed_loop(machine, "CD411", variable)


@pytest.mark.parametrize(("variable", "value"), [
    ("JAX_COMPILATION_CACHE_MAX_SIZE", " 7 "),  # int() strips white space
    ("JAX_COMPILATION_CACHE_MAX_SIZE", "+7"),
    ("JAX_COMPILATION_CACHE_MAX_SIZE", "-1"),
    ("JAX_COMPILATION_CACHE_MAX_SIZE", "1_000"),  # Python's int() takes underscores between digits
    ("JAX_COMPILATION_CACHE_MAX_SIZE", "\u0663"),  # and other scripts' digits (ARABIC-INDIC THREE)
    ("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "1e-3"),  # float_state
    ("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", " inf "),
    ("JAX_LOG_COMPILES", "TRUE"),  # bool_state lowers the case
    ("JAX_DISABLE_MOST_OPTIMIZATIONS", "Off"),
    ("JAX_TRACER_ERROR_NUM_TRACEBACK_FRAMES", " 12"),
    ("JAX_CPU_ENABLE_ASYNC_DISPATCH", "maybe"),  # a bool_flag with a plain default: no file reads the variable
    ("JAX_COORDINATOR_ADDRESS", ""),  # read with os.environ.get: any text
])
def test_values_the_installed_jax_takes_are_no_finding(machine: Machine, real_jax_site: Path, variable: str,
                                                       value: str) -> None:
    machine.env[variable] = value
    report = check(machine)
    assert not settings_findings(report, variable), report["findings"]
    said = import_jax_with(variable, value)
    assert said.returncode == 0, said.stderr[-600:]


def jax_tree(tmp_path: Path, files: dict[str, str]) -> Framework:
    """A jax whose jax/_src holds the real jax 0.4.38's config.py and FILES (name -> text)."""
    site = tmp_path / "site"
    (site / "jax" / "_src").mkdir(parents=True)
    shutil.copy(real_jax_cpu() / "jax" / "_src" / "config.py", site / "jax" / "_src" / "config.py")
    for name, text in files.items():
        (site / "jax" / "_src" / name).write_text(text)
    return Framework("jax", "0.11.1", None, None, None, "site-packages", details={"site_packages": str(site)})


def test_an_option_is_its_definition_not_the_first_file_that_names_it(tmp_path: Path) -> None:
    """jax 0.11 defines jax_num_cpu_devices in xla_bridge.py (int_state), and test_util.py, earlier in the folder,
    names it in a config.update call: the definition decides (round ten's s10-jax-int-empty was missed so)."""
    jax = jax_tree(tmp_path, {
        "test_util.py": 'config.update("jax_num_cpu_devices", nr_devices)\n',
        "xla_bridge.py": 'num_cpu_devices = config.int_state(\n    name="jax_num_cpu_devices",\n    default=-1,\n)\n',
    })
    answer = jax_options(["JAX_NUM_CPU_DEVICES"], [jax])["JAX_NUM_CPU_DEVICES"]
    assert answer.kind == "integer" and answer.files[0].endswith("xla_bridge.py")


ENUM_CLASS = '''
class LegacyPrngKeyState(enum.StrEnum):
  ALLOW = 'allow'
  WARN = 'warn'
  ERROR = 'error'

legacy_prng_key = enum_class_state(
    name='jax_legacy_prng_key',
    enum_class=LegacyPrngKeyState,
    default=LegacyPrngKeyState.ALLOW,
    help='...')

class RuntimeTracebackMode(enum.StrEnum):
  OFF = 'off'
  ON = 'on'

  @classmethod
  def _missing_(cls, value):
    return cls[value.upper()]

send_traceback_to_runtime = enum_class_state(
    name='jax_send_traceback_to_runtime',
    enum_class=RuntimeTracebackMode,
    default=RuntimeTracebackMode.OFF,
    help='...')

class ExplicitX64Mode(enum.IntEnum):
  WARN = enum.auto()

explicit_x64_dtypes = enum_class_state(
    name='jax_explicit_x64_dtypes',
    enum_class=ExplicitX64Mode,
    default=ExplicitX64Mode.WARN,
    help='...')
'''


def test_an_enum_class_option_takes_its_classs_values_and_one_with_other_lookups_is_not_judged(
        tmp_path: Path) -> None:
    """jax 0.11's enum_class_state: enum_class(value), so a StrEnum's values exactly; a class with _missing_ (other
    spellings taken) or members that are not quoted text is left unjudged (any text: no false alarm)."""
    jax = jax_tree(tmp_path, {"options.py": ENUM_CLASS})
    names = ["JAX_LEGACY_PRNG_KEY", "JAX_SEND_TRACEBACK_TO_RUNTIME", "JAX_EXPLICIT_X64_DTYPES"]
    answers = jax_options(names, [jax])
    assert (answers["JAX_LEGACY_PRNG_KEY"].kind, answers["JAX_LEGACY_PRNG_KEY"].values) == \
        ("enum", ("allow", "warn", "error"))
    assert answers["JAX_SEND_TRACEBACK_TO_RUNTIME"].kind == "string"
    assert answers["JAX_EXPLICIT_X64_DTYPES"].kind == "string"


# --- JAX_DUMP_IR_TO: the folder the installed jax makes at its first compilation ------------------------------------

def test_a_dump_folder_jax_cannot_make_is_an_error_with_its_rule_and_unset_cures_it(
        machine: Machine, real_jax_site: Path, tmp_path: Path) -> None:
    """A regular file where JAX makes the folder (round ten's s10-jax-dump-ir-file): the real jax 0.4.38 raises
    FileExistsError at its first compilation, as 0.11 did on an H100."""
    dump = tmp_path / "dump.mlir"
    dump.write_text("// an earlier dump\n")
    machine.env["JAX_DUMP_IR_TO"] = str(dump)
    report = check(machine)
    refused = finding(report, "CD411")
    assert refused["subject"] == "JAX_DUMP_IR_TO" and refused["severity"] == "error" and refused["evidence"] == "rule"
    assert "is not a folder" in refused["detail"] and "jax/_src/interpreters/mlir.py" in refused["proof"]
    said = run_jax_with({"JAX_DUMP_IR_TO": str(dump)}, COMPILE)
    assert said.returncode != 0 and "FileExistsError" in said.stderr, said.stderr[-600:]
    closed_loop(machine, "CD411", "JAX_DUMP_IR_TO")


@pytest.mark.parametrize("where", ["sponge", "sponge-file", "unmakeable"])
def test_the_other_dump_folders_jax_refuses(machine: Machine, real_jax_site: Path, tmp_path: Path,
                                            where: str) -> None:
    """'sponge' without TEST_UNDECLARED_OUTPUTS_DIR (or naming a file), and a folder under one nobody can write in."""
    env = {"sponge": {"JAX_DUMP_IR_TO": "sponge"},
           "sponge-file": {"JAX_DUMP_IR_TO": "sponge", "TEST_UNDECLARED_OUTPUTS_DIR": str(tmp_path / "a-file")},
           "unmakeable": {"JAX_DUMP_IR_TO": "/proc/cudnn-doctor-nowhere/ir", "JAX_DUMP_IR_MODES": "jaxpr"}}[where]
    (tmp_path / "a-file").write_text("")
    machine.env.update(env)
    refused = finding(check(machine), "CD411")
    assert refused["subject"] == "JAX_DUMP_IR_TO" and refused["severity"] == "error"
    if where == "sponge":
        assert "TEST_UNDECLARED_OUTPUTS_DIR is not set" in refused["detail"]
    said = run_jax_with(env, COMPILE)
    assert said.returncode != 0 and ("Error" in said.stderr), said.stderr[-600:]


@pytest.mark.parametrize("value", ["", "folder", "sponge", "gs://bucket/ir"])
def test_dump_folders_jax_takes_are_no_finding(machine: Machine, real_jax_site: Path, tmp_path: Path,
                                               value: str) -> None:
    env = {"JAX_DUMP_IR_TO": str(tmp_path / "ir") if value == "folder" else value}
    if value == "sponge":
        env["TEST_UNDECLARED_OUTPUTS_DIR"] = str(tmp_path / "outputs")
    machine.env.update(env)
    assert not settings_findings(check(machine), "JAX_DUMP_IR_TO")
    if value != "gs://bucket/ir":  # a URL is its path library's (etils), not installed with the CPU jax here
        said = run_jax_with(env, COMPILE)
        assert said.returncode == 0, said.stderr[-600:]


# --- JAX_PJRT_CLIENT_CREATE_OPTIONS: its parser, and the CUDA plugin that gets every value as text -----------------

PARSE = "from jax._src import xla_bridge; print(sorted(xla_bridge._options_from_jax_configs('cuda')))"


def with_cuda_plugin(site: Path, *options: str) -> None:
    """The CUDA plugin's library in the jax site, holding OPTIONS as its strings."""
    library = compile_library("fake_pjrt_plugin.c", "xla_cuda_plugin.so",
                              {"OPTIONS": ",".join(f'"{name}"' for name in options)})
    (site / "jax_plugins" / "xla_cuda12").mkdir(parents=True)
    shutil.copy(library, site / "jax_plugins" / "xla_cuda12" / "xla_cuda_plugin.so")


@pytest.mark.parametrize("value", ["platform_name:cuda:0", "preallocate", "allocator:cuda_async;", ";"])
def test_an_entry_jaxs_own_parser_refuses_is_an_error_with_its_rule(machine: Machine, real_jax_site: Path,
                                                                    value: str) -> None:
    with_cuda_plugin(real_jax_site, "platform_name", "allocator")
    machine.env["JAX_PJRT_CLIENT_CREATE_OPTIONS"] = value
    refused = finding(check(machine), "CD411")
    assert refused["severity"] == "error" and refused["evidence"] == "rule" and "xla_bridge.py" in refused["proof"]
    assert "is not of the form key:value" in refused["detail"] or "are not of the form" in refused["detail"]
    said = run_jax_with({"JAX_PJRT_CLIENT_CREATE_OPTIONS": value}, PARSE)  # the factory's own call
    assert said.returncode != 0 and "Multiple ':' separators" in said.stderr, said.stderr[-600:]
    closed_loop(machine, "CD411", "JAX_PJRT_CLIENT_CREATE_OPTIONS")


@pytest.mark.parametrize(("value", "words", "kept"), [
    ("preallocate:false", "has type index 0 but expected type index is 4", None),
    ("visible_devices:0", "expected type index is 2'); CUDA_VISIBLE_DEVICES sets it", None),
    ("allocater:cuda_async", "Unexpected option name passed to PJRT_Client_Create: allocater", None),
    ("allocator:async", "allocator:'async' is not one of default, platform, bfc, cuda_async", None),
    ("platform_name:cuda;memory_fraction:.5", "name memory_fraction has type index 0", "platform_name:cuda"),
])
def test_an_option_the_cuda_plugin_refuses_as_text_is_a_warning_deep_proves(
        machine: Machine, real_jax_site: Path, value: str, words: str, kept: str | None) -> None:
    """The plugin's own check (XLA's ValidateCreateOptions) is in its library, not in a file this reads: a warning,
    in the words round ten's H100 saw, and the fix keeps the entries the plugin takes."""
    with_cuda_plugin(real_jax_site, "platform_name", "allocator", "memory_fraction", "preallocate", "visible_devices")
    machine.env["JAX_PJRT_CLIENT_CREATE_OPTIONS"] = value
    warned = finding(check(machine), "CD411")
    assert warned["severity"] == "warning" and warned["evidence"] == "read" and words in warned["detail"]
    assert "check --deep" in warned["detail"]
    said = run_jax_with({"JAX_PJRT_CLIENT_CREATE_OPTIONS": value}, PARSE)  # jax's parser passes it on, as text
    assert said.returncode == 0, said.stderr[-600:]
    closed_loop(machine, "CD411", "JAX_PJRT_CLIENT_CREATE_OPTIONS")
    if kept:
        from tests.test_process_env import plan_lines
        assert f"export JAX_PJRT_CLIENT_CREATE_OPTIONS={kept}" in plan_lines(machine)


@pytest.mark.parametrize("value", ["", "allocator:cuda_async", "platform_name:cuda;allocator:bfc", "newer_option:1"])
def test_options_the_plugin_takes_are_no_finding(machine: Machine, real_jax_site: Path, value: str) -> None:
    """Empty (no options), string options of values it takes, and a name the data does not list that the installed
    plugin's library holds (a newer plugin's option)."""
    with_cuda_plugin(real_jax_site, "platform_name", "allocator", "newer_option")
    machine.env["JAX_PJRT_CLIENT_CREATE_OPTIONS"] = value
    assert not settings_findings(check(machine), "JAX_PJRT_CLIENT_CREATE_OPTIONS")


def test_without_a_cuda_plugin_no_gpu_client_gets_the_options(machine: Machine, real_jax_site: Path) -> None:
    """The CPU jax alone never parses them (its CPU client takes none): nothing to say."""
    machine.env["JAX_PJRT_CLIENT_CREATE_OPTIONS"] = "platform_name:cuda:0"
    assert "CD411" not in codes(check(machine))
    assert run_jax_with({"JAX_PJRT_CLIENT_CREATE_OPTIONS": "platform_name:cuda:0"}, COMPILE).returncode == 0


# --- a variable JAX's code gives to int() inside a function: a program that calls it refuses it ----------------------

DISTRIBUTED = '''
def initialize(coordinator_address=None, local_device_ids=None, partition_index=None):
    coordinator_address = (coordinator_address or
                           os.environ.get('JAX_COORDINATOR_ADDRESS'))
    if local_device_ids is None and (env_ids := os.environ.get('JAX_LOCAL_DEVICE_IDS')):
      local_device_ids = list(map(int, env_ids.split(",")))
    if partition_index is None:
      jax_partition_index = os.environ.get('JAX_PARTITION_INDEX')
      if jax_partition_index is not None:
        partition_index = int(jax_partition_index)
    return local_device_ids, partition_index
'''


def test_a_variable_parsed_by_int_inside_a_function_is_read_so(tmp_path: Path) -> None:
    """jax 0.11's jax/_src/distributed.py (its initialize(), as it is): JAX_LOCAL_DEVICE_IDS a list of whole
    numbers split at ',', JAX_PARTITION_INDEX one, both when a program calls it; JAX_COORDINATOR_ADDRESS any text.
    The code is also run here as Python runs it, with the values the rule takes and refuses."""
    jax = jax_tree(tmp_path, {"distributed.py": "import os\n" + DISTRIBUTED})
    answers = jax_options(["JAX_LOCAL_DEVICE_IDS", "JAX_PARTITION_INDEX", "JAX_COORDINATOR_ADDRESS"], [jax])
    assert answers["JAX_LOCAL_DEVICE_IDS"].values == ("int()", "list:,", "when used")
    assert answers["JAX_PARTITION_INDEX"].values == ("int()", "when used")
    assert answers["JAX_COORDINATOR_ADDRESS"].kind == "string"
    code = "import os\n" + DISTRIBUTED + "\nprint(initialize())"
    for ids, index, fails in (("0, 1", " 2", False), ("0;1", "2", True), ("0", "two", True)):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                              env={"JAX_LOCAL_DEVICE_IDS": ids, "JAX_PARTITION_INDEX": index})
        assert (done.returncode != 0) == fails and (not fails or "ValueError" in done.stderr), done.stderr


@pytest.mark.parametrize(("value", "warned"), [("0;1", True), ("0, 1", False), ("", False)])
def test_a_list_jax_refuses_when_used_is_a_warning_and_unset_cures_it(machine: Machine, real_jax_site: Path,
                                                                       value: str, warned: bool) -> None:
    """Against the real jax 0.4.38's files (its distributed.py reads JAX_LOCAL_DEVICE_IDS so too)."""
    machine.env["JAX_LOCAL_DEVICE_IDS"] = value
    report = check(machine)
    found = settings_findings(report, "JAX_LOCAL_DEVICE_IDS")
    assert bool(found) == warned, found
    if warned:
        assert found[0]["code"] == "CD414" and found[0]["severity"] == "warning"
        assert "inside a function" in found[0]["detail"] and "distributed.py" in found[0]["detail"]
        closed_loop(machine, "CD414", "JAX_LOCAL_DEVICE_IDS")


@pytest.mark.parametrize(("value", "warned"), [("64MB", True), ("64", False), (" 64 ", False)])
def test_an_xla_variable_jaxlib_gives_to_int_is_judged_so(machine: Machine, real_jax_site: Path, value: str,
                                                          warned: bool) -> None:
    """jaxlib's xla_client.py reads XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB and gives it to int() when it makes
    the GPU plugin's options (generate_pjrt_gpu_plugin_options, as the CUDA backend starts): '64MB' raises there,
    as the real jaxlib 0.4.38's function does here; a warning, which a GPU program proves."""
    machine.env["XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB"] = value
    found = settings_findings(check(machine), "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB")
    assert bool(found) == warned, found
    said = run_jax_with({"XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB": value},
                        "from jaxlib import xla_client; print(xla_client.generate_pjrt_gpu_plugin_options())")
    assert (said.returncode != 0) == warned, said.stderr[-600:]
    if warned:
        assert found[0]["code"] == "CD414" and "xla_client.py" in found[0]["detail"]
        assert "invalid literal for int() with base 10" in said.stderr
        closed_loop(machine, "CD414", "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB")


# --- PyTorch: the values its import refuses (benchmarks/torch_setting_refusals.py, torch 2.13.0+cpu) ----------------

@pytest.fixture
def torch_site(machine: Machine, tmp_path: Path) -> Path:
    from tests.test_frameworks import install_torch, python_env
    from tests.test_process_env import gpu_machine

    gpu_machine(machine, tmp_path, gpus=1)
    site = python_env(machine, tmp_path)
    install_torch(site)
    return site


@pytest.mark.parametrize(("variable", "value", "words"), [
    ("PYTORCH_JIT", "off", "'off' is not one of 1, true, yes, 0, false, no, 1v, 0v"),
    ("PYTORCH_JIT", "", "'' is not one of"),
    ("PYTORCH_MATCHER_LOGLEVEL", "verbose", "'verbose' is not one of CRITICAL"),
    ("PYTORCH_MATCHER_LOGLEVEL", "", "'' is not one of"),
    ("TORCH_LOGS_OUT", "", "an empty value, which its reader opens as the working folder"),
])
def test_a_value_torchs_import_refuses_is_an_error_and_unset_cures_it(machine: Machine, torch_site: Path,
                                                                      variable: str, value: str, words: str) -> None:
    machine.env[variable] = value
    refused = finding(check(machine), "CD411")
    assert refused["subject"] == variable and refused["severity"] == "error" and words in refused["detail"], refused
    assert "when it is imported" in refused["detail"]
    closed_loop(machine, "CD411", variable)


@pytest.mark.parametrize(("variable", "value"), [
    ("PYTORCH_JIT", "0"), ("PYTORCH_JIT", "TRUE"), ("PYTORCH_JIT", "No"), ("PYTORCH_JIT", "1v"),
    ("PYTORCH_MATCHER_LOGLEVEL", "info"), ("PYTORCH_MATCHER_LOGLEVEL", "WARN"),
])
def test_values_torch_takes_are_no_finding(machine: Machine, torch_site: Path, variable: str, value: str) -> None:
    machine.env[variable] = value
    assert not settings_findings(check(machine), variable)


# torch 2.11's torch/_logging/_internal.py, the lines an empty TORCH_LOGS goes through (quoted from the wheel)
LOG_STATE = '''
@functools.lru_cache
def _parse_log_settings(settings):
    settings = process_env_var_string_for_windows(settings)

    if settings == "":
        return {}

def _update_log_state_from_env() -> None:
    global log_state
    log_setting = os.environ.get(LOG_ENV_VAR, None)
    if log_setting is not None:
        log_state = _parse_log_settings(log_setting)

def _init_logs(log_file_name=None) -> None:
    for log_qname, level in log_state.get_log_level_pairs():
        log = logging.getLogger(log_qname)
'''


@pytest.mark.parametrize("fixed", [False, True])
def test_an_empty_torch_logs_is_refused_where_torchs_parser_makes_it_a_dict(machine: Machine, tmp_path: Path,
                                                                            fixed: bool) -> None:
    """torch 2.11 and 2.13 turn TORCH_LOGS= into {} and ask it for get_log_level_pairs() at import (AttributeError,
    seen with torch 2.13.0+cpu); a torch whose parser returns a LogState for it is left alone."""
    from tests.test_settings_read_files import torch_here

    site = torch_here(machine, tmp_path)
    text = LOG_STATE.replace("return {}", "return LogState()") if fixed else LOG_STATE
    (site / "torch" / "_logging" / "_internal.py").write_text(text)
    machine.env["TORCH_LOGS"] = ""
    found = settings_findings(check(machine), "TORCH_LOGS")
    assert bool(found) != fixed, found
    if not fixed:
        assert found[0]["code"] == "CD411" and "get_log_level_pairs" in found[0]["detail"]
        closed_loop(machine, "CD411", "TORCH_LOGS")
