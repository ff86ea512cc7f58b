"""MLPerf HPC DeepCAM imports on the extreme-weather leaderboard: scored by its Valid FLOPS with the reference
model's FLOPs per sample, grouped under MLPerf's rule (stopped at the target), never ranked with runs that trained
HPC AI500's whole budget; the samples a run processed are its logged steps x global batch.

Small strong-scaling DeepCAM results are generated here (HPC 2.0.0 logs, a closed and an open division system);
the corpus' HPC v2.0 round checks the same on NVIDIA's, HoreKa's and Dell's real results.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.committed import committed

from specbench.formats.mllog import parse_log
from specbench.mlperf import import_results
from specbench.scoring.leaderboard import Entry, Leaderboard, build
from specbench.scoring.listed import Listing, _unsound, listings, placement, problem_differences
from specbench.scoring.render import render_table
from specbench.spec.loader import load_spec
from specbench.validator import validate_submission
from specbench.validator.evidence import step_samples

ROUNDS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "mlperf-rounds"
HPC = ROUNDS / "hpc-v2.0"
COMMITTED = committed("h200-extreme-weather")
MAKER = Path(__file__).resolve().parents[1] / "validator" / "make_submission.py"
SPEC = "mlperf-hpc-deepcam"
FLOPS_PER_SAMPLE = 1_963_974_567_936
TITLE = (
    "extreme-weather 2.1.0 · model mlperf-reference · imported as mlperf-hpc-deepcam 1.0.0 · MLPerf rule: stopped at "
    "the target · time_to_quality · level {level} · profile official · power scope node"
)
STEPS_PER_EPOCH, BATCH, EPOCHS = 470, 256, 3
DEEPCAM = {
    "gradient_accumulation_frequency": 1,
    "global_batch_size": BATCH,
    "batchnorm_group_size": 1,
    "opt_name": "LAMB",
    "opt_lr": 0.001,
    "opt_betas": [0.9, 0.999],
    "opt_eps": 1e-6,
    "scheduler_type": "multistep",
    "scheduler_lr_warmup_steps": 0,
    "scheduler_lr_warmup_factor": 1.0,
    "train_samples": 121266,
    "eval_samples": 15158,
    "opt_bias_correction": True,
    "opt_grad_averaging": True,
    "opt_max_grad_norm": 1.0,
    "scheduler_milestones": [100],
    "scheduler_decay_rate": 0.1,
}


def system_json(division: str) -> dict[str, Any]:
    return {
        "submitter": "Lab",
        "division": division,
        "status": "onprem",
        "system_name": f"gpu n8 {division}",
        "number_of_nodes": "2",
        "accelerators_per_node": "4",
        "accelerator_model_name": "NVIDIA A100-SXM4-80GB",
        "host_processor_model_name": "AMD EPYC 7742",
        "framework": "PyTorch NVIDIA Release 22.08",
        "operating_system": "Ubuntu 20.04.4 LTS",
        "other_software_stack": {"cuda_driver_version": "515.65.01"},
    }


def deepcam_log(seed: int, start_ms: int, epoch_ms: int, division: str) -> str:
    """A strong-scaling DeepCAM log as DeepCAM's reference writes one: each evaluation and epoch names its epoch and
    the steps so far (no samples_count); the last evaluation reaches the target 0.82."""
    lines: list[tuple[str, Any, dict[str, Any] | None, int]] = [
        ("submission_org", "Lab", None, 0),
        ("submission_platform", f"gpu_{division}", None, 0),
        ("submission_division", division, None, 0),
        ("submission_status", "onprem", None, 0),
        ("submission_benchmark", "deepcam", None, 0),
        ("cache_clear", True, None, 0),
        ("init_start", None, None, 0),
        ("number_of_nodes", 2, None, 0),
        ("accelerators_per_node", 4, None, 0),
        ("seed", seed, None, 0),
        *((key, value, None, 0) for key, value in DEEPCAM.items()),
        ("init_stop", None, None, 1000),
        ("run_start", None, None, 1000),
    ]
    for epoch in range(1, EPOCHS + 1):
        meta = {"epoch_num": epoch, "step_num": epoch * STEPS_PER_EPOCH}
        at = 1000 + epoch * epoch_ms
        accuracy = 0.825 if epoch == EPOCHS else 0.5 + 0.1 * epoch
        lines += [
            ("epoch_start", None, {"epoch_num": epoch, "step_num": (epoch - 1) * STEPS_PER_EPOCH}, at - epoch_ms),
            ("eval_start", None, meta, at - 100),
            ("eval_accuracy", accuracy, meta, at - 50),
            ("eval_stop", None, meta, at - 10),
            ("epoch_stop", None, meta, at),
        ]
    lines.append(("run_stop", None, {"status": "success"}, 1000 + EPOCHS * epoch_ms + 10))
    events = [
        {
            "namespace": "",
            "time_ms": start_ms + t,
            "event_type": "POINT_IN_TIME",
            "key": k,
            "value": v,
            "metadata": m or {},
        }
        for k, v, m, t in lines
    ]
    return "".join(":::MLLOG " + json.dumps(e) + "\n" for e in events)


def epoch_ms(run: int) -> int:
    """An epoch of run `run` (from 0): 120,320 samples in about 1,300 s on 8 A100s, 11.6 samples/s per device, below
    the best known (specbench/physics/best_known.yaml) as a real run is."""
    return 1_300_000 + 10_000 * run


def make_tree(root: Path) -> Path:
    """ROOT/v2.0/Lab with two systems of 5 strong-scaling DeepCAM runs each: gpu_closed and gpu_open."""
    org = root / "v2.0" / "Lab"
    (org / "systems").mkdir(parents=True)
    for n, division in enumerate(("closed", "open")):
        name = f"gpu_{division}"
        (org / "systems" / f"{name}.json").write_text(json.dumps(system_json(division)))
        folder = org / "results" / name / "strong" / "deepcam"
        folder.mkdir(parents=True)
        for i in range(5):
            start = 1_600_000_000_000 + 10_000_000 * (5 * n + i)
            (folder / f"result_{i}.txt").write_text(deepcam_log(300 + i, start, epoch_ms(i) + 5_000 * n, division))
    return root


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Leaderboard:
    root = tmp_path_factory.mktemp("deepcam")
    outcome = import_results(make_tree(root / "src"), root / "out", spec=SPEC, jobs=1)
    return build([s.report for s in outcome.systems], [root / "out"])


def maker() -> ModuleType:
    """The validator tests' generator of compliant submissions (tests/validator/make_submission.py)."""
    if "make_submission" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_submission", MAKER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_submission"] = module
        spec.loader.exec_module(module)
    return sys.modules["make_submission"]


