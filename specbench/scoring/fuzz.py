"""The project's own mutation fuzzer: mutated copies of real submissions must never crash the validator,
a mutation that contradicts the evidence, a device fact or a rule must never be accepted, and a fabrication
consistent throughout is measured: how far it moved each ranked number while still ranked.

Each case copies a submission, takes a family of mutations (fuzzops.FAMILIES and the families of the
operators below, in turn: each as often, on every source), draws one of its operators and one variant:
`raw` (the manifest left as it was), `resigned` (the manifest recomputed, as anyone can) or `repaired`
(result.json patched with what the validator recomputed, then re-signed: the cheater's best effort). Each
operator says whether its mutation must be refused (`CONTRADICTS`), may be a consistent fabrication
(`CONSISTENT`), or cannot be told in advance (`EITHER`); only crashes and accepted contradictions are
failures. An operator may build a second submission (shared evidence): then both are validated together
(validate_many) and both must be refused.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from specbench.files import write_manifest
from specbench.scoring.fuzzedit import (
    CONSISTENT,
    CONTRADICTS,
    EITHER,
    UNRANKED_PER_W,
    Target,
    read_events,
    read_json,
    read_yaml,
    write_events,
    write_json,
    write_yaml,
)
from specbench.scoring.fuzzops import FAMILIES as ISSUE_FAMILIES
from specbench.scoring.leaderboard import Entry, build
from specbench.validator.model import Report
from specbench.validator.validate import validate_many, validate_submission

__all__ = ["CONSISTENT", "CONTRADICTS", "EITHER", "FAMILIES", "OPERATORS", "UNRANKED_PER_W", "VARIANTS", "fuzz"]

VARIANTS = ("raw", "resigned", "repaired")


# operators: each mutates the target and returns its label (None when it does not apply)

RESULT_FIELDS = (
    ("samples_processed",),
    ("model_flops",),
    ("flops_per_s",),
    ("duration_s",),
    ("devices",),
    ("power", "energy_j"),
    ("power", "mean_power_w"),
    ("throughput", "samples_per_s"),
    ("quality", "achieved"),
    ("quality", "best"),
)


def op_result_number(t: Target) -> str | None:
    data = read_json(t.run / "result.json")
    path = t.rng.choice(RESULT_FIELDS)
    holder = data
    for key in path[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or not isinstance(holder.get(path[-1]), (int, float)) or holder[path[-1]] == 0:
        return None
    value = holder[path[-1]]
    holder[path[-1]] = type(value)(value * t.rng.choice((2, 3, 0.5, 0.7)))
    write_json(t.run / "result.json", data)
    return CONTRADICTS


def op_log_samples(t: Target) -> str | None:
    events = read_events(t.run)
    hits = [e for e in events if isinstance(e["metadata"].get("samples_count"), int) and e["metadata"]["samples_count"]]
    if not hits:
        return None
    factor = t.rng.choice((2, 3, 0.5))
    keys = {"block_start", "block_stop"} if hits[0]["key"].startswith("block") else {"eval_accuracy"}
    for event in events:
        if event["key"] in keys and isinstance(event["metadata"].get("samples_count"), int):
            event["metadata"]["samples_count"] = int(event["metadata"]["samples_count"] * factor)
    write_events(t.run, events)
    return CONTRADICTS


def op_eval_value(t: Target) -> str | None:
    events = read_events(t.run)
    evals = [e for e in events if e["key"] == "eval_accuracy"]
    if not evals:
        return None
    target = t.rng.choice(evals)
    impossible = t.rng.random() < 0.5
    target["value"] = t.rng.choice((1.5, 100.0 * target["value"], -0.2)) if impossible else t.rng.uniform(0.0, 1.0)
    write_events(t.run, events)
    return CONTRADICTS if impossible else CONSISTENT


def op_run_stop(t: Target) -> str | None:
    events = read_events(t.run)
    stops = [e for e in events if e["key"] == "run_stop"]
    if not stops:
        return None
    stops[0]["time_ms"] += t.rng.choice((-1, 1)) * t.rng.randint(5_000, 60_000)
    write_events(t.run, events)
    return CONTRADICTS if t.traced else EITHER


def op_hyperparameter(t: Target) -> str | None:
    declared = read_yaml(t.bench / "submission.yaml").get("hyperparameters", {})
    events = read_events(t.run)
    hits = [e for e in events if e["key"] in declared and isinstance(e["value"], (int, float, str))]
    if not hits:
        return None
    event = t.rng.choice(hits)
    event["value"] = event["value"] + "x" if isinstance(event["value"], str) else event["value"] * 2 + 1
    write_events(t.run, events)
    return CONTRADICTS


def op_event_line(t: Target) -> str | None:
    events = read_events(t.run)
    i = t.rng.randrange(len(events))
    if t.rng.random() < 0.5:
        events.pop(i)
    else:
        events.insert(i, dict(events[i]))
    write_events(t.run, events)
    return EITHER


def op_power_scale(t: Target) -> str | None:
    if not t.traced:
        return None
    factor = t.rng.choice((0.01, 10.0))
    lines = (t.run / "power.csv").read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        cells[4:7] = [repr(float(c) * factor) if c else c for c in cells[4:7]]
        out.append(",".join(cells))
    (t.run / "power.csv").write_text("\n".join(out) + "\n")
    return CONTRADICTS


def op_power_device(t: Target) -> str | None:
    if not t.traced:
        return None
    data = read_json(t.run / "power.json")
    devices = data["meters"][0]["devices"]
    if t.rng.random() < 0.5:
        devices[t.rng.randrange(len(devices))]["scope"] = "none"
    else:
        devices.pop(t.rng.randrange(len(devices)))
        if not devices:
            data["meters"].pop(0)
    write_json(t.run / "power.json", data)
    return CONTRADICTS


def op_power_meter(t: Target) -> str | None:
    if not t.traced:
        return None
    data = read_json(t.run / "power.json")
    name = t.rng.choice(("replay", "null", "acme"))
    for meter in data["meters"]:
        meter["kind"] = name
        for device in meter["devices"]:
            device["meter"] = name
    write_json(t.run / "power.json", data)
    return UNRANKED_PER_W


def op_power_cell(t: Target) -> str | None:
    if not t.traced:
        return None
    lines = (t.run / "power.csv").read_text().splitlines()
    i = t.rng.randrange(1, len(lines))
    cells = lines[i].split(",")
    cells[t.rng.randrange(len(cells))] = t.rng.choice(("nan", "-5", "1e400", "x", "", str(10**30)))
    lines[i] = ",".join(cells)
    (t.run / "power.csv").write_text("\n".join(lines) + "\n")
    return EITHER


def op_system(t: Target) -> str | None:
    data = read_yaml(t.root / "system.yaml")
    hardware, communication = data["layers"]["hardware"], data["layers"].get("communication", {})
    count = hardware.get("accelerator_count")
    if not count:
        return None
    if t.rng.random() < 0.5:
        hardware["accelerator_count"] = count + t.rng.choice((-1, 1)) if count > 1 else count + 1
    else:
        communication["world_size"] = count + 1
    write_yaml(t.root / "system.yaml", data)
    return CONTRADICTS


def op_copy_run(t: Target) -> str | None:
    runs = t.runs
    if len(runs) < 2:
        return None
    source, target = t.rng.sample(runs, 2)
    for name in ("log.txt", "power.csv", "power.json"):
        if (source / name).is_file():
            shutil.copy(source / name, target / name)
    return CONTRADICTS


def op_huge_number(t: Target) -> str | None:
    path = t.rng.choice([t.run / "result.json", t.root / "system.yaml", t.bench / "submission.yaml"])
    text = path.read_text()
    digits = [i for i, ch in enumerate(text) if ch.isdigit() and (i == 0 or not text[i - 1].isalnum())]
    if not digits:
        return None
    at = t.rng.choice(digits)
    path.write_text(text[:at] + "1" + "0" * 400 + text[at:])
    return EITHER


def op_truncate(t: Target) -> str | None:
    files = [p for p in t.root.rglob("*") if p.is_file() and p.name != "manifest.json"]
    path = t.rng.choice(files)
    data = path.read_bytes()
    path.write_bytes(data[: t.rng.randrange(max(1, len(data)))] + t.rng.choice((b"", b"\xff\xfe", b"{")))
    return EITHER


FAMILIES: dict[str, tuple[Callable[[Target], str | None], ...]] = {
    "result-numbers": (op_result_number,),
    "log-edits": (op_log_samples, op_eval_value, op_run_stop, op_hyperparameter, op_event_line),
    "power-edits": (op_power_scale, op_power_device, op_power_meter, op_power_cell),
    "device-counts": (op_system,),
    "copied-run": (op_copy_run,),
    "broken-files": (op_huge_number, op_truncate),
    **ISSUE_FAMILIES,
}
"""Every family of mutations with its operators; the cases take the families in turn, so each gets its share."""
OPERATORS: dict[str, Callable[[Target], str | None]] = {
    fn.__name__[3:]: fn for operators in FAMILIES.values() for fn in operators
}


# variants, verdicts, the run


def repair(root: Path, report: Report) -> None:
    """Patch every result.json with the numbers the validator recomputed from the evidence."""
    for bench in report.benchmarks:
        for run in bench.runs:
            path = root / run.folder / "result.json"
            if run.result is None or run.accounts is None or not path.is_file():
                continue
            data, a = read_json(path), run.accounts
            data.update(status=run.status, reason=run.reason, duration_s=a.time_s, samples_processed=a.samples)
            data.update(model_flops=a.model_flops, flops_per_s=a.flops_per_s)
            if data.get("throughput") and a.samples_per_s is not None:
                data["throughput"]["samples_per_s"] = a.samples_per_s
            if data.get("quality"):
                last = run.evaluations[-1].value if run.evaluations else None
                data["quality"].update(achieved=last, best=run.best, reached=bool(run.reached))
                for point, evaluation in zip(data["quality"]["curve"], run.evaluations, strict=False):
                    point.update(value=evaluation.value, epoch=evaluation.epoch)
            if run.power is not None and run.power.energy_j is not None and data["power"].get("measured"):
                data["power"].update(
                    energy_j=run.power.energy_j, mean_power_w=run.power.energy_j / a.time_s if a.time_s else None
                )
            if run.seed is not None:
                data["seed"] = run.seed
            write_json(path, data)


RANKED_METRICS = {
    "samples_per_s": "higher",
    "tflops_per_device": "higher",
    "valid_flops_per_s": "higher",
    "valid_flops_per_w": "higher",
    "energy_per_sample_j": "lower",
    "time_s": "lower",
}
"""The numbers a board ranks or shows beside the rank, and which way is better."""
PER_WATT = frozenset({"valid_flops_per_w", "energy_per_sample_j"})
"""Ranked only where the entry is ranked per watt."""


def unconfirmed_codes() -> frozenset[str]:
    """Codes of a claim beyond the best-known results: compliant, but not ranked until reproduced."""
    try:
        from specbench.validator.bounds import UNCONFIRMED_CODES
    except ImportError:
        return frozenset()
    return frozenset(UNCONFIRMED_CODES)


class Originals:
    """Each source validated once, unmutated: its report (spec facts for the operators) and the board's values
    of each of its benchmarks, against which a mutated copy's moves are measured."""

    def __init__(self) -> None:
        self._reports: dict[Path, Report] = {}
        self._values: dict[Path, dict[str, dict[str, float | None]]] = {}
        self._repaired: dict[Path, dict[str, bytes]] = {}

    def report(self, source: Path) -> Report:
        if source not in self._reports:
            self._reports[source] = validate_submission(source)
        return self._reports[source]

    def repaired(self, source: Path, work: Path) -> dict[str, bytes]:
        """The source's files after the `repaired` variant alone (the repair rounds what it recomputes): a
        repaired copy with these contents holds no mutation."""
        if source not in self._repaired:
            root = work / "original" / source.parent.name / source.name
            shutil.rmtree(root.parent.parent, ignore_errors=True)
            shutil.copytree(source, root)
            _apply_variant([root], "repaired")
            self._repaired[source] = _contents([root])
            shutil.rmtree(root.parent.parent, ignore_errors=True)
        return self._repaired[source]

    def values(self, source: Path) -> dict[str, dict[str, float | None]]:
        """Each benchmark's board values; only those of the metrics the board ranks the original by (a smoke
        profile's none): a move is measured where there was a rank to gain."""
        if source not in self._values:
            board = build([self.report(source)])
            self._values[source] = {e.benchmark: _ranked_values(e) for g in board.groups for e in g.entries}
        return self._values[source]


