"""What validation returns: findings, and the data it parsed and recomputed, for the scorer to reuse."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from specbench.accounting.accounts import Accounts
from specbench.errors import EXIT_NONCOMPLIANT, EXIT_OK, EXIT_UNUSABLE
from specbench.formats.mllog import ParsedLog
from specbench.formats.mlperf_import import ImportRecord
from specbench.power.energy import DeviceEnergy
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import RunResult
from specbench.spec.system import SubmissionMeta, SystemDescription
from specbench.validator.findings import Finding
from specbench.validator.values import is_number

RunStatus = Literal["success", "failed", "incomplete"]

SignatureStatus = Literal["verified", "not verified", "invalid", "missing"]


@dataclass(frozen=True)
class SignatureInfo:
    """What the report says about the signature: its state, and who signed when that is known."""

    status: SignatureStatus
    signer: str | None = None
    key_type: str | None = None
    fingerprint: str | None = None
    allowed_signers: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "signer": self.signer,
            "key_type": self.key_type,
            "fingerprint": self.fingerprint,
            "allowed_signers": self.allowed_signers,
        }

    def describe(self) -> str:
        """One line for the text report."""
        key = f"{self.key_type} key {self.fingerprint}" if self.fingerprint else "no key"
        if self.status == "verified":
            return f"signed by {self.signer} ({key}), verified against {self.allowed_signers}"
        if self.status == "not verified":
            return f"signed with {key}, not verified (give --allowed-signers to check the signer)"
        if self.status == "missing":
            return f"not signed (manifest.json.sig missing; {self.allowed_signers} requires a signature)"
        return f"signature invalid ({key})"


@dataclass(frozen=True)
class Evaluation:
    """One logged evaluation of the quality metric."""

    epoch: float
    value: float
    time_ms: float
    line: int


@dataclass(frozen=True)
class SeriesFacts:
    """Where one device's series comes from and what identifies it, for checks across runs and devices."""

    device: str
    identity: str
    meter: str
    model: str | None
    scope: str
    fingerprint: int | None
    """A hash of the series' power readings (None when it has too few to tell copies from chance)."""
    first_counter_j: float | None
    last_counter_j: float | None
    first_wall_s: float | None
    last_wall_s: float | None
    cumulative: bool
    """Whether the energy counter is a hardware total that only grows (no wrap modulus, trusted)."""


@dataclass(frozen=True, kw_only=True)
class PowerChart:
    """A run's power readings as its entry page draws them: per device, (seconds after `t0_wall_s`, watts)."""

    t0_wall_s: float
    series: tuple[tuple[str, tuple[tuple[float, float], ...]], ...]


@dataclass
class PowerData:
    """Energy over one run's window (run_start to run_stop), recomputed from its trace.

    `energy_j` totals the devices of the spec's scope (None when any of them was not measured);
    `devices` holds every measured device, each with its method and counter/integral cross-check.
    """

    scope: str
    device_scopes: tuple[str, ...]
    devices: list[DeviceEnergy]
    energy_j: float | None
    duration_s: float
    method: str | None
    window_start_wall_s: float | None
    window_stop_wall_s: float | None
    achieved_hz: dict[str, float] = field(default_factory=dict)
    host: str | None = None
    series: list[SeriesFacts] = field(default_factory=list)

    @property
    def mean_power_w(self) -> float | None:
        if self.energy_j is None or self.duration_s <= 0:
            return None
        return self.energy_j / self.duration_s


@dataclass(frozen=True)
class LogFacts:
    """What one run's log states, read once: the parsed log, the timed window, run_stop's status and the seed."""

    log: ParsedLog
    run_start_ms: float | None
    run_stop_ms: float | None
    stop_status: str | None
    seed: int | None


@dataclass(frozen=True)
class RunVerdict:
    """What one run's log shows against its problem: the evaluations, the quality outcome and the run's status.

    `reached`, `best` and `credited` stay None where the run has no quality target (a throughput run).
    """

    status: RunStatus
    reason: str | None
    evaluations: tuple[Evaluation, ...] = ()
    best: float | None = None
    reached: bool | None = None
    credited: float | None = None


@dataclass(frozen=True)
class LogReading:
    """The log phase's result for one run: its facts (None when there is no readable log) and its verdict."""

    facts: LogFacts | None
    verdict: RunVerdict


