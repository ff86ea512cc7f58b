"""Imported MLPerf Training results: the import record (import.json) and MLPerf's log dialect.

`specbench import mlperf` keeps every MLPerf log verbatim as a run's log.txt and records in
ORG/SYSTEM/import.json where each file came from. Such a log follows MLPerf's conventions, not
the specbench executor's (keys after run_start, placeholders for the organisation, any evaluation
offset), so it is judged by MLPerf's own log rules instead: the compliance checker's common,
closed/open common and benchmark rules, re-implemented here as typed checks (no eval of rule
text). A run that breaks one counts as failed, as MLPerf's package checker tolerates one
non-compliant run under olympic scoring. docs/mlperf-import.md describes the whole import.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from specbench.spec.models import Strict
from specbench.validator.documents import Loaded, check_mapping, check_version, load_json, to_model
from specbench.validator.values import is_number, show

if TYPE_CHECKING:
    from specbench.spec.resolve import ResolvedSpec
    from specbench.validator.context import Context
    from specbench.validator.logcheck import LogCheck
    from specbench.validator.model import BenchmarkData, Evaluation

IMPORT_FILE = "import.json"
IMPORT_FORMAT = "specbench.mlperf-import"
IMPORT_FORMAT_VERSION = 1
MLPERF_BENCHMARKS = {"mlperf-resnet50": "resnet"}
"""specbench spec id -> MLPerf Training benchmark name (its results folder and `submission_benchmark`)."""
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


class SourceFile(Strict):
    """A file of the MLPerf results tree, relative to the organisation's folder, with its sha256."""

    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class ImportSource(Strict):
    kind: Literal["mlperf-training"]
    round: str | None = Field(description="MLPerf round, e.g. v4.0, from the folder names; None when unknown.")
    ruleset: str = Field(description="MLPerf logging ruleset the log rules come from, e.g. 4.0.0.")
    org: str = Field(description="The organisation's folder in the results tree.")
    system: str = Field(description="The system's name in systems/ and results/.")
    path: str = Field(description="The organisation's folder relative to the imported root.")


class SystemJson(SourceFile):
    content: dict[str, Any] = Field(description="systems/<system>.json as MLPerf publishes it.")


class ImportFinding(Strict):
    """A problem of the source tree found while importing (the tree itself is not part of the submission)."""

    code: Literal["SB-MLP-005", "SB-MLP-006"]
    file: str
    line: int | None = None
    message: str


class Interconnect(Strict):
    """An `sw_N.txt` file: an interconnect power estimate, kept apart from the measured node energy."""

    file: SourceFile
    interconnect_power_est_w: float | None
    conversion_eff: float | None = None


class Coverage(Strict):
    """How the readings of one node cover run_start..run_stop (seconds; 0 when a reading lies on the edge)."""

    device: str
    readings: int
    readings_in_window: int
    uncovered_start_s: float | None
    uncovered_stop_s: float | None


class ImportedPower(Strict):
    folder: str
    nodes: dict[str, SourceFile] = Field(description="Device key in power.csv -> its node_N.txt file.")
    interconnect: list[Interconnect] = Field(default_factory=list)
    conversion_eff: dict[str, float] = Field(
        default_factory=dict, description="conversion_eff logged per node; recorded, not applied."
    )
    coverage: list[Coverage] = Field(default_factory=list)


class ImportedRun(Strict):
    result_file: SourceFile
    power: ImportedPower | None = None


class ImportedBenchmark(Strict):
    mlperf_benchmark: str
    folder: str
    runs: dict[str, ImportedRun]
    ignored: list[str] = Field(default_factory=list, description="Files of the benchmark folder not imported, why.")
    findings: list[ImportFinding] = Field(default_factory=list)


class ImportRecord(Strict):
    """`import.json`: where every file of an imported submission came from."""

    format: Literal["specbench.mlperf-import"]
    format_version: Literal[1]
    source: ImportSource
    system_json: SystemJson
    benchmarks: dict[str, ImportedBenchmark]


@dataclass(frozen=True)
class MlperfDialect:
    """How one imported benchmark's logs are judged: which MLPerf ruleset, benchmark name and division."""

    ruleset: str
    benchmark: str
    division: str

    def cite(self, part: str) -> str:
        return f"MLPerf training_{self.ruleset}/{part}.yaml"


def read_import_record(ctx: Context) -> tuple[ImportRecord | None, Loaded | None]:
    """import.json when the submission has one (an imported MLPerf result), with findings for a bad one."""
    if not ctx.tree.has(IMPORT_FILE):
        return None, None
    loaded = load_json(ctx.tree, IMPORT_FILE, ctx.findings)
    if loaded is None or not check_mapping(loaded, ctx.findings):
        return None, loaded
    if loaded.data.get("format") != IMPORT_FORMAT:
        ctx.findings.add(
            "SB-MLP-004",
            IMPORT_FILE,
            f"expected format {IMPORT_FORMAT!r}, found {show(loaded.data.get('format'))}",
            **loaded.locate("format"),
        )
        return None, loaded
    if not check_version(loaded, IMPORT_FORMAT_VERSION, ctx.findings):
        return None, loaded
    return to_model(ImportRecord, loaded, ctx.findings), loaded


def dialect_for(record: ImportRecord | None, bench: BenchmarkData) -> MlperfDialect | None:
    """The MLPerf dialect of an imported benchmark, or None for a specbench log."""
    if record is None or bench.meta is None:
        return None
    entry = record.benchmarks.get(bench.name)
    expected = MLPERF_BENCHMARKS.get(bench.meta.spec_id)
    if entry is None or expected is None or entry.mlperf_benchmark != expected:
        return None
    division = "open" if bench.meta.level == "free" else "closed"
    return MlperfDialect(record.source.ruleset, expected, division)


