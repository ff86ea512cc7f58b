"""`roofline.json`: measured ceilings of one device and where workloads sit under them (format version 1).

The pydantic models here are the file format. Every rate carries its unit in its name:
`flops_per_s`, `bytes_per_s`, `flops_per_j` (the same number as FLOP/s per watt).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from specbench.errors import InputError, Location, Problem
from specbench.spec.models import Strict

FORMAT: Literal["specbench.roofline"] = "specbench.roofline"
FORMAT_VERSION: Literal[1] = 1

Precision = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8")
ConvDirection = Literal["fwd", "bwd_data", "bwd_filter"]
CONV_DIRECTIONS: tuple[ConvDirection, ...] = ("fwd", "bwd_data", "bwd_filter")
TimerName = Literal["cuda_events", "perf_counter"]
BytesMethod = Literal["analytical", "profiled"]


class DeviceIdentity(Strict):
    """The device the ceilings belong to, with the software that drove it."""

    kind: Literal["cuda", "cpu"] = Field(description="torch device type that ran the micro-benchmarks.")
    name: str
    vendor: str
    uuid: str | None = None
    compute_capability: str | None = None
    multiprocessors: int | None = None
    memory_bytes: int | None = None
    l2_cache_bytes: int | None = None
    driver_version: str | None = None
    power_limit_w: float | None = None
    cuda_version: str | None = None
    cudnn_version: str | None = None
    torch_version: str
    cpu_model: str | None = None
    cpu_threads: int = Field(ge=1, description="torch intra-op threads.")
    hostname: str


class Settings(Strict):
    """How the micro-benchmarks ran (a profile's sizes and repeat policy)."""

    profile: str
    precisions: list[Precision]
    gemm_sizes: list[int]
    conv_precisions: list[Precision]
    conv_batch: int = Field(ge=1)
    conv_image: list[int] = Field(description="Input image (channels, height, width) the conv shapes come from.")
    memory_format: Literal["channels_last", "contiguous"]
    copy_buffer_bytes: list[int]
    max_input_sets: int = Field(ge=1, description="Most input sets a kernel rotates between launches.")
    threads: int | None = Field(description="torch intra-op threads asked for (None: torch's default).")
    warmup: int = Field(ge=0)
    target_time_s: float = Field(
        gt=0, description="Timed work per point: at least this on a CPU; on a GPU the sample count follows from it."
    )
    min_repeats: int = Field(ge=1)
    max_repeats: int = Field(ge=1)
    min_sample_s: float = Field(
        default=0.0, ge=0, description="Shortest sample: launches per sample double until one lasts this long."
    )
    hold_s: float = Field(ge=0, description="Seconds each power window runs its kernel for (0: no power windows).")
    power_interval_s: float = Field(gt=0)


class Timing(Strict):
    """Per-launch times after warm-up: device events on a GPU, perf_counter on a CPU."""

    timer: TimerName
    warmup: int
    repeats: int
    time_s_median: float = Field(gt=0)
    time_s_min: float = Field(gt=0)
    time_s_max: float = Field(gt=0)
    input_sets: int = Field(ge=1, description="Input sets rotated between launches, so no launch reads a warm cache.")
    launches_per_sample: int = Field(
        default=1, ge=1, description="Launches timed back to back in each sample; the times are per launch."
    )
    timed_s: float | None = Field(default=None, description="Timed seconds of all samples together.")


class PowerMeasure(Strict):
    """Energy over a window in which one kernel ran back to back for `hold_s`, or why it was not measured."""

    measured: bool
    reason: str | None = None
    scope: str | None = None
    devices: list[str] = Field(default_factory=list)
    method: str | None = Field(default=None, description="counter, integrated or mixed (see docs/power.md).")
    duration_s: float | None = None
    energy_j: float | None = None
    mean_power_w: float | None = None
    work: float | None = Field(default=None, description="FLOPs (compute) or bytes (memory) done in the window.")
    work_per_s: float | None = Field(default=None, description="Sustained rate over the window.")
    work_per_j: float | None = Field(default=None, description="FLOP/J (= FLOP/s per W) or bytes/J.")


class Check(Strict):
    """A kernel's output against a float64 reference on fresh random inputs: ||out - ref|| / ||ref||."""

    kernel: str
    precision: Precision
    rel_error: float
    tolerance: float
    passed: bool


class Skipped(Strict):
    what: str
    precision: Precision | None = None
    reason: str


class GemmPoint(Strict):
    """C = A x B with A m x k and B k x n; bytes: A and B read once, C written once."""

    precision: Precision
    m: int
    n: int
    k: int
    flops: float
    bytes: float
    timing: Timing
    flops_per_s: float
    note: str | None = None


class ConvShape(Strict):
    """One convolution geometry of the workload: NCHW input, K filters of R x S, stride and padding."""

    names: list[str] = Field(description="The model's layers with this geometry.")
    count: int = Field(ge=1, description="Layers with this geometry in one forward pass.")
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int
    pad: int
    p: int
    q: int


class ConvPoint(Strict):
    shape: ConvShape
    direction: ConvDirection
    precision: Precision
    flops: float = Field(description="2 x N x K x P x Q x C x R x S, the same in every direction.")
    timing: Timing
    flops_per_s: float


class CopyPoint(Strict):
    """dst.copy_(src) between two device buffers; bytes moved = read + written = 2 x buffer."""

    buffer_bytes: int
    bytes_moved: float
    timing: Timing
    bytes_per_s: float


class ComputeCeiling(Strict):
    precision: Precision
    flops_per_s: float = Field(gt=0, description="Best median rate of the GEMM size sweep.")
    m: int
    n: int
    k: int
    power: PowerMeasure


class ConvCeiling(Strict):
    """Rates of the workload's convolutions in one direction, or `training` (all three together)."""

    precision: Precision
    direction: Literal["fwd", "bwd_data", "bwd_filter", "training"]
    flops_per_s: float = Field(gt=0, description="The layer mix: sum of count x FLOPs over sum of count x time.")
    best_flops_per_s: float = Field(gt=0, description="The fastest single geometry.")
    best_shape: str
    power: PowerMeasure


class MemoryCeiling(Strict):
    bytes_per_s: float = Field(gt=0, description="Best median rate of the copy sweep, bytes read plus written.")
    buffer_bytes: int
    power: PowerMeasure


class Ceilings(Strict):
    compute: list[ComputeCeiling]
    conv: list[ConvCeiling] = Field(default_factory=list)
    memory: MemoryCeiling


class WorkloadPoint(Strict):
    """One run of a submission placed on the roofline: achieved FLOP/s per device against FLOPs per byte."""

    label: str
    source: str = Field(description="The run's result.json.")
    spec_id: str
    run: int
    model: str
    precision: str | None
    device_kind: str
    accelerator_model: str | None = Field(description="From the submission's system.yaml.")
    same_device: bool | None = Field(description="Whether the run's accelerator is the one measured here.")
    batch_per_device: int
    flops_per_s: float = Field(description="The run's model FLOP/s divided by its devices.")
    flops_per_sample: float
    bytes_per_sample: float
    bytes_per_sample_fused: float = Field(description="Only the conv/fc operands cross memory (an optimistic bound).")
    intensity_flop_per_byte: float
    intensity_fused_flop_per_byte: float
    bytes_method: BytesMethod
    bytes_model: str
    ceiling_precision: Precision | None
    attainable_flops_per_s: float | None = Field(description="min(compute ceiling, memory ceiling x intensity).")
    bound: Literal["memory", "compute"] | None
    fraction_of_attainable: float | None
    note: str | None = None


class Roofline(Strict):
    """The whole file."""

    format: Literal["specbench.roofline"]
    format_version: Literal[1]
    created_at: str = Field(description="ISO 8601 wall time the measurement started.")
    command: str
    specbench_version: str
    device: DeviceIdentity
    settings: Settings
    checks: list[Check]
    skipped: list[Skipped] = Field(default_factory=list)
    gemm: list[GemmPoint]
    conv: list[ConvPoint] = Field(default_factory=list)
    copy_points: list[CopyPoint] = Field(alias="copy")
    ceilings: Ceilings
    workloads: list[WorkloadPoint] = Field(default_factory=list)
    workloads_skipped: list[Skipped] = Field(default_factory=list)

    model_config = Strict.model_config | {"populate_by_name": True}

    def compute_ceiling(self, precision: str) -> ComputeCeiling | None:
        return next((c for c in self.ceilings.compute if c.precision == precision), None)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2) + "\n"