def _ranked_values(entry: Entry) -> dict[str, float | None]:
    ranked = {m for m in RANKED_METRICS if (entry.rank_per_w if m in PER_WATT else entry.rank) is not None}
    return {m: v for m, v in entry.aggregate.values.items() if m in ranked}


@dataclass
class Outcome:
    case: int
    source: str
    operator: str
    variant: str
    label: str
    compliant: bool
    problem: str | None = None
    family: str = ""
    detail: str = ""
    """What the operator did (its note)."""
    codes: list[str] = field(default_factory=list)
    """Error codes and unconfirmed codes the validator gave (every submission of the case)."""
    gains: dict[str, float] = field(default_factory=dict)
    """Each ranked metric's move in the submitter's favour (1 = unmoved; 4 = four times better)."""
    ranked_metrics: list[str] = field(default_factory=list)
    """The metrics of `gains` the board would rank the copy by (compliant, confirmed, ranked)."""


def _move_of(
    entry: Entry, original: dict[str, float | None], ranked: bool, ranked_per_w: bool
) -> tuple[dict[str, float], list[str]]:
    gains: dict[str, float] = {}
    for metric, better in RANKED_METRICS.items():
        if metric == "time_s" and entry.key.kind != "time_to_quality":
            continue
        new, old = entry.value(metric), original.get(metric)
        if new is None or old is None or new <= 0 or old <= 0 or not math.isfinite(new / old):
            continue
        gains[metric] = new / old if better == "higher" else old / new
    ranked_metrics = [m for m in gains if (ranked_per_w if m in PER_WATT else ranked)]
    return gains, ranked_metrics


