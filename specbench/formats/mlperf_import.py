"""The import record of `specbench import mlperf` (import.json), MLPerf's benchmark names and MLLOG dialect.

Written by specbench.mlperf, read by the validator (validator.mlperf): one format, here.
docs/mlperf-import.md describes the whole import.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import Field

from specbench.spec.builtin import spec_paths
from specbench.spec.loader import load_spec_cached, spec_data
from specbench.spec.models import Spec, Strict

IMPORT_FILE = "import.json"
IMPORT_FORMAT = "specbench.mlperf-import"
IMPORT_FORMAT_VERSION = 1
LEGACY_BENCHMARKS = {"mlperf-resnet50": "resnet"}
"""Spec ids whose released versions predate the spec's `mlperf:` binding -> their MLPerf benchmark name."""


@cache
def mlperf_benchmarks() -> dict[str, str]:
    """specbench spec id -> MLPerf benchmark name (its results folder and `submission_benchmark`), over the
    built-in specs that carry an `mlperf:` binding.

    The names are read from each spec's data (spec_data): a task loads whole only the specs it needs, which
    validates their bindings. A binding that does not read as one is taken from the spec loaded whole.
    """
    found = dict(LEGACY_BENCHMARKS)
    for path in spec_paths():
        raw = spec_data(path).get("mlperf")
        if raw is None:
            continue
        benchmark = raw.get("benchmark") if isinstance(raw, dict) else None
        if not isinstance(benchmark, str):
            binding = load_spec_cached(path).spec.mlperf  # the validated binding, or the problem with it
            if binding is None:
                continue
            benchmark = binding.benchmark
        found[path.stem] = benchmark
    return found


def mlperf_name(spec: Spec) -> str | None:
    """The MLPerf benchmark a spec is (its `mlperf:` binding, or a legacy id's), None for another spec."""
    return spec.mlperf.benchmark if spec.mlperf is not None else LEGACY_BENCHMARKS.get(spec.id)


class SourceFile(Strict):
    """A file of the MLPerf results tree, relative to the organisation's folder, with its sha256."""

    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class ImportSource(Strict):
    kind: Literal["mlperf-training", "mlperf-hpc"]
    round: str | None = Field(description="MLPerf round, e.g. v4.0, from the folder names; None when unknown.")
    ruleset: str = Field(description="MLPerf logging ruleset the log rules come from, e.g. 4.0.0.")
    org: str = Field(description="The organisation's folder in the results tree.")
    system: str = Field(description="The system's name in systems/ and results/.")
    path: str = Field(description="The organisation's folder relative to the imported root.")


class SystemJson(SourceFile):
    content: dict[str, Any] = Field(description="systems/<system>.json as MLPerf publishes it.")


ImportCode = Literal[
    "SB-MLP-005",
    "SB-MLP-006",
    "SB-MLP-009",
    "SB-MLP-010",
    "SB-MLP-011",
    "SB-MLP-012",
    "SB-MLP-014",
    "SB-MLP-020",
    "SB-MLP-021",
]


class ImportFinding(Strict):
    """A problem of the source tree found while importing (the tree itself is not part of the submission)."""

    code: ImportCode
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


class Scaling(Strict):
    """scaling.json of a benchmark folder: MLPerf's published time to train is the olympic mean times this factor."""

    file: SourceFile
    scaling_factor: float = Field(ge=1.0, le=10.0, description="Written by MLPerf's RCP checker; never below 1.")


class Published(Strict):
    """MLPerf's published figures for a benchmark folder, as its result_summarizer computes them (mlperf.published)."""

    runs_required: int = Field(ge=1)
    runs_counted: int = Field(ge=0, description="Result logs the summarizer averages from (compliant, complete).")
    olympic_mean_s: float | None = Field(description="Mean of the counted runs after the summarizer's drops.")
    scaling_factor: float
    time_to_train_s: float | None = Field(description="The published time to train: olympic mean x scaling factor.")
    energy_j: float | None = Field(default=None, description="The published energy to train, where power was logged.")
    energy_with_interconnect_j: float | None = Field(
        default=None,
        description="The published energy had measured switch logs counted (SB-MLP-020); None when none are.",
    )
    crash: str | None = Field(default=None, description="Why MLPerf's summarizer stops here and publishes nothing.")
    scaling_mode: Literal["strong", "weak"] | None = Field(
        default=None,
        description="MLPerf HPC: weak gives the weak-scaling figures below (runs_required is then the least number "
        "of models, runs_counted the models counted, and no time to train); None for training.",
    )
    models_per_min: float | None = Field(
        default=None,
        description="HPC weak scaling: MLPerf's throughput, number_of_models / time_to_train_all in minutes.",
    )
    number_of_models: int | None = Field(default=None, ge=0, description="HPC weak scaling: the models counted.")
    instance_scale: int | None = Field(
        default=None, description="HPC weak scaling: accelerators per model (number_of_nodes x accelerators_per_node)."
    )
    time_to_train_all_s: float | None = Field(
        default=None, description="HPC weak scaling: the first counted run_start to the last counted run_stop."
    )
    problem: str | None = Field(default=None, description="Why the summarizer publishes no figure, where it does not.")


class EnergyLabel(Strict):
    """How a benchmark's energy was measured: specbench ranks energy figures of one boundary in one column only."""

    boundary: Literal["node"] = Field(
        description="What specbench's energy covers: the nodes (switch logs are kept apart, never added)."
    )
    published_boundary: Literal["node", "node + interconnect"] = Field(
        description="What MLPerf's published energy covers: the nodes, plus the switch logs where there are any."
    )
    interconnect: str = Field(description="none, estimated, or measured (and how MLPerf's summarizer counts it).")
    nodes_measured: int = Field(ge=0, description="Node logs of the run with the fewest.")
    nodes: int = Field(ge=1, description="number_of_nodes of the system description.")
    min_sampling_hz: float | None = Field(description="Lowest readings per second of a node inside a timed run.")
    meter: str
    conversion_eff: list[float] = Field(description="conversion_eff values the node logs declare (not applied).")


class ImportedBenchmark(Strict):
    mlperf_benchmark: str
    scaling_mode: Literal["strong", "weak"] | None = Field(
        default=None, description="MLPerf HPC: the results folder's strong or weak scaling; None for training."
    )
    folder: str
    runs: dict[str, ImportedRun]
    scaling: Scaling | None = Field(default=None, description="scaling.json, where the benchmark folder has one.")
    published: Published | None = Field(default=None, description="MLPerf's published figures, recomputed.")
    energy: EnergyLabel | None = Field(default=None, description="How the energy was measured, where it was.")
    ignored: list[str] = Field(default_factory=list, description="Files of the benchmark folder not imported, why.")
    findings: list[ImportFinding] = Field(default_factory=list)


class ImportRecord(Strict):
    """`import.json`: where every file of an imported submission came from."""

    format: Literal["specbench.mlperf-import"]
    format_version: Literal[1]
    source: ImportSource
    system_json: SystemJson
    benchmarks: dict[str, ImportedBenchmark]


SPEC_KEY = "specbench_spec_id"
"""The MLLOG key holding the specbench spec id, beside MLPerf's `submission_benchmark`."""


def log_benchmark_name(spec: Spec) -> str:
    """What a log states as `submission_benchmark`: MLPerf's name for an MLPerf spec (resnet), else the spec id."""
    return mlperf_name(spec) or spec.id


@dataclass(frozen=True)
class MlperfDialect:
    """How one imported benchmark's logs are judged: which MLPerf ruleset, benchmark name and division."""

    ruleset: str
    benchmark: str
    division: str
    usage: str = "training"
