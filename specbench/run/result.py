"""result.json of one run: every number in it is computed here, from what the run left behind.

`compute_result` is the one place that turns a run's evidence (its edges, curve, outcome and power
window) into time, samples, FLOPs, rates, quality and energy, through the one accounting
(specbench.accounting.accounts) that the validator recomputes them with; a run killed outright gets its result
from the same function with the evidence its state.json kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from specbench.accounting.accounts import Evidence, Problem, account, spec_flops_per_sample
from specbench.accounting.quality import spec_outcome
from specbench.errors import SpecbenchError
from specbench.power.scopes import device_scopes
from specbench.run.base import RunOutcome
from specbench.run.config import RunConfig
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import PowerResult, QualityPoint, QualityResult, RunResult


@dataclass
class RunEvidence:
    """What one run left behind, whether it ended well or not."""

    number: int
    seed: int
    started_at: str
    started_wall: float | None = None
    duration_s: float | None = None
    curve: list[QualityPoint] = field(default_factory=list)
    devices: int = 1
    device_kind: str = "cpu"
    synthetic: bool = False


def compute_result(
    resolved: ResolvedSpec,
    config: RunConfig,
    evidence: RunEvidence,
    outcome: RunOutcome | None,
    failure: str | None,
    power: PowerResult,
) -> RunResult:
    """result.json from the evidence; `failure` is why the run did not complete (None when it did)."""
    spec = resolved.spec
    per_sample = flops_per_sample(resolved, config)
    samples = outcome.samples if outcome else None
    duration = evidence.duration_s
    accounts = account(
        Problem.of(resolved, config.hyperparameters),
        Evidence(duration, samples, None, power.energy_j, evidence.devices),
    )
    reason: str | None
    if failure is not None:
        status, reason = "incomplete", failure
    elif outcome is not None and outcome.status == "failed":
        status, reason = "failed", outcome.reason
    else:
        status, reason = "success", None
    started = evidence.started_at
    if evidence.started_wall:
        started = datetime.fromtimestamp(evidence.started_wall, timezone.utc).isoformat(timespec="milliseconds")
    return RunResult(
        format_version=1,
        **resolved.result_header(),
        run=evidence.number,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        seed=evidence.seed,
        started_at=started,
        duration_s=duration,
        epochs=outcome.epochs if outcome else None,
        steps=outcome.steps if outcome else None,
        samples_processed=samples,
        devices=evidence.devices,
        device_kind=evidence.device_kind,
        synthetic_data=bool(spec.workload.dataset.synthetic or evidence.synthetic),
        flops_per_sample=per_sample,
        model_flops=accounts.model_flops,
        flops_per_s=accounts.flops_per_s,
        quality=_quality(resolved, evidence.curve, outcome),
        throughput=outcome.throughput if outcome else None,
        power=power,
        hyperparameters=config.hyperparameters,
        settings=config.settings,
    )


def _quality(resolved: ResolvedSpec, curve: list[QualityPoint], outcome: RunOutcome | None) -> QualityResult | None:
    """The quality section: `achieved` is the last evaluation, `reached` the loop's (if it never ended, the
    outcome by the spec's credit rule, as the validator judges it)."""
    spec = resolved.spec
    if spec.quality is None or not (spec.kind == "time_to_quality" or curve):
        return None
    quality = spec_outcome(spec, [p.value for p in curve])
    return QualityResult(
        metric=spec.quality.metric,
        target=spec.quality.target,
        direction=spec.quality.direction,
        achieved=quality.last,
        best=quality.best,
        reached=outcome.reached if outcome is not None else quality.met,
        curve=curve,
    )


def flops_per_sample(resolved: ResolvedSpec, config: RunConfig) -> float:
    """The spec's FLOPs per sample, of the variant the configuration trains (the accounting's own lookup)."""
    value = spec_flops_per_sample(resolved, config.hyperparameters)
    assert value is not None
    return value


def power_result(window: Any, meters: list[Any], scope: str, unmeasured: str | None) -> PowerResult:
    """Energy over the window of the devices that measure the spec's scope; never summed across scopes."""
    if unmeasured is not None or window is None:
        return PowerResult(measured=False, reason=unmeasured or "not measured: no power window was recorded")
    wanted = device_scopes(scope, (d.scope for d in window.devices))
    devices = [d for d in window.devices if d.scope in wanted]
    missing = [d.device for d in devices if d.energy_j is None]
    if not devices or missing:
        seen = sorted({d.scope for d in window.devices})
        why = (
            f"devices {missing} gave no energy" if missing else f"no meter here measures scope {scope!r} (seen: {seen})"
        )
        return PowerResult(measured=False, scope=scope, reason=f"not measured: {why}")  # type: ignore[arg-type]
    energy = math.fsum(d.energy_j for d in devices)
    methods = {d.method for d in devices}
    duration = window.duration_s
    return PowerResult(
        measured=True,
        scope=scope,  # type: ignore[arg-type]
        meters=sorted({m.kind for m in meters}),
        devices=[d.device for d in devices],
        energy_j=energy,
        mean_power_w=energy / duration if duration > 0 else None,
        method=methods.pop() if len(methods) == 1 else "mixed",  # type: ignore[arg-type]
        trace_files=["power.csv", "power.json"],
    )


def failure_reason(failure: BaseException) -> str:
    """One line on why a run did not complete; out of device memory names its fix, a peer's failure says so."""
    name = type(failure).__name__
    if "Connection closed by peer" in str(failure):
        return "another process of the job failed (gloo: connection closed by peer); its error is reported beside this"
    if "OutOfMemory" in name:
        return f"out of device memory: {str(failure).splitlines()[0][:300]}; lower global_batch_size with --set"
    text = str(failure).splitlines()[0][:300] if str(failure) else name
    return text if isinstance(failure, SpecbenchError) else f"{name}: {text}"


def summary_line(result: RunResult, run_dir: Any) -> str:
    """The line printed when a run ends: status, time, quality, rate, energy (or why it was not measured)."""
    parts = [f"{run_dir}: {result.status}"]
    if result.reason:
        parts.append(result.reason)
    if result.duration_s is not None:
        parts.append(f"{result.duration_s:.1f} s")
    if result.quality is not None and result.quality.best is not None:
        parts.append(f"{result.quality.metric} {result.quality.best:.4f} (target {result.quality.target})")
    if result.throughput is not None:
        parts.append(f"{result.throughput.samples_per_s:,.1f} {result.sample_unit}s/s")
    if result.power.measured and result.power.energy_j is not None:
        parts.append(f"{result.power.energy_j:.1f} J, {result.power.mean_power_w or 0:.1f} W mean")
    else:
        parts.append(result.power.reason or "power not measured")  # why, as result.json says it
    return " | ".join(parts)
