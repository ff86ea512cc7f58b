"""Safe YAML loading that keeps the line and column of every value.

The document is composed into a node tree by ruamel.yaml and turned into plain Python values
here, so no YAML tag can construct an object, aliases cannot expand without bound, duplicate
keys are refused, and every value's JSON path maps to its position in the file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.errors import InputError, Location, Problem

if TYPE_CHECKING:
    from ruamel.yaml.nodes import MappingNode, Node

MAX_FILE_BYTES = 1024 * 1024
MAX_EXPANDED_NODES = 100_000
MAX_DEPTH = 64

JsonPath = tuple[str | int, ...]
Position = tuple[str, int, int]

_STD = "tag:yaml.org,2002:"
_FLOAT_SPECIAL = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}


def format_path(path: JsonPath) -> str:
    """Render a JSON path as `a.b[2].c`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass
class Document:
    """A loaded YAML file: its plain data and the position of every value in it."""

    data: Any
    file: str
    positions: dict[JsonPath, Position] = field(default_factory=dict)

    def locate(self, path: JsonPath) -> Location:
        """The location of `path`, or of its nearest ancestor present in the file."""
        probe = tuple(path)
        while probe and probe not in self.positions:
            probe = probe[:-1]
        file, line, column = self.positions.get(probe, (self.file, 1, 1))
        return Location(file, line, column, format_path(tuple(path)))


def _fail(file: str, line: int, column: int, message: str, path: JsonPath = ()) -> InputError:
    return InputError([Problem(Location(file, line, column, format_path(path)), message, "SPEC001")])


def read_text(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 file of bounded size, with a located error for bad bytes."""
    name = str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise _fail(name, 1, 1, "file not found") from None
    except OSError as err:
        raise _fail(name, 1, 1, f"cannot read file: {err.strerror}") from err
    if size > max_bytes:
        raise _fail(name, 1, 1, f"file is {size} bytes, over the limit of {max_bytes} bytes")
    if not path.is_file():
        raise _fail(name, 1, 1, "not a regular file")
    raw = path.read_bytes()[: max_bytes + 1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise _fail(name, line, column, f"not valid UTF-8: byte 0x{raw[err.start]:02x} cannot be decoded") from None


def load_yaml(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Document:
    """Load one YAML file safely into plain data with positions."""
    return parse_yaml(read_text(path, max_bytes), str(path))


def parse_yaml(text: str, file: str = "<input>") -> Document:
    """Parse YAML text into plain data with positions; every failure is an InputError."""
    from ruamel.yaml import YAML  # here: a process that parses no YAML does not load ruamel.yaml
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.nodes import MappingNode

    yaml = YAML(typ="safe", pure=True)
    try:
        root = yaml.compose(text)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise _fail(file, line, column, f"YAML syntax error: {err.problem or err}") from None
    except YAMLError as err:
        raise _fail(file, 1, 1, f"YAML error: {err}") from None
    except RecursionError:
        raise _fail(file, 1, 1, "YAML nesting is too deep") from None
    if root is None:
        raise _fail(file, 1, 1, "the document is empty; expected a mapping")
    if not isinstance(root, MappingNode):
        line, column = root.start_mark.line + 1, root.start_mark.column + 1
        raise _fail(file, line, column, f"the document root must be a mapping, found a {_node_kind(root)}")
    _check_expansion(root, file)
    builder = _Builder(file)
    data = builder.build(root, ())
    return Document(data, file, builder.positions)


NOT_PLAIN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")
"""Characters the YAML reader refuses or reads as line breaks (NEL, LS, PS): a JSON text with one takes the YAML path.

All but tab, LF, CR, 0x20-0x7e, 0xa0-0x2027, 0x202a-0xd7ff, 0xe000-0xfffd and 0x10000-0x10ffff,
written as the few ranges left out (a class of the ranges kept takes milliseconds to compile)."""
_JSON_SPACE = re.compile(r"[ \n\r]*")
_JSON_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
_LINE_BREAK = re.compile(r"\r\n?|\n")
MAX_JSON_KEY_CHARS = 1000
"""YAML reads a key as a key only where its ':' follows on its line within 1024 characters of its start (a JSON
text with a key further from its ':' is left to the YAML parser)."""


def json_positions(text: str, file: str) -> dict[JsonPath, Position] | None:
    """The position of every value of a JSON text as parse_yaml gives it (YAML 1.2 reads JSON as itself), without
    the YAML parser: each value's line and column, where its first character is.

    None, for the YAML parser to decide (or refuse), for a text that is not one JSON object, has a tab (YAML
    allows tabs in fewer places) or a character of NOT_PLAIN, a key not right before its ':' or MAX_JSON_KEY_CHARS
    or more from it, values deeper than MAX_DEPTH, or more than MAX_EXPANDED_NODES keys and values.
    """
    import bisect
    from json.decoder import scanstring  # type: ignore[attr-defined]  # the C string scanner json uses

    if "\t" in text or NOT_PLAIN.search(text):
        return None
    starts = [0, *(m.end() for m in _LINE_BREAK.finditer(text))]
    positions: dict[JsonPath, Position] = {}

    def skip(index: int) -> int:
        found = _JSON_SPACE.match(text, index)
        return found.end() if found is not None else index

    def place(index: int) -> Position:
        line = bisect.bisect_right(starts, index)
        return file, line, index - starts[line - 1] + 1

    keys = 0

    def value(index: int, path: JsonPath) -> int:
        nonlocal keys
        if len(path) > MAX_DEPTH:
            raise _NotAsYaml
        positions[path] = place(index)
        first = text[index]
        if first == '"':
            return int(scanstring(text, index + 1)[1])
        if first not in "{[":
            found = _JSON_SCALAR.match(text, index)
            if found is None:
                raise ValueError(f"no JSON value at {index}")
            return found.end()
        close, count = ("}" if first == "{" else "]"), 0
        index = skip(index + 1)
        while text[index] != close:
            if first == "{":
                if text[index] != '"':
                    raise ValueError(f"expected a key at {index}")
                key, end = scanstring(text, index + 1)
                colon = skip(end)
                if text[colon] != ":":
                    raise ValueError(f"expected ':' at {colon}")
                if colon - index >= MAX_JSON_KEY_CHARS or colon != end:
                    raise _NotAsYaml
                keys += 1
                index = value(skip(colon + 1), (*path, key))
            else:
                index = value(index, (*path, count))
                count += 1
            index = skip(index)
            if text[index] == ",":
                index = skip(index + 1)
                if text[index] == close:
                    raise ValueError(f"trailing ',' before {index}")
            elif text[index] != close:
                raise ValueError(f"expected ',' or {close!r} at {index}")
        return index + 1

    start = skip(0)
    if not text.startswith("{", start):
        return None
    try:
        end = value(start, ())
    except (_NotAsYaml, ValueError, IndexError, RecursionError):
        return None
    if text[skip(end) :] or len(positions) + keys > MAX_EXPANDED_NODES:
        return None
    return positions


class _NotAsYaml(Exception):
    pass


def _join_surrogates(text: str) -> str:
    """Join UTF-16 surrogate pairs from escapes such as "\\ud800\\udc00" into one character."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _node_kind(node: Node) -> str:
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode):
        return "mapping"
    if isinstance(node, SequenceNode):
        return "sequence"
    return "scalar"