def entry_of(board: Leaderboard, system: str) -> Entry:
    return next(e for g in board.groups for e in g.entries if e.system == system)


def test_a_closed_division_result_is_listed_on_extreme_weather_under_mlperfs_rule(generated: Leaderboard) -> None:
    entry = entry_of(generated, "gpu_closed")
    assert entry.key.title() == TITLE.format(level="system")
    assert (entry.key.spec_id, entry.key.spec_version, entry.key.variant) == (
        "extreme-weather",
        "2.1.0",
        "mlperf-reference",
    )
    assert (entry.key.rule, entry.key.via) == ("mlperf-time-to-train", "mlperf-hpc-deepcam 1.0.0")
    assert entry.benchmark == SPEC and not [r for r in entry.unranked if "listed on" in r]
    assert entry.compliant and entry.unranked == [] and entry.rank == 1


def test_its_valid_flops_count_the_logged_steps_x_global_batch(generated: Leaderboard) -> None:
    """Samples = step_num x global_batch_size at the last evaluation (3 x 470 x 256), not epochs x 121,266; Valid FLOPS
    = FLOPs per sample x those / run_start..run_stop, the penalty 1 at the target; olympic mean of the middle 3."""
    entry = entry_of(generated, "gpu_closed")
    samples = EPOCHS * STEPS_PER_EPOCH * BATCH
    assert [r.to_dict()["samples"] for r in entry.runs] == [samples] * 5
    times = [(EPOCHS * epoch_ms(i) + 10) / 1000 for i in range(5)]
    assert [r.time_s for r in entry.runs] == pytest.approx(times, rel=1e-12)
    middle = [FLOPS_PER_SAMPLE * samples / t for t in times[1:4]]
    assert entry.value("valid_flops_per_s") == pytest.approx(sum(middle) / 3, rel=1e-12)
    assert entry.value("penalty_factor") == 1.0


