"""Many nodes' `check --json` reports, merged: for each field that matters, the majority value
and the nodes that differ from it. Nodes that agree are not mentioned.

The reports may come from anywhere (a Slurm job, a Kubernetes DaemonSet writing to a shared
volume, Ansible); each is a file read as hostile: a FIFO, a huge file, broken JSON or another
program's output makes that node "failed", with the reason, never the whole merge.

The merge streams: each report is read, reduced to its few fields (each a bounded text) and dropped
before the next is read, and each field keeps its distinct values once and one (node, value id) pair
per node that has it. Time and memory grow with the number of nodes and the fields they have, so a
hundred thousand nodes, or a dozen 14 MB reports, merge in seconds and in bounded memory.
"""

from __future__ import annotations

import hashlib
import os
import stat
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudnn_doctor import json_values
from cudnn_doctor.errors import DoctorError
from cudnn_doctor.user_files import UnreadableFile, read_user_file

FLEET_SCHEMA = "cudnn-doctor/fleet/1"
REPORT_SCHEMA = "cudnn-doctor/report/1"
MAX_REPORT_BYTES = 16 * 1024 * 1024  # a report is a few KiB; anything this big is not one
MAX_REPORTS = 100_000
MAX_VALUE_CHARS = 2048  # a field's value longer than this is kept as its start and a digest
MAX_NAME_CHARS = 256  # a host name (DNS allows 253)
MAX_FIELDS_PER_NODE = 512  # frameworks and cuDNN loaders of one machine: a few in real life
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
def report_files(paths: list[str]) -> list[str]:
    """The report files PATHS name: files as given, folders' *.json (not recursive), each folder's sorted;
    a path named twice (a file and its folder, `a.json a.json`) once."""
    if not paths:
        raise DoctorError("no reports to merge", fix="cudnn-doctor fleet merge REPORT.json... or a folder of them", code="CD003")
    files: list[str] = []
    seen: set[str] = set()
    for raw in paths:
        try:
            mode = os.stat(raw).st_mode
        except (OSError, ValueError) as error:
            raise DoctorError(f"{raw}: {getattr(error, 'strerror', None) or error}",
                              fix="give report files or a folder that holds them", code="CD005") from None
        if stat.S_ISDIR(mode):
            try:
                with os.scandir(raw) as entries:
                    names = sorted(entry.name for entry in entries if entry.name.endswith(".json"))
            except OSError as error:
                raise DoctorError(f"{raw}: {error.strerror or error}", fix="give a readable folder", code="CD005") from None
            found = [os.path.join(raw, name) for name in names]
        else:
            found = [raw]
        for path in found:
            key = os.path.abspath(path)
            if key not in seen:
                seen.add(key)
                files.append(path)
        if len(files) > MAX_REPORTS:
            raise DoctorError(f"more than {MAX_REPORTS} reports", fix="merge a smaller set of nodes", code="CD001")
    if not files:
        raise DoctorError(f"no *.json reports in {', '.join(paths)}",
                          fix="write each node's `cudnn-doctor check --json` into NODE.json there", code="CD003")
    return files


def read_node(path: str | Path) -> NodeReport:
    """One node's report, or the reason it has none. Never blocks on a FIFO, never reads a huge file."""
    path = str(path)
    fallback = os.path.basename(path).removesuffix(".json")
    try:
        data = _read_json(path)
    except ValueError as error:
        return NodeReport(fallback, path, failure=str(error))
    if not isinstance(data, dict):
        return NodeReport(fallback, path, failure="not a cudnn-doctor report (not a JSON object)")
    host = data.get("host")
    name = host.get("hostname") if isinstance(host, dict) else None
    node = _capped(name, MAX_NAME_CHARS) if isinstance(name, str) and name.strip() else fallback
    if data.get("schema") != REPORT_SCHEMA:
        complaint = data.get("error")
        if isinstance(complaint, dict) and isinstance(complaint.get("message"), str):
            return NodeReport(node, path, failure=f"check failed: {_capped(complaint['message'], 300)}")
        schema = data.get("schema")
        if schema is None:
            return NodeReport(node, path, failure=f"not a {REPORT_SCHEMA} report: it has no schema field (a node's "
                                                  "report is what cudnn-doctor check --json prints)")
        shown = _capped(schema, 80) if isinstance(schema, str) else type(schema).__name__
        return NodeReport(node, path, failure=f"not a {REPORT_SCHEMA} report (schema {shown!r})")
    return NodeReport(node, path, report=data)


