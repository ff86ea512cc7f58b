"""Every invalid spec under tests/data/specs/invalid produces its pinned error, with its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.errors import EXIT_UNUSABLE, InputError
from specbench.spec import load_spec
from specbench.spec.yamlio import MAX_DEPTH, MAX_FILE_BYTES

INVALID = Path(__file__).parent / "data" / "specs" / "invalid"
EXPECTED: dict[str, list[str]] = json.loads((INVALID / "expected.json").read_text())


def test_corpus_is_large_and_fully_pinned() -> None:
    files = sorted(p.name for p in INVALID.glob("*.yaml"))
    assert files == sorted(EXPECTED)
    assert len(files) >= 20
    assert all(EXPECTED[name] for name in files)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_invalid_spec_gives_pinned_error(name: str, in_repo: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_spec(f"tests/data/specs/invalid/{name}")
    assert [p.render() for p in caught.value.problems] == EXPECTED[name]
    assert all(p.location.line is not None for p in caught.value.problems)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cli_prints_one_line_per_problem_and_exits_2(
    name: str, in_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["show", f"tests/data/specs/invalid/{name}"])
    captured = capsys.readouterr()
    assert code == EXIT_UNUSABLE
    assert captured.out == ""
    assert captured.err.splitlines() == [f"error: {line}" for line in EXPECTED[name]]
    assert "Traceback" not in captured.err


def test_oversized_file_is_refused(tmp_path: Path, in_repo: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * (MAX_FILE_BYTES + 10) + "\n")
    with pytest.raises(InputError) as caught:
        load_spec(big)
    assert "over the limit of 1048576 bytes" in caught.value.problems[0].message


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n")
    with pytest.raises(InputError) as caught:
        load_spec(deep)
    assert caught.value.problems[0].message == f"nesting deeper than {MAX_DEPTH} levels"


def test_very_deep_nesting_does_not_crash(tmp_path: Path) -> None:
    deep = tmp_path / "deeper.yaml"
    deep.write_text("a: " + "[" * 20000 + "]" * 20000 + "\n")
    with pytest.raises(InputError):
        load_spec(deep)


def test_missing_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "no/such/spec.yaml"]) == EXIT_UNUSABLE
    err = capsys.readouterr().err
    assert err.startswith("error: no spec file 'no/such/spec.yaml' and no built-in spec with that id")