def test_an_open_division_result_is_listed_unranked_with_the_reason(generated: Leaderboard) -> None:
    entry = entry_of(generated, "gpu_open")
    assert entry.key.title() == TITLE.format(level="free")
    assert entry.rank is None
    assert "level free may change the model (MLPerf's open division)" in entry.unranked[-1]
    assert entry.unranked_brief[-1] == "not ranked: level free"


def test_the_extreme_weather_section_holds_both_rules_in_groups_of_their_own(generated: Leaderboard) -> None:
    """specbench's own extreme-weather run (1.0.0, stopped at the target) and the imports share the section, each
    group titled with its rule; no group holds both."""
    own = validate_submission(COMMITTED)
    board = build([own, *(e.report for g in generated.groups for e in g.entries if e.report is not None)])
    section = [g for g in board.groups if g.key.spec_id == "extreme-weather"]
    assert [g.key.title().split(" · time_to_quality")[0] for g in section] == [
        "extreme-weather 1.0.0 · model resnet18-lite · stopped at the target",
        "extreme-weather 2.1.0 · model mlperf-reference · imported as mlperf-hpc-deepcam 1.0.0 · MLPerf rule: stopped "
        "at the target",
        "extreme-weather 2.1.0 · model mlperf-reference · imported as mlperf-hpc-deepcam 1.0.0 · MLPerf rule: stopped "
        "at the target",
    ]
    assert all(len({e.benchmark for e in g.entries}) == 1 for g in section)
    assert not [g for g in board.groups if g.key.spec_id == SPEC]
    assert "MLPerf rule: stopped at the" in render_table(board)


def test_another_rule_level_flops_or_problem_leaves_it_unranked(generated: Leaderboard) -> None:
    """The comparison fails closed: each mismatch between the listing and the imported spec is a reason."""
    entry = entry_of(generated, "gpu_closed")
    bench = entry.bench
    assert bench is not None and bench.spec is not None
    (listing,) = listings()[SPEC]
    assert _unsound(bench, bench.spec.spec, listing) == []
    host = listing.host.model_copy(deep=True)
    host.workload.variants["mlperf-reference"].flops_per_sample = 1.0
    assert host.quality is not None
    host.quality.target = 0.8
    listed = listing.listed.model_copy(update={"scoring": "hpcai500-valid-flops", "levels": ["free"]})
    reasons = [brief for _, brief in _unsound(bench, bench.spec.spec, Listing(host, listed))]
    assert reasons == [
        "not ranked: another rule",
        "not ranked: level system",
        "not ranked: other FLOPs per sample",
        "not ranked: another problem",
    ]
    full = _unsound(bench, bench.spec.spec, Listing(host, listed))[3][0]
    assert full.endswith("the problem differs: quality.target 0.8 vs 0.82")


def test_the_built_in_listing_is_of_the_same_problem_and_flops() -> None:
    (listing,) = listings()[SPEC]
    deepcam = load_spec(SPEC).spec
    assert problem_differences(listing.host, deepcam) == []
    assert listing.host.workload.variants[listing.listed.variant].flops_per_sample == deepcam.workload.flops_per_sample
    assert listing.listed.scoring == deepcam.method


def test_own_extreme_weather_runs_say_their_rule_and_other_specs_are_not_moved() -> None:
    own = validate_submission(COMMITTED)
    (bench,) = own.benchmarks
    place = placement(bench)
    assert place is not None and (place.spec_id, place.spec_version, place.rule, place.via) == (
        "extreme-weather",
        "1.0.0",
        "time-to-quality",
        "",
    )


