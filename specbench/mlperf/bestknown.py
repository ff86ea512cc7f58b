"""Best-known rates from published MLPerf rounds: the fastest imported run of each workload and device.

Each round of the corpus is imported (`import_results`) and every run's rate is the one the validator
compares with a best-known row (`rate_claim` in specbench/validator/bounds.py: the recomputed samples /
run_start..run_stop / the system's accelerators). The fastest run of each workload (the built-in specs
that train one model on the same samples) and device (a row of devices.yaml) becomes a rate row, written
between the markers of specbench/physics/best_known.yaml; rows outside them are kept as they are.

    python -m specbench.mlperf.bestknown            # print what the corpus gives
    python -m specbench.mlperf.bestknown --write    # and rewrite the generated rows
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from specbench.mlperf.importer import SystemOutcome, UnsupportedRound, import_results
from specbench.physics import BEST_KNOWN_FILE, BestKnownTable
from specbench.spec.builtin import spec_ids
from specbench.spec.loader import load_spec, validate_model
from specbench.spec.yamlio import parse_yaml
from specbench.validator.bounds import rate_claim
from specbench.validator.evidence import SystemDevices
from specbench.validator.physics import DevicePhysics

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
READ_AT = "../shared/corpus"
"""How a row's `read_at` names the corpus: relative to the repository root, as the other rows do."""
BEGIN = "  # generated rows:"
END = "  # end of generated rows"
MARKERS = (
    f"{BEGIN} python -m specbench.mlperf.bestknown --write (the fastest imported run of each workload and\n"
    "  # device in ../shared/corpus/mlperf-rounds and mlperf-v4.0-resnet-round); edit the script, not the rows\n",
    f"{END}\n",
)
HELD_BACK: dict[str, str] = {}
"""Specs whose imported rate is not in the spec's sample unit, by id, with the reason: no row (fail closed) until
the accounting reads their logs' samples; the script prints the rate it would have written. None today: the logs
that count samples in epoch_num (BERT, 3D U-Net, GPT-3, OpenFold) are read by their spec's mlperf.epoch_num."""


@dataclass(frozen=True)
class CorpusRound:
    """One results tree of the corpus and the public repository and commit it was copied from."""

    folder: str
    """Relative to the corpus, e.g. mlperf-rounds/training-v4.0."""
    title: str
    repo: str
    commit: str


@dataclass(frozen=True)
class RunRate:
    """One imported run's rate per device, as the validator computes it, and where its log lies."""

    specs: tuple[str, ...]
    spec_id: str
    device: str
    accelerator: str
    samples_per_s: float
    samples: int
    time_s: float
    devices: int
    sample_unit: str
    round: CorpusRound
    org: str
    system: str
    log: str
    """The result log, relative to the round's folder (the repository's layout)."""

    @property
    def key(self) -> tuple[tuple[str, ...], str]:
        return self.specs, self.device


def corpus_rounds(corpus: Path = CORPUS) -> list[CorpusRound]:
    """The rounds of mlperf-rounds (SOURCES.json) and the ResNet-50 round (its README's repository and commit)."""
    rounds = []
    sources = json.loads((corpus / "mlperf-rounds" / "SOURCES.json").read_text())
    for folder, source in sources.items():
        usage, version = folder.split("-v", 1)
        title = f"MLPerf {'HPC' if usage == 'hpc' else usage.title()} v{version}"
        rounds.append(CorpusRound(f"mlperf-rounds/{folder}", title, source["source"], source["commit"]))
    readme = (corpus / "mlperf-v4.0-resnet-round" / "README.md").read_text()
    found = re.search(r"(mlcommons/training_results_v(\d+\.\d+))\b.*?at commit\s+([0-9a-f]{40})", readme, re.S)
    if found is None:
        raise ValueError("expected 'mlcommons/training_results_vX.Y ... at commit SHA' in mlperf-v4.0-resnet-round")
    rounds.append(CorpusRound("mlperf-v4.0-resnet-round", f"MLPerf Training v{found[2]}", found[1], found[3]))
    return rounds


def workloads() -> dict[str, tuple[str, ...]]:
    """Spec id -> the built-in specs that train its model on as many samples of its unit (one row serves them all).

    Specs with model variants are left out: their rows name a variant, which MLPerf's specs have not."""
    groups: dict[tuple[str, int, str], list[str]] = {}
    for spec_id in spec_ids():
        workload = load_spec(spec_id).spec.workload
        if not workload.variants:
            key = (workload.model, workload.dataset.train_samples, workload.sample_unit)
            groups.setdefault(key, []).append(spec_id)
    return {spec_id: tuple(sorted(ids)) for ids in groups.values() for spec_id in ids}


