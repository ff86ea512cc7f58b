"""MLPerf node power logs (`power/result_*/node_N.txt`) as a specbench power trace with node scope.

A node log is MLLOG with `power_measurement_start`, `power_reading` (W, the whole node) and
`power_measurement_stop`; `conversion_eff` may follow. Each node becomes one device of scope
`platform` (a spec's `node` scope). Every reading becomes one power.csv row, verbatim: the window
is chosen from them as for any trace (the readings between run_start and run_stop), so readings
before or after the timed run (some logs run a minute past each edge) are kept but never counted.
Nothing is interpolated or extrapolated; docs/mlperf-import.md says how partial coverage is handled.

Readings are taken in time order: a reading whose timestamp steps back (some SMC logs write one
2 to 103 ms early) is moved to its place and reported (SB-MLP-009) with its line, so it can never
invalidate the timed window, wherever it lies.

`sw_N.txt` files hold `interconnect_power_est`: an estimate, not a measurement. They are recorded
in import.json and kept apart from the node energy.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from specbench.formats.mllog import TOKEN, decode_together
from specbench.formats.mlperf_import import Coverage, ImportFinding, Interconnect, SourceFile
from specbench.formats.strictjson import parse_json_text
from specbench.mlperf.published_energy import PowerEvent
from specbench.power.base import Device
from specbench.power.csvread import read_csv
from specbench.power.metadata import check_metadata
from specbench.power.trace import COLUMNS, CSV_NAME, FORMAT, FORMAT_VERSION, JSON_NAME
from specbench.spec.models import PowerRequirement
from specbench.validator.findings import Findings
from specbench.validator.powerwindow import LOG_CLOCK_SLACK_S, DeviceWindow

if TYPE_CHECKING:
    from specbench.mlperf.staging import Staging

METER = "mlperf"
POWER_SOURCE = "MLPerf power_reading: watts of the whole node, from the submitter's meter"


@dataclass(frozen=True)
class Reading:
    line: int
    time_ms: float
    power_w: float


@dataclass(frozen=True)
class StepBack:
    """A reading logged after a later one: its line and time, and the latest reading before it."""

    line: int
    time_ms: float
    after_line: int
    after_ms: float


@dataclass
class PowerLog:
    """One node_N.txt or sw_N.txt, read leniently (MLPerf writes metadata as '' in these files).

    `readings` are in time order (stable: equal times keep the file's order); `step_backs` lists
    the readings that the file has out of that order.
    """

    file: SourceFile
    readings: list[Reading] = field(default_factory=list)
    step_backs: list[StepBack] = field(default_factory=list)
    starts: list[tuple[int, float]] = field(default_factory=list)
    stops: list[tuple[int, float]] = field(default_factory=list)
    conversion_eff: float | None = None
    interconnect_w: float | None = None
    problems: list[ImportFinding] = field(default_factory=list)
    events: list[PowerEvent] = field(default_factory=list)
    """Every event that reads, in file order, as MLPerf's result summarizer meets them (mlperf.published_energy)."""

    def problem(self, code: str, message: str, line: int | None = None) -> None:
        self.problems.append(ImportFinding(code=code, file=self.file.path, line=line, message=message))  # type: ignore[arg-type]


def _number(value: Any) -> float | None:
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int:
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, dict):
        return _number(value.get("value"))
    return None


_new = object.__new__

