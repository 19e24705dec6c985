"""The layers of DESIGN.md, held: every import of the package (at module level or inside a function, read from
the source's syntax tree) goes to its own unit or to a unit of a lower layer, and units of one layer never
import each other. A unit is a package (probes, rules, ...) or a top-level module (codes.py, child.py, ...)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_architecture import _cycles, _imports, syntax_tree

PACKAGE = Path(__file__).resolve().parents[1] / "cudnn_doctor"

# bottom to top (DESIGN.md, "Layers"): a unit imports only units of lower layers
LAYERS: tuple[tuple[str, ...], ...] = (
    ("operating_system", "_cache_loader", "records", "halving", "compressed", "_proc_maps"),  # _proc_maps: the one
    # reader of /proc/self/maps, which the doctor imports and every child script loads from its file; compressed: gzip/xz/bzip2 read as
    # their tools read them, for image and install; what differs between Linux and Windows (signals, children, open
    # flags); the finder that reads a damaged .pyc of the package from its source; `record`, the dataclass with shared
    # methods the records and tables are made with: none imports anything of the package
    ("errors", "options", "versions", "specifiers", "user_files", "json_values", "cudnn_files", "elf", "signals",
     "quoting", "limits", "__init__"),
    ("streams", "variables"),  # variables: every CUDNN_DOCTOR_* number or choice, checked one way
    ("model", "child", "cache"),
    ("knowledge",),  # compat/ read and queried: releases, layouts per OS, each code's advice
    ("codes",),  # the finding registry: its text, and an error's advice from knowledge
    ("selection",),
    ("settings",),
    ("probes", "install", "bench", "fleet"),  # what reads or changes the machine; none imports another
    ("image",),  # a container image read without running it: its frameworks through probes', registries over install's HTTP
    ("rules", "explain"),  # judgements: report or facts -> findings
    ("plan",),  # findings -> the one treatment; the only author of a finding's fix
    ("render",),
    ("doctor",),  # the use-cases: diagnose, treat, install, image; what check, fix and explain share
    ("runner", "usage_errors"),  # how every command runs
    ("commands",),  # one thin module per command: parse, call one use-case, render
    ("completion",),  # the values options complete to, some from the commands
    ("cli",),
    ("entry",),
    ("__main__",),
)
# children started as scripts: the standard library only
STANDALONE = ("_job_child", "_probe_jobs", "_deep_child", "_load_jobs", "_allreduce_child", "_python_child", "_child_stdio",
              "schemas")


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of() -> dict[str, int]:
    return {unit: number for number, units in enumerate(LAYERS) for unit in units}


def unit_graph() -> dict[str, dict[str, list[str]]]:
    """Unit -> the other units it imports -> the module imports that do it."""
    graph: dict[str, dict[str, list[str]]] = {}
    for module, targets in _imports().items():
        for target in targets:
            if unit_of(module) != unit_of(target):
                graph.setdefault(unit_of(module), {}).setdefault(unit_of(target), []).append(f"{module} -> {target}")
    return graph


def arrows_against(layers: dict[str, int], graph: dict[str, dict[str, list[str]]]) -> list[str]:
    """Every import that goes up a layer, or sideways between two units of one layer."""
    wrong = []
    for unit, targets in graph.items():
        if unit in STANDALONE:  # what a child script may import: test_the_standalone_children_import_nothing_of_the_package
            continue
        for target, imports in targets.items():
            if layers[target] >= layers[unit]:
                wrong += [f"{line} ({'up' if layers[target] > layers[unit] else 'sideways'})" for line in imports]
    return sorted(wrong)


def test_every_unit_of_the_package_has_its_layer() -> None:
    units = {unit_of(module) for module in _imports()}
    assert units - set(STANDALONE) == set(layer_of())


def test_no_import_goes_up_a_layer_or_sideways() -> None:
    assert arrows_against(layer_of(), unit_graph()) == []


def test_no_tangle_between_packages() -> None:
    graph = {unit: set(targets) for unit, targets in unit_graph().items()}
    for unit in layer_of():
        graph.setdefault(unit, set())
    assert _cycles(graph) == []


def test_the_standalone_children_import_nothing_of_the_package() -> None:
    for name in ("_job_child", "_probe_jobs", "_deep_child", "_load_jobs", "_allreduce_child", "_python_child", "_child_stdio"):
        tree = syntax_tree(PACKAGE / f"{name}.py")
        imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert not [name for name in imported if name.startswith("cudnn_doctor")], name
        ours = {path.stem for path in PACKAGE.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
        beside = {module.split(".")[0] for module in imported} & ours
        assert beside <= {"_proc_maps"}, (name, beside)  # the one module of the folder every child loads


def test_no_command_module_imports_another() -> None:
    """A command parses, calls one use-case and renders: what two commands share lives on the floor below
    (cudnn_doctor/doctor/), never in one of them."""
    sideways = sorted(f"{module} -> {target}" for module, targets in _imports().items()
                      if module.startswith("cudnn_doctor.commands.") for target in targets
                      if target.startswith("cudnn_doctor.commands.") and target != module)
    assert sideways == []


def test_errors_imports_nothing_of_the_package() -> None:
    assert unit_graph().get("errors", {}) == {}


@pytest.mark.parametrize(("graph", "wrong"), [
    ({"probes": {"rules": ["cudnn_doctor.probes.x -> cudnn_doctor.rules.y"]}}, "up"),
    ({"probes": {"install": ["cudnn_doctor.probes.x -> cudnn_doctor.install.y"]}}, "sideways"),
])
def test_the_contract_sees_a_wrong_arrow(graph: dict[str, dict[str, list[str]]], wrong: str) -> None:
    [found] = arrows_against(layer_of(), graph)
    assert found.endswith(f"({wrong})")


def test_the_contract_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    """A lazy import counts as much as one at the top: the graph is read from every import statement."""
    graph = _imports()
    assert "cudnn_doctor.render.formats" in graph["cudnn_doctor.cli"]  # imported inside cli._help_of only


def test_the_plan_alone_writes_a_findings_fix() -> None:
    """Only plan/fixes.py gives a Finding its fix (codes.py makes each with an empty one, and an error's
    line with its remedy): no rule, renderer or command sets `fix=` on a Finding or through `replace`."""
    writers = []
    for path in PACKAGE.rglob("*.py"):
        tree = syntax_tree(path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("Finding", "replace") and any(keyword.arg == "fix" for keyword in node.keywords):
                writers.append(str(path.relative_to(PACKAGE)))
    assert sorted(set(writers)) == ["codes.py", "plan/fixes.py"]
