"""Loading a submission's YAML and JSON files into models, turning every problem into a located finding."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from specbench.errors import InputError, Problem
from specbench.formats.strictjson import JsonValueError, NumberError, parse_json_text
from specbench.spec.loader import validate_model
from specbench.spec.numbers import first_bad_number
from specbench.spec.yamlio import MAX_DEPTH, NOT_PLAIN, Document, json_positions, parse_yaml
from specbench.validator.files import Tree
from specbench.validator.findings import Findings

M = TypeVar("M", bound=BaseModel)
_NON_FINITE = re.compile(r"-?Infinity|NaN")
_NOT_PLAIN = NOT_PLAIN
"""Characters the YAML reader refuses or reads as line breaks: such a file takes the YAML path (yamlio.NOT_PLAIN)."""


@dataclass
class Loaded:
    """A parsed file: its plain data, and positions computed on demand for located findings."""

    data: Any
    file: str
    text: str
    is_yaml: bool
    _document: Document | None = field(default=None, repr=False)

    def document(self) -> Document:
        """The data with the position of every value: a file read as JSON (all but those parse_yaml read) gets
        them from json_positions, which gives what parse_yaml gives without loading the YAML parser."""
        if self._document is None:
            positions = json_positions(self.text, self.file)
            if positions is not None:
                self._document = Document(self.data, self.file, positions)
                return self._document
            try:
                self._document = parse_yaml(self.text, self.file)
            except InputError:
                self._document = Document(self.data, self.file, {})
        return self._document

    def locate(self, *path: str | int) -> dict[str, Any]:
        """Keyword arguments for Findings.add: line, column and JSON path of `path` in this file."""
        loc = self.document().locate(tuple(path))
        return {"line": loc.line, "column": loc.column, "json_path": loc.json_path}


def decode(raw: bytes, file: str, findings: Findings) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        findings.add(
            "SB-STR-006",
            file,
            f"expected UTF-8 text, found byte 0x{raw[err.start]:02x} that cannot be decoded",
            line=line,
            column=column,
        )
        return None


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def load_json(tree: Tree, rel: str, findings: Findings) -> Loaded | None:
    raw = tree.read(rel)
    if raw is None:
        return None
    text = decode(raw, rel, findings)
    if text is None:
        return None
    try:
        data = parse_json_text(text)
    except json.JSONDecodeError as err:
        findings.add("SB-STR-006", rel, f"expected JSON, found {err.msg}", line=err.lineno, column=err.colno)
        return None
    except JsonValueError as err:
        if isinstance(err, NumberError):
            at = text.find(err.token)
            line, column = _position(text, at) if at >= 0 else (None, None)
            findings.add("SB-NUM-001", rel, f"expected a number within range, found {err}", line=line, column=column)
            return None
        match = _NON_FINITE.search(text)
        line, column = _position(text, match.start()) if match else (None, None)
        findings.add("SB-STR-006", rel, f"expected strict JSON, found {err}", line=line, column=column)
        return None
    except (ValueError, RecursionError) as err:
        findings.add("SB-STR-006", rel, f"expected JSON, found {type(err).__name__}: {err}")
        return None
    return Loaded(data, rel, text, is_yaml=False)


def _json_document(text: str) -> dict[str, Any] | None:
    """A YAML file that is one strict JSON object (YAML 1.2 reads JSON as itself): its data, parsed fast.

    specbench's MLPerf importer writes its YAML files so. Anything else, and any JSON problem, is
    left to the YAML parser, whose positions a located finding still gets (Loaded.document).
    """
    if not text.startswith("{") or _NOT_PLAIN.search(text):
        return None
    try:
        data = parse_json_text(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and _depth(data) <= MAX_DEPTH else None


def _depth(value: Any) -> int:
    depth, level = 0, [value]
    while level:
        depth += 1
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
    return depth


def load_yaml(tree: Tree, rel: str, findings: Findings) -> Loaded | None:
    raw = tree.read(rel)
    if raw is None:
        return None
    text = decode(raw, rel, findings)
    if text is None:
        return None
    fast = _json_document(text)
    if fast is not None:
        return Loaded(fast, rel, text, is_yaml=True)
    try:
        document = parse_yaml(text, rel)
    except InputError as err:
        findings.problems("SB-STR-006", err.problems)
        return None
    loaded = Loaded(document.data, rel, text, is_yaml=True, _document=document)
    bad = first_bad_number(document.data)
    if bad is not None:
        where, problem = bad
        findings.add("SB-NUM-001", rel, f"expected a number within range, found {problem}", **loaded.locate(*where))
        return None
    return loaded


def check_mapping(loaded: Loaded, findings: Findings) -> bool:
    if isinstance(loaded.data, dict):
        return True
    findings.add(
        "SB-STR-007", loaded.file, f"expected a mapping at the root, found {type(loaded.data).__name__}", line=1
    )
    return False


def check_version(loaded: Loaded, supported: int, findings: Findings, key: str = "format_version") -> bool:
    """False (with a finding) when the file names a format version this validator does not read."""
    found = loaded.data.get(key)
    if found is None or (found == supported and not isinstance(found, bool)):
        return True
    findings.add(
        "SB-STR-008",
        loaded.file,
        f"{key} {found!r} not supported: expected {supported} (the version this validator reads)",
        **loaded.locate(key),
    )
    return False


def to_model(model: type[M], loaded: Loaded, findings: Findings) -> M | None:
    """Validate plain data against a model; each pydantic error becomes one located finding."""
    try:
        return model.model_validate(loaded.data)
    except ValidationError as err:
        errors = err.errors()
    located = Document(loaded.data, loaded.file, loaded.document().positions)
    try:
        return validate_model(model, located)  # type: ignore[no-any-return]
    except InputError as err:
        problems = err.problems
        if len(problems) == len(errors):
            problems = [_with_found(p, e.get("input")) for p, e in zip(problems, errors, strict=True)]
        findings.problems("SB-STR-007", problems)
    return None


def _with_found(problem: Problem, value: Any) -> Problem:
    """A schema problem that names what was found: pydantic leaves out a list or mapping it refused."""
    if "found" in problem.message or not isinstance(value, (dict, list)):
        return problem
    found = f"a mapping of {len(value)} key(s)" if isinstance(value, dict) else f"a list of {len(value)} item(s)"
    return Problem(problem.location, f"{problem.message}, found {found}", problem.code)
