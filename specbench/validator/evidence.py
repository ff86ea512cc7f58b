"""Each run's numbers recomputed from the evidence alone (log, trace, spec, system.yaml) and cross-checked.

Samples come from the log's block or evaluation `samples_count` and must agree with what the spec
makes of the declared hyperparameters (timed steps x global batch x sequence length; epochs x the
training set); devices come from system.yaml and must agree with the world size and the trace. The
recomputed numbers (`RunEvidence.accounts`, kept as `RunData.accounts`) are what result.json is compared
with and what the scorer ranks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from specbench.accounting.accounts import Accounts, Evidence, Problem, account
from specbench.formats.mllog import ParsedLog
from specbench.spec.system import SystemDescription
from specbench.validator.declared import Breach, system_breaches
from specbench.validator.documents import Loaded
from specbench.validator.findings import Findings
from specbench.validator.model import BenchmarkData, RunData
from specbench.validator.values import is_int, is_number, show

UNIT_RANGES: dict[str, tuple[float, float | None]] = {
    "top1_accuracy": (0.0, 1.0),
    "top5_accuracy": (0.0, 1.0),
    "mean_iou": (0.0, 1.0),
    "map": (0.0, 1.0),
    "map_50": (0.0, 1.0),
    "accuracy": (0.0, 1.0),
    "loss": (0.0, None),
    "perplexity": (1.0, None),
}
"""Values a quality metric can take; a metric not listed has no bound here."""
EVAL_KEYS = ("eval_accuracy", "eval_error", "averaged_validation_loss")
"""MLLOG keys that carry evaluations (a spec's quality.log_key is one of them in specbench's and MLPerf's logs)."""


@dataclass
class SystemDevices:
    """What system.yaml says trained: accelerators (0 on a CPU run), processes, nodes; and its values that
    break their type or bound (`declared.system_breaches`), reported once per submission."""

    accelerators: int | None
    world_size: int | None
    nodes: int
    model: str | None = None
    breaches: tuple[Breach, ...] = ()

    @classmethod
    def of(cls, system: SystemDescription | None) -> SystemDevices:
        if system is None:
            return cls(None, None, 1)
        hardware = system.layers.get("hardware", {})
        communication = system.layers.get("communication", {})
        count, world = hardware.get("accelerator_count"), communication.get("world_size")
        model = hardware.get("accelerator_model")
        return cls(
            count if is_int(count) and count >= 0 else None,
            world if is_int(world) and world >= 1 else None,
            system.nodes,
            model if isinstance(model, str) and count else None,
            tuple(system_breaches(system)),
        )

    @property
    def trained(self) -> int | None:
        """Devices that trained: the accelerators, or the CPU processes where there are none."""
        if self.accelerators:
            return self.accelerators
        return self.world_size


def log_samples(run: RunData, problem: Problem) -> int | None:
    """Samples the log says the run processed: its blocks' counts (throughput) or the last evaluation's; without a
    count there, the highest epoch counter where the spec says it counts samples (mlperf.epoch_num); else the last
    evaluation's step_num x the logged global_batch_size; else epochs x the training set."""
    if run.log is None:
        return None
    if problem.kind == "throughput":
        counts = [e.metadata.get("samples_count") for e in run.log.all("block_start")]
        valid = [c for c in counts if is_int(c) and c >= 0]
        return sum(valid) if counts and len(valid) == len(counts) else None
    evaluations = run.log.all(problem.eval_key)
    count = evaluations[-1].metadata.get("samples_count") if evaluations else None
    if is_int(count) and count >= 0:
        return count
    if problem.epoch_num == "samples":
        return log_counted_samples(run.log)
    epochs = log_epochs(run.log)
    by_epochs = round(epochs * problem.train_samples) if epochs is not None else None
    stepped = step_samples(run.log, evaluations[-1].metadata, by_epochs) if evaluations else None
    return stepped if stepped is not None else by_epochs


STEP_SAMPLES_TOLERANCE = 0.1
"""How far steps x global batch may lie from epochs x the training set and still be read as a step count."""


def step_samples(log: ParsedLog, metadata: dict[str, Any], by_epochs: int | None) -> int | None:
    """The evaluation's step_num x the log's global_batch_size, as MLPerf HPC DeepCAM logs steps; None elsewhere.

    DeepCAM's reference and NVIDIA's implementation log global_batch_size as the local batch x the ranks and
    count a step per local batch, so this holds with any gradient_accumulation_frequency. An epoch there is
    not the whole training set: the ranks drop the rest of their shards (NVIDIA's dgxa100_n256, HPC v2.0: 58
    steps x 2,048 = 118,784 samples an epoch, 2.0% under the 121,266 of `train_samples`). Read only where the
    evaluation names its epoch beside the step (older MLPerf logs put a count in step_num instead of an epoch)
    and the product lies within STEP_SAMPLES_TOLERANCE of epochs x the training set.
    """
    step = metadata.get("step_num")
    batch = log.first("global_batch_size")
    size = batch.value if batch is not None else None
    if not (is_int(step) and step > 0 and is_int(size) and size > 0 and is_number(metadata.get("epoch_num"))):
        return None
    samples = int(step) * int(size)
    if by_epochs is None or abs(samples - by_epochs) > STEP_SAMPLES_TOLERANCE * by_epochs:
        return None
    return samples


MAX_EPOCHS = 1e9
"""An epoch counter at or above this is not read as epochs (no sample count is made of a broken log's counter)."""
MAX_COUNTED_SAMPLES = 2**63 - 1
"""The most samples a counter of samples is read as: a signed 64-bit count."""


def log_epochs(log: ParsedLog) -> float | None:
    """Epochs trained up to run_stop: the highest epoch an evaluation, epoch or block names (counted from 1)."""
    counter = log.derived(_log_counter)
    return counter if counter is not None and counter < MAX_EPOCHS else None


def log_counted_samples(log: ParsedLog) -> int | None:
    """Samples trained up to run_stop, from a log whose epoch counter counts samples (spec mlperf.epoch_num:
    samples, as MLPerf's BERT logs count sequences and its GPT-3 logs tokens)."""
    counter = log.derived(_log_counter)
    return round(counter) if counter is not None and counter <= MAX_COUNTED_SAMPLES else None


def _log_counter(log: ParsedLog) -> float | None:
    stop = log.first("run_stop")
    last = stop.line if stop is not None else math.inf
    found: list[tuple[int, float]] = []  # (line, epoch) up to run_stop, from the log's index by key
    for key in (*EVAL_KEYS, "eval_stop", "epoch_stop"):
        for event in log.all(key):
            if event.line > last:
                break
            if is_number(event.metadata.get("epoch_num")):
                found.append((event.line, float(event.metadata["epoch_num"])))
    for event in log.all("block_stop"):
        if event.line > last:
            break
        meta = event.metadata
        if is_number(meta.get("first_epoch_num")) and is_number(meta.get("epoch_count")):
            found.append((event.line, float(meta["first_epoch_num"]) + float(meta["epoch_count"]) - 1))
    values = [epoch for _, epoch in sorted(found)]  # file order, as max() of equal values takes the first
    best = max(values) if values else None
    return best if best is not None and best >= 0 else None


@dataclass(frozen=True)
class RunEvidence:
    """The evidence phase's result for one run: its samples and numbers, and whether its quality values are
    within the metric's range (when not, the run's best quality is not believed)."""

    samples: int | None = None
    accounts: Accounts | None = None
    quality_in_range: bool = True


@dataclass
class EvidenceCheck:
    findings: Findings
    bench: BenchmarkData
    problem: Problem
    devices: SystemDevices
    system_file: Loaded | None

    def log_file(self, run: RunData) -> str:
        return f"{run.folder}/log.txt"

    def check_samples(self, run: RunData) -> int | None:
        """The log's samples, cross-checked against the spec; None (and a finding) when they contradict it."""
        problem, samples = self.problem, log_samples(run, self.problem)
        if samples is None or run.log is None:
            return samples
        expected = problem.expected_timed_samples
        if expected is not None and samples != expected and run.status != "incomplete":
            first = run.log.first("block_start")
            self.findings.add(
                "SB-ACC-001",
                self.log_file(run),
                f"expected samples_count totalling {expected} (timed steps {problem.timed_steps} x "
                f"{problem.samples_per_step} samples per step), found {samples}",
                line=first.line if first else None,
                json_path="metadata.samples_count",
            )
            return None
        if problem.kind == "time_to_quality":
            return samples if self.check_eval_samples(run) else None
        return samples

    def check_eval_samples(self, run: RunData) -> bool:
        """Each evaluation's samples_count is what its epoch_num counts (epochs x the training set, or the samples
        where the spec says so), within a global batch per epoch."""
        assert run.log is not None
        problem = self.problem
        batch = problem.samples_per_step or 0
        previous = 0
        for event in run.log.all(problem.eval_key):
            count, epoch = event.metadata.get("samples_count"), event.metadata.get("epoch_num")
            if not is_int(count) or not isinstance(epoch, (int, float)) or isinstance(epoch, bool):
                continue
            expected = problem.counter_samples(epoch)
            slack = max(1.0, expected / problem.train_samples) * batch
            if count < previous or abs(count - expected) > slack:
                counted = (
                    "samples"
                    if problem.epoch_num == "samples"
                    else f"epochs x {problem.train_samples} training samples"
                )
                self.findings.add(
                    "SB-ACC-001",
                    self.log_file(run),
                    f"expected samples_count {expected:.0f} at epoch {epoch:g} ({counted}, within {slack:.0f}) "
                    f"and never decreasing, found {count}",
                    line=event.line,
                    json_path="metadata.samples_count",
                )
                return False
            previous = count
        return True

    def check_quality_range(self, run: RunData, metric: str) -> bool:
        """Whether every evaluation lies within the metric's range (SB-ACC-003 for the first that does not)."""
        bounds = UNIT_RANGES.get(metric)
        if bounds is None or run.log is None:
            return True
        low, high = bounds
        for event in run.log.all(self.problem.eval_key):
            value = event.value
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if numeric and (value < low or (high is not None and value > high)):
                upper = f"{high:g}" if high is not None else "inf"
                self.findings.add(
                    "SB-ACC-003",
                    self.log_file(run),
                    f"expected {metric} within [{low:g}, {upper}], found {show(value)}",
                    line=event.line,
                    json_path="value",
                )
                return False
        return True

    def check_system(self) -> None:
        """Accelerators declared vs processes that trained (one process per accelerator)."""
        d = self.devices
        if d.accelerators and d.world_size is not None and d.accelerators != d.world_size:
            where = self.system_file.locate("layers", "communication", "world_size") if self.system_file else {}
            self.findings.add(
                "SB-ACC-002",
                "system.yaml",
                f"expected world_size {d.accelerators} (one process per declared accelerator, accelerator_count), "
                f"found {d.world_size}",
                **where,
            )

    def check_event_types(self, run: RunData) -> None:
        """Declared hyperparameters are logged as POINT_IN_TIME events, as mllog writes them."""
        if run.log is None or self.bench.meta is None:
            return
        declared = self.bench.meta.hyperparameters
        logged = sorted((e for key in declared for e in run.log.all(key)), key=lambda e: e.line)  # in file order
        for event in logged:
            if event.event_type != "POINT_IN_TIME":
                self.findings.add(
                    "SB-ACC-004",
                    self.log_file(run),
                    f"expected {event.key} as POINT_IN_TIME (a declared hyperparameter), found {show(event.event_type)}",
                    line=event.line,
                    json_path="event_type",
                )

    def run_accounts(self, run: RunData, peak: float | None) -> RunEvidence:
        self.check_event_types(run)
        samples = self.check_samples(run)
        quality = self.bench.spec.spec.quality if self.bench.spec else None
        in_range = self.check_quality_range(run, quality.metric) if quality is not None else True
        evidence = Evidence(
            duration_s=run.duration_s,
            samples=samples,
            credited=run.credited,
            energy_j=run.power.energy_j if run.power else None,
            devices=self.devices.trained or 1,
        )
        return RunEvidence(samples, account(self.problem, evidence, peak), in_range)


def check_evidence(
    findings: Findings,
    bench: BenchmarkData,
    system: SystemDescription | None,
    system_file: Loaded | None,
    peak: float | None = None,
) -> list[RunEvidence]:
    """Every run's numbers recomputed from the evidence, in the runs' order, with findings where it contradicts.

    Without a spec or submission.yaml nothing can be recomputed: each run's result is empty.
    """
    if bench.spec is None or bench.meta is None:
        return [RunEvidence() for _ in bench.runs]
    problem = Problem.of(bench.spec, bench.meta.hyperparameters)
    check = EvidenceCheck(findings, bench, problem, SystemDevices.of(system), system_file)
    check.check_system()
    return [check.run_accounts(run, peak) for run in bench.runs]


def result_devices_problem(devices: SystemDevices, found: Any) -> str | None:
    """Why result.json's device count disagrees with system.yaml, or None."""
    trained = devices.trained
    if trained is None or found == trained:
        return None
    what = "accelerator_count" if devices.accelerators else "world_size"
    return f"expected devices {trained} (system.yaml {what}), found {show(found)}"
