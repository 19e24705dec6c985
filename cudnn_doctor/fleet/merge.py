"""Many nodes' `check --json` reports, merged: for each field that matters, the majority value
and the nodes that differ from it. Nodes that agree are not mentioned.

The reports may come from anywhere (a Slurm job, a Kubernetes DaemonSet writing to a shared
volume, Ansible); each is a file read as hostile: a FIFO, a huge file, broken JSON or another
program's output makes that node "failed", with the reason, never the whole merge.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudnn_doctor.errors import DoctorError
from cudnn_doctor.user_files import UnreadableFile, read_user_file

FLEET_SCHEMA = "cudnn-doctor/fleet/1"
REPORT_SCHEMA = "cudnn-doctor/report/1"
MAX_REPORT_BYTES = 16 * 1024 * 1024  # a report is a few KiB; anything this big is not one
MAX_REPORTS = 100_000
ABSENT = "(absent)"


@dataclass(frozen=True)
class NodeReport:
    node: str
    source: str  # the file it came from
    report: dict[str, Any] | None = None
    failure: str | None = None  # why this node has no usable report


@dataclass(frozen=True)
class Outlier:
    node: str
    value: str


@dataclass(frozen=True)
class Drift:
    field: str
    majority: str
    majority_nodes: int
    outliers: tuple[Outlier, ...]
    tie: bool = False  # no value has more nodes than every other: the "majority" is the first of the tied


@dataclass
class FleetResult:
    nodes: int
    failed: list[NodeReport] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed or self.drift else 0


# --- reading -----------------------------------------------------------------------------------
def report_files(paths: list[str]) -> list[Path]:
    """The report files PATHS name: files as given, folders' *.json (not recursive), sorted."""
    if not paths:
        raise DoctorError("no reports to merge", fix="cudnn-doctor fleet merge REPORT.json... or a folder of them")
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            raise DoctorError(f"{raw}: {error.strerror or error}",
                              fix="give report files or a folder that holds them") from None
        if stat.S_ISDIR(mode):
            try:
                files += sorted(p for p in path.iterdir() if p.name.endswith(".json"))
            except OSError as error:
                raise DoctorError(f"{raw}: {error.strerror or error}", fix="give a readable folder") from None
        else:
            files.append(path)
        if len(files) > MAX_REPORTS:
            raise DoctorError(f"more than {MAX_REPORTS} reports", fix="merge a smaller set of nodes")
    if not files:
        raise DoctorError(f"no *.json reports in {', '.join(paths)}",
                          fix="write each node's `cudnn-doctor check --json` into NODE.json there")
    return files


def read_node(path: Path) -> NodeReport:
    """One node's report, or the reason it has none. Never blocks on a FIFO, never reads a huge file."""
    fallback = path.name.removesuffix(".json")
    try:
        data = _read_json(path)
    except ValueError as error:
        return NodeReport(fallback, str(path), failure=str(error))
    if not isinstance(data, dict):
        return NodeReport(fallback, str(path), failure="not a cudnn-doctor report (not a JSON object)")
    host = data.get("host")
    name = host.get("hostname") if isinstance(host, dict) else None
    node = name if isinstance(name, str) and name.strip() else fallback
    if data.get("schema") != REPORT_SCHEMA:
        complaint = data.get("error")
        if isinstance(complaint, dict) and isinstance(complaint.get("message"), str):
            return NodeReport(node, str(path), failure=f"check failed: {complaint['message']}")
        return NodeReport(node, str(path), failure=f"not a {REPORT_SCHEMA} report (schema {data.get('schema')!r})")
    return NodeReport(node, str(path), report=data)


