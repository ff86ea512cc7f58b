"""MLPerf's log rules on an imported MLPerf log: the compliance checker's rules as typed checks, and the schedule.

The compliance checker's common, closed/open common and benchmark rule files (of the round's
ruleset) are re-implemented here as typed checks: no rule text is evaluated. A run that breaks
one counts as failed (SB-MLP-001), as MLPerf's package checker accepts one non-compliant run
under olympic scoring. The evaluation schedule of MLPerf's training rules, which none of MLPerf's
tools checks, only gives warnings (SB-MLP-002, SB-MLP-007): the run counts as logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

from specbench.accounting.quality import first_met
from specbench.formats.mlperf_import import MlperfDialect
from specbench.validator.values import is_number, show

if TYPE_CHECKING:
    from specbench.formats.mllog import LogEvent, ParsedLog
    from specbench.spec.resolve import ResolvedSpec
    from specbench.validator.findings import Findings
    from specbench.validator.model import Evaluation


class LogSink(Protocol):
    """What MLPerf's log rules and the quality checks use of the log check that runs them (validator.logcheck)."""

    log: ParsedLog
    file: str
    findings: Findings

    def add(self, code: str, event: LogEvent | None, message: str, json_path: str = "") -> None: ...


SUBMISSION_STATUSES = ("cloud", "onprem", "preview", "research")
COMPILE_MINUTES = {"closed": 30, "open": 240}
"""init_start to init_stop may last at most this long (MLPerf's common rules)."""
EXACTLY_ONE = (
    "submission_org",
    "submission_platform",
    "submission_division",
    "submission_status",
    "submission_benchmark",
    "init_stop",
    "run_start",
    "run_stop",
    "train_samples",
    "eval_samples",
)
CLOSED_EXACTLY_ONE = ("global_batch_size", "gradient_accumulation_steps")
AT_LEAST_ONE = ("cache_clear", "init_start", "eval_accuracy")
AT_LEAST_ONE_OF = (("block_start", "epoch_start"), ("block_stop", "epoch_stop"))
COUNT_KEYS = ("samples_count", "step_num")
"""Metadata that may stand for epoch_num: samples_count from ruleset 4.0.0 on, step_num before."""
EPS = 1e-6
CHECKED_KEYS = frozenset(
    (
        *("init_start", "init_stop", "run_start", "run_stop", "block_start", "block_stop", "epoch_start", "epoch_stop"),
        *("eval_start", "eval_stop", "eval_accuracy", "submission_division", "submission_status"),
        *("submission_org", "submission_platform", "train_samples", "eval_samples", *CLOSED_EXACTLY_ONE),
    )
)
"""The keys check_events looks at; every other event is passed over at once."""


def checked_events(log: ParsedLog) -> list[LogEvent]:
    """The events of CHECKED_KEYS in file order (each event has a line of its own), taken from the log's index by key."""
    return log.derived(_checked_events)


def _checked_events(log: ParsedLog) -> list[LogEvent]:
    return sorted((e for key in CHECKED_KEYS for e in log.all(key)), key=attrgetter("line"))


UNCHECKED = (
    "stricter than MLPerf: its training rules schedule the evaluations, but its checker, package checker and "
    "result summarizer do not check the schedule"
)


