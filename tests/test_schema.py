"""Committed JSON Schemas are valid, current, and accept the files they describe."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from specbench.cli import main
from specbench.spec import builtin
from specbench.spec.schema import SCHEMAS, render
from specbench.spec.yamlio import load_yaml

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schema_is_current(name: str) -> None:
    committed = (SCHEMA_DIR / f"{name}.schema.json").read_text()
    assert committed == render(name), "schemas drifted from the models: run `specbench schema --out schemas`"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_is_valid_against_metaschema(name: str) -> None:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", builtin.spec_paths(), ids=lambda p: p.stem)
def test_builtin_spec_files_validate_against_schema(path: Path) -> None:
    schema = json.loads((SCHEMA_DIR / "spec.schema.json").read_text())
    jsonschema.validate(load_yaml(path).data, schema)
    first_line = path.read_text().splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=../schemas/spec.schema.json"


def test_rule_set_validates_against_schema() -> None:
    schema = json.loads((SCHEMA_DIR / "ruleset.schema.json").read_text())
    jsonschema.validate(load_yaml(builtin.data_root() / "rules" / "hpcai500.yaml").data, schema)


def test_schema_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.schema.json" for n in SCHEMAS)
    capsys.readouterr()
    assert main(["schema", "system"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "SystemDescription"
    assert main(["schema"]) == 2
