"""The reproduction record (reproduction.json) that `specbench reproduce` writes and `specbench score` reads.

One format, here, so that scoring reads records without the packages that run a benchmark. A record
sits at the root of a re-run folder (ORG/SYSTEM, a submission of its own) and names the submission it
re-ran by its path, its names and the sha256 of its manifest.json; its own manifest.json lists it, so
`specbench sign` vouches for it. docs/reproduce.md describes every field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from specbench.errors import SpecbenchError
from specbench.formats.strictjson import JsonValueError, parse_json_text
from specbench.spec.models import Strict, first_error

REPRODUCTION_FILE = "reproduction.json"
REPRODUCTION_FORMAT = "specbench.reproduction"
REPRODUCTION_FORMAT_VERSION = 1
MAX_RECORD_BYTES = 1 << 20
"""A record is a few kilobytes; a larger file is refused unread (records are untrusted input)."""

Verdict = Literal["reproduced", "contradicted"]
MetricVerdict = Literal["reproduced", "contradicted", "not compared"]
SHA256 = r"^[0-9a-f]{64}$"


class SubmissionRef(Strict):
    """The submission a record re-ran: where it was, whose it is, and what identifies its files and spec."""

    path: str = Field(description="The BENCHMARK folder as given to reproduce (informative; the digest identifies).")
    submitter: str
    system: str
    benchmark: str
    manifest_sha256: str = Field(pattern=SHA256, description="sha256 of the submission's manifest.json.")
    spec_id: str
    spec_version: str
    spec_sha256: str = Field(pattern=SHA256)
    profile: str
    level: str


class HostFacts(Strict):
    """The host of the re-run, as execute records it in system.yaml."""

    hostname: str
    cpu_model: str | None
    cpu_count: int | None
    accelerator_model: str
    accelerator_count: int = Field(ge=0)
    framework_version: str | None


class Seeds(Strict):
    """The submission's run seeds and whether the re-run replayed them (execute takes one base seed)."""

    submitted: list[int | None]
    replayed: bool
    base_seed: int | None = Field(description="The --seed the re-run used (run K: base + K - 1); None: fresh seeds.")
    note: str = ""


class MetricCheck(Strict):
    """One metric of the submission against the re-run: both values, their ratio, the tolerance and its source."""

    metric: str
    unit: str
    better: Literal["higher", "lower"]
    submitted: float | None
    reproduced: float | None
    ratio: float | None = Field(description="reproduced / submitted.")
    tolerance: float | None = Field(description="The fraction by which the re-run may fall short of the claim.")
    source: str = Field(description="Where the tolerance comes from (docs/reproduce.md).")
    verdict: MetricVerdict
    note: str = ""


class ReproductionRecord(Strict):
    """`reproduction.json`: a re-run of one submitted benchmark on a host of the same devices, and the verdict."""

    format: Literal["specbench.reproduction"]
    format_version: Literal[1]
    created_at: str
    submission: SubmissionRef
    rerun_benchmark: str = Field(description="The BENCHMARK folder of the re-run, beside this file.")
    host: HostFacts
    runs: int = Field(ge=1)
    overrides: list[str] = Field(description="The --set KEY=VALUE the re-run was executed with.")
    notes: list[str] = Field(default_factory=list)
    seeds: Seeds
    metrics: list[MetricCheck]
    verdict: Verdict
    reasons: list[str] = Field(description="Why contradicted (each metric beyond its tolerance); empty otherwise.")


class RecordError(SpecbenchError):
    """A reproduction.json that cannot be used: unreadable, not JSON, another format or version, or bad fields."""


def read_record(path: Path) -> ReproductionRecord:
    """The record `reproduce` wrote at `path`; RecordError names the file and the first problem. A record in a
    folder being scored is read once, by validation's confined tree, and given to `parse_record`."""
    try:
        size = path.stat().st_size
        if size > MAX_RECORD_BYTES:
            raise RecordError(f"{path}: expected at most {MAX_RECORD_BYTES} bytes, found {size}")
        raw = path.read_bytes()
    except OSError as err:
        raise RecordError(f"{path}: not a readable JSON file ({err})") from err
    return parse_record(raw, str(path))


def parse_record(raw: bytes, where: str) -> ReproductionRecord:
    """reproduction.json's bytes, checked field by field; RecordError names `where` and the first problem."""
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"{where}: expected at most {MAX_RECORD_BYTES} bytes, found {len(raw)}")
    try:
        data = parse_json_text(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, JsonValueError) as err:
        raise RecordError(f"{where}: not a readable JSON file ({err})") from err
    if not isinstance(data, dict):
        raise RecordError(f"{where}: expected a JSON object, found {type(data).__name__}")
    if data.get("format") != REPRODUCTION_FORMAT:
        raise RecordError(f"{where}: expected format {REPRODUCTION_FORMAT!r}, found {data.get('format')!r}")
    if data.get("format_version") != REPRODUCTION_FORMAT_VERSION:
        raise RecordError(f"{where}: file format version {data.get('format_version')!r} not supported")
    try:
        return ReproductionRecord.model_validate(data)
    except ValidationError as err:
        at, message = first_error(err)
        raise RecordError(f"{where}: {at or '(root)'}: {message}") from None
