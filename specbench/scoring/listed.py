"""Results of one spec listed on another spec's leaderboard (`listed_results`), under the rule they followed.

extreme-weather 2.1.0 lists MLPerf HPC DeepCAM imports (spec mlperf-hpc-deepcam) as its variant
mlperf-reference: they keep the numbers their own spec's validation recomputed (the same FLOPs per sample,
target and penalty, which `placement` checks), appear under the listing spec's id, and are grouped by the
rule they followed, so a run that stopped at the target is never ranked with one that trained the whole
budget. Where the comparison is not sound (another level, FLOPs, problem or rule), the entry is listed
unranked with the reason. MLPerf HPC weak-scaling results (concurrent model instances) are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from specbench.accounting.accounts import spec_flops_per_sample
from specbench.spec.builtin import spec_paths
from specbench.spec.loader import load_spec_cached, spec_data
from specbench.spec.models import ListedResults, Spec
from specbench.validator.model import BenchmarkData

RULE_TITLES = {
    "hpcai500-valid-flops": "HPC AI500 rule: the whole epoch budget",
    "mlperf-time-to-train": "MLPerf rule: stopped at the target",
    "time-to-quality": "stopped at the target",
    "caraml-throughput": "CARAML rule: timed steps",
}
"""The rule a group's runs followed, as its title says it (spec `scoring`, or what a spec without it meant)."""


@dataclass(frozen=True)
class Listing:
    """A spec (`host`) that lists the results of another spec on its leaderboard."""

    host: Spec
    listed: ListedResults


@dataclass
class Placement:
    """Where an entry goes on the board: its group's spec identity and rule, and why it is not ranked there."""

    spec_id: str
    spec_version: str
    variant: str
    rule: str
    via: str = ""
    """The spec the entry was validated by, where it is listed under another (`mlperf-hpc-deepcam 1.0.0`)."""
    unranked: list[tuple[str, str]] = field(default_factory=list)
    """(reason in full, in a few words) for each reason the entry is not ranked there."""


@cache
def listings() -> dict[str, tuple[Listing, ...]]:
    """Listed spec id -> the built-in specs (current versions) that list its results (only those are loaded whole)."""
    found: dict[str, list[Listing]] = {}
    for path in spec_paths():
        if not spec_data(path).get("listed_results"):
            continue
        spec = load_spec_cached(path).spec
        for listed in spec.listed_results or ():
            found.setdefault(listed.spec, []).append(Listing(spec, listed))
    return {spec_id: tuple(items) for spec_id, items in found.items()}


@cache
def hosts() -> frozenset[str]:
    """Ids of the specs whose leaderboard lists other specs' results: their groups say which rule they followed."""
    return frozenset(item.host.id for items in listings().values() for item in items)


def placement(bench: BenchmarkData) -> Placement | None:
    """The entry's place when it is listed on another spec's board or sits on such a board; None otherwise."""
    if bench.spec is None or bench.meta is None:
        return None
    spec = bench.spec.spec
    variant = bench.meta.variant or ""
    found = listings().get(spec.id, ())
    if found and not bench.mlperf_weak_scaling:
        listing = found[0]
        host, listed = listing.host, listing.listed
        place = Placement(host.id, host.version, listed.variant, spec.method, f"{spec.id} {spec.version}")
        place.unranked.extend(_unsound(bench, spec, listing))
        return place
    if spec.id in hosts():
        return Placement(spec.id, spec.version, variant, spec.method)
    return None


def _unsound(bench: BenchmarkData, spec: Spec, listing: Listing) -> list[tuple[str, str]]:
    """Why the listed entry's Valid FLOPS is not comparable on the host's board (nothing where it is)."""
    assert bench.spec is not None and bench.meta is not None
    host, listed = listing.host, listing.listed
    where = f"listed on {host.id} {host.version} as {listed.variant}"
    reasons = []
    if spec.method != listed.scoring:
        reasons.append(
            (
                f"{where}: {spec.id} {spec.version} is scored by {spec.method}, the listing by {listed.scoring}",
                "not ranked: another rule",
            )
        )
    if bench.spec.level not in listed.levels:
        reasons.append(
            (
                f"{where}: level {bench.spec.level} may change the model (MLPerf's open division), so the "
                f"{listed.variant} FLOPs per sample do not apply; ranked at level {', '.join(listed.levels)} only",
                f"not ranked: level {bench.spec.level}",
            )
        )
    mine = spec_flops_per_sample(bench.spec, bench.meta.hyperparameters)
    theirs = host.workload.variants[listed.variant].flops_per_sample
    if mine is None or mine != theirs:
        reasons.append(
            (
                f"{where}: expected {theirs:,.0f} FLOPs per sample (the variant's), found {spec.id}'s "
                + (f"{mine:,.0f}" if mine is not None else "none"),
                "not ranked: other FLOPs per sample",
            )
        )
    differs = problem_differences(host, bench.spec.spec)
    if differs:
        reasons.append((f"{where}: the problem differs: {'; '.join(differs)}", "not ranked: another problem"))
    return reasons


def problem_differences(host: Spec, spec: Spec) -> list[str]:
    """What of layer 9 (dataset sizes, metric, target, penalty) differs between two specs, as 'what: host vs spec'."""
    pairs: dict[str, tuple[object, object]] = {
        "train_samples": (host.workload.dataset.train_samples, spec.workload.dataset.train_samples),
        "eval_samples": (host.workload.dataset.eval_samples, spec.workload.dataset.eval_samples),
    }
    mine, theirs = host.quality, spec.quality
    for name in ("metric", "target", "direction", "penalty_exponent", "cap_ratio"):
        pairs[f"quality.{name}"] = (
            getattr(mine, name) if mine is not None else None,
            getattr(theirs, name) if theirs is not None else None,
        )
    return [f"{name} {a!r} vs {b!r}" for name, (a, b) in pairs.items() if a != b]
