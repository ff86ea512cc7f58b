"""result.json against submission.yaml and the spec (identity), and against the log and trace (values)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from specbench.accounting.accounts import spec_flops_per_sample
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import RunResult
from specbench.spec.system import SubmissionMeta
from specbench.validator.documents import Loaded
from specbench.validator.equivalence import same_hyperparameters
from specbench.validator.findings import Findings
from specbench.validator.model import RunData
from specbench.validator.values import close, same, show

DURATION_ABS_S = 0.05
DURATION_REL = 1e-3
"""result.json's duration (monotonic clock) may differ from the log's (wall clock, whole ms) by this much."""
STARTED_AT_S = 1.0
VALUE_REL = 1e-6


@dataclass
class ResultCheck:
    findings: Findings
    run: RunData
    result: RunResult
    file: Loaded

    def add(self, code: str, path: tuple[str | int, ...], message: str) -> None:
        self.findings.add(code, self.file.file, message, **self.file.locate(*path))

    def differs(self, code: str, path: tuple[str | int, ...], expected: Any, found: Any, source: str) -> None:
        if not same(expected, found):
            self.add(code, path, f"expected {path[-1]} {show(expected)} ({source}), found {show(found)}")

    def check_power_claims(self) -> None:
        power = self.result.power
        if power.measured and power.energy_j is None:
            self.add("SB-RES-003", ("power", "energy_j"), "expected energy_j with measured: true, found none")
        if not power.measured:
            for name in ("energy_j", "mean_power_w"):
                if getattr(power, name) is not None:
                    self.add(
                        "SB-RES-003",
                        ("power", name),
                        f"expected no {name} with measured: false, found {show(getattr(power, name))}",
                    )
            if not power.reason:
                self.add("SB-RES-003", ("power", "reason"), "expected the reason power was not measured, found none")

    def check_identity(self, meta: SubmissionMeta) -> None:
        r = self.result
        for name in ("spec_id", "spec_version", "spec_sha256", "profile", "level", "synthetic_data"):
            self.differs("SB-RES-001", (name,), getattr(meta, name), getattr(r, name), "submission.yaml")
        if not same_hyperparameters(r.hyperparameters, meta.hyperparameters):
            changed = sorted(
                k
                for k in r.hyperparameters.keys() | meta.hyperparameters.keys()
                if not same(r.hyperparameters.get(k), meta.hyperparameters.get(k))
            )
            self.add(
                "SB-RES-001",
                ("hyperparameters",),
                f"expected the hyperparameters of submission.yaml, found {', '.join(changed)} different",
            )
        self.differs("SB-RES-001", ("run",), self.run.number, r.run, f"folder {self.run.name}")

    def check_spec(self, spec: ResolvedSpec, meta: SubmissionMeta | None) -> None:
        s, r = spec.spec, self.result
        self.differs("SB-RES-001", ("kind",), s.kind, r.kind, f"spec {s.id}")
        self.differs("SB-RES-001", ("sample_unit",), s.workload.sample_unit, r.sample_unit, f"spec {s.id}")
        self.differs("SB-RES-001", ("flop_accounting",), s.workload.flop_accounting, r.flop_accounting, f"spec {s.id}")
        expected_flops = flops_per_sample(spec, meta)
        found = r.flops_per_sample
        if found is None if expected_flops is not None else found is not None:
            self.add(
                "SB-RES-001",
                ("flops_per_sample",),
                f"expected flops_per_sample {show(expected_flops)} (spec {s.id} at profile {spec.profile}), found {show(found)}",
            )
        elif expected_flops is not None and found is not None and not close(found, expected_flops, VALUE_REL):
            self.add(
                "SB-RES-001",
                ("flops_per_sample",),
                f"expected flops_per_sample {expected_flops:g} (spec {s.id} at profile {spec.profile}), found {found:g}",
            )
        if s.quality is not None:
            if r.quality is None and s.kind == "time_to_quality":
                self.add("SB-RES-001", ("quality",), "expected a quality result in a time-to-quality run, found none")
            elif r.quality is not None:
                for name in ("metric", "target", "direction"):
                    self.differs(
                        "SB-RES-001",
                        ("quality", name),
                        getattr(s.quality, name),
                        getattr(r.quality, name),
                        f"spec {s.id}",
                    )
        if s.throughput is not None:
            if r.throughput is None:
                self.add("SB-RES-001", ("throughput",), "expected a throughput result in a throughput run, found none")
            else:
                self.differs(
                    "SB-RES-001",
                    ("throughput", "warmup_steps"),
                    s.throughput.warmup_steps,
                    r.throughput.warmup_steps,
                    f"spec {s.id}",
                )
                self.differs(
                    "SB-RES-001",
                    ("throughput", "timed_steps"),
                    s.throughput.measure_steps,
                    r.throughput.timed_steps,
                    f"spec {s.id}",
                )

    def check_devices(self, problem: str | None) -> None:
        if problem is not None:
            self.add("SB-ACC-002", ("devices",), problem)

    def check_recomputed(self) -> None:
        run, r = self.run, self.result
        if r.status != run.status:
            self.add(
                "SB-RES-002",
                ("status",),
                f"expected status {run.status!r} (from the log: {run.reason or 'target reached'}), found {r.status!r}",
            )
        if run.seed is not None:
            self.differs("SB-RES-002", ("seed",), run.seed, r.seed, "log seed")
        self.check_times()
        self.check_quality()
        self.check_accounts()
        self.check_energy()

    def check_times(self) -> None:
        run, r = self.run, self.result
        duration = run.duration_s
        if (
            duration is not None
            and r.duration_s is not None
            and (abs(r.duration_s - duration) > DURATION_ABS_S + DURATION_REL * duration)
        ):
            self.add(
                "SB-RES-002",
                ("duration_s",),
                f"expected duration_s {duration:.3f} (run_start to run_stop in the log), found {r.duration_s:.3f}",
            )
        if run.run_start_ms is None:
            return
        try:
            started = datetime.fromisoformat(r.started_at)
        except ValueError:
            self.add("SB-RES-002", ("started_at",), f"expected an ISO 8601 time, found {r.started_at!r}")
            return
        if started.tzinfo is None:
            started = started.replace(tzinfo=timezone.utc)
        offset = started.timestamp() - run.run_start_ms / 1000.0
        if abs(offset) > STARTED_AT_S:
            self.add(
                "SB-RES-002",
                ("started_at",),
                f"expected started_at at run_start of the log, found it {offset:+.3f} s off",
            )

    def check_quality(self) -> None:
        run, quality = self.run, self.result.quality
        if quality is None or not run.evaluations:
            return
        last = run.evaluations[-1].value
        if quality.achieved is None or not close(quality.achieved, last, VALUE_REL):
            self.add(
                "SB-RES-002",
                ("quality", "achieved"),
                f"expected achieved {last:g} (the last eval_accuracy), found {show(quality.achieved)}",
            )
        if run.best is not None and (quality.best is None or not close(quality.best, run.best, VALUE_REL)):
            self.add(
                "SB-RES-002",
                ("quality", "best"),
                f"expected best {run.best:g} (from the log), found {show(quality.best)}",
            )
        if run.reached is not None and quality.reached != run.reached:
            self.add(
                "SB-RES-002",
                ("quality", "reached"),
                f"expected reached {show(run.reached)} (from the log), found {show(quality.reached)}",
            )
        if len(quality.curve) != len(run.evaluations):
            self.add(
                "SB-RES-002",
                ("quality", "curve"),
                f"expected {len(run.evaluations)} points (eval_accuracy events), found {len(quality.curve)}",
            )
            return
        for i, (point, evaluation) in enumerate(zip(quality.curve, run.evaluations, strict=True)):
            if not close(point.value, evaluation.value, VALUE_REL) or not close(
                point.epoch, evaluation.epoch, VALUE_REL
            ):
                self.add(
                    "SB-RES-002",
                    ("quality", "curve", i),
                    f"expected epoch {evaluation.epoch:g} value {evaluation.value:g} (log line {evaluation.line}), "
                    f"found epoch {point.epoch:g} value {point.value:g}",
                )
                return

    def check_accounts(self) -> None:
        """Every number of result.json against the one the accounting recomputed from the evidence."""
        accounts, r = self.run.accounts, self.result
        if accounts is None:
            return
        duration = accounts.time_s
        rate_rel = VALUE_REL + (DURATION_REL + DURATION_ABS_S / duration if duration else 0.0)
        source = "recomputed from the log and the spec"
        if accounts.samples is not None and r.samples_processed != accounts.samples:
            self.add(
                "SB-RES-002",
                ("samples_processed",),
                f"expected samples_processed {accounts.samples} (samples_count in the log), found {show(r.samples_processed)}",
            )
        checks: list[tuple[tuple[str, ...], float | None, float | None, float]] = [
            (("model_flops",), accounts.model_flops, r.model_flops, VALUE_REL),
            (("flops_per_s",), accounts.flops_per_s, r.flops_per_s, rate_rel),
        ]
        if r.throughput is not None:
            checks.append(
                (("throughput", "samples_per_s"), accounts.samples_per_s, r.throughput.samples_per_s, rate_rel)
            )
        for path, expected, found, rel in checks:
            if expected is not None and (found is None or not close(found, expected, rel)):
                self.add("SB-RES-002", path, f"expected {path[-1]} {expected:.6g} ({source}), found {show(found)}")

    def check_energy(self) -> None:
        power, data = self.result.power, self.run.power
        if not power.measured or data is None:
            return
        if data.energy_j is not None and (
            power.energy_j is None or not close(power.energy_j, data.energy_j, VALUE_REL)
        ):
            self.add(
                "SB-RES-002",
                ("power", "energy_j"),
                f"expected energy_j {data.energy_j:.6g} (recomputed from power.csv), found {show(power.energy_j)}",
            )
        if data.method is not None and power.method is not None and power.method != data.method:
            self.add(
                "SB-RES-002",
                ("power", "method"),
                f"expected method {data.method!r} (recomputed from power.csv), found {power.method!r}",
            )
        duration = self.result.duration_s
        if power.energy_j is not None and power.mean_power_w is not None and duration:
            mean = power.energy_j / duration
            if not close(power.mean_power_w, mean, DURATION_REL + DURATION_ABS_S / duration):
                self.add(
                    "SB-RES-002",
                    ("power", "mean_power_w"),
                    f"expected mean_power_w {mean:.6g} (energy_j / duration_s, the window's duration within "
                    f"{DURATION_ABS_S} s), found {power.mean_power_w:.6g}",
                )


def flops_per_sample(spec: ResolvedSpec, meta: SubmissionMeta | None) -> float | None:
    """The spec's FLOPs per sample, of the model variant the hyperparameters choose."""
    return spec_flops_per_sample(spec, meta.hyperparameters if meta else {})


def check_result(
    findings: Findings,
    run: RunData,
    result: RunResult,
    file: Loaded,
    meta: SubmissionMeta | None,
    spec: ResolvedSpec | None,
    devices_problem: str | None = None,
) -> None:
    check = ResultCheck(findings, run, result, file)
    check.check_power_claims()
    if meta is not None:
        check.check_identity(meta)
    if spec is not None:
        check.check_spec(spec, meta)
    check.check_recomputed()
    check.check_devices(devices_problem)