def measure(outcome: Outcome, report: Report, bench: str, original: dict[str, float | None]) -> None:
    """The copy's moves against the original and whether the board would rank them."""
    unconfirmed = unconfirmed_codes()
    codes = report.codes()
    outcome.codes = sorted({f.code for f in report.errors} | (codes & unconfirmed))
    if not report.usable:
        return
    entry = next((e for g in build([report]).groups for e in g.entries if e.benchmark == bench), None)
    if entry is None:
        return
    confirmed = report.compliant() and not (codes & unconfirmed)
    ranked = confirmed and entry.rank is not None
    outcome.gains, outcome.ranked_metrics = _move_of(entry, original, ranked, ranked and entry.rank_per_w is not None)


def _contents(roots: Iterable[Path]) -> dict[str, bytes]:
    """Every file of the roots, by its path under ORG/SYSTEM."""
    out: dict[str, bytes] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                out[f"{root.parent.name}/{root.name}/{path.relative_to(root).as_posix()}"] = path.read_bytes()
    return out


def _parsed(name: str, data: bytes) -> Any:
    try:
        if name.endswith(".json"):
            return json.loads(data)
        if name.endswith(".yaml"):
            return YAML(typ="safe", pure=True).load(data)
    except Exception:  # unreadable: its bytes say whether it changed
        return data
    return data