@dataclass
class MlperfLogRules:
    """MLPerf's log rules on one parsed log; `broken` lists what makes the run count as failed."""

    check: LogSink
    dialect: MlperfDialect

    def __post_init__(self) -> None:
        self.broken: list[str] = []

    def fail(self, event: Any, message: str, part: str, json_path: str = "") -> None:
        cited = f"{message} ({self.dialect.cite(part)}); the run counts as failed"
        self.broken.append(message)
        self.check.add("SB-MLP-001", event, cited, json_path)

    def run(self) -> list[str]:
        self.check_counts()
        self.check_events()
        self.check_identity()
        log = self.check.log
        if not log.all("seed"):
            self.check.add(
                "SB-MLP-003",
                None,
                "expected a seed logged in the run, found none: MLPerf's package checker fails the package on this "
                "unless it runs with --seed-checker-bypass, of which a published result keeps no record",
            )
        return self.broken

    def check_counts(self) -> None:
        log = self.check.log
        closed = self.dialect.division == "closed"
        wanted = [(key, "common") for key in EXACTLY_ONE]
        if closed:
            wanted += [(key, "closed_common") for key in CLOSED_EXACTLY_ONE]
        for key, part in wanted:
            events = log.all(key)
            values = [e.value for e in events]
            if not events:
                last = log.events[-1] if log.events else None
                at = f"; the log ends at line {last.line}" if last is not None and key == "run_stop" else ""
                self.fail(None, f"expected {key} exactly once, found none{at}", part)
            elif len(events) > 1 and values.count(values[0]) != len(values):  # MLPerf's all_same: equal by ==
                self.fail(
                    events[1], f"expected {key} exactly once, found it {len(events)} times with different values", part
                )
        for key in AT_LEAST_ONE:
            if not log.all(key):
                self.fail(None, f"expected {key} at least once, found none", "common")
        for keys in AT_LEAST_ONE_OF:
            if not any(log.all(key) for key in keys):
                self.fail(None, f"expected {' or '.join(keys)} at least once, found neither", "common")

    def check_events(self) -> None:
        state = {"init_started": False, "init_stopped": False, "run_started": False}
        first_init: float | None = None
        minutes = COMPILE_MINUTES[self.dialect.division]
        for event in checked_events(self.check.log):
            key = event.key
            meta, value = event.metadata, event.value
            if key == "init_start":
                if state["init_stopped"] or state["run_started"]:
                    self.fail(event, "expected init_start before init_stop and run_start, found it after", "common")
                state["init_started"] = True
                first_init = event.time_ms if first_init is None else min(first_init, event.time_ms)
            elif key == "init_stop":
                if not state["init_started"] or state["run_started"]:
                    self.fail(event, "expected init_stop after init_start and before run_start", "common")
                elif first_init is not None and event.time_ms - first_init >= minutes * 60_000:
                    took = (event.time_ms - first_init) / 60_000
                    self.fail(
                        event, f"expected init_stop within {minutes} min of init_start, found {took:.1f} min", "common"
                    )
                state["init_stopped"] = True
            elif key == "run_start":
                if not state["init_stopped"]:
                    self.fail(event, "expected run_start after init_stop, found it before", "common")
                state["run_started"] = True
            elif key == "run_stop":
                if not state["run_started"]:
                    self.fail(event, "expected run_stop after run_start, found it before", "common")
                if "status" not in meta:
                    self.fail(event, "expected metadata status on run_stop, found none", "common", "metadata.status")
            elif key in ("submission_org", "submission_platform", "train_samples", "eval_samples") and value == "":
                self.fail(event, f"expected a non-empty {key}, found ''", "common", "value")
            elif key == "submission_division" and value not in ("closed", "open"):
                self.fail(event, f"expected submission_division closed or open, found {show(value)}", "common", "value")
            elif key == "submission_status" and value not in SUBMISSION_STATUSES:
                listed = ", ".join(SUBMISSION_STATUSES)
                self.fail(event, f"expected submission_status one of {listed}, found {show(value)}", "common", "value")
            elif (
                key in CLOSED_EXACTLY_ONE and self.dialect.division == "closed" and not (is_number(value) and value > 0)
            ):
                self.fail(event, f"expected {key} > 0, found {show(value)}", "closed_common", "value")
            elif key in ("block_start", "block_stop"):
                self.check_block(event, state["run_started"])
            elif key in ("epoch_start", "epoch_stop") and "epoch_num" not in meta:
                self.fail(event, f"expected metadata epoch_num on {key}, found none", "common", "metadata")
            elif key in ("eval_start", "eval_stop", "eval_accuracy"):
                self.check_eval(event)

    def check_block(self, event: Any, run_started: bool) -> None:
        meta = event.metadata
        has_count = any(k in meta for k in COUNT_KEYS)
        if event.key == "block_stop":
            if "first_epoch_num" not in meta and not has_count:
                self.fail(
                    event,
                    "expected metadata first_epoch_num or samples_count on block_stop, found neither",
                    "common",
                    "metadata",
                )
            return
        if not run_started:
            self.fail(event, "expected block_start after run_start, found it before", "common")
        if "epoch_count" not in meta and not has_count:
            self.fail(
                event,
                "expected metadata epoch_count or samples_count on block_start, found neither",
                "common",
                "metadata",
            )
        if "epoch_count" in meta:
            count = meta["epoch_count"]
            if "first_epoch_num" not in meta:
                self.fail(event, "expected metadata first_epoch_num with epoch_count, found none", "common", "metadata")
            if not (is_number(count) and count > 0):
                self.fail(event, f"expected epoch_count > 0, found {show(count)}", "common", "metadata.epoch_count")
        for name in COUNT_KEYS:
            if name in meta and not (is_number(meta[name]) and meta[name] >= 0):
                self.fail(event, f"expected {name} >= 0, found {show(meta[name])}", "common", f"metadata.{name}")

    def check_eval(self, event: Any) -> None:
        meta = event.metadata
        if event.key == "eval_accuracy" and "epoch_num" not in meta:
            part = f"{self.dialect.division}_{self.dialect.benchmark}"
            self.fail(event, "expected metadata epoch_num on eval_accuracy, found none", part, "metadata")
        elif "epoch_num" not in meta and not any(k in meta for k in COUNT_KEYS):
            self.fail(
                event,
                f"expected metadata epoch_num or samples_count on {event.key}, found neither",
                "common",
                "metadata",
            )

    def check_identity(self) -> None:
        """What the log says it is against the submission: MLPerf's benchmark name and the division of its level."""
        for key, expected in (
            ("submission_benchmark", self.dialect.benchmark),
            ("submission_division", self.dialect.division),
        ):
            for event in self.check.log.all(key):
                if event.value != expected:
                    self.check.add(
                        "SB-LOG-011",
                        event,
                        f"expected {key} {show(expected)} (the MLPerf {key.split('_')[1]} of this submission), "
                        f"found {show(event.value)}",
                        "value",
                    )


def _scheduled(evaluations: list[Evaluation], first: float, every: float) -> list[Evaluation]:
    """The evaluations off the grid first, first + every, ... (a repeat of a grid epoch counts as off it)."""
    off = []
    expected_next = first
    for evaluation in evaluations:
        steps = (evaluation.epoch - first) / every
        if abs(steps - round(steps)) <= EPS and evaluation.epoch >= expected_next - EPS:
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
    if first > every + EPS or first <= 0:
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
