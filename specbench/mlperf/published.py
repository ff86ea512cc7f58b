"""MLPerf's published time to train and HPC weak-scaling figures, as MLPerf's result summarizer computes them.

A pure reproduction of mlperf-logging 4.1.68's `result_summarizer` arithmetic, so that an import never
runs MLPerf's code. `RS:n` cites line n of mlperf_logging/result_summarizer/result_summarizer.py and
`BM:n` of mlperf_logging/benchmark_meta.py. The summarizer works in minutes; each figure is kept in
minutes as it computes them (the same operations in the same order, so equal bit for bit) and given
in seconds besides. Energy is in `published_energy`; which runs count is in `published_runs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from specbench.errors import UsageError
from specbench.formats.mllog import ParsedLog
from specbench.registry import did_you_mean

SUMMARIZER = "mlperf-logging 4.1.68 result_summarizer"
Usage = Literal["training", "hpc"]

RESULT_FILE_COUNTS: Mapping[str, Mapping[str, int]] = MappingProxyType(
    {
        "training": MappingProxyType(
            {
                **dict.fromkeys(("bert", "dlrm_dcnv2", "stable_diffusion", "gnn", "rgat", "llama2_70b_lora"), 10),
                **dict.fromkeys(("llama31_8b", "flux1"), 10),
                **dict.fromkeys(("resnet", "ssd", "retinanet"), 5),
                **dict.fromkeys(("gpt3", "llama31_405b"), 3),
                "unet3d": 40,
            }
        ),
        "hpc": MappingProxyType({"deepcam": 5, "cosmoflow": 10, "oc20": 5, "openfold": 10}),
    }
)
"""Result files per benchmark (BM:2-38): the package checker wants exactly this many for training and
HPC strong scaling, at least this many for HPC weak scaling; the summarizer itself never counts them."""

ROUND_BENCHMARKS: Mapping[tuple[str, str], tuple[str, ...]] = MappingProxyType(
    {
        ("training", "4.0.0"): (
            *("bert", "dlrm_dcnv2", "gpt3", "resnet", "ssd", "unet3d", "stable_diffusion"),
            *("llama2_70b_lora", "gnn"),
        ),
        ("training", "4.1.0"): ("bert", "dlrm_dcnv2", "gpt3", "ssd", "stable_diffusion", "llama2_70b_lora", "gnn"),
        ("training", "5.0.0"): (
            *("bert", "dlrm_dcnv2", "retinanet", "stable_diffusion", "llama2_70b_lora", "rgat", "llama31_405b"),
        ),
        ("training", "5.1.0"): (
            *("llama31_8b", "dlrm_dcnv2", "retinanet", "flux1", "llama2_70b_lora", "rgat", "llama31_405b"),
        ),
        ("hpc", "1.0.0"): ("cosmoflow", "deepcam", "oc20"),
        ("hpc", "2.0.0"): ("cosmoflow", "deepcam", "oc20"),
        ("hpc", "3.0.0"): ("cosmoflow", "deepcam", "oc20", "openfold"),
    }
)
"""The benchmarks of each ruleset (BM:124-204): a results folder of another name makes the summarizer
crash (AssertionError in Summary.push, RS:246), as its table has no column for it."""


@dataclass(frozen=True)
class RunsRule:
    """How many result files a benchmark needs and how many runs its olympic mean drops at each end."""

    runs_required: int
    dropped_each_end: int
    """4 for unet3d, 1 otherwise (RS:386); it is also the most failed runs the mean tolerates (RS:387)."""


RUNS_REQUIRED: Mapping[tuple[str, str, str], RunsRule] = MappingProxyType(
    {
        (usage, ruleset, benchmark): RunsRule(RESULT_FILE_COUNTS[usage][benchmark], 4 if benchmark == "unet3d" else 1)
        for (usage, ruleset), benchmarks in ROUND_BENCHMARKS.items()
        for benchmark in benchmarks
    }
)
"""RunsRule per (usage, ruleset, benchmark) for training 4.0.0-5.1.0 and HPC 1.0.0-3.0.0."""


def runs_rule(usage: str, ruleset: str, benchmark: str) -> RunsRule:
    """The RunsRule of a benchmark of a round; UsageError names the benchmarks the round has."""
    rule = RUNS_REQUIRED.get((usage, ruleset, benchmark))
    if rule is None:
        known = ROUND_BENCHMARKS.get((usage, ruleset))
        if known is None:
            rounds = ", ".join(f"{u} {r}" for u, r in ROUND_BENCHMARKS)
            raise UsageError(f"expected one of the rulesets {rounds}; found {usage} {ruleset}")
        raise UsageError(
            f"expected a benchmark of {usage} {ruleset} ({', '.join(known)}); found {benchmark!r}"
            f"{did_you_mean(benchmark, known)}"
        )
    return rule


@dataclass(frozen=True)
class RunWindow:
    """run_start and run_stop of one log as the summarizer takes them (RS:141-155), in ms since the epoch."""

    start_ms: float
    stop_ms: float

    @property
    def time_ms(self) -> float:
        return self.stop_ms - self.start_ms

    @property
    def time_min(self) -> float:
        """The run's score in the summarizer's unit and operations: ms / 60 / 1000 (RS:373)."""
        return (self.stop_ms - self.start_ms) / 60 / 1000

    @property
    def time_s(self) -> float:
        return (self.stop_ms - self.start_ms) / 1000


def run_window(log: ParsedLog) -> RunWindow | None:
    """The summarizer's pair: the latest run_start and run_stop seen when both first exist (RS:141-155); None without."""
    start: float | None = None
    stop: float | None = None
    for event in log.events:
        if event.key == "run_start":
            start = event.time_ms
        if event.key == "run_stop":
            stop = event.time_ms
        if start is not None and stop is not None:
            return RunWindow(float(start), float(stop))
    return None