_STRING = r'"[^"\\\x00-\x1f:]*"'
"""A JSON string that reads as its own characters (no escape, no control character) and holds no ':', so no marker."""
_NUMBER = r"((?:0|[1-9][0-9]{0,17})(\.[0-9]{1,300})?)"
"""A JSON number >= 0 without exponent and with at most 18 integer digits: finite, read by int or float as the
strict decoder reads it."""
_LINES = re.compile(
    f"^{re.escape(TOKEN)}"
    rf'\{{"namespace": {_STRING}, "time_ms": {_NUMBER}, "event_type": "POINT_IN_TIME", "key": "power_reading", '
    rf'"value": {_NUMBER}, "metadata": (?:{_STRING}|\{{"file": {_STRING}, "lineno": (?:0|[1-9][0-9]{{0,17}}), '
    rf'"host": {_STRING}\}})\}}\r?$'
    "|^(.*)$",
    re.MULTILINE,
)
"""Each line: a power_reading as MLPerf's power tools write it (every key once, in their order), or any other line."""
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""Where str.splitlines() cuts lines besides "\\n", "\\r\\n" and "\\r"."""

Marked = tuple[int, str, "tuple[float, int | float] | None"]


def _cut_at_newlines(text: str) -> bool:
    """Whether str.splitlines() cuts `text` where "\\n" is, and nowhere else (each "\\r" is one of "\\r\\n")."""
    lone_returns = "\r" in text and text.count("\r") != text.count("\r\n")
    return not lone_returns and not any(mark in text for mark in _OTHER_BREAKS)


def _marked(text: str) -> list[Marked]:
    """Each line with the MLLOG marker: its number, the text after its last marker, and for a power_reading line
    in the layout of MLPerf's power tools its time and raw value (as the strict decoder reads them), else None.

    Such a line is read by one pass of a regular expression over the text instead of the JSON decoder: most
    lines of a node log. float() of an integer's digits is float(int(digits)): both round the same integer.
    """
    if not _cut_at_newlines(text):
        return [
            (number, line[at + len(TOKEN) :], None)
            for number, line in enumerate(text.splitlines(), 1)
            if (at := line.rfind(TOKEN)) >= 0
        ]
    marked: list[Marked] = []
    for number, (time_text, _, value_text, fraction, line) in enumerate(_LINES.findall(text), 1):
        if time_text:
            marked.append((number, "", (float(time_text), float(value_text) if fraction else int(value_text))))
        elif (at := line.rfind(TOKEN)) >= 0:
            marked.append((number, line[at + len(TOKEN) :].removesuffix("\r"), None))
    return marked


def parse_power_log(text: str, file: SourceFile) -> PowerLog:
    """Readings, markers and conversion efficiency of one power log; unreadable lines are problems."""
    log = PowerLog(file)
    marked = _marked(text)
    together = decode_together([body for _, body, fast in marked if fast is None])
    events, readings = log.events, log.readings
    decoded = 0
    time_ms: float | None
    key: object
    value: float | None
    for number, body, fast in marked:
        if fast is not None:
            time_ms, raw = fast
            key, value = "power_reading", float(raw)  # finite: what _number gives
        else:
            if together is not None:
                data = together[decoded]
                decoded += 1
            else:
                try:
                    data = parse_json_text(body)
                except (ValueError, RecursionError) as err:
                    log.problem("SB-MLP-005", f"expected one JSON object after ':::MLLOG ', found {err}", number)
                    continue
            if isinstance(data, dict):
                stamp = data.get("time_ms")
                time_ms = float(stamp) if type(stamp) is int else _number(stamp)
                key = data.get("key")
            else:
                time_ms = key = None
            if time_ms is None or not isinstance(key, str):
                log.problem("SB-MLP-005", "expected an MLLOG event with key and time_ms, found another value", number)
                continue
            raw = data.get("value")
            value = _number(raw)
        event = _new(PowerEvent)  # PowerEvent(...) without the frozen __init__'s setattr per field
        event.__dict__.update(line=number, time_ms=time_ms, key=key, value=raw)
        events.append(event)
        if key == "power_reading":
            if value is None or value < 0:
                log.problem("SB-MLP-005", f"expected power_reading in W (a number >= 0), found {raw!r}", number)
            else:
                reading = _new(Reading)
                reading.__dict__.update(line=number, time_ms=time_ms, power_w=value)
                readings.append(reading)
        elif key == "power_measurement_start":
            log.starts.append((number, time_ms))
        elif key == "power_measurement_stop":
            log.stops.append((number, time_ms))
        elif key == "conversion_eff":
            log.conversion_eff = value
        elif key == "interconnect_power_est":
            log.interconnect_w = value
    _time_order(log)
    return log


def _time_order(log: PowerLog) -> None:
    """Sort the readings by time (stably) and record each one that stepped back."""
    latest: Reading | None = None
    for reading in log.readings:
        if latest is not None and reading.time_ms < latest.time_ms:
            log.step_backs.append(StepBack(reading.line, reading.time_ms, latest.line, latest.time_ms))
        else:
            latest = reading
    if log.step_backs:
        log.readings.sort(key=lambda r: r.time_ms)


def check_markers(log: PowerLog) -> None:
    """power_measurement_start/stop as MLPerf's power tools expect them (warnings: energy ignores them)."""
    if len(log.starts) != 1 or len(log.stops) != 1:
        log.problem(
            "SB-MLP-006",
            f"expected power_measurement_start and power_measurement_stop once each, "
            f"found {len(log.starts)} and {len(log.stops)}",
            next((line for line, _ in (*log.starts, *log.stops)), None),
        )
        return
    (start_line, start), (stop_line, stop) = log.starts[0], log.stops[0]
    if stop <= start:
        log.problem(
            "SB-MLP-006",
            f"expected power_measurement_stop after power_measurement_start (line {start_line}), "
            f"found it {(stop - start) / 1000:+.3f} s from it",
            stop_line,
        )
        return
    outside = [r for r in log.readings if not start <= r.time_ms <= stop]
    if outside:
        log.problem(
            "SB-MLP-006",
            f"expected readings between power_measurement_start and _stop, found {len(outside)} outside",
            outside[0].line,
        )


def device_key(node_file: str) -> str:
    """node_0.txt -> mlperf:node_0."""
    return f"{METER}:{node_file.removesuffix('.txt')}"


@dataclass
class NodeTrace:
    """The trace files of one run, and for each power.csv data row its device and source line."""

    csv_text: str
    metadata: dict[str, Any]
    rows: list[tuple[str, int]]
    logs: dict[str, PowerLog]


