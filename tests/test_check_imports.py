"""`check` costs its imports and little more: the modules its output does not need are never imported
(`python -X importtime` lists every module a run imported). Not a timing test: what is imported
is exact, how long it takes is benchmarks/check_speed.py's business."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Machine
from tests.fakes.build import fake_cudnn
from tests.test_check import CUDNN9_SUBLIBS

# what `check --json` never needs on a machine like this one: the text renderer's library, the
# specifier parser (plain releases are judged without it: specifiers.py), the readers of files that are not there (Theano's INI files, Maven's
# XML, Gradle scripts), the TOML parser once the parsed data is cached, helpers of helpers, and shell completion's
# library (argcomplete: only when a shell asks) or any other command-line library than argparse; pathlib, which brings
# urllib.parse and ipaddress (os.path names every file check reads); `platform`, whose import compiles six patterns
# (operating_system.CURRENT.uname gives its machine); the reader of Windows' PE files on Linux; `string`, whose import
# compiles Template's pattern (str.format_map fills a finding's text as string.Formatter did)
NOT_FOR_JSON = ("argcomplete", "typer", "click", "rich", "packaging", "configparser", "xml", "pyexpat", "tomllib", "socket", "secrets", "random",
                "pathlib", "urllib", "ipaddress", "platform",
                "platformdirs", "cudnn_doctor.probes.dl4j", "cudnn_doctor.probes.maven", "cudnn_doctor.probes.gradle",
                "cudnn_doctor.probes.jvm_build", "cudnn_doctor.render.text", "cudnn_doctor.probes.pe",
                "string")


def imported(machine: Machine, *args: str) -> set[str]:
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "cudnn_doctor", *args], capture_output=True,
                            text=True, env=machine.env, cwd=machine.cwd, timeout=120, stdin=subprocess.DEVNULL)
    assert "Traceback" not in result.stderr, result.stderr
    return {line.split("|")[2].strip() for line in result.stderr.splitlines()
            if line.startswith("import time:") and "self [us]" not in line}


def unwanted(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_FOR_JSON))


def test_check_json_imports_nothing_its_output_does_not_need(machine: Machine) -> None:
    imported(machine, "check", "--json")  # the first run parses compat/ and caches it
    modules = imported(machine, "check", "--json")
    assert "cudnn_doctor.probes.collect" in modules and "cudnn_doctor.render.json_out" in modules  # it looked
    assert unwanted(modules) == []


def test_what_is_left_out_is_imported_where_it_is_needed(machine: Machine) -> None:
    imported(machine, "check", "--json")
    assert {"rich", "cudnn_doctor.render.text"} <= imported(machine, "check")  # text is rendered with rich
    (machine.cwd / "pom.xml").write_text("<project><modelVersion>4.0.0</modelVersion></project>\n")
    modules = imported(machine, "check", "--json", "--require", "cudnn>=9.1")
    assert {"cudnn_doctor.probes.maven", "cudnn_doctor.probes.dl4j"} <= modules  # a Maven project is read


def test_plain_release_specifiers_need_no_packaging(machine: Machine) -> None:
    """--require of plain releases and JAX's pin of its cuDNN wheel are judged without packaging; a spec
    with a wildcard is packaging's."""
    args = ("check", "--json", "--require", "cudnn>=9.1,<10", "--require", "driver>=550", "--framework", "jax==0.7.1")
    imported(machine, *args)  # the first run caches the tables it parses
    plain = imported(machine, *args)
    assert "cudnn_doctor.specifiers" in plain and unwanted(plain) == []
    assert "packaging.specifiers" in imported(machine, "check", "--json", "--require", "cuda==12.*")


def test_a_framework_beside_pythonpath_costs_no_platform_module(machine: Machine) -> None:
    """torch installed where PYTHONPATH also names folders (the stray-module search of probes/process_env then asks
    which compiled-module names that Python takes): the machine's name comes from os.uname, not from `platform`."""
    site = machine.cwd / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "version.py").write_text("__version__ = '2.11.0+cu130'\ncuda = '13.0'\n")
    (site / "torch-2.11.0+cu130.dist-info").mkdir()
    (site / "torch-2.11.0+cu130.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\n"
                                                                      "Version: 2.11.0+cu130\n")
    machine.env["PYTHONPATH"] = f"{site}:{machine.env['PYTHONPATH']}"
    imported(machine, "check", "--json")
    modules = imported(machine, "check", "--json")
    assert "cudnn_doctor.probes.process_env" in modules and "platform" not in modules


# each module the check imports and each child it starts, in order (audit events), on stderr
ORDER = r"""
import json, sys
events = []
def hook(event, args):
    if event == "import" and args[0].startswith("cudnn_doctor"):
        events.append(["import", args[0]])
    elif event == "subprocess.Popen":
        events.append(["start", [str(a) for a in args[1]]])
sys.addaudithook(hook)
sys.argv = ["cudnn-doctor", "check", "--json"]
try:
    from cudnn_doctor.entry import main
    main()
finally:
    sys.stderr.write("ORDER " + json.dumps(events) + "\n")
"""


def test_the_cudnn_copies_child_starts_before_the_settings_readers_load(machine: Machine, tmp_path: Path) -> None:
    """What runs before the cuDNN copies' batch child starts is check's critical path: the readers of settings, XLA's
    flags and C++ run-times (used only once the children run: probes/process_env.read_process_view) load after it."""
    for name, version in (("a", 91400), ("b", 91900)):
        fake_cudnn(tmp_path / name, version=version, sublibraries=CUDNN9_SUBLIBS)
        machine.add_library_path(tmp_path / name)
    result = subprocess.run([sys.executable, "-c", ORDER], capture_output=True, text=True, env=machine.env,
                            cwd=machine.cwd, timeout=120, stdin=subprocess.DEVNULL)
    events = json.loads(next(x for x in result.stderr.splitlines() if x.startswith("ORDER "))[6:])
    assert len(json.loads(result.stdout)["cudnn"]) == 2  # both copies probed
    batch = next(i for i, (kind, what) in enumerate(events) if kind == "start" and "batch" in what)
    loaded = {what: i for i, (kind, what) in enumerate(events) if kind == "import"}
    for module in ("cudnn_doctor.probes.settings", "cudnn_doctor.probes.xla_flags", "cudnn_doctor.probes.loader_runtime"):
        assert loaded[module] > batch, module
