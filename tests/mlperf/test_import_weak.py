"""MLPerf HPC weak scaling imported: each model instance's log judged, MLPerf's models per minute in import.json,
and the result listed unranked in a leaderboard group of its own.

Small weak-scaling folders are generated here (deepcam, HPC 2.0.0: at least 5 models); the corpus' HPC v2.0
round checks the same on real results, against `published_weak` on the source files.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from specbench.formats.mllog import parse_log
from specbench.mlperf import ImportOutcome, import_results
from specbench.mlperf.published_energy import read_power_events, run_energy, weak_scaling_energy_j
from specbench.mlperf.published_runs import ResultFile, published_weak
from specbench.mlperf.report import render_text
from specbench.scoring.leaderboard import WEAK_SCALING_UNRANKED, build

HPC = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "mlperf-rounds" / "hpc-v2.0"
SPEC = "mlperf-hpc-deepcam"
START_MS = 1_600_000_000_000
DEEPCAM = {
    "gradient_accumulation_frequency": 1,
    "global_batch_size": 256,
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
EPOCH = {"epoch_num": 1, "samples_count": 121266, "epoch_count": 1, "first_epoch_num": 0}
SYSTEM = {
    "submitter": "Lab",
    "division": "closed",
    "status": "onprem",
    "system_name": "gpu n16",
    "number_of_nodes": "4",
    "accelerators_per_node": "4",
    "accelerator_model_name": "NVIDIA A100-SXM4-80GB",
    "host_processor_model_name": "AMD EPYC 7742",
    "framework": "PyTorch NVIDIA Release 22.08",
    "operating_system": "Ubuntu 20.04.4 LTS",
    "other_software_stack": {"cuda_driver_version": "515.65.01"},
}


def instance_log(seed: int, step_ms: int, accuracy: float = 0.83) -> str:
    """One deepcam model instance's log that MLPerf HPC 2.0.0's rules accept: 2 nodes x 4 accelerators, one epoch,
    an event every `step_ms` from START_MS (so every instance starts at the same millisecond)."""
    lines: list[tuple[str, Any, dict[str, Any] | None]] = [
        ("submission_org", "Lab", None),
        ("submission_platform", "gpu_n16", None),
        ("submission_division", "closed", None),
        ("submission_status", "onprem", None),
        ("submission_benchmark", "deepcam", None),
        ("cache_clear", True, None),
        ("init_start", None, None),
        ("number_of_nodes", 2, None),
        ("accelerators_per_node", 4, None),
        ("seed", seed, None),
        *((key, value, None) for key, value in DEEPCAM.items()),
        ("init_stop", None, None),
        ("run_start", None, None),
        ("staging_start", None, None),
        ("staging_stop", None, None),
        ("block_start", None, EPOCH),
        ("epoch_start", None, EPOCH),
        ("eval_start", None, EPOCH),
        ("eval_accuracy", accuracy, EPOCH),
        ("eval_stop", None, EPOCH),
        ("epoch_stop", None, EPOCH),
        ("block_stop", None, EPOCH),
        ("run_stop", None, {"status": "success"}),
    ]
    events = [
        {"namespace": "", "time_ms": START_MS + step_ms * i, "event_type": "POINT_IN_TIME", "key": k, "value": v}
        | {"metadata": meta or {}}
        for i, (k, v, meta) in enumerate(lines)
    ]
    return "".join(":::MLLOG " + json.dumps(e) + "\n" for e in events)


def node_log(start_ms: int, stop_ms: int, power_w: float) -> str:
    """A node power log of 1 Hz readings from 2 s before `start_ms` to 2 s after `stop_ms`, between its markers."""
    times = range(start_ms - 2000, stop_ms + 2001, 1000)
    rows = [
        ("INTERVAL_START", "power_measurement_start", None, times[0]),
        *(("POINT_IN_TIME", "power_reading", power_w, t) for t in times),
        ("INTERVAL_END", "power_measurement_stop", None, times[-1]),
    ]
    return "".join(
        ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": kind, "key": key, "value": value}) + "\n"
        for kind, key, value, t in rows
    )


def make_tree(
    root: Path,
    system: str = "gpu_n16",
    models: int = 6,
    failing: int = 0,
    strong: bool = False,
    weak: bool = True,
    power: bool = False,
) -> Path:
    """ROOT/v2.0/Lab with one system: weak/deepcam of `models` instances (the last `failing` below the target),
    and with `strong` a strong/deepcam of 5 runs besides."""
    org = root / "v2.0" / "Lab"
    (org / "systems").mkdir(parents=True, exist_ok=True)
    (org / "systems" / f"{system}.json").write_text(json.dumps(SYSTEM))
    if weak:
        folder = org / "results" / system / "weak" / "deepcam"
        folder.mkdir(parents=True)
        for i in range(models):
            text = instance_log(100 + i, 60_000 + 1_000 * i, 0.5 if i >= models - failing else 0.83)
            (folder / f"result_{i}.txt").write_text(text)
            if power:
                log = parse_log(text)
                start, stop = log.first("run_start").time_ms, log.first("run_stop").time_ms  # type: ignore[union-attr]
                for node in range(4):
                    power_folder = folder / "power" / f"result_{i}"
                    power_folder.mkdir(parents=True, exist_ok=True)
                    (power_folder / f"node_{node}.txt").write_text(node_log(int(start), int(stop), 1000.0 + 10 * i))
    if strong:
        folder = org / "results" / system / "strong" / "deepcam"
        folder.mkdir(parents=True)
        for i in range(5):
            text = _shifted(instance_log(200 + i, 60_000 + 100 * i), 10_000_000 * (i + 1))
            (folder / f"result_{i}.txt").write_text(text)
    return root


def _shifted(text: str, by_ms: int) -> str:
    """A log with every time_ms `by_ms` later (runs one after another, as strong scaling has them)."""
    events = [json.loads(line[len(":::MLLOG ") :]) for line in text.splitlines()]
    for event in events:
        event["time_ms"] += by_ms
    return "".join(":::MLLOG " + json.dumps(e) + "\n" for e in events)


def codes(outcome: ImportOutcome) -> list[str]:
    return sorted(f.code for system in outcome.systems for f in system.report.findings)


def record(outcome: ImportOutcome, system: int = 0) -> dict[str, Any]:
    return json.loads((outcome.systems[system].imported.output / "import.json").read_text())


def source_files(folder: Path) -> list[ResultFile]:
    """The result logs of a folder (and their node power logs) as MLPerf's summarizer reads them."""
    files = []
    for path in sorted(folder.glob("result_*.txt"), key=lambda p: int(p.stem.split("_")[1])):
        power = folder / "power" / path.stem
        nodes = tuple(read_power_events(p.read_text()) for p in sorted(power.glob("node_*.txt")))
        files.append(ResultFile(path.stem, parse_log(path.read_text(errors="replace")), nodes))
    return files