def round_rates(corpus: Path, round_: CorpusRound, jobs: int = 1) -> tuple[list[RunRate], list[tuple[str, str]]]:
    """Every run that the validator computes a rate for, of the round's compliant benchmarks on a ranked profile
    (as the scorer judges each), and (spec, accelerator) of the benchmarks on an accelerator devices.yaml lacks.

    A non-compliant benchmark is never ranked, so its runs neither need a row nor set one."""
    groups = workloads()
    rates: list[RunRate] = []
    unknown: list[tuple[str, str]] = []
    root = corpus / round_.folder
    with tempfile.TemporaryDirectory(prefix="bestknown-") as out:
        try:
            systems = import_results(root, Path(out), jobs=jobs).systems
        except UnsupportedRound:  # a round this version has no MLPerf rules for: none of its runs is ranked
            return rates, unknown
        for system in systems:
            found, missing = _system_rates(system, root, round_, groups)
            rates += found
            unknown += missing
    return rates, unknown


def _system_rates(
    system: SystemOutcome, root: Path, round_: CorpusRound, groups: dict[str, tuple[str, ...]]
) -> tuple[list[RunRate], list[tuple[str, str]]]:
    """`round_rates` of one imported system."""
    report, imported = system.report, system.imported
    devices = SystemDevices.of(report.system)
    physics = DevicePhysics.of(report.system)
    org = imported.source.org.path.relative_to(root).as_posix()
    logs = {(b.name, r.folder): r.source.path for b in imported.benchmarks for r in b.runs}
    rates: list[RunRate] = []
    unknown: list[tuple[str, str]] = []
    for entry in system.entries:
        bench = entry.bench
        if bench is None or bench.meta is None or bench.spec is None or bench.meta.spec_id not in groups:
            continue
        if physics.facts is None:
            unknown.append((bench.meta.spec_id, str(physics.model)))
            continue
        if not entry.compliant or not entry.ranked_profile:
            continue
        for run in bench.runs:
            claim = rate_claim(run, devices)
            if claim is not None:
                rates.append(
                    RunRate(
                        specs=groups[bench.meta.spec_id],
                        spec_id=bench.meta.spec_id,
                        device=physics.facts.name,
                        accelerator=str(devices.model),
                        samples_per_s=claim.samples_per_s,
                        samples=claim.samples,
                        time_s=claim.time_s,
                        devices=claim.devices,
                        sample_unit=bench.spec.spec.workload.sample_unit,
                        round=round_,
                        org=org,
                        system=imported.source.name,
                        log=f"{org}/{logs[(bench.name, run.name)]}",
                    )
                )
    return rates, unknown


def fastest(rates: Iterable[RunRate]) -> dict[tuple[tuple[str, ...], str], RunRate]:
    """The fastest run of each workload and device; the first one found where two are equal."""
    best: dict[tuple[tuple[str, ...], str], RunRate] = {}
    for rate in rates:
        if rate.key not in best or rate.samples_per_s > best[rate.key].samples_per_s:
            best[rate.key] = rate
    return best


def significant(value: float, digits: int = 6) -> float:
    """`value` rounded up to `digits` significant digits (whole units at least): a row is never below its run."""
    decimals = max(0, digits - 1 - math.floor(math.log10(value)))
    return round(math.ceil(round(value * 10**decimals, 6)) / 10**decimals, decimals)


def _number(value: float) -> str:
    """A figure as rows show it: rounded up to six significant digits, thousands separated."""
    decimals = max(0, 5 - math.floor(math.log10(value)))
    return f"{significant(value):,.{decimals}f}"


def _scalar(text: str) -> str:
    """A YAML scalar: plain where that reads back as the same string, else double-quoted (JSON is valid YAML)."""
    plain = not re.search(r": |\s#|^[-?:,\[\]{}#&*!|>'\"%@`]|^\s|\s$", text)
    return text if plain else json.dumps(text)


def row_yaml(rate: RunRate) -> str:
    """One rate row of best_known.yaml, with the log it comes from."""
    name = Path(rate.log).name
    bench = Path(rate.log).parent.relative_to(Path(rate.org) / "results" / rate.system).as_posix()
    per_device = significant(rate.samples_per_s)
    unit = "samples" if rate.sample_unit == "sample" else f"{rate.sample_unit}s"
    lines = [
        f"  - specs: [{', '.join(rate.specs)}]",
        f"    device: {_scalar(rate.device)}",
        f"    samples_per_s: {repr(per_device).removesuffix('.0')}",
        "    source:",
        f"      title: {_scalar(f'{rate.round.title}, {rate.org} {rate.system}, {bench} {name}')}",
        f"      url: https://github.com/{rate.round.repo}/blob/{rate.round.commit}/{rate.log}",
        "      gives: "
        + _scalar(
            f"{rate.samples:,} {unit} in {rate.time_s:,.3f} s (run_start to run_stop) on {rate.devices:,} "
            f"{rate.accelerator}, {_number(rate.samples_per_s)} per device, the fastest {rate.spec_id} run "
            f"on {rate.device} in the corpus"
        ),
        f"      read_at: {READ_AT}/{rate.round.folder}/{rate.log}",
    ]
    return "\n".join(lines) + "\n"


def generated_block(rows: Sequence[RunRate]) -> str:
    """The generated section of best_known.yaml's rates, markers included."""
    body = "\n".join(row_yaml(rate) for rate in rows)
    return MARKERS[0] + body + MARKERS[1]


