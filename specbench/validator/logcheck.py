"""Checks of one run's MLLOG log: keys and cardinality, interval pairing, order, time, values, identity.

An imported MLPerf log is judged by MLPerf's log rules instead (the typed rules of its ruleset, applied by
validator.mlperf_engine), with its identity and seed. The evaluations, timed blocks and the run's status are
checked by validator.logquality.
"""

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
from specbench.validator.logquality import Quality, QualityCheck
from specbench.validator.mlperf_engine import typed_log_rules
from specbench.validator.model import LogFacts, LogReading, RunData, RunVerdict
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


@dataclass
class LogCheck:
    """One log's checks; returns what the log shows (times, seed, evaluations, quality, status) as a `LogReading`."""

    log: ParsedLog
    file: str
    findings: Findings
    spec: ResolvedSpec | None
    meta: SubmissionMeta | None
    incomplete: bool
    mlperf: MlperfDialect | None = None
    broken: list[str] = field(default_factory=list)
    """Why an imported MLPerf log counts as failed under MLPerf's log rules (empty for specbench logs)."""

    def add(self, code: str, event: LogEvent | None, message: str, json_path: str = "") -> None:
        self.findings.add(code, self.file, message, line=event.line if event else None, json_path=json_path)

    def run_all(self) -> LogReading:
        if self.log.unread is not None:
            self.findings.add("SB-STR-003", self.file, self.log.unread)
            return LogReading(None, RunVerdict("incomplete", "no readable log"))
        for problem in self.log.problems:
            self.findings.add("SB-LOG-001", self.file, problem.message, line=problem.line, column=problem.column)
        if self.mlperf is not None:
            dialect = self.mlperf
            self.broken = typed_log_rules(self.log, self.file, self.findings, dialect.usage, dialect.ruleset)
            self.check_mlperf_identity(dialect)
            self.check_mlperf_seed()
        else:
            self.check_event_types()
            self.check_counts()
            self.check_pairs()
            self.check_order()
            self.check_time()
        self.check_values()
        facts = self.read_facts()
        if self.meta is not None and self.mlperf is None:
            self.check_identity(self.meta)
        check = QualityCheck(self, facts.stop_status, self.spec, self.incomplete, self.mlperf is not None, self.broken)
        quality = Quality()
        if self.spec is not None:
            self.check_problem(self.spec)
            if self.meta is not None:
                self.check_hyperparameters(self.spec, self.meta)
            if self.spec.spec.kind == "time_to_quality":
                quality = check.check_quality(self.spec)
            else:
                check.check_blocks()
        return LogReading(facts, check.decide_status(quality))

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

    def read_facts(self) -> LogFacts:
        """The timed window, run_stop's status and the seed, with a finding for a status MLLOG does not know."""
        start, stop, seed = self.log.first("run_start"), self.log.first("run_stop"), self.log.first("seed")
        stop_status = None
        if stop is not None:
            status = stop.metadata.get("status")
            stop_status = status if isinstance(status, str) else None
            if status not in STOP_STATUSES:
                self.add(
                    "SB-LOG-007",
                    stop,
                    f"expected run_stop metadata status to be one of {', '.join(STOP_STATUSES)}, found {show(status)}",
                    "metadata.status",
                )
        return LogFacts(
            log=self.log,
            run_start_ms=start.time_ms if start else None,
            run_stop_ms=stop.time_ms if stop else None,
            stop_status=stop_status,
            seed=seed.value if seed is not None and is_int(seed.value) else None,
        )

    def check_identity(self, meta: SubmissionMeta) -> None:
        division = "open" if meta.level == "free" else "closed"
        benchmark = log_benchmark_name(self.spec.spec) if self.spec is not None else meta.spec_id
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

    def check_mlperf_identity(self, dialect: MlperfDialect) -> None:
        """An imported log against its submission: MLPerf's benchmark name and the division of its level."""
        for key, expected in (("submission_benchmark", dialect.benchmark), ("submission_division", dialect.division)):
            for event in self.log.all(key):
                if event.value != expected:
                    self.add(
                        "SB-LOG-011",
                        event,
                        f"expected {key} {show(expected)} (the MLPerf {key.split('_')[1]} of this submission), "
                        f"found {show(event.value)}",
                        "value",
                    )

    def check_mlperf_seed(self) -> None:
        """MLPerf's seed checker asks for a seed in every run, which its compliance checker does not check."""
        if not self.log.all("seed"):
            self.add(
                "SB-MLP-003",
                None,
                "expected a seed logged in the run, found none: MLPerf's package checker fails the package on this "
                "unless it runs with --seed-checker-bypass, of which a published result keeps no record",
            )

    def check_problem(self, spec: ResolvedSpec) -> None:
        dataset = spec.spec.workload.dataset
        if not dataset.counts_checked:
            return
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


def _for(ident: object) -> str:
    return "" if ident is None else f" (epoch {ident})"


def check_log(
    log: ParsedLog,
    file: str,
    findings: Findings,
    spec: ResolvedSpec | None,
    meta: SubmissionMeta | None,
    incomplete: bool,
    mlperf: MlperfDialect | None = None,
) -> LogReading:
    """Check one parsed log and return what it shows (by MLPerf's log rules for an imported MLPerf log)."""
    return LogCheck(log, file, findings, spec, meta, incomplete, mlperf).run_all()


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
