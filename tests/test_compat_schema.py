"""Every compat/ data file validates against its JSON Schema in compat/schema/, and every row is cited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib
from jsonschema import Draft202012Validator

COMPAT = Path(__file__).resolve().parents[1] / "compat"
SUBJECTS = sorted(path.stem for path in COMPAT.glob("*.toml"))


def test_every_data_file_has_a_schema() -> None:
    assert SUBJECTS == sorted(p.name.removesuffix(".schema.json") for p in (COMPAT / "schema").glob("*.schema.json"))


@pytest.mark.parametrize("subject", SUBJECTS)
def test_data_file_validates(subject: str) -> None:
    data = tomllib.loads((COMPAT / f"{subject}.toml").read_text())
    schema = json.loads((COMPAT / "schema" / f"{subject}.schema.json").read_text())
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
