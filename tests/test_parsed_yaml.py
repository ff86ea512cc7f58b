"""The committed parsed copies of the built-in YAML files are current and give what parsing the YAML gives."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specbench.physics import devices
from specbench.spec import builtin, loader, parsed
from specbench.spec.yamlio import load_yaml

REGENERATE = 'python -c "from specbench.spec.parsed import write_all; write_all()"'


def test_committed_copies_are_current() -> None:
    wanted = dict(parsed.render(p) for p in parsed.builtin_yaml_files())
    committed = {p.name: p.read_text(encoding="utf-8") for p in parsed.PARSED_DIR.glob("*.json")}
    assert sorted(committed) == sorted(wanted), f"parsed copies missing or left over: run {REGENERATE}"
    for name, text in wanted.items():
        assert committed[name] == text, f"{name} is stale: run {REGENERATE}"


@pytest.mark.parametrize("path", parsed.builtin_yaml_files(), ids=lambda p: p.name)
def test_copy_loads_as_the_yaml_parses(path: Path) -> None:
    from_copy, from_yaml = parsed.load_builtin_yaml(path), load_yaml(path)
    assert (parsed.PARSED_DIR / parsed.render(path)[0]).is_file()
    assert repr(from_copy.data) == repr(from_yaml.data)  # repr: 1, 1.0 and True differ, NaN equals itself
    assert from_copy.file == from_yaml.file
    assert from_copy.positions == from_yaml.positions


def test_every_builtin_file_counts_as_builtin(tmp_path: Path) -> None:
    assert all(parsed.is_builtin(p) for p in parsed.builtin_yaml_files())
    own = tmp_path / "specs" / "mlperf-resnet50.yaml"
    own.parent.mkdir()
    shutil.copy(builtin.find_spec("mlperf-resnet50"), own)
    assert not parsed.is_builtin(own)


def test_a_changed_file_is_parsed_as_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy is used only for the bytes it was made from; other bytes take the YAML parser."""
    source = parsed.builtin_yaml_files()[0]
    changed = tmp_path / source.name
    changed.write_text(source.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    calls: list[str] = []
    real = parsed.parse_yaml
    monkeypatch.setattr(parsed, "parse_yaml", lambda text, file: calls.append(file) or real(text, file))
    assert parsed.load_builtin_yaml(changed).data == load_yaml(source).data
    assert calls == [str(changed)]
    parsed.load_builtin_yaml(source)
    assert calls == [str(changed)]


def test_a_bad_copy_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = parsed.builtin_yaml_files()[0]
    name, _ = parsed.render(source)
    (tmp_path / name).write_text('{"format": "something else"}\n', encoding="utf-8")
    monkeypatch.setattr(parsed, "PARSED_DIR", tmp_path)
    assert repr(parsed.load_builtin_yaml(source).data) == repr(load_yaml(source).data)


def test_spec_and_device_table_are_the_same_as_from_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = loader.load_spec("mlperf-resnet50")
    table = devices._load.__wrapped__(str(devices.DEVICES_FILE), 0)[0]
    monkeypatch.setattr(parsed, "PARSED_DIR", tmp_path)  # no copies: every file through the YAML parser
    assert loader.load_spec("mlperf-resnet50").spec == spec.spec
    assert loader.load_spec("mlperf-resnet50").document.positions == spec.document.positions
    assert devices._load.__wrapped__(str(devices.DEVICES_FILE), 0)[0] == table
