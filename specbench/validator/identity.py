"""Identity strings (device names, spec id, variant, level, profile, submitter, system) are plain text.

The scorer groups and compares results by these strings, so two strings that look alike must be
one string. A value is refused when it holds a control or invisible character (SB-IDN-001), stray
whitespace (SB-IDN-002), a character Unicode NFKC normalisation changes (SB-IDN-003: fullwidth
letters, ligatures, the micro sign, a letter followed by a combining accent), or look-alike letters
(SB-IDN-004: Latin, Greek and Cyrillic letters mixed, a Greek or Cyrillic letter among ASCII
digits, as in a Cyrillic 'Н200', or a name written only in Greek or Cyrillic letters drawn like Latin
ones, as a Cyrillic 'АСМЕ'). What is accepted is its own NFKC normal form, so comparing
accepted strings exactly compares them after normalisation. A file or folder name holding such a
control or invisible character is refused too (SB-STR-012): reports quote names.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from specbench.spec.system import SubmissionMeta, SystemDescription
from specbench.textsafe import is_invisible
from specbench.validator.documents import Loaded
from specbench.validator.findings import Findings
from specbench.validator.model import RunData
from specbench.validator.physics import trace_accelerators

LOOKALIKE_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC")
"""Scripts whose letters look alike (Latin H, Greek Eta, Cyrillic En): a string holds letters of one of them only."""
ASCII_DIGITS = frozenset("0123456789")
LATIN_TWINS = frozenset("АВЕЅІЈКМНОРСТХУаеѕіјорсухԁԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧοϲ")
"""Greek and Cyrillic letters drawn like a Latin letter in common fonts (A B E S I J K M H O P C T X Y...): a
name written only in them reads as a Latin name (a Cyrillic 'АСМЕ' as 'ACME')."""

SYSTEM_FIELDS = ("submitter", "system")
HARDWARE_FIELDS = ("accelerator_model", "accelerator_vendor")
META_FIELDS = ("spec_id", "spec_version", "level", "profile", "variant", "submitter", "system")


@dataclass(frozen=True)
class Refusal:
    """Why an identity string is refused: the finding code and what was found, naming the character."""

    code: str
    found: str


def describe(char: str) -> str:
    """'U+041D CYRILLIC CAPITAL LETTER EN', or the code point alone for a character without a name."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def script(char: str) -> str | None:
    """The look-alike script of a letter (the first word of its Unicode name), or None for any other character."""
    if not unicodedata.category(char).startswith("L"):
        return None
    first = unicodedata.name(char, "").split(" ", 1)[0]
    return first if first in LOOKALIKE_SCRIPTS else None


def refusal(value: str) -> Refusal | None:
    """The first reason `value` is not plain identity text, or None when it is."""
    for at, char in enumerate(value):
        if is_invisible(char):
            return Refusal("SB-IDN-001", f"{describe(char)} at position {at}")
    return _whitespace(value) or _normalisation(value) or _scripts(value)


def _whitespace(value: str) -> Refusal | None:
    if value != value.strip():
        side = "leading" if value[:1].isspace() else "trailing"
        return Refusal("SB-IDN-002", f"{side} whitespace")
    for at, char in enumerate(value):
        if char.isspace() and char != " ":
            return Refusal("SB-IDN-002", f"{describe(char)} at position {at} (only U+0020 SPACE separates words)")
        if char == " " and value[at + 1 : at + 2] == " ":
            return Refusal("SB-IDN-002", f"repeated spaces at position {at}")
    return None


def _normalisation(value: str) -> Refusal | None:
    normal = unicodedata.normalize("NFKC", value)
    if normal == value:
        return None
    for at, char in enumerate(value):
        alone = unicodedata.normalize("NFKC", char)
        if alone != char:
            return Refusal("SB-IDN-003", f"{describe(char)} at position {at}, which NFKC makes {alone!r}")
    marks = [(at, c) for at, c in enumerate(value) if unicodedata.category(c).startswith("M")]
    at, char = marks[0] if marks else (0, value[0])
    return Refusal("SB-IDN-003", f"{describe(char)} at position {at}, which NFKC composes: write {normal!r}")


