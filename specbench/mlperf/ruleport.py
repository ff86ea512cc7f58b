"""Port MLPerf's compliance-checker rule files into specbench's typed rules (rules/mlperf/*.yaml).

The rule files are read as data (ruamel.yaml's base loader, MLPerf's own choice: every scalar a
text), and each CHECK, POST, ATLEAST_ONE_CHECK, REQ and BEGIN item is mapped by the shape table of
`ruleport_shapes` to typed rules, or named in LEFT_OUT with the reason; anything else is an error.
`python -m specbench.mlperf.ruleport --out rules/mlperf` regenerates the committed rules and
docs/mlperf-rules.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.formats.mlperf_rules import (
    FORMAT,
    FORMAT_VERSION,
    RULESETS,
    Aggregate,
    Check,
    Include,
    KeyRecord,
    Literal_,
    MlperfRuleSet,
    RuleFile,
    Source,
    Usage,
    rules_file_name,
)
from specbench.mlperf.ruleport_docs import render as render_docs
from specbench.mlperf.ruleport_shapes import UnknownShape, begin_shape, check_shape, normalise, post_shapes

LEFT_OUT: dict[tuple[str, str], str] = {
    ("CHECK", "'value' in v"): "always true: MLPerf's parser gives every line v = {'value': ..., 'metadata': ...}",
}
"""MLPerf items deliberately not carried, by field and whitespace-normalised text, with the reason."""
NOT_PORTED: dict[str, str] = {
    "training_3.1.0/closed_maskrcnn.yaml": "maskrcnn left MLPerf Training after 3.1; no spec answers it",
    "training_3.1.0/closed_rnnt.yaml": "rnnt left MLPerf Training after 3.1; no spec answers it",
}
"""MLPerf rule files that hold an item no typed kind expresses, with why no kind is added for it: the ruleset
records each as not ported (with the item), and the engine fails a log that reaches one. Any other file with
such an item stops the translation, as does a file listed here that ports."""

KEY_FIELDS = ("REQ", "CHECK", "ATLEAST_ONE_CHECK", "POST")
_REQ = {"EXACTLY_ONE": "exactly_one", "AT_LEAST_ONE": "at_least_one", "OPTIONAL": "optional"}


@dataclass(frozen=True)
class Item:
    """One item of an MLPerf rule file (a CHECK of a key, its POST, a BEGIN, ...) and what became of it."""

    file: str
    key: str
    field: str
    index: int
    text: str
    shape: str
    typed: tuple[str, ...]
    left_out: str | None = None


@dataclass(frozen=True)
class Port:
    """The typed rules of one ruleset and the ledger of every MLPerf item they came from."""

    rules: MlperfRuleSet
    items: tuple[Item, ...]


def checker_folder() -> Path:
    """mlperf_logging/compliance_checker of the installed mlperf-logging."""
    spec = importlib.util.find_spec("mlperf_logging")
    if spec is None or not spec.submodule_search_locations:
        raise UnknownShape("mlperf-logging is not installed; install specbench's run extra to port its rules")
    return Path(next(iter(spec.submodule_search_locations))) / "compliance_checker"


def read_rule_file(path: Path) -> list[dict[str, Any]]:
    """A rule file as MLPerf reads it (every scalar a text); an empty file is an empty list."""
    from ruamel.yaml import YAML

    data = YAML(typ="base", pure=True).load(path.read_text())
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(i, dict) and len(i) == 1 for i in data):
        raise UnknownShape(f"{path}: expected a list of one-key items (KEY, BEGIN)")
    return data


def port_ruleset(usage: Usage, ruleset: str, root: Path | None = None) -> Port:
    """Translate one ruleset: every file of its folder (those of NOT_PORTED recorded as such), then the files of
    other folders it includes."""
    root = root or checker_folder()
    folder = f"{usage}_{ruleset}"
    paths = [f"{folder}/{p.name}" for p in sorted((root / folder).glob("*.yaml"))]
    files: dict[str, RuleFile] = {}
    not_ported: dict[str, str] = {}
    items: list[Item] = []
    done: set[str] = set()
    while paths:
        path = paths.pop(0)
        if path in done:
            continue
        done.add(path)
        name = path.removesuffix(".yaml").removeprefix(folder + "/")
        try:
            rule_file, file_items = port_file(root, path)
        except UnknownShape as err:
            if path not in NOT_PORTED:
                raise
            not_ported[name] = f"{err} ({NOT_PORTED[path]})"
            continue
        if path in NOT_PORTED:
            raise UnknownShape(f"{path} is listed in NOT_PORTED but ports: remove it from the list")
        files[name] = rule_file
        items += file_items
        for record in rule_file.records:
            for include in record.includes:
                pattern = include.pattern.replace("{value}", "*")
                if not pattern.startswith(folder + "/"):
                    paths += sorted(p.relative_to(root).as_posix() for p in root.glob(pattern))
    version = importlib.metadata.version("mlperf-logging")
    rules = MlperfRuleSet(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        usage=usage,
        ruleset=ruleset,
        source=Source(package="mlperf-logging", version=version, folder=folder),
        entry="common",
        files=files,
        not_ported=not_ported,
    )
    return Port(rules, tuple(items))


def port_file(root: Path, path: str) -> tuple[RuleFile, list[Item]]:
    """One rule file: its BEGIN blocks and key records, each item recorded in the ledger."""
    initial_state: dict[str, Literal_] | None = None
    aggregate: Aggregate | None = None
    records: dict[str, KeyRecord] = {}
    items: list[Item] = []
    for entry in read_rule_file(root / path):
        (kind, body), *_ = entry.items()
        if kind == "BEGIN" and set(body) == {"CODE"}:
            if initial_state is not None or aggregate is not None:
                raise UnknownShape(f"{path}: two BEGIN blocks (MLPerf allows one)")
            with _at(path, "BEGIN", "CODE"):
                shape, typed = begin_shape(body["CODE"])
            if isinstance(typed, Aggregate):
                aggregate, name = typed, "aggregate"
            else:
                initial_state, name = typed, "initial_state"
            items.append(Item(path, "BEGIN", "BEGIN", 0, normalise(body["CODE"]), shape, (name,)))
        elif kind == "KEY":
            record, record_items = port_record(path, body)
            if record.key in records:  # MLPerf's dict.update: the last record wins, at the first one's place
                items = [_replaced(i) if i.key == record.key else i for i in items]
            records[record.key] = record
            items += record_items
        else:
            raise UnknownShape(f"{path}: item {kind} with fields {sorted(body)} is not supported")
    for record in records.values():
        missing = set(record.or_keys or ()) - set(records)
        if missing:
            raise UnknownShape(f"{path}: {record.key} names {sorted(missing)} in AT_LEAST_ONE_OR, not keys of the file")
    return RuleFile(initial_state=initial_state, aggregate=aggregate, records=list(records.values())), items


def _replaced(item: Item) -> Item:
    reason = "replaced: a later record of the same key in the same file wins, as in MLPerf's checker"
    return Item(item.file, item.key, item.field, item.index, item.text, item.shape, (), item.left_out or reason)


def port_record(path: str, body: dict[str, Any]) -> tuple[KeyRecord, list[Item]]:
    """One KEY record: REQ, CHECK (a text or a list), ATLEAST_ONE_CHECK and POST."""
    key = body.get("NAME")
    unknown = set(body) - {"NAME", *KEY_FIELDS}
    if not isinstance(key, str) or unknown:
        raise UnknownShape(
            f"{path}: KEY {key!r}: expected NAME and some of {', '.join(KEY_FIELDS)}, found {sorted(body)}"
        )
    fields: dict[str, Any] = {"key": key}
    items: list[Item] = []
    if "REQ" in body:
        fields.update(_req(path, key, body["REQ"]))
        items.append(Item(path, key, "REQ", 0, normalise(body["REQ"]), body["REQ"], (f"req: {fields['req']}",)))
    checks: list[Check] = []
    raw = body.get("CHECK", [])
    for index, text in enumerate(raw if isinstance(raw, list) else [raw]):
        reason = LEFT_OUT.get(("CHECK", normalise(text)))
        if reason is not None:
            items.append(Item(path, key, "CHECK", index, normalise(text), normalise(text), (), reason))
            continue
        with _at(path, key, "CHECK"):
            shape, check = check_shape(text)
        checks.append(check)
        items.append(Item(path, key, "CHECK", index, normalise(text), shape, (check.kind,)))
    fields["checks"] = checks
    if "ATLEAST_ONE_CHECK" in body:
        text = body["ATLEAST_ONE_CHECK"]
        with _at(path, key, "ATLEAST_ONE_CHECK"):
            shape, check = check_shape(text)
        fields["at_least_one_check"] = check
        items.append(Item(path, key, "ATLEAST_ONE_CHECK", 0, normalise(text), shape, (check.kind,)))
    if "POST" in body:
        with _at(path, key, "POST"):
            done = post_shapes(body["POST"])
        fields["includes"] = [p for _, p in done if isinstance(p, Include)]
        fields["sets"] = [p for _, p in done if not isinstance(p, Include)]
        typed = tuple("include" if isinstance(p, Include) else p.kind for _, p in done)
        items.append(Item(path, key, "POST", 0, normalise(body["POST"]), "; ".join(s for s, _ in done), typed))
    return KeyRecord(**fields), items


@contextmanager
def _at(path: str, key: str, field: str) -> Iterator[None]:
    """An UnknownShape raised inside names the rule file, key and field."""
    try:
        yield
    except UnknownShape as err:
        raise UnknownShape(f"{path}: {key}: {field}: {err}") from err


def _req(path: str, key: str, text: str) -> dict[str, Any]:
    if text in _REQ:
        return {"req": _REQ[text]}
    m = re.fullmatch(r"AT_LEAST\((\d+)\)", text)
    if m:
        return {"req": "at_least", "at_least": int(m[1])}
    m = re.fullmatch(r"AT_LEAST_ONE_OR\((.+)\)", text)
    if m:
        return {"req": "at_least_one_or", "or_keys": [k.strip() for k in m[1].split(",")]}
    raise UnknownShape(
        f"{path}: {key}: REQ {text!r} is none of EXACTLY_ONE, AT_LEAST_ONE, AT_LEAST(n), AT_LEAST_ONE_OR(...), OPTIONAL"
    )


# Output: the committed YAML and the docs -----------------------------------------------------------------------


def dump_rules(rules: MlperfRuleSet) -> str:
    """The typed rules as readable YAML, defaults left out, with a header saying how the file was made."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = None  # a mapping or list of plain values on one line, the rest as blocks
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(_kind_first(rules.model_dump(mode="json", exclude_defaults=True)), out)
    header = (
        f"# MLPerf's compliance rules for {rules.usage} {rules.ruleset}, as typed rules (never evaluated as code).\n"
        f"# Generated from mlperf-logging {rules.source.version} ({rules.source.folder}) by\n"
        "# `python -m specbench.mlperf.ruleport --out rules/mlperf`; do not edit: tests/mlperf/test_ruleport.py\n"
        "# checks that a fresh translation gives this file.\n"
    )
    return header + out.getvalue()


def _kind_first(data: Any) -> Any:
    """The data with `kind` first and `mlperf_text` last in every mapping, for reading."""
    if isinstance(data, list):
        return [_kind_first(x) for x in data]
    if not isinstance(data, dict):
        return data
    order = sorted(data, key=lambda k: (k != "kind", k == "mlperf_text"))
    return {k: _kind_first(data[k]) for k in order}


def port_all(root: Path | None = None) -> list[Port]:
    return [port_ruleset(usage, ruleset, root) for usage, ruleset in RULESETS]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specbench.mlperf.ruleport", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("rules/mlperf"), help="folder of the typed rule files")
    parser.add_argument("--docs", type=Path, default=Path("docs/mlperf-rules.md"), help="the table of the port")
    args = parser.parse_args(argv)
    ports = port_all()
    args.out.mkdir(parents=True, exist_ok=True)
    for port in ports:
        target = args.out / rules_file_name(port.rules.usage, port.rules.ruleset)
        target.write_text(dump_rules(port.rules))
        print(f"wrote {target}: {len(port.rules.files)} files, {len(port.items)} items")
    args.docs.write_text(render_docs(ports))
    print(f"wrote {args.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
