"""JSON Schemas of the file formats, generated from the pydantic models (the one source of truth)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from specbench.spec.models import RuleSet, Spec
from specbench.spec.system import SubmissionMeta, SystemDescription

SCHEMAS: dict[str, type[BaseModel]] = {
    "spec": Spec,
    "ruleset": RuleSet,
    "system": SystemDescription,
    "submission": SubmissionMeta,
}
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_of(name: str) -> dict[str, Any]:
    schema = SCHEMAS[name].model_json_schema()
    return {"$schema": DRAFT, "$id": f"https://specbench.dev/schemas/{name}.schema.json", **schema}


def render(name: str) -> str:
    return json.dumps(schema_of(name), indent=2, sort_keys=False) + "\n"


def export(out_dir: Path) -> list[Path]:
    """Write every schema as `<name>.schema.json` into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = out_dir / f"{name}.schema.json"
        path.write_text(render(name), encoding="utf-8")
        written.append(path)
    return written