def build_trace(nodes: dict[str, PowerLog], system_name: str) -> NodeTrace:
    """power.csv and power.json for the node logs of one run (device key -> log); one clock: the log's wall clock."""
    out = io.StringIO()
    out.write(",".join(COLUMNS) + "\n")
    rows: list[tuple[str, int]] = []
    devices = []
    first_ms = min((r.time_ms for log in nodes.values() for r in log.readings), default=None)
    for key, log in nodes.items():
        devices.append(
            Device(
                key=key,
                meter=METER,
                scope="platform",
                model=system_name,
                power_source=POWER_SOURCE,
                notes=(f"imported from {log.file.path}",),
            ).to_dict()
        )
        done = len(rows)
        for row, reading in enumerate(log.readings, done + 1):
            t = repr(reading.time_ms / 1000.0)
            out.write(f"{row},{t},{t},{key},{reading.power_w!r},,,0.0,\n")
        rows += [(key, reading.line) for reading in log.readings]
    started = datetime.fromtimestamp((first_ms or 0.0) / 1000.0, tz=timezone.utc).isoformat()
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "csv": CSV_NAME,
        "columns": list(COLUMNS),
        "host": None,
        "started_wall": started,
        "meters": [{"kind": METER, "info": {"source": "MLPerf Training power logs"}, "devices": devices}],
        "source": {
            "kind": "mlperf-training",
            "clock": "wall clock of the MLPerf log (time_ms); t_mono_s repeats t_wall_s",
            "sweep": "row number; `lines` gives each device's rows' lines in its source file",
            "files": {key: _file_entry(log) for key, log in nodes.items()},
            "conversion_eff": {key: log.conversion_eff for key, log in nodes.items() if log.conversion_eff is not None},
        },
    }
    return NodeTrace(out.getvalue(), metadata, rows, dict(nodes))


def _file_entry(log: PowerLog) -> dict[str, Any]:
    """Where a device's rows came from: the node log, its sha256, each row's line, and its markers."""
    entry: dict[str, Any] = {"path": log.file.path, "sha256": log.file.sha256, "lines": [r.line for r in log.readings]}
    if len(log.starts) == 1 and len(log.stops) == 1:
        entry["markers"] = {"start_ms": log.starts[0][1], "stop_ms": log.stops[0][1]}
    return entry


def coverage(key: str, log: PowerLog, start_ms: float, stop_ms: float) -> Coverage:
    """How one node's readings cover the timed run (the window the validator takes, with its clock slack)."""
    slack_ms = LOG_CLOCK_SLACK_S * 1000.0
    inside = [r for r in log.readings if start_ms - slack_ms <= r.time_ms <= stop_ms + slack_ms]
    return Coverage(
        device=key,
        readings=len(log.readings),
        readings_in_window=len(inside),
        uncovered_start_s=max(0.0, (inside[0].time_ms - start_ms) / 1000.0) if inside else None,
        uncovered_stop_s=max(0.0, (stop_ms - inside[-1].time_ms) / 1000.0) if inside else None,
    )


@dataclass(frozen=True)
class WindowEnergy:
    energy_j: float | None
    duration_s: float
    devices: list[str]
    reason: str | None


def window_energy(trace: NodeTrace, requirement: PowerRequirement, start_ms: float, stop_ms: float) -> WindowEnergy:
    """Energy of every node over run_start..run_stop, computed by the validator's own window code.

    Each node's energy is the trapezoid of its readings between the first and the last reading
    inside the window; the total is None when a node has no reading there.
    """
    devices = [Device.from_dict(d) for meter in trace.metadata["meters"] for d in meter["devices"]]
    csv = read_csv(trace.csv_text, [d.key for d in devices])
    total = 0.0
    energies = []
    for device in devices:
        series = csv.series.get(device.key)
        if series is None:
            return WindowEnergy(None, 0.0, [], f"{device.key} has no readings")
        window = DeviceWindow(
            Findings(),
            CSV_NAME,
            csv,
            device,
            series,
            start_ms / 1000.0,
            stop_ms / 1000.0,
            1.0 / requirement.min_sampling_hz,
            requirement,
        )
        energy = window.check()
        if energy is None or energy.energy_j is None:
            return WindowEnergy(None, 0.0, [], f"{device.key} has no reading between run_start and run_stop")
        energies.append(energy)
    total = math.fsum(e.energy_j for e in energies if e.energy_j is not None)
    duration = max(e.duration_s for e in energies)
    return WindowEnergy(total, duration, [d.key for d in devices], None)


def interconnect(log: PowerLog) -> Interconnect:
    return Interconnect(file=log.file, interconnect_power_est_w=log.interconnect_w, conversion_eff=log.conversion_eff)


def write_trace(staging: Staging, folder: str, trace: NodeTrace) -> None:
    """power.csv and power.json of one run into the staging folder."""
    staging.text(f"{folder}/{CSV_NAME}", trace.csv_text)
    check_metadata(trace.metadata, f"{folder}/{JSON_NAME}")
    staging.json(f"{folder}/{JSON_NAME}", trace.metadata, indent=None)