def test_steps_count_only_beside_an_epoch_and_near_epochs_x_the_training_set() -> None:
    log = parse_log(deepcam_log(1, 1_600_000_000_000, epoch_ms(0), "closed"))
    samples = EPOCHS * STEPS_PER_EPOCH * BATCH
    by_epochs = EPOCHS * 121266
    assert step_samples(log, {"epoch_num": 3, "step_num": EPOCHS * STEPS_PER_EPOCH}, by_epochs) == samples
    assert step_samples(log, {"step_num": EPOCHS * STEPS_PER_EPOCH}, by_epochs) is None  # a count standing for epochs
    assert step_samples(log, {"epoch_num": 3, "step_num": by_epochs}, by_epochs) is None  # samples, not steps
    assert step_samples(log, {"epoch_num": 3, "step_num": 0}, by_epochs) is None


@pytest.fixture(scope="module")
def corpus_board(tmp_path_factory: pytest.TempPathFactory) -> Leaderboard:
    if not HPC.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing: {HPC}")
        pytest.skip(f"corpus missing: {HPC}")
    out = tmp_path_factory.mktemp("hpc")
    outcome = import_results(HPC, out, spec=SPEC, jobs=1)
    return build([*(s.report for s in outcome.systems), validate_submission(COMMITTED)], [out])


def test_the_corpus_deepcam_systems_are_on_the_extreme_weather_board(corpus_board: Leaderboard) -> None:
    (group,) = [g for g in corpus_board.groups if g.key.via]
    assert group.key.title() == TITLE.format(level="system")
    assert [e.system for e in group.entries] == [
        "dgxa100_n256_pytorch",
        "horeka_gpu_n512_pytorch1.13",
        "32xXE8545x4A100-SXM4-40GB",
    ]
    assert [round((e.value("valid_flops_per_s") or 0) / 1e15, 2) for e in group.entries] == [63.41, 12.42, 2.75]
    assert [e.value("time_s") for e in group.entries] == pytest.approx([94.343333, 273.969333, 779.721], abs=1e-6)
    assert all(not [r for r in e.unranked if "listed on" in r] for e in group.entries)
    weak = [g for g in corpus_board.groups if g.key.scaling == "weak"]
    assert all(g.key.spec_id == SPEC and not g.key.via for g in weak)


def test_nvidias_samples_are_its_steps_x_2048_two_percent_under_epochs(corpus_board: Leaderboard) -> None:
    """NVIDIA's dgxa100_n256 run_1 (result_0.txt): 28 epochs, step_num 1,624 at the last evaluation, global batch
    2,048: 3,325,952 samples, where 28 x 121,266 = 3,395,448 overstates them by 2.09%."""
    (group,) = [g for g in corpus_board.groups if g.key.via]
    nvidia = group.entries[0]
    run = nvidia.runs[0].to_dict()
    assert run["samples"] == 1624 * 2048 == 3_325_952
    assert run["valid_flops_per_s"] == pytest.approx(FLOPS_PER_SAMPLE * 3_325_952 / run["time_s"], rel=1e-12)


def test_specbench_runs_of_the_reference_model_follow_hpc_ai500s_rule_in_a_group_apart(tmp_path: Path) -> None:
    """An extreme-weather 2.1.0 run of the mlperf-reference variant (the whole budget) is grouped under HPC AI500's
    rule, apart from the imports of the same model that stopped at the target."""
    folder = maker().make_submission(
        tmp_path, spec="extreme-weather", profile="smoke", extra={"model": "mlperf-reference"}
    )
    report = validate_submission(folder)
    (bench,) = report.benchmarks
    place = placement(bench)
    assert place is not None and (place.spec_version, place.variant, place.rule, place.via) == (
        "2.1.0",
        "mlperf-reference",
        "hpcai500-valid-flops",
        "",
    )
    (group,) = build([report]).groups
    assert group.key.title().startswith(
        "extreme-weather 2.1.0 · model mlperf-reference · HPC AI500 rule: the whole epoch budget · time_to_quality"
    )
