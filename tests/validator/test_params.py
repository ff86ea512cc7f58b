"""SB-EQV-006: a submission declaring a parameter its spec's executor does not read (a typo beside the real name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mutate import BENCH, edit_log, edit_result, edit_yaml, index, resign
from validator_bases import Bases

from specbench.spec import load_spec, resolve
from specbench.spec.system import SubmissionMeta
from specbench.validator import validate_submission
from specbench.validator.findings import Findings
from specbench.validator.params import check_params


def _declare(root: Path, key: str, value: Any) -> None:
    """`key: value` in submission.yaml, the log and result.json, as a run of a spec that states it writes them."""
    edit_yaml(root / BENCH / "submission.yaml", lambda d: d["hyperparameters"].__setitem__(key, value))
    edit_log(
        root, lambda ev: ev.insert(index(ev, "momentum") + 1, {**ev[index(ev, "momentum")], "key": key, "value": value})
    )
    edit_result(root, lambda d: d["hyperparameters"].__setitem__(key, value))
    resign(root)


def _found(root: Path) -> list[str]:
    report = validate_submission(root)
    return [f"{f.code} {f.location}: {f.message}" for f in report.findings]


def test_a_misspelt_hyperparameter_is_located_in_submission_yaml_with_a_suggestion(
    bases: Bases, tmp_path: Path
) -> None:
    root = bases.copy(tmp_path)
    _declare(root, "optimiser", "sgd")
    line = next(
        n
        for n, text in enumerate((root / BENCH / "submission.yaml").read_text().splitlines(), 1)
        if "optimiser" in text
    )
    assert _found(root) == [
        f"SB-EQV-006 {BENCH}/submission.yaml:{line}:14: expected hyperparameters the resnet50 executor "
        "reads (did you mean 'optimizer'?), found optimiser: \"sgd\", which it does not read (the runs went without it)"
    ]


def test_a_setting_the_executor_lacks_is_found_and_one_the_spec_rules_on_is_not(bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)

    def edit(data: dict[str, Any]) -> None:
        framework = data.setdefault("layers", {}).setdefault("framework", {})
        framework["num_worker"] = 2  # a typo
        framework["framework_version"] = "2.5.0"  # rules.framework names it: a fact, stated here

    edit_yaml(root / BENCH / "submission.yaml", edit)
    resign(root)
    found = _found(root)
    assert len(found) == 1 and found[0].startswith("SB-EQV-006 "), found
    assert found[0].endswith(
        "expected layer framework settings the resnet50 executor has (did you mean 'num_workers'?), found "
        "num_worker: 2, which it does not have"
    )


def test_no_check_where_the_spec_has_no_executor_or_the_submission_was_imported(bases: Bases, tmp_path: Path) -> None:
    meta = SubmissionMeta.model_validate(
        {
            "format_version": 1, "spec_id": "mlperf-bert", "spec_version": "1.0.1", "spec_sha256": "0" * 64,
            "level": "system", "profile": "official", "submitter": "acme", "system": "box",
            "hyperparameters": {"opt_lamb_beta_1": 0.9, "anything_mlperf_logs": 1},
        }
    )  # fmt: skip
    findings = Findings()
    check_params(findings, meta, None, resolve(load_spec("mlperf-bert"), "official"), imported=False)  # type: ignore[arg-type]
    check_params(findings, meta, None, resolve(load_spec("resnet50"), "official"), imported=True)  # type: ignore[arg-type]
    assert findings.items == []
