"""The project's own mutation fuzzer: mutated copies of real submissions must never crash the validator,
and a mutation that contradicts the evidence inside a submission must never be accepted.

Each case copies a submission, applies one mutation operator and one variant: `raw` (the manifest
left as it was), `resigned` (the manifest recomputed, as anyone can) or `repaired` (result.json
patched with what the validator recomputed, then re-signed: the cheater's best effort). Each
operator says whether its mutation contradicts evidence the submission still holds
(`CONTRADICTS`), may be a consistent fabrication (`CONSISTENT`), or cannot be told in advance
(`EITHER`); only crashes and accepted contradictions are failures.
"""

from __future__ import annotations

import json
import random
import shutil
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from specbench.files import write_manifest
from specbench.scoring.leaderboard import build
from specbench.validator.model import Report
from specbench.validator.validate import validate_submission

CONTRADICTS, CONSISTENT, EITHER, UNRANKED_PER_W = "contradicts", "consistent", "either", "unranked-per-watt"
VARIANTS = ("raw", "resigned", "repaired")


@dataclass
class Target:
    """The copy being mutated: its root, one benchmark and one run of it, and the random source."""

    root: Path
    bench: Path
    run: Path
    rng: random.Random

    @property
    def runs(self) -> list[Path]:
        return sorted(self.bench.glob("run_*"))

    @property
    def traced(self) -> bool:
        return (self.run / "power.csv").is_file()


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _put_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def _events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line[9:]) for line in (run / "log.txt").read_text().splitlines() if line.startswith(":::MLLOG ")]


def _put_events(run: Path, events: list[dict[str, Any]]) -> None:
    (run / "log.txt").write_text("".join(f":::MLLOG {json.dumps(e)}\n" for e in events))


def _yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text())


def _put_yaml(path: Path, data: Any) -> None:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    with path.open("w") as out:
        yaml.dump(data, out)


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
    data = _json(t.run / "result.json")
    path = t.rng.choice(RESULT_FIELDS)
    holder = data
    for key in path[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or not isinstance(holder.get(path[-1]), (int, float)) or holder[path[-1]] == 0:
        return None
    value = holder[path[-1]]
    holder[path[-1]] = type(value)(value * t.rng.choice((2, 3, 0.5, 0.7)))
    _put_json(t.run / "result.json", data)
    return CONTRADICTS


def op_log_samples(t: Target) -> str | None:
    events = _events(t.run)
    hits = [e for e in events if isinstance(e["metadata"].get("samples_count"), int) and e["metadata"]["samples_count"]]
    if not hits:
        return None
    factor = t.rng.choice((2, 3, 0.5))
    keys = {"block_start", "block_stop"} if hits[0]["key"].startswith("block") else {"eval_accuracy"}
    for event in events:
        if event["key"] in keys and isinstance(event["metadata"].get("samples_count"), int):
            event["metadata"]["samples_count"] = int(event["metadata"]["samples_count"] * factor)
    _put_events(t.run, events)
    return CONTRADICTS


def op_eval_value(t: Target) -> str | None:
    events = _events(t.run)
    evals = [e for e in events if e["key"] == "eval_accuracy"]
    if not evals:
        return None
    target = t.rng.choice(evals)
    impossible = t.rng.random() < 0.5
    target["value"] = t.rng.choice((1.5, 100.0 * target["value"], -0.2)) if impossible else t.rng.uniform(0.0, 1.0)
    _put_events(t.run, events)
    return CONTRADICTS if impossible else CONSISTENT


def op_run_stop(t: Target) -> str | None:
    events = _events(t.run)
    stops = [e for e in events if e["key"] == "run_stop"]
    if not stops:
        return None
    stops[0]["time_ms"] += t.rng.choice((-1, 1)) * t.rng.randint(5_000, 60_000)
    _put_events(t.run, events)
    return CONTRADICTS if t.traced else EITHER


def op_hyperparameter(t: Target) -> str | None:
    declared = _yaml(t.bench / "submission.yaml").get("hyperparameters", {})
    events = _events(t.run)
    hits = [e for e in events if e["key"] in declared and isinstance(e["value"], (int, float, str))]
    if not hits:
        return None
    event = t.rng.choice(hits)
    event["value"] = event["value"] + "x" if isinstance(event["value"], str) else event["value"] * 2 + 1
    _put_events(t.run, events)
    return CONTRADICTS


def op_event_line(t: Target) -> str | None:
    events = _events(t.run)
    i = t.rng.randrange(len(events))
    if t.rng.random() < 0.5:
        events.pop(i)
    else:
        events.insert(i, dict(events[i]))
    _put_events(t.run, events)
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
    data = _json(t.run / "power.json")
    devices = data["meters"][0]["devices"]
    if t.rng.random() < 0.5:
        devices[t.rng.randrange(len(devices))]["scope"] = "none"
    else:
        devices.pop(t.rng.randrange(len(devices)))
        if not devices:
            data["meters"].pop(0)
    _put_json(t.run / "power.json", data)
    return CONTRADICTS


def op_power_meter(t: Target) -> str | None:
    if not t.traced:
        return None
    data = _json(t.run / "power.json")
    name = t.rng.choice(("replay", "null", "acme"))
    for meter in data["meters"]:
        meter["kind"] = name
        for device in meter["devices"]:
            device["meter"] = name
    _put_json(t.run / "power.json", data)
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
    data = _yaml(t.root / "system.yaml")
    hardware, communication = data["layers"]["hardware"], data["layers"].get("communication", {})
    count = hardware.get("accelerator_count")
    if not count:
        return None
    if t.rng.random() < 0.5:
        hardware["accelerator_count"] = count + t.rng.choice((-1, 1)) if count > 1 else count + 1
    else:
        communication["world_size"] = count + 1
    _put_yaml(t.root / "system.yaml", data)
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


OPERATORS: dict[str, Callable[[Target], str | None]] = {
    name[3:]: fn for name, fn in sorted(globals().items()) if name.startswith("op_") and callable(fn)
}


# variants, verdicts, the run


def repair(root: Path, report: Report) -> None:
    """Patch every result.json with the numbers the validator recomputed from the evidence."""
    for bench in report.benchmarks:
        for run in bench.runs:
            path = root / run.folder / "result.json"
            if run.result is None or run.accounts is None or not path.is_file():
                continue
            data, a = _json(path), run.accounts
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
            _put_json(path, data)


@dataclass
class Outcome:
    case: int
    source: str
    operator: str
    variant: str
    label: str
    compliant: bool
    problem: str | None = None


@dataclass
class FuzzReport:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problem is not None]

    def summary(self) -> dict[str, Any]:
        by = Counter((o.operator, o.variant, o.label, "accepted" if o.compliant else "refused") for o in self.outcomes)
        return {
            "mutated_submissions": len(self.outcomes),
            "tracebacks": sum(1 for o in self.failures if o.problem and o.problem.startswith("traceback")),
            "accepted_contradictions": sum(1 for o in self.failures if o.problem == "accepted a contradiction"),
            "ranked_per_watt_without_hardware_meter": sum(
                1 for o in self.failures if o.problem == "ranked per watt without a hardware meter"
            ),
            "accepted_consistent": sum(1 for o in self.outcomes if o.compliant and o.label == CONSISTENT),
            "by_operator_variant_label_verdict": {" / ".join(k): v for k, v in sorted(by.items())},
            "failures": [o.__dict__ for o in self.failures[:50]],
        }