def test_each_instance_log_is_judged_and_models_per_minute_published(tmp_path: Path) -> None:
    source = make_tree(tmp_path / "src")
    outcome = import_results(source, tmp_path / "out", jobs=1)
    (system,) = outcome.systems
    assert system.report.compliant() and codes(outcome) == []  # no SB-RUN-001 (6 of 5), no SB-PRV-002 (same start)
    (bench,) = system.imported.benchmarks
    assert [run.result.status for run in bench.runs] == ["success"] * 6
    entry = record(outcome)["benchmarks"][SPEC]
    assert entry["scaling_mode"] == "weak" and entry["folder"] == "results/gpu_n16/weak/deepcam"
    logs = [
        parse_log((source / "v2.0/Lab/results/gpu_n16/weak/deepcam" / f"result_{i}.txt").read_text()) for i in range(6)
    ]
    first = min(log.first("run_start").time_ms for log in logs)  # type: ignore[union-attr]
    last = max(log.first("run_stop").time_ms for log in logs)  # type: ignore[union-attr]
    published = entry["published"]
    assert published["time_to_train_all_s"] == (last - first) / 1000 == 790.0
    assert published["models_per_min"] == 6 / ((last - first) / 60 / 1000)
    assert (published["number_of_models"], published["instance_scale"], published["runs_required"]) == (6, 8, 5)
    assert published["time_to_train_s"] is None and published["olympic_mean_s"] is None
    assert published["energy_j"] is None and published["problem"] is None
    weak = published_weak(source_files(source / "v2.0/Lab/results/gpu_n16/weak/deepcam"), "deepcam", "2.0.0", "closed")
    assert weak.scaling is not None and published["models_per_min"] == weak.scaling.throughput_models_per_min
    assert not [note for note in outcome.skipped if "weak" in note]