def _same(contents: dict[str, bytes], reference: dict[str, bytes]) -> bool:
    """The same files with the same contents (JSON and YAML as parsed), the manifest aside (it follows the files):
    tells a mutation from one that changed nothing, such as a cell set to what it held or a result.json field
    the repair restored."""
    names = {k for k in (*contents, *reference) if not k.endswith("/manifest.json")}
    return all(
        k in contents
        and k in reference
        and (contents[k] == reference[k] or _parsed(k, contents[k]) == _parsed(k, reference[k]))
        for k in names
    )


def _pick(root: Path, rng: random.Random, original: Report | None, sources: Sequence[Path]) -> Target:
    benches = sorted(p.parent for p in root.glob("*/submission.yaml"))
    bench = rng.choice(benches)
    runs = sorted(bench.glob("run_*"))
    return Target(root, bench, rng.choice(runs), rng, original, sources)


def run_case(
    source: Path,
    work: Path,
    case: int,
    seed: int,
    *,
    sources: Sequence[Path] = (),
    originals: Originals | None = None,
    families: Sequence[str] = (),
) -> Outcome:
    """One mutated copy of `source` (and any submission its operator built) validated; never raises."""
    rng = random.Random(f"{seed}:{case}")
    case_dir = work / f"case{case}"
    root = case_dir / source.parent.name / source.name
    shutil.rmtree(case_dir, ignore_errors=True)
    shutil.copytree(source, root)
    originals = originals if originals is not None else Originals()
    names = sorted(families or FAMILIES)
    family = names[(case // max(1, len(sources))) % len(names)]  # each family in turn, over every source
    name = rng.choice(FAMILIES[family]).__name__[3:]
    variant = rng.choice(VARIANTS)
    outcome = Outcome(case, str(source), name, variant, EITHER, False, family=family)
    try:
        target = _pick(root, rng, originals.report(source), sources or [source])
        pristine = _contents([root])
        label = OPERATORS[name](target)
        outcome.detail = target.note
        roots = [target.root, *target.extra]
        if label is None or _same(_contents(roots), pristine):
            outcome.label = "not applicable"
            return outcome
        outcome.label = CONTRADICTS if variant == "raw" else label
        _apply_variant(roots, variant)
        unchanged = originals.repaired(source, work) if variant == "repaired" else pristine
        if _same(_contents(roots), unchanged):
            outcome.label = "not applicable"
            return outcome
        if variant == "repaired" and name == "result_number":
            outcome.label = EITHER
        _judge(outcome, target, roots, originals.values(source))
    except Exception:
        outcome.problem = "traceback: " + traceback.format_exc(limit=8)
    finally:
        shutil.rmtree(case_dir, ignore_errors=True)
    return outcome


def _apply_variant(roots: list[Path], variant: str) -> None:
    if variant == "raw":
        return
    for root in roots:
        write_manifest(root)
        if variant == "repaired":
            repair(root, validate_submission(root))
            write_manifest(root)


def _judge(outcome: Outcome, target: Target, roots: list[Path], original: dict[str, dict[str, float | None]]) -> None:
    """The verdict on every submission of the case: all must be refused where the label says so."""
    reports = validate_many(roots) if len(roots) > 1 else [validate_submission(roots[0])]
    outcome.compliant = any(r.compliant() for r in reports)
    if outcome.compliant and outcome.label == CONTRADICTS:
        outcome.problem = "accepted a contradiction"
    if len(reports) > 1:
        outcome.codes = sorted({f.code for r in reports for f in r.errors})
        return
    report = reports[0]
    measure(outcome, report, target.bench.name, original.get(target.bench.name, {}))
    if outcome.label == UNRANKED_PER_W and report.usable:
        board = build([report])
        if any(e.rank_per_w is not None for g in board.groups for e in g.entries):
            outcome.problem = "ranked per watt without a hardware meter"


@dataclass
class FuzzReport:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problem is not None]

    def summary(self) -> dict[str, Any]:
        by = Counter((o.operator, o.variant, o.label, "accepted" if o.compliant else "refused") for o in self.outcomes)
        accepted = [o for o in self.failures if o.problem == "accepted a contradiction"]
        return {
            "mutated_submissions": len(self.outcomes),
            "tracebacks": sum(1 for o in self.failures if o.problem and o.problem.startswith("traceback")),
            "accepted_contradictions": len(accepted),
            "ranked_per_watt_without_hardware_meter": sum(
                1 for o in self.failures if o.problem == "ranked per watt without a hardware meter"
            ),
            "accepted_consistent": sum(1 for o in self.outcomes if o.compliant and o.label == CONSISTENT),
            "ranked_consistent": sum(1 for o in self.outcomes if o.ranked_metrics and o.label == CONSISTENT),
            "unconfirmed": sum(1 for o in self.outcomes if o.compliant and set(o.codes) & unconfirmed_codes()),
            "families": dict(sorted(Counter(o.family for o in self.outcomes).items())),
            "accepted_contradictions_by_operator": dict(sorted(Counter(o.operator for o in accepted).items())),
            "accepted_moves": accepted_moves(self.outcomes),
            "by_operator_variant_label_verdict": {" / ".join(k): v for k, v in sorted(by.items())},
            "failures": [_brief(o) for o in self.failures[:50]],
        }


def _brief(outcome: Outcome) -> dict[str, Any]:
    return {k: v for k, v in outcome.__dict__.items() if k not in ("gains", "ranked_metrics")}


def accepted_moves(outcomes: Sequence[Outcome]) -> dict[str, dict[str, dict[str, Any]]]:
    """For each operator's consistent fabrications and each ranked metric: the largest move the board still
    ranked, the case that made it, and the codes that refused the cases that tried to move it further."""
    moves: dict[str, dict[str, dict[str, Any]]] = {}
    for operator in sorted({o.operator for o in outcomes if o.label == CONSISTENT}):
        tried = [o for o in outcomes if o.operator == operator and o.label == CONSISTENT]
        for metric in RANKED_METRICS:
            ranked = [o for o in tried if metric in o.ranked_metrics]
            best = max(ranked, key=lambda o: o.gains[metric], default=None)
            gain = best.gains[metric] if best is not None else 1.0
            beyond = [o for o in tried if metric not in o.ranked_metrics and o.gains.get(metric, 0.0) > gain * 1.0001]
            if (best is None or gain <= 1.0001) and not beyond:
                continue
            limits = Counter(c for o in beyond for c in (o.codes or ["(compliant, not ranked)"]))
            moves.setdefault(operator, {})[metric] = {
                "family": tried[0].family,
                "largest_ranked_gain": round(gain, 4) if best is not None else None,
                "case": None if best is None else f"{best.case} {best.source} {best.variant}",
                "ranked_cases": len(ranked),
                "refused_beyond": len(beyond),
                "largest_refused_gain": round(max(o.gains[metric] for o in beyond), 4) if beyond else None,
                "limited_by": dict(limits.most_common(6)),
            }
    return moves


def fuzz(
    sources: Sequence[Path],
    count: int,
    seed: int,
    work: Path,
    first_case: int = 0,
    *,
    families: Sequence[str] = (),
    originals: Originals | None = None,
) -> FuzzReport:
    """`count` cases spread over `sources` in turn, the families in turn (`families`: only those), each case with
    its own operator and variant from `seed`."""
    report = FuzzReport()
    originals = originals if originals is not None else Originals()
    for i in range(first_case, first_case + count):
        outcome = run_case(
            sources[i % len(sources)], work, i, seed, sources=sources, originals=originals, families=families
        )
        if outcome.label != "not applicable":
            report.outcomes.append(outcome)
    return report