def _check_expansion(root: Node, file: str) -> None:
    """Refuse documents whose aliases would expand past a bound (the 'billion laughs' attack)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if children_done or not children:
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 0) for c in children)
            if sizes[id(node)] > MAX_EXPANDED_NODES:
                line, column = node.start_mark.line + 1, node.start_mark.column + 1
                raise _fail(
                    file,
                    line,
                    column,
                    f"aliases expand to more than {MAX_EXPANDED_NODES} values; refusing to load",
                )
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _children(node: Node) -> list[Node]:
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.positions: dict[JsonPath, Position] = {}

    def build(self, node: Node, path: JsonPath) -> Any:
        from ruamel.yaml.nodes import MappingNode, SequenceNode

        if len(path) > MAX_DEPTH:
            raise self._error(node, f"nesting deeper than {MAX_DEPTH} levels", path)
        self.positions[path] = (self.file, node.start_mark.line + 1, node.start_mark.column + 1)
        tag = str(node.tag)
        if isinstance(node, MappingNode):
            if tag != _STD + "map":
                raise self._error(node, f"YAML tag {tag!r} is not allowed in specbench files", path)
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            if tag != _STD + "seq":
                raise self._error(node, f"YAML tag {tag!r} is not allowed in specbench files", path)
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node, path)

    def _mapping(self, node: MappingNode, path: JsonPath) -> dict[str, Any]:
        from ruamel.yaml.nodes import ScalarNode

        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if str(key_node.tag) == _STD + "merge":
                raise self._error(key_node, "YAML merge keys ('<<') are not supported; write the keys out", path)
            if not isinstance(key_node, ScalarNode):
                raise self._error(key_node, "mapping keys must be plain scalars", path)
            key = str(self._scalar(key_node, path))
            if key in out:
                first = self.positions.get((*path, key), (self.file, 0, 0))[1]
                raise self._error(key_node, f"duplicate key {key!r} (first defined on line {first})", (*path, key))
            out[key] = self.build(value_node, (*path, key))
        return out

    def _scalar(self, node: Node, path: JsonPath) -> Any:
        tag, value = str(node.tag), str(node.value)
        if not tag.startswith(_STD):
            raise self._error(node, f"YAML tag {tag!r} is not allowed in specbench files", path)
        kind = tag[len(_STD) :]
        if kind in ("str", "timestamp"):
            return _join_surrogates(value)
        if kind == "null":
            return None
        if kind == "bool":
            return value.lower() == "true"
        if kind == "int":
            try:
                return int(value, 0) if not re.fullmatch(r"[-+]?0+[0-9_]*", value) else int(value.replace("_", ""))
            except ValueError:
                raise self._error(node, f"not an integer: {value!r}", path) from None
        if kind == "float":
            special = _FLOAT_SPECIAL.get(value.lower())
            if special is not None:
                return special
            try:
                return float(value.replace("_", ""))
            except ValueError:
                raise self._error(node, f"not a number: {value!r}", path) from None
        raise self._error(node, f"YAML tag {tag!r} is not allowed in specbench files", path)

    def _error(self, node: Node, message: str, path: JsonPath) -> InputError:
        return _fail(self.file, node.start_mark.line + 1, node.start_mark.column + 1, message, path)