def _read_json(path: Path) -> Any:
    try:
        raw = read_user_file(str(path), MAX_REPORT_BYTES)
    except UnreadableFile as error:
        raise ValueError(str(error)) from None
    if not raw.strip():
        raise ValueError("empty (the node's check printed nothing: did it run?)")
    try:
        return json.loads(raw.decode("utf-8", errors="strict"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except (ValueError, RecursionError) as error:
        raise ValueError(f"not JSON: {str(error)[:120]}") from None


# --- the fields that matter --------------------------------------------------------------------
def _text(value: Any) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(item) for item in value) or "(none)"
    return str(value)


def _items(report: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = report.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def node_fields(report: dict[str, Any]) -> dict[str, str]:
    """The fields compared across nodes, each as one printable value."""
    driver = report.get("driver") if isinstance(report.get("driver"), dict) else {}
    assert isinstance(driver, dict)
    fields: dict[str, str] = {
        "driver.version": _text(driver.get("version")),
        "driver.cuda_driver_version": _text(driver.get("cuda_driver_version")),
    }
    gpus = Counter(_text(gpu.get("name")) for gpu in _items(report, "gpus"))
    fields["gpus"] = ", ".join(f"{count} x {name}" for name, count in sorted(gpus.items())) or "(none)"
    fields["toolkits"] = _text(sorted(f"{_text(t.get('version'))} at {_text(t.get('path'))}"
                                      for t in _items(report, "toolkits")))
    copies = _items(report, "cudnn")
    fields["cudnn.copies"] = _text(sorted(f"{_text(c.get('version'))} at {_text(c.get('library') or c.get('path'))}"
                                          for c in copies))
    pickers: dict[str, list[str]] = {}
    for copy in copies:
        loaded_by = copy.get("loaded_by") if isinstance(copy.get("loaded_by"), list) else []
        for who in loaded_by or []:
            pickers.setdefault(str(who), []).append(f"{_text(copy.get('version'))} at "
                                                    f"{_text(copy.get('library') or copy.get('path'))}")
    for who, picked in pickers.items():
        fields[f"cudnn.loaded_by.{who}"] = _text(sorted(picked))
    for framework in _items(report, "frameworks"):
        name = _text(framework.get("name"))
        fields[f"framework.{name}"] = _text(framework.get("version"))
        fields[f"framework.{name}.cudnn_used"] = _text(framework.get("cudnn_used"))
    fields["findings"] = _text(sorted({_text(f.get("code")) for f in _items(report, "findings")})) \
        if _items(report, "findings") else "(none)"
    summary = report.get("summary") if isinstance(report.get("summary"), dict) else {}
    assert isinstance(summary, dict)
    fields["status"] = _text(summary.get("status"))
    return fields


# --- merging -----------------------------------------------------------------------------------
def merge(nodes: list[NodeReport]) -> FleetResult:
    """The drift of NODES from their majority, field by field; failed nodes listed apart."""
    nodes = _unique_names(nodes)
    healthy = [node for node in nodes if node.report is not None]
    result = FleetResult(nodes=len(nodes), failed=[node for node in nodes if node.report is None])
    values = {node.node: node_fields(node.report) for node in healthy if node.report is not None}
    names = sorted({name for fields in values.values() for name in fields}, key=_field_order)
    for name in names:
        per_node = {node: fields.get(name, ABSENT) for node, fields in values.items()}
        counts = Counter(per_node.values())
        if len(counts) < 2:
            continue
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        majority, majority_nodes = ranked[0]
        outliers = tuple(Outlier(node, value) for node, value in sorted(per_node.items()) if value != majority)
        result.drift.append(Drift(name, majority, majority_nodes, outliers, tie=ranked[1][1] == majority_nodes))
    return result


def _unique_names(nodes: list[NodeReport]) -> list[NodeReport]:
    """Two reports from one host name (a re-run, a cloned image) stay two nodes, named by file."""
    seen = Counter(node.node for node in nodes)
    return [NodeReport(f"{node.node} ({Path(node.source).name})", node.source, node.report, node.failure)
            if seen[node.node] > 1 else node for node in nodes]


def _field_order(name: str) -> tuple[int, str]:
    order = ("driver", "gpus", "toolkits", "cudnn", "framework", "findings", "status")
    for rank, prefix in enumerate(order):
        if name.startswith(prefix):
            return rank, name
    return len(order), name


def merge_paths(paths: list[str]) -> FleetResult:
    return merge([read_node(path) for path in report_files(paths)])


def fleet_to_json(result: FleetResult) -> dict[str, Any]:
    """The `cudnn-doctor/fleet/1` object: only what differs, and which nodes failed."""
    return {
        "schema": FLEET_SCHEMA,
        "nodes": result.nodes,
        "failed": [{"node": node.node, "source": node.source, "why": node.failure} for node in result.failed],
        "drift": [
            {
                "field": drift.field,
                "majority": {"value": drift.majority, "nodes": drift.majority_nodes},
                "tie": drift.tie,
                "outliers": [{"node": o.node, "value": o.value} for o in drift.outliers],
            }
            for drift in result.drift
        ],
        "exit_code": result.exit_code,
    }
