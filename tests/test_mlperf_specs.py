"""The built-in MLPerf specs agree with the closed-division rules of the installed mlperf-logging.

MLPerf's rule files hold Python expressions as strings; they are read with yaml.safe_load and the numbers taken
out of them with regular expressions, never evaluated.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from specbench.spec.builtin import spec_paths
from specbench.spec.loader import load_spec
from specbench.spec.models import Spec

pytestmark = pytest.mark.needs("mlperf_logging", "yaml")
mlperf_logging = pytest.importorskip("mlperf_logging")
from mlperf_logging.benchmark_meta import get_result_file_counts  # noqa: E402

CHECKER = Path(mlperf_logging.__file__).resolve().parent / "compliance_checker"
CANDIDATE_RULESETS = {
    "training": ("4.0.0", "4.1.0", "5.0.0", "5.1.0"),
    "hpc": ("1.0.0", "2.0.0", "3.0.0"),
}
"""The rulesets these specs answer, by usage: a spec lists exactly those that hold closed_<benchmark>.yaml."""
AGGREGATED_KEY = "aggregated_eval_accuracy"
"""The key closed_stable_diffusion.yaml builds from eval_accuracy lines tagged with a metric (FID, CLIP)."""
MAX_FAILED = {"unet3d": 4}
"""Non-converged runs MLPerf's result summarizer and package checker accept: 4 for unet3d, else 1."""
NUMBER = r"([0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)"


def _mlperf_specs() -> list[tuple[str, Spec]]:
    found = []
    for path in spec_paths():
        spec = load_spec(path).spec
        if spec.mlperf is not None:
            found.append((path.stem, spec))
    return found


MLPERF_SPECS = _mlperf_specs()
IDS = [spec_id for spec_id, _ in MLPERF_SPECS]


def closed_rules_path(usage: str, ruleset: str, benchmark: str) -> Path:
    return CHECKER / f"{usage}_{ruleset}" / f"closed_{benchmark}.yaml"


@cache
def closed_rules(usage: str, ruleset: str, benchmark: str) -> dict[str, dict[str, Any]]:
    """closed_<benchmark>.yaml's KEY entries by name (its BEGIN code block is ignored)."""
    entries = yaml.safe_load(closed_rules_path(usage, ruleset, benchmark).read_text(encoding="utf-8"))
    return {item["KEY"]["NAME"]: item["KEY"] for item in entries if isinstance(item, dict) and "KEY" in item}


def target_bound(expression: str, direction: str, field: str | None) -> float:
    """The number the target bound of an ATLEAST_ONE_CHECK names: `v['value'] >= X` when higher is better,
    `v['value'] <= X` when lower is (`v['value']['FID'] <= X` for a field of an aggregated value)."""
    subject = r"v\['value'\]" + (rf"\['{re.escape(field)}'\]" if field else r"(?!\[)")
    operator = ">=" if direction == "higher" else "<="
    found = re.findall(subject + r"\s*" + operator + r"\s*" + NUMBER, expression)
    assert len(found) == 1, f"expected one {operator} bound in {expression!r}, found {found}"
    return float(found[0].replace("_", ""))


def fixed_count(entry: dict[str, Any] | None) -> int | None:
    """The count a CHECK of the form `v['value'] == N` fixes, or None where the rules fix none."""
    if entry is None:
        return None
    checks = entry.get("CHECK")
    for check in checks if isinstance(checks, list) else [checks]:
        match = re.fullmatch(r"\s*v\['value'\]\s*==\s*([0-9_]+)\s*", str(check or ""))
        if match:
            return int(match.group(1).replace("_", ""))
    return None


