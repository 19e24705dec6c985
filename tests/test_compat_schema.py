"""Every compat/ data file validates against its JSON Schema in compat/schema/, and every row is cited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib
from jsonschema import Draft202012Validator

COMPAT = Path(__file__).resolve().parents[1] / "compat"
SUBJECTS = sorted(path.stem for path in COMPAT.glob("*.toml"))


FRAMEWORK_TABLES = {row["table"] for row in tomllib.loads((COMPAT / "rules.toml").read_text())["framework"]}


def schema_of(subject: str) -> Path:
    """compat/schema/SUBJECT.schema.json, else, for a framework's table (compat/rules.toml [[framework]]), the
    one schema of a framework's build table: adding a framework adds no schema."""
    own = COMPAT / "schema" / f"{subject}.schema.json"
    return own if own.exists() or subject not in FRAMEWORK_TABLES else COMPAT / "schema" / "framework.schema.json"


def test_every_data_file_has_a_schema() -> None:
    assert all(schema_of(subject).exists() for subject in SUBJECTS)
    own = sorted(p.name.removesuffix(".schema.json") for p in (COMPAT / "schema").glob("*.schema.json"))
    assert sorted({*own} - {"framework"}) == sorted(s for s in SUBJECTS if schema_of(s).stem != "framework.schema")


@pytest.mark.parametrize("subject", SUBJECTS)
def test_data_file_validates(subject: str) -> None:
    data = tomllib.loads((COMPAT / f"{subject}.toml").read_text())
    schema = json.loads(schema_of(subject).read_text())
    if schema_of(subject).name == "framework.schema.json":  # the one schema of every framework's build table
        assert data["schema"] == f"cudnn-doctor/compat/{subject}/1"
    Draft202012Validator.check_schema(schema)
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:10])


@pytest.mark.parametrize("subject", SUBJECTS)
def test_every_row_names_its_source(subject: str) -> None:
    data = tomllib.loads((COMPAT / f"{subject}.toml").read_text())
    for table, rows in data.items():
        if isinstance(rows, list):
            for index, row in enumerate(rows):
                assert str(row.get("source", "")).strip(), f"{subject}.{table}[{index}] has no source"
