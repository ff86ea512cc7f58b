"""Checks of one run's log against its problem: evaluations and their cadence (specbench's, or MLPerf's schedule
for an imported log), timed blocks, and the run's status.

What the evaluations show against the target (met, best, credited) is the one quality outcome of
specbench.accounting.quality; this module only reads the log and says what follows from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from specbench.accounting.quality import comparison, first_met, meets, spec_outcome
from specbench.formats.mllog import LogEvent, ParsedLog
from specbench.spec.resolve import ResolvedSpec
from specbench.validator.findings import Findings
from specbench.validator.model import Evaluation, RunStatus, RunVerdict
from specbench.validator.values import is_int, is_number, show

EPS = 1e-9
SCHEDULE_EPS = 1e-6
"""How far off MLPerf's evaluation grid an epoch may lie and still count as on it."""
UNCHECKED = (
    "stricter than MLPerf: its training rules schedule the evaluations, but its checker, package checker and "
    "result summarizer do not check the schedule"
)


class LogSink(Protocol):
    """What the quality checks use of the log check that runs them (validator.logcheck)."""

    log: ParsedLog
    file: str
    findings: Findings

    def add(self, code: str, event: LogEvent | None, message: str, json_path: str = "") -> None: ...


@dataclass(frozen=True)
class Quality:
    """A log's evaluations and what they show against the target (all empty for a run without one)."""

    evaluations: tuple[Evaluation, ...] = ()
    best: float | None = None
    reached: bool | None = None
    credited: float | None = None

    def verdict(self, status: RunStatus, reason: str | None) -> RunVerdict:
        return RunVerdict(status, reason, self.evaluations, self.best, self.reached, self.credited)