def _pick(root: Path, rng: random.Random) -> Target:
    benches = sorted(p.parent for p in root.glob("*/submission.yaml"))
    bench = rng.choice(benches)
    runs = sorted(bench.glob("run_*"))
    return Target(root, bench, rng.choice(runs), rng)


def _contents(root: Path) -> dict[str, bytes]:
    """Every file's bytes, to tell a mutation from one that changed nothing (a cell set to what it held)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_case(source: Path, work: Path, case: int, seed: int) -> Outcome:
    """One mutated copy of `source` validated; never raises."""
    rng = random.Random(f"{seed}:{case}")
    root = work / f"case{case}" / source.parent.name / source.name
    shutil.rmtree(root.parent.parent, ignore_errors=True)
    shutil.copytree(source, root)
    target = _pick(root, rng)
    name = rng.choice(sorted(OPERATORS))
    variant = rng.choice(VARIANTS)
    outcome = Outcome(case, str(source), name, variant, EITHER, False)
    try:
        before = _contents(root)
        label = OPERATORS[name](target)
        if label is None or _contents(root) == before:
            outcome.label, outcome.problem = "not applicable", None
            return outcome
        outcome.label = CONTRADICTS if variant == "raw" else label
        if variant != "raw":
            write_manifest(root)
        if variant == "repaired":
            repair(root, validate_submission(root))
            write_manifest(root)
            if name == "result_number":
                outcome.label = EITHER
        report = validate_submission(root)
        outcome.compliant = report.compliant()
        if outcome.compliant and outcome.label == CONTRADICTS:
            outcome.problem = "accepted a contradiction"
        if outcome.label == UNRANKED_PER_W and report.usable:
            board = build([report])
            if any(e.rank_per_w is not None for g in board.groups for e in g.entries):
                outcome.problem = "ranked per watt without a hardware meter"
    except Exception:
        outcome.problem = "traceback: " + traceback.format_exc(limit=8)
    finally:
        shutil.rmtree(root.parent.parent, ignore_errors=True)
    return outcome


def fuzz(sources: Sequence[Path], count: int, seed: int, work: Path, first_case: int = 0) -> FuzzReport:
    """`count` cases spread over `sources` in turn, each with its own operator and variant from `seed`."""
    report = FuzzReport()
    for i in range(first_case, first_case + count):
        outcome = run_case(sources[i % len(sources)], work, i, seed)
        if outcome.label != "not applicable":
            report.outcomes.append(outcome)
    return report
