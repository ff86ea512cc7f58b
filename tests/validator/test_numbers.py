"""Numbers beyond range never crash the validator or the scorer; a tampered file is reported as tampered;
an error inside specbench exits with its own code."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutate import edit_result, edit_yaml, run_dir
from validator_bases import Bases

from specbench.cli import main
from specbench.errors import EXIT_INTERNAL
from specbench.scoring.leaderboard import build
from specbench.validator import validate_submission

HUGE = 10**400


def _log_huge_time(root: Path) -> None:
    log = run_dir(root) / "log.txt"
    lines = log.read_text().splitlines()
    lines[3] = lines[3].replace('"time_ms": ', f'"time_ms": {HUGE}0', 1)
    log.write_text("\n".join(lines) + "\n")


EDITS = {
    "result samples_processed": lambda r: edit_result(r, lambda d: d.__setitem__("samples_processed", HUGE)),
    "result quality value": lambda r: edit_result(r, lambda d: d["quality"].__setitem__("achieved", HUGE)),
    "system accelerator_count": lambda r: edit_yaml(
        r / "system.yaml", lambda d: d["layers"]["hardware"].__setitem__("accelerator_count", HUGE)
    ),
    "system power_limit_w": lambda r: edit_yaml(
        r / "system.yaml", lambda d: d["layers"]["driver_firmware"].__setitem__("power_limit_w", HUGE)
    ),
    "declared hyperparameter": lambda r: edit_yaml(
        r / "resnet50" / "submission.yaml", lambda d: d["hyperparameters"].__setitem__("global_batch_size", HUGE)
    ),
    "log time_ms": _log_huge_time,
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_huge_integer_unsigned_is_tampered_and_out_of_range(name: str, bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)
    EDITS[name](root)
    report = validate_submission(root)  # not re-signed: the edited file differs from the manifest
    codes = report.codes()
    assert "SB-INT-001" in codes
    assert codes & {"SB-NUM-001", "SB-LOG-001"}
    assert report.exit_code() == 1
    build([report])  # the scorer never meets the number either


def test_internal_error_exits_with_its_own_code(
    monkeypatch: pytest.MonkeyPatch, bases: Bases, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import specbench.commands.validate as validate_command

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(validate_command, "validate_many", broken)
    root = bases.copy(tmp_path)
    assert main(["validate", str(root)]) == EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert "RuntimeError: a bug" in err and "internal error in specbench (exit code 3)" in err