@dataclass
class QualityCheck:
    """One log's evaluations or blocks, and the status of its run; returns them as the run's verdict."""

    check: LogSink
    stop_status: str | None
    """run_stop's status as the log states it (validator.logcheck)."""
    spec: ResolvedSpec | None
    incomplete: bool
    mlperf: bool
    """Whether the log is an imported MLPerf log, judged by MLPerf's log rules."""
    broken: list[str] = field(default_factory=list)
    """Why an imported MLPerf log counts as failed under MLPerf's log rules."""

    def train_samples(self, spec: ResolvedSpec) -> float | None:
        """The training set's size as the log states it (else the spec's): MLPerf logs that count evaluations in
        samples (samples_count, or an epoch_num the spec's mlperf.epoch_num says counts samples) rather than
        epochs are read in epochs of this size."""
        event = self.check.log.first("train_samples")
        if event is not None and is_number(event.value) and event.value > 0:
            return float(event.value)
        return float(spec.spec.workload.dataset.train_samples)

    def check_quality(self, spec: ResolvedSpec) -> Quality:
        quality = spec.spec.quality
        assert quality is not None
        evaluations = []
        train = self.train_samples(spec)
        counts_samples = spec.spec.mlperf is not None and spec.spec.mlperf.epoch_num == "samples"
        events = self.check.log.all(quality.log_key)
        shared = self.mlperf and any(
            str(e.metadata.get("metric", "")).lower() == quality.metric.lower() for e in events
        )
        for event in events:
            epoch = event.metadata.get("epoch_num")
            metric = event.metadata.get("metric")
            if shared and str(metric).lower() != quality.metric.lower():
                continue  # another metric under the same key (stable_diffusion logs FID and CLIP): MLPerf's rules judge it
            if self.mlperf and not is_number(epoch) and is_number(event.metadata.get("samples_count")) and train:
                epoch = event.metadata["samples_count"] / train
            elif counts_samples and is_number(epoch) and train:
                epoch = epoch / train
            if metric is not None and metric != quality.metric and not shared:
                self.check.add(
                    "SB-EQV-003",
                    event,
                    f"expected metric {quality.metric!r} (layer 9), found {show(metric)}",
                    "metadata.metric",
                )
            if is_number(event.value) and is_number(epoch):
                evaluations.append(Evaluation(float(epoch), float(event.value), event.time_ms, event.line))
        if not evaluations and not self.incomplete and not self.mlperf:
            self.check.add(
                "SB-LOG-002", None, f"expected at least one {quality.log_key} in a time-to-quality run, found none"
            )
        if self.mlperf:
            check_schedule(self.check, spec, evaluations)
        else:
            self.check_cadence(spec, evaluations)
        budget = spec.spec.budget.epochs
        counted = [e.value for e in evaluations if budget is None or e.epoch <= budget + EPS]
        outcome = spec_outcome(spec.spec, counted)
        return Quality(tuple(evaluations), outcome.best, outcome.met, outcome.credited)

    def check_cadence(self, spec: ResolvedSpec, evaluations: list[Evaluation]) -> None:
        quality, budget = spec.spec.quality, spec.spec.budget.epochs
        assert quality is not None
        findings, file = self.check.findings, self.check.file
        for event in evaluations:
            if budget is not None and event.epoch > budget + EPS:
                findings.add(
                    "SB-LOG-008",
                    file,
                    f"expected evaluations within the epoch budget of {budget:g}, found one at epoch {event.epoch:g}",
                    line=event.line,
                )
        every = quality.eval_every_epochs
        if every is None:
            return
        for k, event in enumerate(evaluations, start=1):
            expected = quality.eval_offset_epochs + k * every
            if abs(event.epoch - expected) > 1e-6:
                findings.add(
                    "SB-LOG-008",
                    file,
                    f"expected evaluation {k} at epoch {expected:g} (every {every:g} epochs), found epoch {event.epoch:g}",
                    line=event.line,
                    json_path="metadata.epoch_num",
                )
                return

    def check_blocks(self) -> None:
        starts = self.check.log.all("block_start")
        if not starts and not self.incomplete:
            self.check.add(
                "SB-LOG-002",
                None,
                "expected at least one block_start/block_stop (timed steps) in a throughput run, found none",
            )
        for event in starts:
            count = event.metadata.get("samples_count")
            if not is_int(count) or count < 0:
                self.check.add(
                    "SB-LOG-012",
                    event,
                    f"expected metadata samples_count (an integer >= 0) on block_start, found {show(count)}",
                    "metadata.samples_count",
                )

    def decide_status(self, quality: Quality) -> RunVerdict:
        """The run's status and why, from run_stop, the quality reached and (imported logs) MLPerf's log rules."""
        stop = self.check.log.first("run_stop")
        if stop is None and not self.mlperf:
            return quality.verdict("incomplete", "the log has no run_stop")
        if self.spec is not None and self.spec.spec.trains_whole_budget:
            return self.decide_budget_status(stop, quality)
        kind_ttq = self.spec is not None and self.spec.spec.kind == "time_to_quality"
        if kind_ttq and stop is not None:
            self._check_stop_status(stop, quality)
        if stop is not None and self.stop_status == "success" and (not kind_ttq or quality.reached) and not self.broken:
            return quality.verdict("success", None)
        if kind_ttq and not quality.reached and self.spec is not None:
            reason = self._target_missed(self.spec, stop, quality)
        elif self.broken:
            reason = f"MLPerf log rule broken: {self.broken[0]}"
        else:
            reason = f"run_stop status {show(self.stop_status)}"
        return quality.verdict("failed", reason)

    def _target_missed(self, spec: ResolvedSpec, stop: LogEvent | None, outcome: Quality) -> str:
        """SB-LOG-009, and the failed run's reason."""
        quality = spec.spec.quality
        assert quality is not None
        op = comparison(quality.direction)
        budget = spec.spec.budget.epochs
        within = f" within {budget:g} epochs" if budget is not None else ""
        best = "no evaluation" if outcome.best is None else f"best {outcome.best:g}"
        found = best if stop is not None else f"{best}{_best_epoch(outcome)} and no run_stop"
        self.check.findings.add(
            "SB-LOG-009",
            self.check.file,
            f"expected {quality.metric} {op} {quality.target:g}{within}, found {found}; the run counts as failed",
            line=stop.line if stop is not None else self._last_line(),
        )
        return f"target {quality.metric} {op} {quality.target:g} not reached{within}: {found}"

    def decide_budget_status(self, stop: LogEvent | None, outcome: Quality) -> RunVerdict:
        """HPC AI500: a run that trained its whole budget succeeds, below its target too (Valid FLOPS penalises it)."""
        assert self.spec is not None and self.spec.spec.quality is not None and stop is not None
        spec = self.spec.spec
        quality, budget = spec.quality, spec.budget.epochs
        assert quality is not None and budget is not None
        last = outcome.evaluations[-1] if outcome.evaluations else None
        if self.stop_status != "success":
            return outcome.verdict("failed", f"run_stop status {show(self.stop_status)}")
        if last is None or last.epoch < budget - EPS:
            found = "no evaluation" if last is None else f"the last evaluation at epoch {last.epoch:g}"
            self.check.add(
                "SB-LOG-014",
                stop,
                f"expected training to the end of the epoch budget and an evaluation at epoch {budget:g} "
                f"(HPC AI500 trains the whole budget), found {found}",
            )
            return outcome.verdict("failed", f"the epoch budget of {budget:g} was not trained: {found}")
        if not meets(last.value, quality.target, quality.direction):
            self.check.findings.add(
                "SB-LOG-013",
                self.check.file,
                f"expected {quality.metric} {comparison(quality.direction)} {quality.target:g} at the end of the "
                f"budget, found {last.value:g}: ranked with its Valid FLOPS penalty",
                line=last.line,
            )
        return outcome.verdict("success", None)

    def _last_line(self) -> int | None:
        events = self.check.log.events
        return events[-1].line if events else None

    def _check_stop_status(self, stop: LogEvent, quality: Quality) -> None:
        status = self.stop_status
        if status == "success" and not quality.reached:
            self.check.add(
                "SB-LOG-007",
                stop,
                "expected status 'aborted' (no evaluation reached the target), found 'success'",
                "metadata.status",
            )
        elif status == "aborted" and quality.reached:
            self.check.add(
                "SB-LOG-007",
                stop,
                "expected status 'success' (an evaluation reached the target), found 'aborted'",
                "metadata.status",
            )


