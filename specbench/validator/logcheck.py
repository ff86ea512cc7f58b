"""Checks of one run's MLLOG log: keys and cardinality, interval pairing, order, time, cadence, target."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from specbench.formats.mllog import LogEvent, ParsedLog
from specbench.formats.mlperf_import import SPEC_KEY, MlperfDialect, log_benchmark_name
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.rules import Cardinality, count_ok
from specbench.spec.system import SubmissionMeta
from specbench.validator.findings import Findings
from specbench.validator.mlperf_log import MlperfLogRules, check_schedule
from specbench.validator.model import Evaluation, RunData
from specbench.validator.values import is_int, is_number, same, show

REQUIRED_POINTS = (
    "submission_org",
    "submission_platform",
    "submission_division",
    "submission_status",
    "submission_benchmark",
    "cache_clear",
    "seed",
    "global_batch_size",
    "train_samples",
    "eval_samples",
    "gradient_accumulation_steps",
)
INTERVALS = {
    "init_start": "init_stop",
    "run_start": "run_stop",
    "epoch_start": "epoch_stop",
    "eval_start": "eval_stop",
    "block_start": "block_stop",
}
STARTS = {stop: start for start, stop in INTERVALS.items()}
PAIR_BY = {"epoch_start": "epoch_num", "eval_start": "epoch_num", "block_start": "first_epoch_num"}
EPOCH_KEYS = ("epoch_start", "epoch_stop", "eval_start", "eval_stop", "eval_accuracy")
INSIDE_RUN = ("epoch_start", "epoch_stop", "eval_start", "eval_stop", "eval_accuracy", "block_start", "block_stop")
STOP_STATUSES = ("success", "aborted")
SUBMISSION_STATUSES = ("onprem", "cloud")
EPS = 1e-9


@dataclass
class LogCheck:
    """One log's checks; fills the run's parsed data (times, seed, evaluations, status) as it goes."""

    log: ParsedLog
    file: str
    run: RunData
    findings: Findings
    spec: ResolvedSpec | None
    meta: SubmissionMeta | None
    incomplete: bool
    mlperf: MlperfDialect | None = None
    broken: list[str] = field(default_factory=list)
    """Why an imported MLPerf log counts as failed under MLPerf's log rules (empty for specbench logs)."""

    def add(self, code: str, event: LogEvent | None, message: str, json_path: str = "") -> None:
        self.findings.add(code, self.file, message, line=event.line if event else None, json_path=json_path)

    def run_all(self) -> None:
        for problem in self.log.problems:
            self.findings.add("SB-LOG-001", self.file, problem.message, line=problem.line, column=problem.column)
        if self.mlperf is not None:
            self.broken = MlperfLogRules(self, self.mlperf).run()
        else:
            self.check_event_types()
            self.check_counts()
            self.check_pairs()
            self.check_order()
            self.check_time()
        self.check_values()
        self.record_run()
        if self.meta is not None and self.mlperf is None:
            self.check_identity(self.meta)
        if self.spec is not None:
            self.check_problem(self.spec)
            if self.meta is not None:
                self.check_hyperparameters(self.spec, self.meta)
            if self.spec.spec.kind == "time_to_quality":
                self.check_quality(self.spec)
            else:
                self.check_blocks()
        self.decide_status()

    # structure of the event stream

    def check_event_types(self) -> None:
        expected_by_key = {k: "INTERVAL_START" for k in INTERVALS} | {k: "INTERVAL_END" for k in STARTS}
        expected_by_key |= {k: "POINT_IN_TIME" for k in (*REQUIRED_POINTS, "eval_accuracy")}
        for event in self.log:
            expected = expected_by_key.get(event.key)
            if expected is not None and event.event_type != expected:
                self.add(
                    "SB-LOG-004",
                    event,
                    f"expected {event.key} as {expected}, found {event.event_type}",
                    "event_type",
                )

    def check_counts(self) -> None:
        for key in (*REQUIRED_POINTS, "init_start", "init_stop", "run_start", "run_stop"):
            events = self.log.all(key)
            if not events:
                if not (self.incomplete and key == "run_stop"):
                    self.add("SB-LOG-002", None, f"expected key {key!r} once, found it missing")
            elif len(events) > 1:
                self.add(
                    "SB-LOG-003",
                    events[1],
                    f"expected key {key!r} exactly once, found it {len(events)} times (first on line {events[0].line})",
                )

    def check_pairs(self) -> None:
        open_starts: dict[tuple[str, object], LogEvent] = {}
        for event in self.log:
            if event.key in INTERVALS:
                ident = self._pair_id(event, event.key)
                if (event.key, ident) in open_starts:
                    first = open_starts[(event.key, ident)]
                    self.add(
                        "SB-LOG-004",
                        event,
                        f"expected {INTERVALS[event.key]} before {event.key} again{_for(ident)}, "
                        f"found a second start (first on line {first.line})",
                    )
                open_starts[(event.key, ident)] = event
            elif event.key in STARTS:
                start = STARTS[event.key]
                ident = self._pair_id(event, start)
                if open_starts.pop((start, ident), None) is None:
                    self.add("SB-LOG-004", event, f"expected a {start}{_for(ident)} before {event.key}, found none")
        if self.incomplete:
            return
        for (key, ident), event in sorted(open_starts.items(), key=lambda item: item[1].line):
            self.add("SB-LOG-004", event, f"expected {INTERVALS[key]}{_for(ident)} after {key}, found none")

    def _pair_id(self, event: LogEvent, start_key: str) -> object:
        name = PAIR_BY.get(start_key)
        if name is None:
            return None
        value = event.metadata.get(name)
        return value if is_number(value) else None

    def check_order(self) -> None:
        position = {key: self.log.first(key) for key in ("init_start", "init_stop", "run_start", "run_stop")}
        chain = [(k, e) for k, e in position.items() if e is not None]
        for (before, first), (after, second) in pairwise(chain):
            if second.line < first.line:
                self.add("SB-LOG-005", second, f"expected {after} after {before} (line {first.line}), found it before")
        run_start, run_stop = position["run_start"], position["run_stop"]
        declared = list(self.meta.hyperparameters) if self.meta else []
        if run_start is not None:
            for key in dict.fromkeys((*REQUIRED_POINTS, *declared)):
                for event in self.log.all(key):
                    if event.line > run_start.line:
                        self.add(
                            "SB-LOG-005", event, f"expected {key} before run_start (line {run_start.line}), found after"
                        )
        for event in self.log:
            if event.key not in INSIDE_RUN:
                continue
            if run_start is None or event.line < run_start.line:
                self.add("SB-LOG-005", event, f"expected {event.key} after run_start, found it before")
            elif run_stop is not None and event.line > run_stop.line:
                self.add(
                    "SB-LOG-005", event, f"expected {event.key} before run_stop (line {run_stop.line}), found after"
                )
        if run_stop is not None and self.log.events[-1] is not run_stop:
            last = self.log.events[-1]
            self.add(
                "SB-LOG-005", last, f"expected run_stop (line {run_stop.line}) to be the last event, found {last.key}"
            )

    def check_time(self) -> None:
        previous: LogEvent | None = None
        for event in self.log:
            if previous is not None and event.time_ms < previous.time_ms:
                self.add(
                    "SB-LOG-006",
                    event,
                    f"expected time_ms >= {show(previous.time_ms)} (line {previous.line}), found {show(event.time_ms)}",
                    "time_ms",
                )
            previous = event

    # values

    def check_values(self) -> None:
        for key, low in (
            ("global_batch_size", 1),
            ("gradient_accumulation_steps", 1),
            ("train_samples", 0),
            ("eval_samples", 0),
        ):
            for event in self.log.all(key):
                if not is_int(event.value) or event.value < low:
                    self.add(
                        "SB-LOG-012",
                        event,
                        f"expected {key} to be an integer >= {low}, found {show(event.value)}",
                        "value",
                    )
        for event in self.log.all("seed"):
            if not is_int(event.value):
                self.add("SB-LOG-012", event, f"expected seed to be an integer, found {show(event.value)}", "value")
        for event in self.log:
            if event.key == "eval_accuracy" and not is_number(event.value):
                self.add(
                    "SB-LOG-012", event, f"expected eval_accuracy to be a number, found {show(event.value)}", "value"
                )
            if event.key in EPOCH_KEYS and self.mlperf is None and not is_number(event.metadata.get("epoch_num")):
                self.add(
                    "SB-LOG-012",
                    event,
                    f"expected metadata epoch_num (a number) on {event.key}, found {show(event.metadata.get('epoch_num'))}",
                    "metadata.epoch_num",
                )

    def record_run(self) -> None:
        run = self.run
        start, stop, seed = self.log.first("run_start"), self.log.first("run_stop"), self.log.first("seed")
        run.log = self.log
        run.run_start_ms = start.time_ms if start else None
        run.run_stop_ms = stop.time_ms if stop else None
        if stop is not None:
            status = stop.metadata.get("status")
            run.stop_status = status if isinstance(status, str) else None
            if status not in STOP_STATUSES:
                self.add(
                    "SB-LOG-007",
                    stop,
                    f"expected run_stop metadata status to be one of {', '.join(STOP_STATUSES)}, found {show(status)}",
                    "metadata.status",
                )
        run.seed = seed.value if seed is not None and is_int(seed.value) else None

    def check_identity(self, meta: SubmissionMeta) -> None:
        division = "open" if meta.level == "free" else "closed"
        benchmark = log_benchmark_name(meta.spec_id)
        for key, expected in (
            ("submission_org", meta.submitter),
            ("submission_platform", meta.system),
            ("submission_benchmark", benchmark),
            (SPEC_KEY, meta.spec_id),
            ("submission_division", division),
            ("cache_clear", True),
        ):
            source = (
                f"MLPerf's name of {meta.spec_id}"
                if benchmark != meta.spec_id and key == "submission_benchmark"
                else "submission.yaml"
            )
            for event in self.log.all(key):
                if not same(event.value, expected):
                    self.add(
                        "SB-LOG-011",
                        event,
                        f"expected {key} {show(expected)} ({source}), found {show(event.value)}",
                        "value",
                    )
        for event in self.log.all("submission_status"):
            if event.value not in SUBMISSION_STATUSES:
                self.add(
                    "SB-LOG-011",
                    event,
                    f"expected submission_status one of {', '.join(SUBMISSION_STATUSES)}, found {show(event.value)}",
                    "value",
                )

    def check_problem(self, spec: ResolvedSpec) -> None:
        dataset = spec.spec.workload.dataset
        for key, expected in (("train_samples", dataset.train_samples), ("eval_samples", dataset.eval_samples)):
            for event in self.log.all(key):
                if is_int(event.value) and event.value != expected:
                    self.add(
                        "SB-EQV-003",
                        event,
                        f"expected {key} {expected} (layer 9 of {spec.spec.id} at profile {spec.profile}), found {show(event.value)}",
                        "value",
                    )

    def check_hyperparameters(self, spec: ResolvedSpec, meta: SubmissionMeta) -> None:
        rules = spec.rules.get("workload", {})
        for key, declared in meta.hyperparameters.items():
            events = self.log.all(key)
            if not events:
                self.add(
                    "SB-EQV-004",
                    None,
                    f"expected hyperparameter {key} = {show(declared)} (declared) in the log, found it missing",
                )
                continue
            rule = rules.get(key)
            cardinality: Cardinality = getattr(rule, "cardinality", "exactly_one")
            if key not in REQUIRED_POINTS and not count_ok(cardinality, len(events)):
                self.add(
                    "SB-LOG-003",
                    events[-1],
                    f"expected hyperparameter {key} {cardinality.replace('_', ' ')}, found it {len(events)} times",
                )
            for event in events:
                if not same(event.value, declared):
                    self.add(
                        "SB-EQV-004",
                        event,
                        f"expected {key} = {show(declared)} (declared in submission.yaml), found {show(event.value)}",
                        "value",
                    )

    # quality and throughput

    def check_quality(self, spec: ResolvedSpec) -> None:
        quality = spec.spec.quality
        assert quality is not None
        evaluations = []
        for event in self.log.all("eval_accuracy"):
            epoch = event.metadata.get("epoch_num")
            metric = event.metadata.get("metric")
            if metric is not None and metric != quality.metric:
                self.add(
                    "SB-EQV-003",
                    event,
                    f"expected metric {quality.metric!r} (layer 9), found {show(metric)}",
                    "metadata.metric",
                )
            if is_number(event.value) and is_number(epoch):
                evaluations.append(Evaluation(float(epoch), float(event.value), event.time_ms, event.line))
        self.run.evaluations = evaluations
        if not evaluations and not self.incomplete and self.mlperf is None:
            self.add("SB-LOG-002", None, "expected at least one eval_accuracy in a time-to-quality run, found none")
        if self.mlperf is None:
            self.check_cadence(spec, evaluations)
        else:
            check_schedule(self, spec, evaluations)
        budget = spec.spec.budget.epochs
        counted = [e for e in evaluations if budget is None or e.epoch <= budget + EPS]
        better = max if quality.direction == "higher" else min
        self.run.best = better(e.value for e in counted) if counted else None
        self.run.reached = any(_meets(e.value, quality.target, quality.direction) for e in counted)
        if spec.spec.trains_whole_budget:
            self.run.reached = bool(counted) and _meets(counted[-1].value, quality.target, quality.direction)
        self.run.achieved = achieved_value(spec, counted)

    def check_cadence(self, spec: ResolvedSpec, evaluations: list[Evaluation]) -> None:
        quality, budget = spec.spec.quality, spec.spec.budget.epochs
        assert quality is not None
        for event in evaluations:
            if budget is not None and event.epoch > budget + EPS:
                self.findings.add(
                    "SB-LOG-008",
                    self.file,
                    f"expected evaluations within the epoch budget of {budget:g}, found one at epoch {event.epoch:g}",
                    line=event.line,
                )
        every = quality.eval_every_epochs
        if every is None:
            return
        for k, event in enumerate(evaluations, start=1):
            expected = quality.eval_offset_epochs + k * every
            if abs(event.epoch - expected) > 1e-6:
                self.findings.add(
                    "SB-LOG-008",
                    self.file,
                    f"expected evaluation {k} at epoch {expected:g} (every {every:g} epochs), found epoch {event.epoch:g}",
                    line=event.line,
                    json_path="metadata.epoch_num",
                )
                return

    def check_blocks(self) -> None:
        starts = self.log.all("block_start")
        if not starts and not self.incomplete:
            self.add(
                "SB-LOG-002",
                None,
                "expected at least one block_start/block_stop (timed steps) in a throughput run, found none",
            )
        for event in starts:
            count = event.metadata.get("samples_count")
            if not is_int(count) or count < 0:
                self.add(
                    "SB-LOG-012",
                    event,
                    f"expected metadata samples_count (an integer >= 0) on block_start, found {show(count)}",
                    "metadata.samples_count",
                )

    def decide_status(self) -> None:
        run, stop = self.run, self.log.first("run_stop")
        if stop is None and self.mlperf is None:
            run.status, run.reason = "incomplete", "the log has no run_stop"
            return
        if self.spec is not None and self.spec.spec.trains_whole_budget:
            self.decide_budget_status(stop)
            return
        kind_ttq = self.spec is not None and self.spec.spec.kind == "time_to_quality"
        if kind_ttq and stop is not None:
            self._check_stop_status(stop)
        if stop is not None and run.stop_status == "success" and (not kind_ttq or run.reached) and not self.broken:
            run.status, run.reason = "success", None
            return
        run.status = "failed"
        if kind_ttq and not run.reached and self.spec is not None:
            quality = self.spec.spec.quality
            assert quality is not None
            op = ">=" if quality.direction == "higher" else "<="
            budget = self.spec.spec.budget.epochs
            within = f" within {budget:g} epochs" if budget is not None else ""
            best = "no evaluation" if run.best is None else f"best {run.best:g}"
            found = best if stop is not None else f"{best}{self._best_epoch()} and no run_stop"
            run.reason = f"target {quality.metric} {op} {quality.target:g} not reached{within}: {found}"
            self.findings.add(
                "SB-LOG-009",
                self.file,
                f"expected {quality.metric} {op} {quality.target:g}{within}, found {found}; the run counts as failed",
                line=stop.line if stop is not None else self._last_line(),
            )
        elif self.broken:
            run.reason = f"MLPerf log rule broken: {self.broken[0]}"
        else:
            run.reason = f"run_stop status {show(run.stop_status)}"

    def decide_budget_status(self, stop: LogEvent | None) -> None:
        """HPC AI500: a run that trained its whole budget succeeds, below its target too (Valid FLOPS penalises it)."""
        assert self.spec is not None and self.spec.spec.quality is not None and stop is not None
        run, spec = self.run, self.spec.spec
        quality, budget = spec.quality, spec.budget.epochs
        assert quality is not None and budget is not None
        last = run.evaluations[-1] if run.evaluations else None
        if run.stop_status != "success":
            run.status, run.reason = "failed", f"run_stop status {show(run.stop_status)}"
            return
        if last is None or last.epoch < budget - EPS:
            found = "no evaluation" if last is None else f"the last evaluation at epoch {last.epoch:g}"
            run.status, run.reason = "failed", f"the epoch budget of {budget:g} was not trained: {found}"
            self.add(
                "SB-LOG-014",
                stop,
                f"expected training to the end of the epoch budget and an evaluation at epoch {budget:g} "
                f"(HPC AI500 trains the whole budget), found {found}",
            )
            return
        run.status, run.reason = "success", None
        if not _meets(last.value, quality.target, quality.direction):
            op = ">=" if quality.direction == "higher" else "<="
            self.findings.add(
                "SB-LOG-013",
                self.file,
                f"expected {quality.metric} {op} {quality.target:g} at the end of the budget, found {last.value:g}: "
                f"ranked with its Valid FLOPS penalty",
                line=last.line,
            )

    def _best_epoch(self) -> str:
        at = [e for e in self.run.evaluations if e.value == self.run.best]
        return f" at epoch {at[0].epoch:g} (line {at[0].line})" if at else ""

    def _last_line(self) -> int | None:
        return self.log.events[-1].line if self.log.events else None

    def _check_stop_status(self, stop: LogEvent) -> None:
        status = self.run.stop_status
        if status == "success" and not self.run.reached:
            self.add(
                "SB-LOG-007",
                stop,
                "expected status 'aborted' (no evaluation reached the target), found 'success'",
                "metadata.status",
            )
        elif status == "aborted" and self.run.reached:
            self.add(
                "SB-LOG-007",
                stop,
                "expected status 'success' (an evaluation reached the target), found 'aborted'",
                "metadata.status",
            )