def test_the_summarizers_energy_is_recorded_where_there_are_node_power_logs(tmp_path: Path) -> None:
    source = make_tree(tmp_path / "src", power=True)
    outcome = import_results(source, tmp_path / "out", jobs=1)
    folder = source / "v2.0/Lab/results/gpu_n16/weak/deepcam"
    files = source_files(folder)
    joules = []
    for file in files:
        start, stop = file.log.first("run_start").time_ms, file.log.first("run_stop").time_ms  # type: ignore[union-attr]
        joules.append(run_energy(file.nodes, (), stop - start).energy_j)
    published = record(outcome)["benchmarks"][SPEC]["published"]
    assert published["energy_j"] == weak_scaling_energy_j(joules)  # type: ignore[arg-type]
    assert published["energy_j"] == published_weak(files, "deepcam", "2.0.0", "closed", has_power=True).energy_j
    durations = [(f.log.first("run_stop").time_ms - f.log.first("run_start").time_ms) / 1000 for f in files]  # type: ignore[union-attr]
    by_model = sorted(4 * (1000.0 + 10 * i) * s for i, s in enumerate(durations))[1:]  # 4 nodes, the lowest dropped
    assert published["energy_j"] == pytest.approx(sum(by_model) / len(by_model), rel=1e-2)
    assert "energy per model" in render_text(outcome)


def test_fewer_models_than_the_benchmark_wants_is_sb_mlp_030(tmp_path: Path) -> None:
    outcome = import_results(make_tree(tmp_path / "src", models=4), tmp_path / "out", jobs=1)
    findings = [f for f in outcome.systems[0].report.findings if f.code == "SB-MLP-030"]
    assert [(f.severity, f.message) for f in findings] == [
        ("error", "expected at least 5 model instances (result logs) in this MLPerf HPC weak-scaling result, found 4")
    ]
    published = record(outcome)["benchmarks"][SPEC]["published"]
    assert published["models_per_min"] is None and "fewer than the 5 required" in published["problem"]
    assert "SB-RUN-001" not in codes(outcome)


def test_fewer_models_reaching_the_target_is_sb_mlp_030(tmp_path: Path) -> None:
    outcome = import_results(make_tree(tmp_path / "src", models=5, failing=1), tmp_path / "out", jobs=1)
    findings = [f for f in outcome.systems[0].report.findings if f.code == "SB-MLP-030"]
    assert [f.message for f in findings] == [
        "expected at least 5 model instances that reach the target in this MLPerf HPC weak-scaling result, found 4 of 5"
    ]
    assert record(outcome)["benchmarks"][SPEC]["published"]["runs_counted"] == 4


def test_a_copied_instance_log_is_still_sb_prv_002(tmp_path: Path) -> None:
    source = make_tree(tmp_path / "src")
    folder = source / "v2.0/Lab/results/gpu_n16/weak/deepcam"
    shutil.copyfile(folder / "result_0.txt", folder / "result_6.txt")
    outcome = import_results(source, tmp_path / "out", jobs=1)
    findings = [f for f in outcome.systems[0].report.findings if f.code == "SB-PRV-002"]
    assert [f.message for f in findings] == [
        f"expected a log of its own, found a byte-identical copy of {SPEC}/run_1/log.txt"
    ]