def _best_epoch(quality: Quality) -> str:
    at = [e for e in quality.evaluations if e.value == quality.best]
    return f" at epoch {at[0].epoch:g} (line {at[0].line})" if at else ""


def _scheduled(evaluations: list[Evaluation], first: float, every: float) -> list[Evaluation]:
    """The evaluations off the grid first, first + every, ... (a repeat of a grid epoch counts as off it)."""
    off = []
    expected_next = first
    for evaluation in evaluations:
        steps = (evaluation.epoch - first) / every
        if abs(steps - round(steps)) <= SCHEDULE_EPS and evaluation.epoch >= expected_next - SCHEDULE_EPS:
            expected_next = evaluation.epoch + every
        else:
            off.append(evaluation)
    return off


def check_schedule(check: LogSink, spec: ResolvedSpec, evaluations: list[Evaluation]) -> None:
    """MLPerf's evaluation schedule: every `eval_every_epochs` at one offset below the cadence (warnings only).

    MLPerf's checker, package checker and result summarizer do not check the schedule, and accept a
    run whose target was first reached at an extra evaluation: so does specbench, with SB-MLP-007.
    """
    quality = spec.spec.quality
    every = quality.eval_every_epochs if quality is not None else None
    if quality is None or every is None or not evaluations:
        return
    first = evaluations[0].epoch
    if first > every + SCHEDULE_EPS or first <= 0:
        check.findings.add(
            "SB-MLP-002",
            check.file,
            f"expected the first evaluation within the first {every:g} epochs (an offset below the cadence), "
            f"found it at epoch {first:g} ({UNCHECKED})",
            line=evaluations[0].line,
            json_path="metadata.epoch_num",
        )
        return
    off = _scheduled(evaluations, first, every)
    if off:
        epochs = ", ".join(f"{e.epoch:g}" for e in off)
        check.findings.add(
            "SB-MLP-002",
            check.file,
            f"expected evaluations every {every:g} epochs from epoch {first:g}, found evaluations off that schedule "
            f"at epoch {epochs} ({UNCHECKED})",
            line=off[0].line,
            json_path="metadata.epoch_num",
        )
    index = first_met([e.value for e in evaluations], quality.target, quality.direction)
    reaching = evaluations[index] if index is not None else None
    if reaching is not None and reaching in off:
        check.findings.add(
            "SB-MLP-007",
            check.file,
            f"expected the target first reached at a scheduled evaluation (every {every:g} epochs from epoch "
            f"{first:g}), found: reached the target at an extra evaluation, epoch {reaching.epoch:g} "
            f"({show(reaching.value)}) ({UNCHECKED}, so the run and its time to train count as logged)",
            line=reaching.line,
            json_path="value",
        )