def _read_json(path: str) -> Any:
    try:
        raw = read_user_file(path, MAX_REPORT_BYTES)
    except UnreadableFile as error:
        raise ValueError(str(error)) from None
    if not raw.strip():
        raise ValueError("empty (the node's check printed nothing: did it run?)")
    try:
        return json_values.loads(raw.decode("utf-8", errors="strict"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except (ValueError, RecursionError) as error:
        raise ValueError(f"not JSON: {str(error)[:120]}") from None


# --- the fields that matter --------------------------------------------------------------------
class NotAReport(ValueError):
    """A report whose fields are not what `check --json` writes (nested where a value belongs, too many)."""


def _capped(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """TEXT, or its start and a digest of the whole when longer than LIMIT (distinct values stay distinct)."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[:limit]}... ({len(text)} characters, sha256 {digest})"


def _scalar(value: Any, where: str) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, (dict, list)):
        raise NotAReport(f"{where} is a nested list or object where a report has a plain value")
    return str(value)


def _text(value: Any, where: str) -> str:
    """A field's value as one printable, bounded text: a plain value, or a flat list of them."""
    if type(value) is str and len(value) <= MAX_VALUE_CHARS:  # the usual case, tried first
        if value.isprintable():
            return value
        from cudnn_doctor.streams import printable  # a terminal escape, a bidirectional override (U+202E), a newline

        return printable(value)
    if isinstance(value, list):
        return _capped(", ".join(_scalar(item, where) for item in value) or "(none)")
    return _capped(_scalar(value, where))


def _string(value: Any, where: str) -> str:
    """A field `check --json` writes as a string (a finding's code, the summary's status, a GPU's name) as _text
    shows it; a number, a list or an object there is NotAReport: a hand-made or damaged report, never read as one
    of the values nodes share."""
    if value is not None and not isinstance(value, str):
        raise NotAReport(f"its {where} is {type(value).__name__}, where `check --json` writes a string")
    return _text(value, where)


def _items(report: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The list of objects REPORT holds at KEY (none where it has no such field); of another type, or holding other
    than objects (a later release's report, a hand-made one), NotAReport: its findings are not read as none."""
    value = report.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise NotAReport(f"its {key} are not a list of objects, as `check --json` writes them")
    return value


def _section(report: dict[str, Any], key: str) -> dict[str, Any]:
    """The object REPORT holds at KEY ({} where it has none); of another type, NotAReport."""
    value = report.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NotAReport(f"its {key} is not an object, as `check --json` writes it")
    return value


def node_fields(report: dict[str, Any]) -> dict[str, str]:
    """The fields compared across nodes, each as one printable value of at most MAX_VALUE_CHARS
    (NotAReport when a field is nested where a report has a plain value, or there are too many)."""
    driver = _section(report, "driver")
    fields: dict[str, str] = {
        "driver.version": _text(driver.get("version"), "driver.version"),
        "driver.cuda_driver_version": _text(driver.get("cuda_driver_version"), "driver.cuda_driver_version"),
    }
    gpus: dict[str, int] = {}
    for gpu in _items(report, "gpus"):
        name = _string(gpu.get("name"), "gpus[].name")
        gpus[name] = gpus.get(name, 0) + 1
    fields["gpus"] = _capped(", ".join(f"{count} x {name}" for name, count in sorted(gpus.items())) or "(none)")
    fields["toolkits"] = _text(sorted(f"{_text(t.get('version'), 'toolkits[].version')} at "
                                      f"{_text(t.get('path'), 'toolkits[].path')}"
                                      for t in _items(report, "toolkits")), "toolkits")
    copies = _items(report, "cudnn")
    pickers: dict[str, list[str]] = {}
    described = []
    for copy in copies:
        where = f"{_text(copy.get('version'), 'cudnn[].version')} at " \
                f"{_text(copy.get('library') or copy.get('path'), 'cudnn[].library')}"
        described.append(where)
        loaded_by = copy.get("loaded_by")
        for who in loaded_by if isinstance(loaded_by, list) else []:
            pickers.setdefault(f"cudnn.loaded_by.{_text(who, 'cudnn[].loaded_by')}", []).append(where)
    fields["cudnn.copies"] = _text(sorted(described), "cudnn")
    frameworks = _items(report, "frameworks")
    if len(pickers) + 2 * len(frameworks) > MAX_FIELDS_PER_NODE:
        raise NotAReport(f"{len(frameworks)} frameworks and {len(pickers)} loaders of cuDNN: more fields than "
                         f"{MAX_FIELDS_PER_NODE}, more than one machine has")
    for who, picked in pickers.items():
        fields[_capped(who, 200)] = _text(sorted(picked), "cudnn[].loaded_by")
    for framework in frameworks:
        name = _capped(_text(framework.get("name"), "frameworks[].name"), 200)
        fields[f"framework.{name}"] = _text(framework.get("version"), "frameworks[].version")
        fields[f"framework.{name}.cudnn_used"] = _text(framework.get("cudnn_used"), "frameworks[].cudnn_used")
    fields.update(_multi_gpu_fields(_section(report, "multi_gpu")))
    findings = _items(report, "findings")
    fields["findings"] = _text(sorted({_string(f.get("code"), "findings[].code") for f in findings}), "findings") \
        if findings else "(none)"
    fields["status"] = _string(_section(report, "summary").get("status"), "summary.status")
    return fields


def _multi_gpu_fields(multi: dict[str, Any]) -> dict[str, str]:
    """A node's links and all-reduce as values that nodes of one kind share (issue 42): the pairs' paths counted
    by kind (a link down turns NV18 into NV17), the NVLinks up of all expected, each GPU's maximum PCIe link, and the
    all-reduce's bus bandwidth as a share of what its links allow (a band, so noise does not split the fleet)."""
    if not multi:
        return {}
    fields: dict[str, str] = {}
    paths = Counter(_text(pair.get("path"), "multi_gpu.pairs[].path") for pair in _items(multi, "pairs"))
    fields["multi_gpu.links"] = _capped(", ".join(f"{count} x {path}" for path, count in sorted(paths.items()))
                                        or "(no pair)")
    gpus = _items(multi, "gpus")
    active = sum(g["nvlinks_active"] for g in gpus if isinstance(g.get("nvlinks_active"), int))
    expected = [g.get("nvlinks_expected") for g in gpus]
    if any(isinstance(e, int) for e in expected):
        fields["multi_gpu.nvlinks"] = f"{active} of {sum(e for e in expected if isinstance(e, int))} up"
    pcie = Counter(f"gen{_text(g.get('pcie_generation_max'), 'pcie')} x{_text(g.get('pcie_width_max'), 'pcie')}"
                   for g in gpus if g.get("pcie_generation_max") is not None)
    if pcie:
        fields["multi_gpu.pcie_max"] = ", ".join(f"{count} x {link}" for link, count in sorted(pcie.items()))
    result = _section(multi, "allreduce")
    if result:
        fields["multi_gpu.allreduce"] = _allreduce_band(result)
    return fields


def _allreduce_band(result: dict[str, Any]) -> str:
    if not result.get("ok"):
        return "failed" + (" (hung)" if result.get("timed_out") else "")
    busbw, predicted = result.get("busbw_gbs"), result.get("predicted_busbw_gbs")
    if not isinstance(busbw, (int, float)) or not isinstance(predicted, (int, float)) or predicted <= 0:
        return f"ok, {_text(result.get('world_size'), 'allreduce.world_size')} GPU(s)"
    share = busbw / predicted
    band = "at least 80 %" if share >= 0.8 else "50-80 %" if share >= 0.5 else "below 50 %"
    return f"ok, busbw {band} of its links"


# --- merging -----------------------------------------------------------------------------------
class _Tally:
    """One field across the nodes: each distinct value once, and (node, value) pairs in the order the
    nodes were added; nodes without the field (or with a null) are not stored: they are ABSENT."""

    __slots__ = ("ids", "texts", "counts", "nodes", "values")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.texts: list[str] = []
        self.counts: list[int] = []
        self.nodes = array("q")  # node indexes, increasing
        self.values = array("q")  # the value id of each

    def add(self, node: int, text: str) -> None:
        value = self.ids.get(text)
        if value is None:
            value = self.ids[text] = len(self.texts)
            self.texts.append(text)
            self.counts.append(0)
        self.counts[value] += 1
        self.nodes.append(node)
        self.values.append(value)


class FleetMerge:
    """Nodes added one at a time, each report dropped once its fields are counted: memory grows with the
    nodes' names and their values' ids, and time with the fields the nodes have, never with a product."""

    def __init__(self) -> None:
        self.count = 0
        self.names: list[str] = []  # the healthy nodes, in the order added
        self.sources: list[str] = []
        self.failed: list[NodeReport] = []
        self.fields: dict[str, _Tally] = {}

    def add(self, node: NodeReport) -> None:
        self.count += 1
        if node.report is None:
            self.failed.append(node)
            return
        try:
            fields = node_fields(node.report)
        except NotAReport as error:
            self.failed.append(NodeReport(node.node, node.source, failure=f"not a cudnn-doctor report: {error}"))
            return
        index = len(self.names)
        self.names.append(node.node)
        self.sources.append(node.source)
        for name, text in fields.items():
            if text != ABSENT:
                tally = self.fields.get(name)
                if tally is None:
                    tally = self.fields[name] = _Tally()
                tally.add(index, text)

    def result(self) -> FleetResult:
        """The drift of the nodes from their majority, field by field; failed nodes listed apart."""
        names = self._unique_names()
        healthy = len(self.names)
        result = FleetResult(nodes=self.count, failed=[NodeReport(names[len(self.names) + i], node.source,
                                                                  failure=node.failure)
                                                       for i, node in enumerate(self.failed)])
        for name in sorted(self.fields, key=_field_order):
            tally = self.fields[name]
            absent = healthy - len(tally.nodes)
            counted = [(text, tally.counts[value]) for value, text in enumerate(tally.texts)]
            if absent:
                counted.append((ABSENT, absent))
            if len(counted) < 2:
                continue
            counted.sort(key=lambda item: (-item[1], item[0]))
            majority, majority_nodes = counted[0]
            found = list(_outliers(tally, healthy, tally.ids.get(majority, -1)))
            found.sort(key=lambda item: (names[item[0]], item[0]))
            outliers = tuple(Outlier(names[node], text) for node, text in found)
            result.drift.append(Drift(name, majority, majority_nodes, outliers, tie=counted[1][1] == majority_nodes))
        return result

    def _unique_names(self) -> list[str]:
        """Every node's name, healthy ones first; two reports of one host name (a re-run, a cloned image, one
        name in two folders) stay two nodes, each named with the file it came from."""
        everyone = self.names + [node.node for node in self.failed]
        sources = self.sources + [node.source for node in self.failed]
        seen = Counter(everyone)
        return [f"{name} ({source})" if seen[name] > 1 else name for name, source in zip(everyone, sources, strict=True)]


def _outliers(tally: _Tally, healthy: int, majority: int) -> Iterator[tuple[int, str]]:
    """(node, value) of every node whose value is not MAJORITY (-1: ABSENT is the majority)."""
    if majority < 0:
        yield from ((node, tally.texts[value]) for node, value in zip(tally.nodes, tally.values, strict=True))
        return
    position = 0
    stored = len(tally.nodes)
    for node in range(healthy):
        if position < stored and tally.nodes[position] == node:
            value = tally.values[position]
            position += 1
            if value != majority:
                yield node, tally.texts[value]
        else:
            yield node, ABSENT


def _field_order(name: str) -> tuple[int, str]:
    order = ("driver", "gpus", "multi_gpu", "toolkits", "cudnn", "framework", "findings", "status")
    for rank, prefix in enumerate(order):
        if name.startswith(prefix):
            return rank, name
    return len(order), name


def merge(nodes: Iterable[NodeReport]) -> FleetResult:
    """The drift of NODES from their majority, field by field; failed nodes listed apart."""
    merged = FleetMerge()
    for node in nodes:
        merged.add(node)
        del node  # else it holds this report while the next one is read and parsed
    return merged.result()


def merge_paths(paths: list[str]) -> FleetResult:
    """The reports PATHS name, read and counted one at a time (at most one parsed report in memory)."""
    return merge(read_node(path) for path in report_files(paths))


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