def achieved_value(spec: ResolvedSpec, counted: list[Evaluation]) -> float | None:
    """The quality a run achieved, as its scoring method defines it.

    HPC AI500: the evaluation at the end of the budget (the last one). MLPerf: the first evaluation
    that reaches the target (the best one when none does). Specs without a scoring method: the best
    evaluation, as specbench has always scored them.
    """
    quality = spec.spec.quality
    if not counted or quality is None:
        return None
    better = max if quality.direction == "higher" else min
    if spec.spec.scoring == "hpcai500-valid-flops":
        return counted[-1].value
    if spec.spec.scoring == "mlperf-time-to-train":
        first = next((e.value for e in counted if _meets(e.value, quality.target, quality.direction)), None)
        return first if first is not None else better(e.value for e in counted)
    return better(e.value for e in counted)


def _meets(value: float, target: float, direction: str) -> bool:
    return value >= target if direction == "higher" else value <= target


def _for(ident: object) -> str:
    return "" if ident is None else f" (epoch {ident})"


def check_log(
    log: ParsedLog,
    file: str,
    run: RunData,
    findings: Findings,
    spec: ResolvedSpec | None,
    meta: SubmissionMeta | None,
    incomplete: bool,
    mlperf: MlperfDialect | None = None,
) -> None:
    """Check one parsed log and fill `run` with what it shows (by MLPerf's log rules for an imported MLPerf log)."""
    LogCheck(log, file, run, findings, spec, meta, incomplete, mlperf).run_all()


def check_seeds(findings: Findings, runs: Iterable[RunData], log_name: str = "log.txt") -> None:
    """Distinct seeds across the runs of one benchmark."""
    seen: dict[int, RunData] = {}
    for run in runs:
        if run.seed is None:
            continue
        if run.seed in seen:
            first = seen[run.seed]
            event = run.log.first("seed") if run.log else None
            findings.add(
                "SB-LOG-010",
                f"{run.folder}/{log_name}",
                f"expected a seed different from {first.name}'s, found the same seed {run.seed}",
                line=event.line if event else None,
                json_path="value",
            )
        else:
            seen[run.seed] = run