def eng(value: float, unit: str) -> str:
    """A rate with an SI prefix: eng(6.6e14, 'FLOP/s') == '660 TFLOP/s'."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _problem(path: Path, json_path: str, message: str) -> Problem:
    return Problem(Location(str(path), json_path=json_path), message)


def parse_roofline(data: Any, path: Path) -> Roofline:
    """Validate a decoded roofline.json; an unknown format or version is refused by name before anything else."""
    if not isinstance(data, dict):
        raise InputError([_problem(path, "", f"expected a JSON object at the top, found {type(data).__name__}")])
    if data.get("format") != FORMAT:
        raise InputError([_problem(path, "format", f"expected format {FORMAT!r}, found {data.get('format')!r}")])
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        message = f"roofline format version {version!r} not supported (this specbench reads {FORMAT_VERSION})"
        raise InputError([_problem(path, "format_version", message)])
    try:
        return Roofline.model_validate(data)
    except ValidationError as err:
        problems = [
            _problem(path, ".".join(str(p) for p in e["loc"]), f"{e['msg']} (found {_short(e.get('input'))})")
            for e in err.errors()
        ]
        raise InputError(problems) from err


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def read_roofline(path: str | Path) -> Roofline:
    """Read a roofline.json, refusing other formats and versions with the reason."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError([_problem(file, "", f"cannot read: {err.strerror or err}")]) from err
    except json.JSONDecodeError as err:
        raise InputError([_problem(file, "", f"not JSON: {err}")]) from err
    return parse_roofline(data, file)


def write_roofline(roofline: Roofline, path: str | Path) -> Path:
    """Write atomically (a temporary file in the same folder, then a rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(roofline.to_json())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