@dataclass
class RunData:
    """One run as the log, the trace and result.json show it: each phase's result, assembled for the scorer.

    The phases and the fields each fills are listed in validator.benchmark.
    """

    name: str
    number: int
    folder: str
    log: ParsedLog | None = None
    run_start_ms: float | None = None
    run_stop_ms: float | None = None
    stop_status: str | None = None
    seed: int | None = None
    evaluations: list[Evaluation] = field(default_factory=list)
    reached: bool | None = None
    """Whether the run met its target by its scoring method's rule (accounting.quality)."""
    best: float | None = None
    credited: float | None = None
    """The quality the scoring method credits (HPC AI500: at the end of the budget; MLPerf: the first to reach)."""
    status: RunStatus = "incomplete"
    reason: str | None = None
    state: str | None = None
    result: RunResult | None = None
    power: PowerData | None = None
    samples: int | None = None
    """Samples processed, from the log (None where the log does not show them or contradicts the spec)."""
    accounts: Accounts | None = None
    """Every number of the run recomputed from the evidence: what result.json must say and what is ranked."""
    log_fingerprint: str | None = None
    """A digest of the log's timed events (validator.across), kept where the parsed log is dropped."""
    logged_accuracy: tuple[float, ...] = ()
    """The log's numeric eval_accuracy values (a throughput run's quality, shown beside its rate)."""
    power_chart: PowerChart | None = None
    """The trace's readings for the entry page, from the one read of power.csv (None: no readable trace)."""

    @classmethod
    def of_log(
        cls,
        name: str,
        number: int,
        folder: str,
        reading: LogReading,
        state: str | None = None,
        result: RunResult | None = None,
    ) -> RunData:
        """A run as its first phase leaves it: state.json's status, result.json, and what its log shows."""
        facts, verdict = reading.facts, reading.verdict
        return cls(
            name,
            number,
            folder,
            log=facts.log if facts else None,
            run_start_ms=facts.run_start_ms if facts else None,
            run_stop_ms=facts.run_stop_ms if facts else None,
            stop_status=facts.stop_status if facts else None,
            seed=facts.seed if facts else None,
            evaluations=list(verdict.evaluations),
            reached=verdict.reached,
            best=verdict.best,
            credited=verdict.credited,
            status=verdict.status,
            reason=verdict.reason,
            state=state,
            result=result,
            logged_accuracy=_accuracy(facts.log) if facts else (),
        )

    @property
    def duration_s(self) -> float | None:
        """run_start to run_stop from the log, in seconds."""
        if self.run_start_ms is None or self.run_stop_ms is None:
            return None
        return (self.run_stop_ms - self.run_start_ms) / 1000.0

    def summary(self) -> dict[str, Any]:
        return {
            "run": self.name,
            "status": self.status,
            "reason": self.reason,
            "seed": self.seed,
            "duration_s": self.duration_s,
            "best": self.best,
            "reached": self.reached,
            "energy_j": self.power.energy_j if self.power else None,
            "mean_power_w": self.power.mean_power_w if self.power else None,
        }


def _accuracy(log: ParsedLog) -> tuple[float, ...]:
    return tuple(float(e.value) for e in log.all("eval_accuracy") if is_number(e.value))


@dataclass
class BenchmarkData:
    """One BENCHMARK folder: its metadata, the spec it answers (resolved), and its runs."""

    name: str
    meta: SubmissionMeta | None = None
    spec: ResolvedSpec | None = None
    runs: list[RunData] = field(default_factory=list)
    mlperf_scaling_factor: float | None = None
    """An imported MLPerf benchmark's scaling.json factor (MLPerf's published time = olympic mean x it)."""
    mlperf_weak_scaling: bool = False
    """An imported MLPerf HPC weak-scaling folder: its runs are model instances trained at once, scored together
    as models per minute (import.json's `published`), never as a time to train."""

    def summary(self) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "spec_id": self.spec.spec.id if self.spec else None,
            "spec_version": self.spec.spec.version if self.spec else None,
            "level": self.spec.level if self.spec else None,
            "profile": self.spec.profile if self.spec else None,
            "runs": [run.summary() for run in self.runs],
        }


@dataclass
class Report:
    """Everything validation found in one submission folder (ORG/SYSTEM, or one BENCHMARK of it).

    `path` is the folder as given, `root` the ORG/SYSTEM folder that finding locations are relative
    to. `usable` is False when the path could not be judged at all (exit code 2).
    """

    path: str
    root: str
    usable: bool = True
    system: SystemDescription | None = None
    benchmarks: list[BenchmarkData] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    signature: SignatureInfo | None = None
    """The manifest's signature (None: unsigned and no signers required)."""
    manifest_sha256: str | None = None
    """The sha256 of manifest.json as validation read it (what a reproduction names as its source)."""
    imported: ImportRecord | None = None
    """import.json of a submission imported from MLPerf results, as validation read it."""
    retained: dict[str, bytes] = field(default_factory=dict, repr=False)
    """The bytes of the files validate_submission was asked to retain, by relative path, as read (once)."""

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def compliant(self, werror: bool = False) -> bool:
        return self.usable and not self.errors and not (werror and self.warnings)

    def exit_code(self, werror: bool = False) -> int:
        if not self.usable:
            return EXIT_UNUSABLE
        return EXIT_OK if self.compliant(werror) else EXIT_NONCOMPLIANT

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def to_dict(self, werror: bool = False) -> dict[str, Any]:
        return {
            "path": self.path,
            "root": self.root,
            "usable": self.usable,
            "compliant": self.compliant(werror),
            "exit_code": self.exit_code(werror),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [f.to_dict() for f in self.findings],
            "signature": self.signature.to_dict() if self.signature else None,
            "benchmarks": [b.summary() for b in self.benchmarks],
        }


def exit_code(reports: list[Report], werror: bool = False) -> int:
    """2 when any path was unusable, else 1 when any is non-compliant, else 0."""
    codes = [r.exit_code(werror) for r in reports]
    if EXIT_UNUSABLE in codes:
        return EXIT_UNUSABLE
    return EXIT_NONCOMPLIANT if EXIT_NONCOMPLIANT in codes else EXIT_OK