def split_table(text: str) -> tuple[str, str, str]:
    """best_known.yaml as (before, the generated section with its markers, after); an empty section goes
    just before `energies:` when the file has no markers yet."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < 0:
        at = text.index("\nenergies:") + 1
        return text[:at], "", "\n" + text[at:]
    stop = text.index("\n", end) + 1
    return text[:start], text[start:stop], text[stop:]


def hand_table(text: str) -> BestKnownTable:
    """The rows of best_known.yaml outside the generated section."""
    before, _, after = split_table(text)
    return validate_model(BestKnownTable, parse_yaml(before + after, str(BEST_KNOWN_FILE)))


@dataclass(frozen=True)
class Derived:
    """What the corpus gives: the rows to write, the fastest run where a kept row already stands, held-back specs
    with their fastest run, and the accelerators without a device row (spec -> accelerator names)."""

    rows: list[RunRate]
    kept: list[tuple[RunRate, float]]
    held: list[RunRate]
    unknown: dict[str, set[str]]
    runs: dict[tuple[tuple[str, ...], str], int]
    """Runs with a rate per workload and device."""


def derive(corpus: Path = CORPUS, table_text: str | None = None, jobs: int = 1) -> Derived:
    """Import each corpus round and pick the fastest run of each workload and device."""
    text = BEST_KNOWN_FILE.read_text() if table_text is None else table_text
    hand = hand_table(text)
    kept_rates = {
        (spec, row.device): row.samples_per_s for row in hand.rates if row.variant is None for spec in row.specs
    }
    every: list[RunRate] = []
    unknown: dict[str, set[str]] = {}
    for round_ in corpus_rounds(corpus):
        rates, missing = round_rates(corpus, round_, jobs)
        every += rates
        for spec, model in missing:
            unknown.setdefault(spec, set()).add(model)
    best = fastest(every)
    runs: dict[tuple[tuple[str, ...], str], int] = {}
    for rate in every:
        runs[rate.key] = runs.get(rate.key, 0) + 1
    rows, kept, held = [], [], []
    for rate in sorted(best.values(), key=lambda r: (r.specs, r.device)):
        hand_rate = next((kept_rates[(s, rate.device)] for s in rate.specs if (s, rate.device) in kept_rates), None)
        if any(spec in HELD_BACK for spec in rate.specs):
            held.append(rate)
        elif hand_rate is not None:
            kept.append((rate, hand_rate))
        else:
            rows.append(rate)
    return Derived(rows, kept, held, unknown, runs)


def write(derived: Derived, path: Path = BEST_KNOWN_FILE) -> None:
    """Replace the generated section of best_known.yaml with the derived rows."""
    before, _, after = split_table(path.read_text())
    path.write_text(before + generated_block(derived.rows) + after)


def show(derived: Derived) -> str:
    """What was derived, for a reader."""
    lines = ["rows (fastest run per workload and device; samples/s per device):"]
    for rate in derived.rows:
        lines.append(
            f"  {'/'.join(rate.specs)} on {rate.device}: {_number(rate.samples_per_s)} "
            f"({rate.samples:,} in {rate.time_s:,.3f} s on {rate.devices:,}; the fastest of {derived.runs[rate.key]} runs; "
            f"{rate.round.folder}/{rate.log})"
        )
    lines.append("kept (a row outside the generated section stands; it must be at least the fastest run):")
    for rate, hand in derived.kept:
        verdict = "ok" if hand >= rate.samples_per_s else "BELOW THE FASTEST RUN"
        lines.append(
            f"  {'/'.join(rate.specs)} on {rate.device}: row {_number(hand)} vs fastest run "
            f"{_number(rate.samples_per_s)} ({rate.round.folder}/{rate.log}): {verdict}"
        )
    lines.append("held back (no row: the imported rate is not in the spec's sample unit):")
    for rate in derived.held:
        reason = next(HELD_BACK[s] for s in rate.specs if s in HELD_BACK)
        lines.append(f"  {'/'.join(rate.specs)} on {rate.device}: would be {_number(rate.samples_per_s)}; {reason}")
    lines.append("no device row (left unconfirmed):")
    for spec, models in sorted(derived.unknown.items()):
        lines.append(f"  {spec}: {', '.join(sorted(models))}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specbench.mlperf.bestknown", description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=f"the corpus folder [default: {CORPUS}]")
    parser.add_argument("--write", action="store_true", help=f"rewrite the generated rows of {BEST_KNOWN_FILE}")
    parser.add_argument("--jobs", type=int, default=1, help="systems imported at once [default: 1]")
    args = parser.parse_args(argv)
    derived = derive(args.corpus, jobs=args.jobs)
    print(show(derived))
    if args.write:
        write(derived)
        print(f"wrote {len(derived.rows)} generated rows to {BEST_KNOWN_FILE}")
    below = [rate for rate, hand in derived.kept if hand < rate.samples_per_s]
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