def test_weak_scaling_is_listed_unranked_in_a_group_of_its_own(tmp_path: Path) -> None:
    source = make_tree(tmp_path / "src", system="gpu_weak")
    make_tree(source, system="gpu_strong", weak=False, strong=True)
    outcome = import_results(source, tmp_path / "out", jobs=1)
    assert len(outcome.systems) == 2 and codes(outcome) == []
    board = build([s.report for s in outcome.systems])
    by_scaling = {g.key.scaling: g for g in board.groups}
    assert set(by_scaling) == {"", "weak"} and len(board.groups) == 2
    (weak,) = by_scaling["weak"].entries
    (strong,) = by_scaling[""].entries
    assert weak.system == "gpu_weak" and strong.system == "gpu_strong"
    assert weak.rank is None and weak.unranked == [WEAK_SCALING_UNRANKED] and weak.aggregate.values == {}
    assert "MLPerf HPC weak scaling" in by_scaling["weak"].key.title()
    assert strong.rank == 1 and strong.value("time_s") is not None
    text = render_text(outcome)
    assert "score: none by specbench" in text and "weak scaling 0.4557 models per minute (6 models" in text


def test_a_weak_folder_beside_a_strong_one_of_the_same_benchmark_is_skipped_with_the_reason(tmp_path: Path) -> None:
    outcome = import_results(make_tree(tmp_path / "src", strong=True), tmp_path / "out", jobs=1)
    (bench,) = outcome.systems[0].imported.benchmarks
    assert bench.record.scaling_mode == "strong"
    assert outcome.skipped == [
        "v2.0/Lab/results/gpu_n16/weak/deepcam: MLPerf HPC weak scaling not imported: strong/deepcam of the same "
        f"system is, into the one folder {SPEC} a submission has for the spec"
    ]


def test_the_import_reports_each_system_as_it_is_done(tmp_path: Path) -> None:
    source = make_tree(tmp_path / "src", system="gpu_a")
    make_tree(source, system="gpu_b", models=5)
    lines: list[str] = []
    import_results(source, tmp_path / "out", jobs=1, progress=lines.append)
    assert lines == [
        "system 1 of 2: v2.0/Lab/gpu_a, 6 result logs imported and judged",
        "system 2 of 2: v2.0/Lab/gpu_b, 5 result logs imported and judged",
    ]


@pytest.fixture(scope="module")
def helmholtz(tmp_path_factory: pytest.TempPathFactory) -> ImportOutcome:
    """HPC v2.0's HelmholtzAI (four weak-scaling folders, three strong) imported once."""
    if not HPC.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing: {HPC}")
        pytest.skip(f"corpus missing: {HPC}")
    return import_results(HPC / "HelmholtzAI", tmp_path_factory.mktemp("hpc"), jobs=1)


def test_every_weak_folder_of_the_round_is_imported_and_judged(helmholtz: ImportOutcome) -> None:
    weak = [
        (system, bench)
        for system in helmholtz.systems
        for bench in system.imported.benchmarks
        if bench.record.scaling_mode == "weak"
    ]
    assert len(weak) == 4 and not [note for note in helmholtz.skipped if "weak" in note]
    for system, bench in weak:
        folder = HPC / "HelmholtzAI" / bench.record.folder
        assert len(bench.runs) == len(list(folder.glob("result_*.txt")))  # pruned_results/ left out, as MLPerf does
        assert all(run.result.status == "success" for run in bench.runs)
        assert system.report.compliant() and not [f for f in system.report.findings if f.code.startswith("SB-RUN")]
    assert sum(len(bench.runs) for _, bench in weak) == 8 + 7 + 24 + 39


def test_published_weak_figures_are_the_summarizers_on_the_source_files(helmholtz: ImportOutcome) -> None:
    compared = 0
    for system in helmholtz.systems:
        entries = json.loads((system.imported.output / "import.json").read_text())["benchmarks"]
        for entry in entries.values():
            if entry["scaling_mode"] != "weak":
                assert entry["published"]["scaling_mode"] == "strong"
                continue
            folder = HPC / "HelmholtzAI" / entry["folder"]
            mine = published_weak(source_files(folder), entry["mlperf_benchmark"], "2.0.0", "closed")
            published = entry["published"]
            assert mine.scaling is not None and published["scaling_mode"] == "weak"
            assert published["models_per_min"] == mine.scaling.throughput_models_per_min
            assert published["number_of_models"] == mine.scaling.number_of_models
            assert published["instance_scale"] == mine.scaling.instance_scale
            assert published["time_to_train_all_s"] == mine.scaling.time_to_train_all_s
            compared += 1
    assert compared == 4