def check_import(ctx: Context, record: ImportRecord, loaded: Loaded, benchmarks: Iterable[BenchmarkData]) -> None:
    """The record against the submission: every benchmark and run listed, each log the MLPerf log verbatim."""
    findings = ctx.findings
    seen = {bench.name: bench for bench in benchmarks}
    for name, bench in seen.items():
        entry = record.benchmarks.get(name)
        spec_id = bench.meta.spec_id if bench.meta else None
        expected = MLPERF_BENCHMARKS.get(spec_id) if spec_id else None
        if entry is None:
            findings.add(
                "SB-MLP-004",
                IMPORT_FILE,
                f"expected benchmark {name!r} in the import record, found it missing: its logs are judged as specbench logs",
                **loaded.locate("benchmarks"),
            )
            continue
        if entry.mlperf_benchmark != expected:
            known = ", ".join(f"{k} ({v})" for k, v in MLPERF_BENCHMARKS.items())
            findings.add(
                "SB-MLP-004",
                IMPORT_FILE,
                f"expected an MLPerf benchmark that spec {spec_id!r} answers (known: {known}), "
                f"found {entry.mlperf_benchmark!r}: its logs are judged as specbench logs",
                **loaded.locate("benchmarks", name, "mlperf_benchmark"),
            )
        _check_runs(ctx, loaded, name, entry, bench)
        for i, problem in enumerate(entry.findings):
            where = f"{problem.file}:{problem.line}" if problem.line is not None else problem.file
            findings.add(
                problem.code,
                IMPORT_FILE,
                f"{where} (MLPerf results tree): {problem.message}",
                **loaded.locate("benchmarks", name, "findings", i),
            )


def _check_runs(ctx: Context, loaded: Loaded, name: str, entry: ImportedBenchmark, bench: BenchmarkData) -> None:
    folders = {run.name for run in bench.runs}
    for run_name, imported in entry.runs.items():
        rel = f"{name}/{run_name}/log.txt"
        if run_name not in folders:
            ctx.findings.add(
                "SB-MLP-004",
                IMPORT_FILE,
                f"expected run folder {name}/{run_name} (imported from {imported.result_file.path}), found none",
                **loaded.locate("benchmarks", name, "runs", run_name),
            )
            continue
        digest = ctx.tree.digest(rel)
        if digest is not None and digest[0] != imported.result_file.sha256:
            ctx.findings.add(
                "SB-MLP-004",
                rel,
                f"expected the MLPerf log {imported.result_file.path} verbatim (sha256 {imported.result_file.sha256[:12]}...), "
                f"found a log with sha256 {digest[0][:12]}...",
            )
    for run_name in sorted(folders - set(entry.runs)):
        ctx.findings.add(
            "SB-MLP-004",
            IMPORT_FILE,
            f"expected run folder {name}/{run_name} in the import record, found it missing",
            **loaded.locate("benchmarks", name, "runs"),
        )


@dataclass
class MlperfLogRules:
    """MLPerf's log rules on one parsed log; `broken` lists what makes the run count as failed."""

    check: LogCheck
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
            self.check.add("SB-MLP-003", None, "expected a seed logged in the run (MLPerf's seed checker), found none")
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
            elif len(events) > 1 and any(show(v) != show(values[0]) for v in values):
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
        for event in self.check.log:
            key, meta, value = event.key, event.metadata, event.value
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


def check_schedule(check: LogCheck, spec: ResolvedSpec, evaluations: list[Evaluation]) -> str | None:
    """MLPerf's evaluation schedule: every `eval_every_epochs` at one offset below the cadence.

    Returns why the run counts as failed when the target was first reached at an evaluation off the
    schedule (evaluating more often would otherwise stop the clock early), else None.
    """
    quality = spec.spec.quality
    every = quality.eval_every_epochs if quality is not None else None
    if quality is None or every is None or not evaluations:
        return None
    first = evaluations[0].epoch
    if first > every + EPS or first <= 0:
        check.findings.add(
            "SB-MLP-002",
            check.file,
            f"expected the first evaluation within the first {every:g} epochs (an offset below the cadence), "
            f"found it at epoch {first:g}",
            line=evaluations[0].line,
            json_path="metadata.epoch_num",
        )
        return None
    off = []
    expected_next = first
    for evaluation in evaluations:
        steps = (evaluation.epoch - first) / every
        on_grid = abs(steps - round(steps)) <= EPS and evaluation.epoch >= expected_next - EPS
        if on_grid:
            expected_next = evaluation.epoch + every
        else:
            off.append(evaluation)
    if off:
        epochs = ", ".join(f"{e.epoch:g}" for e in off)
        check.findings.add(
            "SB-MLP-002",
            check.file,
            f"expected evaluations every {every:g} epochs from epoch {first:g}, found evaluations off that schedule "
            f"at epoch {epochs}",
            line=off[0].line,
            json_path="metadata.epoch_num",
        )
    target, direction = quality.target, quality.direction
    reaching = next(
        (e for e in evaluations if (e.value >= target if direction == "higher" else e.value <= target)), None
    )
    if reaching is not None and reaching in off:
        return f"the target was first reached at an evaluation off MLPerf's schedule (epoch {reaching.epoch:g})"
    return None