def test_every_benchmark_of_the_rulesets_has_a_spec() -> None:
    expected = set()
    for usage, rulesets in CANDIDATE_RULESETS.items():
        for ruleset in rulesets:
            for path in (CHECKER / f"{usage}_{ruleset}").glob("closed_*.yaml"):
                name = path.stem.removeprefix("closed_")
                if name != "common" and not (usage == "hpc" and name.startswith("deepcam_")):
                    expected.add((usage, name))
    expected -= {("training", "resnet_lars"), ("training", "resnet_sgd")}  # resnet's optimizer variants
    bound = {(spec.mlperf.usage, spec.mlperf.benchmark) for _, spec in MLPERF_SPECS if spec.mlperf is not None}
    assert sorted(expected - bound) == []


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_rulesets_are_those_with_closed_rules(spec_id: str, spec: Spec) -> None:
    binding = spec.mlperf
    assert binding is not None
    for ruleset in binding.rulesets:
        path = closed_rules_path(binding.usage, ruleset, binding.benchmark)
        assert path.is_file(), f"{spec_id}: no {path.parent.name}/{path.name} in mlperf-logging"
    candidates = CANDIDATE_RULESETS[binding.usage]
    having = [r for r in candidates if closed_rules_path(binding.usage, r, binding.benchmark).is_file()]
    assert binding.rulesets == having


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_target_is_the_newest_rulesets_bound(spec_id: str, spec: Spec) -> None:
    binding, quality = spec.mlperf, spec.quality
    assert binding is not None and quality is not None
    newest = max(binding.rulesets, key=lambda r: tuple(int(x) for x in r.split(".")))
    rules = closed_rules(binding.usage, newest, binding.benchmark)
    entry, field = rules.get(quality.log_key), None
    if entry is None or "ATLEAST_ONE_CHECK" not in entry:
        entry = rules.get(AGGREGATED_KEY)
        assert entry is not None, f"{spec_id}: closed_{binding.benchmark}.yaml checks no {quality.log_key}"
        expression = entry["ATLEAST_ONE_CHECK"]
        fields = [f for f in re.findall(r"v\['value'\]\['(\w+)'\]", expression) if f.lower() == quality.metric]
        assert fields, f"{spec_id}: {AGGREGATED_KEY} has no {quality.metric} bound in {expression!r}"
        field = fields[0]
    assert quality.target == target_bound(entry["ATLEAST_ONE_CHECK"], quality.direction, field)


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_target_is_the_same_in_every_listed_ruleset(spec_id: str, spec: Spec) -> None:
    """No per-ruleset target: a change between rounds would need one (and a note in the spec)."""
    binding, quality = spec.mlperf, spec.quality
    assert binding is not None and quality is not None
    checks = set()
    for ruleset in binding.rulesets:
        rules = closed_rules(binding.usage, ruleset, binding.benchmark)
        entry = rules.get(quality.log_key) or rules.get(AGGREGATED_KEY) or {}
        checks.add(entry.get("ATLEAST_ONE_CHECK"))
    assert len(checks) == 1, f"{spec_id}: the target differs between rulesets: {checks}"


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_samples_are_those_the_closed_rules_fix(spec_id: str, spec: Spec) -> None:
    binding, dataset = spec.mlperf, spec.workload.dataset
    assert binding is not None
    for ruleset in binding.rulesets:
        rules = closed_rules(binding.usage, ruleset, binding.benchmark)
        for key, stated in (("train_samples", dataset.train_samples), ("eval_samples", dataset.eval_samples)):
            fixed = fixed_count(rules.get(key))
            if fixed is not None:
                assert stated == fixed, f"{spec_id}: {ruleset} fixes {key} {fixed}, the spec states {stated}"


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_runs_are_mlperfs(spec_id: str, spec: Spec) -> None:
    binding, runs = spec.mlperf, spec.measurement.runs
    assert binding is not None
    assert runs.count == get_result_file_counts(binding.usage)[binding.benchmark]
    assert runs.aggregation == "olympic"
    assert runs.max_failed == MAX_FAILED.get(binding.benchmark, 1)


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_spec_id_follows_the_benchmark_name(spec_id: str, spec: Spec) -> None:
    binding = spec.mlperf
    assert binding is not None and spec.id == spec_id
    if spec_id == "mlperf-resnet50":
        return  # named before the convention
    prefix = "mlperf-hpc-" if binding.usage == "hpc" else "mlperf-"
    assert spec_id == prefix + binding.benchmark.replace("_", "-")


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_imported_only_specs_are_ranked_by_time_to_train(spec_id: str, spec: Spec) -> None:
    if spec.workload.executor is not None:
        return
    assert spec.scoring == "mlperf-time-to-train" and spec.kind == "time_to_quality"
    assert list(spec.profiles) == ["official"] and spec.profiles["official"].ranked
    assert spec.quality is not None and spec.quality.penalty_exponent == 5 and spec.quality.cap_ratio


RCPS = CHECKER.parent / "rcp_checker"
SAMPLES_COUNT_BENCHMARKS = {"stable_diffusion", "llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b"}
"""Benchmarks whose convergence rcp_checker.read_submission_file reads from the evaluations' samples_count, not
epoch_num (stable_diffusion by samples_count from 4.0.0, step_num in 3.1.0)."""


def convergence_points(usage: str, rulesets: list[str], benchmark: str) -> list[tuple[int, float]]:
    """(batch size, point) of every reference convergence point (RCP) of the newest listed ruleset that has them."""
    for ruleset in sorted(rulesets, key=lambda r: tuple(int(x) for x in r.split(".")), reverse=True):
        path = RCPS / f"{usage}_{ruleset}" / f"rcps_{benchmark}.json"
        if path.is_file():
            records = json.loads(path.read_text(encoding="utf-8")).values()
            return [
                (record["BS"], point)
                for record in records
                for point in record.get("Epochs to converge", record.get("samples to converge", []))
            ]
    return []


@pytest.mark.parametrize(("spec_id", "spec"), MLPERF_SPECS, ids=IDS)
def test_epoch_num_counts_what_mlperfs_rcps_count(spec_id: str, spec: Spec) -> None:
    """MLPerf's RCPs hold each reference run's epoch_num at convergence: an epoch count stays below the batch
    size (ResNet 34 at batch 1,632), a sample count reaches it (BERT 2,834,944 at 256; 3D U-Net 396,480 at 28)."""
    binding = spec.mlperf
    assert binding is not None
    points = convergence_points(binding.usage, binding.rulesets, binding.benchmark)
    if binding.benchmark in SAMPLES_COUNT_BENCHMARKS or not points:
        assert binding.epoch_num == "epochs", f"{spec_id}: its logs' samples_count counts, not epoch_num"
        return
    counts_samples = {point >= batch for batch, point in points}
    assert len(counts_samples) == 1, f"{spec_id}: RCPs of both kinds: {points}"
    assert binding.epoch_num == ("samples" if counts_samples.pop() else "epochs")


def test_target_bound_reads_mlperfs_expressions() -> None:
    assert target_bound("(v['value'] >= 0.720) and v['value'] < 1.0", "higher", None) == 0.72
    assert target_bound("(v['value'] <= 2.69) and v['value'] > 2.6", "lower", None) == 2.69
    assert target_bound("v['value'] >= 0.82 and v['value'] <= 1.", "higher", None) == 0.82
    expression = "(0.0 <= v['value']['FID'] <= 90.0) and (0.15 <= v['value']['CLIP'] <= 1.0)"
    assert target_bound(expression, "lower", "FID") == 90.0
    assert fixed_count({"CHECK": " v['value'] == 89137319 "}) == 89137319
    assert fixed_count({"CHECK": " v['value'] > 0"}) is None
    assert fixed_count(None) is None
