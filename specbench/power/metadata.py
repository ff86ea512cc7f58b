"""power.json, the one definition: every key the sampler, the job merger and the MLPerf importer write, typed.

Every writer checks what it writes against this model (`check_metadata`) and every reader parses with it
(`parse_metadata`; the validator through its confined tree). A submission is untrusted input, so no field is
read as a raw dict: a text where a number belongs, a list where a name belongs, a number that is not finite
or of the wrong sign, or a key no writer knows is a located schema finding, and the trace is not read further.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from specbench.formats.layout import POWER_CSV, POWER_JSON
from specbench.power.base import SCOPES, Device, PowerError
from specbench.spec.models import first_error

FORMAT = "specbench.power-trace"
FORMAT_VERSION = 1
CSV_NAME = POWER_CSV
JSON_NAME = POWER_JSON

TEXT_CHARS = 4096
NAME_CHARS = 256
Text = Annotated[str, Field(max_length=TEXT_CHARS)]
Name = Annotated[str, Field(min_length=1, max_length=NAME_CHARS)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]


def _scope(value: str) -> str:
    if value not in SCOPES:
        raise ValueError(f"expected a scope of {', '.join(SCOPES)}, found {value!r}")
    return value


Scope = Annotated[str, AfterValidator(_scope)]


class Typed(BaseModel):
    """A part of power.json: unknown keys are errors, no value is coerced, numbers are finite (validator built
    when first used, as `Strict`'s)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True, defer_build=True)


class DeviceEntry(Typed):
    """`meters[].devices[]`: one measured device, as `specbench.power.base.Device.to_dict` writes it."""

    key: Name
    meter: Name
    scope: Scope
    vendor: Text | None = None
    model: Text | None = None
    uuid: Name | None = None
    pci_bus_id: Name | None = None
    index: Count | None = None
    power_source: Text | None = None
    energy_counter: Text | None = None
    energy_range_j: Positive | None = None
    verify_counter: bool = False
    counter_problem: Text | None = None
    members: list[Name] = Field(default_factory=list)
    notes: list[Text] = Field(default_factory=list)

    def device(self) -> Device:
        return Device(**{**self.model_dump(), "members": tuple(self.members), "notes": tuple(self.notes)})


class Meter(Typed):
    """`meters[]`: a meter, its library versions and devices; a job of several nodes adds `node` and `host`."""

    kind: Name
    info: dict[Name, Text] = Field(default_factory=dict)
    devices: list[DeviceEntry]
    node: Count | None = None
    host: Name | None = None


class Stats(Typed):
    """Count, mean, median, 95th percentile, min and max of a series (`specbench.power.stats.describe`)."""

    n: Count
    mean: float
    median: float
    p95: float
    min: float
    max: float


class Gap(Typed):
    t_mono_s: float
    missed: Count


class Sampling(Typed):
    """`sampling`: the period asked for and what the schedule achieved."""

    requested_period_s: Positive
    scheduled_sweeps: Count | None = None
    achieved_period_s: Stats | None = None
    start_lateness_s: Stats | None = None
    read_latency_s: Stats | None = None
    missed_deadlines: Count = 0
    gaps: list[Gap] = Field(default_factory=list)
    gaps_listed_max: Count | None = None
    read_errors: dict[Name, Count] = Field(default_factory=dict)
    first_read_error: dict[Name, Text] = Field(default_factory=dict)


class DeviceState(Typed):
    """`state_start` / `state_end` per device: the enforced power limit and the clocks."""

    power_limit_w: Positive | None = None
    sm_clock_mhz: NonNegative | None = None
    memory_clock_mhz: NonNegative | None = None


class CounterEvent(Typed):
    kind: Name
    t_mono_s: float
    before_j: float
    after_j: float


class WindowDevice(Typed):
    """One device's energy over a window, as the sampler computed it (the validator recomputes it)."""

    device: Name
    scope: Scope
    duration_s: NonNegative
    energy_j: NonNegative | None = None
    method: Name
    mean_power_w: NonNegative | None = None
    counter_energy_j: NonNegative | None = None
    integrated_energy_j: NonNegative | None = None
    cross_check_ratio: NonNegative | None = None
    samples: Count
    counter_events: list[CounterEvent] = Field(default_factory=list)
    note: Text | None = None


class Window(Typed):
    start_mono_s: float
    stop_mono_s: float
    start_wall: Name
    stop_wall: Name
    duration_s: NonNegative
    devices: list[WindowDevice]
    energy_j_by_scope: dict[Scope, NonNegative | None]
    """None: a scope whose devices were not all measured (power/window.py writes it so)."""


class Node(Typed):
    """`nodes[]` of a job of several nodes: each node's host and sampling."""

    node: Count
    host: Name | None = None
    sampling: Sampling | None = None


class Markers(Typed):
    start_ms: float
    stop_ms: float


class SourceFile(Typed):
    path: Text
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    lines: list[Annotated[int, Field(ge=1)]]
    markers: Markers | None = None


class Source(Typed):
    """`source` of a trace the MLPerf importer built from node power logs."""

    kind: Literal["mlperf-training"]
    clock: Text
    sweep: Text
    files: dict[Name, SourceFile]
    conversion_eff: dict[Name, Positive] = Field(default_factory=dict)


class PowerJson(Typed):
    """The whole of power.json (docs/power.md, Trace format): what the validator reads and what it does not."""

    format: Literal[FORMAT]  # type: ignore[valid-type]
    format_version: Literal[1]
    csv: Literal[CSV_NAME] = CSV_NAME  # type: ignore[valid-type]
    columns: list[Name] | None = None
    host: Name | None = None
    started_wall: Name | None = None
    meters: list[Meter] = Field(min_length=1)
    sampling: Sampling | None = None
    state_start: dict[Name, DeviceState] | None = None
    state_end: dict[Name, DeviceState] | None = None
    windows: list[Window] = Field(default_factory=list)
    node: Count | None = None
    nodes: list[Node] | None = None
    source: Source | None = None
    command: list[Text] | None = None
    exit_code: int | None = None
    skipped_meters: dict[Name, Text] | None = None

    def devices(self) -> list[tuple[Device, str | None]]:
        """Every device in file order, with the host of its meter (the file's host where the meter names none)."""
        return [(entry.device(), meter.host or self.host) for meter in self.meters for entry in meter.devices]

    def power_limits(self) -> dict[str, float]:
        """The highest enforced power limit of each device over the start and end states."""
        limits: dict[str, float] = {}
        for states in (self.state_start, self.state_end):
            for key, state in (states or {}).items():
                if state.power_limit_w is not None:
                    limits[key] = max(limits.get(key, 0.0), state.power_limit_w)
        return limits


def check_metadata(metadata: Any, where: str) -> PowerJson:
    """The model of power.json data a writer is about to write; PowerError when it does not conform (a bug)."""
    try:
        return PowerJson.model_validate(metadata)
    except ValidationError as err:
        at, message = first_error(err)
        raise PowerError(f"{where}: power.json would not conform at {at or 'the top'}: {message}") from err