def run_time_s(log: ParsedLog) -> float | None:
    """Seconds from run_start to run_stop as the summarizer takes them (RS:371-373); None if either is missing."""
    window = run_window(log)
    return window.time_s if window is not None else None


def olympic_mean(scores: Sequence[float], failed: int, dropped_each_end: int) -> tuple[tuple[float, ...], float | None]:
    """The scores the summarizer averages and their mean (RS:181-201).

    Sorted, the `dropped_each_end` lowest go, and as many of the highest as remain after the failed runs,
    which count as the slowest: so n runs always leave n - 2 x dropped_each_end. None when none remain.
    """
    ordered = sorted(scores)
    used = tuple(ordered[dropped_each_end : len(ordered) - (dropped_each_end - failed)])
    return used, (sum(used) * 1.0 / len(used) if used else None)


@dataclass(frozen=True)
class TimeToTrain:
    """A benchmark's published time to train: the olympic mean of the counted runs x scaling.json's factor."""

    benchmark: str
    runs_counted: int
    runs_failed: int
    runs_required: int
    used_min: tuple[float, ...]
    """The run times the mean takes, fastest first."""
    olympic_mean_min: float | None
    scaling_factor: float
    published_min: float | None
    """The summarizer's figure (its `time_to_train` column); None when it publishes none."""
    problem: str | None = None

    @property
    def published_s(self) -> float | None:
        return self.published_min * 60 if self.published_min is not None else None

    @property
    def olympic_mean_s(self) -> float | None:
        return self.olympic_mean_min * 60 if self.olympic_mean_min is not None else None

    @property
    def complete(self) -> bool:
        """As many result files as the package checker wants (the summarizer publishes a figure regardless)."""
        return self.runs_counted + self.runs_failed == self.runs_required


