"""Models of a submission's metadata: the system description (`system.yaml`) and `submission.yaml`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from specbench.spec.models import LayerName, StrictTyped
from specbench.spec.rules import Level, Scalar

SYSTEM_FORMAT_VERSION = 1
SUBMISSION_FORMAT_VERSION = 1

ParamValue = Scalar | list[Scalar] | None


class SystemDescription(StrictTyped):
    """The nine layers as captured on the machine, plus facts the submitter declares."""

    format_version: Literal[1] = Field(description="Version of the system description format.")
    system: str = Field(pattern=r"^[A-Za-z0-9._-]{1,64}$", description="System name, also its folder name.")
    submitter: str = Field(pattern=r"^[A-Za-z0-9._-]{1,64}$", description="Organisation, also its folder name.")
    captured_at: str = Field(description="ISO 8601 time the description was captured.")
    nodes: int = Field(default=1, ge=1)
    layers: dict[LayerName, dict[str, ParamValue]] = Field(
        description="Parameters of each layer, keyed by layer name (see rules/hpcai500.yaml for the usual names)."
    )
    declared: dict[str, ParamValue] = Field(
        default_factory=dict, description="Facts stated by the submitter rather than captured."
    )
    per_node: list[dict[LayerName, dict[str, ParamValue]]] | None = Field(
        default=None,
        description="A job of several nodes: each node's own layers, node 0 first (`layers` holds node 0's "
        "with the job's totals).",
    )


class SubmissionMeta(StrictTyped):
    """`submission.yaml`: which spec, level and profile a benchmark folder answers, and its declared layer 8."""

    format_version: Literal[1] = Field(description="Version of the submission metadata format.")
    spec_id: str
    spec_version: str
    spec_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the resolved spec (see spec_digest).")
    level: Level
    profile: str
    variant: str | None = None
    submitter: str = Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")
    system: str = Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")
    synthetic_data: bool = False
    seed: int | None = Field(
        default=None,
        ge=0,
        description="The --seed the runs' seeds derive from (run N uses seed + N - 1); absent when each run drew "
        "a fresh random seed.",
    )
    hyperparameters: dict[str, ParamValue] = Field(description="The hyperparameters used (layer 8), as declared.")
    layers: dict[LayerName, dict[str, ParamValue]] = Field(
        default_factory=dict,
        description="Choices of this benchmark in other layers (e.g. framework: compile_mode; parallelism_precision: "
        "precision, memory_format), merged over system.yaml's layers when rules are checked.",
    )
    dataset: dict[str, ParamValue] = Field(
        default_factory=dict, description="The data actually used: name, path, sample counts, sha256, synthetic."
    )