def _scripts(value: str) -> Refusal | None:
    first: tuple[int, str, str] | None = None
    for at, char in enumerate(value):
        found = script(char)
        if found is None:
            continue
        if first is None:
            first = (at, char, found)
        elif found != first[2]:
            return Refusal(
                "SB-IDN-004",
                f"{describe(char)} at position {at} among {first[2]} letters ({describe(first[1])} at {first[0]})",
            )
    if first is not None and first[2] != "LATIN" and ASCII_DIGITS & set(value):
        return Refusal(
            "SB-IDN-004", f"{describe(first[1])} at position {first[0]} next to ASCII digits, as a Latin name has"
        )
    letters = [c for c in value if script(c) is not None]
    if first is not None and first[2] != "LATIN" and all(c in LATIN_TWINS for c in letters):
        return Refusal(
            "SB-IDN-004", f"only {first[2]} letters drawn like Latin ones ({describe(first[1])} at {first[0]})"
        )
    return None


def check_value(
    findings: Findings, file: str, label: str, value: Any, where: Callable[[], dict[str, Any]] | dict[str, Any]
) -> None:
    """One identity field: a finding when it is a string that `refusal` refuses (other types are the schema's).

    `where` may be a function giving the location, called only for a finding: locating a value in a YAML file
    parses it for positions, which a file without findings never needs."""
    if not isinstance(value, str):
        return
    refused = refusal(value)
    if refused is not None:
        findings.add(
            refused.code,
            file,
            f"expected {label} as plain text (NFKC-normal, one script, single spaces), found {value!r} with "
            f"{refused.found}",
            **(where() if callable(where) else where),
        )


def _field(findings: Findings, loaded: Loaded, path: tuple[str | int, ...], value: Any) -> None:
    check_value(findings, loaded.file, ".".join(map(str, path)), value, lambda: loaded.locate(*path))


def check_system(findings: Findings, system: SystemDescription, loaded: Loaded) -> None:
    """system.yaml: submitter, system, and each accelerator model and vendor (of the job and of each node)."""
    for key in SYSTEM_FIELDS:
        _field(findings, loaded, (key,), getattr(system, key))
    nodes: list[tuple[tuple[str | int, ...], Mapping[str, Any]]] = [
        (("layers",), system.layers.get("hardware", {})),
        *((("per_node", i), layers.get("hardware", {})) for i, layers in enumerate(system.per_node or [])),
    ]
    for prefix, hardware in nodes:
        for key in HARDWARE_FIELDS:
            _field(findings, loaded, (*prefix, "hardware", key), hardware.get(key))


def check_meta(findings: Findings, meta: SubmissionMeta, loaded: Loaded) -> None:
    """submission.yaml: spec_id, spec_version, level, profile, variant, submitter, system."""
    for key in META_FIELDS:
        _field(findings, loaded, (key,), getattr(meta, key))


def check_trace(findings: Findings, run: RunData) -> None:
    """power.json: the driver's model name of each accelerator the trace lists (CPU names are not identities)."""
    for series in trace_accelerators(run):
        label = f"the model of {series.device}"
        check_value(
            findings, f"{run.folder}/power.json", label, series.model, {"json_path": "meters[].devices[].model"}
        )


def check_file_name(findings: Findings, rel: str) -> bool:
    """SB-STR-012 when the last component of `rel` (a path under the submission) holds a control or invisible
    character; whether it did, so the caller reports nothing else about the name."""
    name = rel.rpartition("/")[2]
    at = next((at for at, char in enumerate(name) if is_invisible(char)), None)
    if at is None:
        return False
    findings.add(
        "SB-STR-012",
        rel,
        f"expected a name of printable characters, found {name!r} with {describe(name[at])} at position {at}",
    )
    return True