def published_time_to_train(
    run_times_ms: Sequence[float | None], benchmark: str, usage: str, ruleset: str, scaling_factor: float = 1.0
) -> TimeToTrain:
    """The published time to train from each result file's run time in ms (None: a run the summarizer drops).

    RS:368-417: a dropped run counts as the slowest; more dropped runs than the mean drops at the top
    (1, or 4 for unet3d) gives no figure ("CRITICAL ERROR"). The factor multiplies the mean (RS:417).
    """
    rule = runs_rule(usage, ruleset, benchmark)
    scores = [time_ms / 60 / 1000 for time_ms in run_times_ms if time_ms is not None]
    failed = len(run_times_ms) - len(scores)
    used: tuple[float, ...] = ()
    mean = None
    problem = None
    if failed > rule.dropped_each_end:
        problem = f"{failed} runs dropped, more than the {rule.dropped_each_end} the olympic mean drops (RS:387-395)"
    else:
        used, mean = olympic_mean(scores, failed, rule.dropped_each_end)
        if mean is None:
            problem = f"no run left after dropping {rule.dropped_each_end} at each end of {len(scores)} (RS:199-200)"
    return TimeToTrain(
        benchmark=benchmark,
        runs_counted=len(scores),
        runs_failed=failed,
        runs_required=rule.runs_required,
        used_min=used,
        olympic_mean_min=mean,
        scaling_factor=scaling_factor,
        published_min=mean * scaling_factor if mean is not None else None,
        problem=problem,
    )


def instance_scale(log: ParsedLog) -> int | None:
    """Accelerators of one model instance: number_of_nodes x max(accelerators_per_node, 1) (RS:165-178)."""
    nodes = accelerators = None
    for event in log.events:
        if event.key == "number_of_nodes":
            nodes = event.value
        if event.key == "accelerators_per_node":
            accelerators = event.value
        if nodes is not None and accelerators is not None:
            try:
                return int(nodes) * max(int(accelerators), 1)
            except (TypeError, ValueError):
                return None
    return None


@dataclass(frozen=True)
class WeakScaling:
    """An HPC weak-scaling figure: M models trained concurrently in TTTa, each on S accelerators (RS:602-618)."""

    benchmark: str
    number_of_models: int
    models_required: int
    instance_scale: int | None
    time_to_train_all_min: float | None
    """Earliest run_start to latest run_stop over the counted models (RS:465); None when none is published."""
    problem: str | None = None
    crash: str | None = None
    """Why the summarizer stops with a traceback on these logs, where it does."""

    @property
    def time_to_train_all_s(self) -> float | None:
        return self.time_to_train_all_min * 60 if self.time_to_train_all_min is not None else None

    @property
    def throughput_models_per_min(self) -> float | None:
        """MLPerf HPC's weak-scaling metric, models per minute: M / TTTa (the summarizer prints M and TTTa)."""
        if self.time_to_train_all_min is None or self.time_to_train_all_min <= 0:
            return None
        return self.number_of_models / self.time_to_train_all_min


def weak_scaling(
    runs: Sequence[tuple[RunWindow | None, int | None]], benchmark: str, ruleset: str, usage: str = "hpc"
) -> WeakScaling:
    """The weak-scaling tuple from each result file's window (None: not counted) and instance scale.

    RS:441-476: every counted model widens the window and counts, even one whose instance scale is not
    logged (RS:447 precedes RS:449); two different scales crash the summarizer (RS:451); fewer models
    than BM's count publish nothing.
    """
    rule = runs_rule(usage, ruleset, benchmark)
    start, stop = float("inf"), float("-inf")
    models = 0
    scale: int | None = None
    for window, run_scale in runs:
        if window is None:
            continue
        start, stop = min(start, window.start_ms), max(stop, window.stop_ms)
        models += 1
        if run_scale is None:
            continue
        if scale is None:
            scale = run_scale
        elif scale != run_scale:
            crash = f"AssertionError (RS:451): instance scales {scale} and {run_scale} differ"
            return WeakScaling(benchmark, models, rule.runs_required, scale, None, crash=crash)
    if models < rule.runs_required:
        problem = f"{models} converged models, fewer than the {rule.runs_required} required (RS:461, RS:475)"
        return WeakScaling(benchmark, models, rule.runs_required, None, None, problem=problem)
    return WeakScaling(benchmark, models, rule.runs_required, scale, (stop - start) / 60 / 1000)
