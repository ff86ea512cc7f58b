"""Reading one run's power files: power.json's meters, devices and limits, then power.csv's samples.

Each reader adds its findings and returns None where the file cannot be used, so the checks that
follow only ever see a trace whose metadata held up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.power.base import Device, PowerError
from specbench.power.trace import COLUMNS, CSV_NAME, FORMAT, FORMAT_VERSION
from specbench.validator.documents import Loaded, check_mapping, check_version, decode, load_json
from specbench.validator.files import Tree
from specbench.validator.findings import Findings
from specbench.validator.tracefile import CsvTrace, read_csv
from specbench.validator.values import is_number


@dataclass
class TraceMeta:
    devices: list[Device]
    power_limit_w: dict[str, float]
    loaded: Loaded
    host: str | None = None
    requested_period_s: float | None = None


def power_files(folder: str) -> tuple[str, str]:
    """The paths of a run folder's power.csv and power.json, relative to the submission."""
    return f"{folder}/{CSV_NAME}", f"{folder}/power.json"


def read_metadata(tree: Tree, json_rel: str, findings: Findings) -> TraceMeta | None:
    """power.json's format, columns and devices, or None (with findings) where they do not hold up."""
    loaded = load_json(tree, json_rel, findings)
    if loaded is None or not check_mapping(loaded, findings):
        return None
    data = loaded.data
    if data.get("format") != FORMAT:
        findings.add(
            "SB-PWR-002",
            loaded.file,
            f"expected format {FORMAT!r}, found {data.get('format')!r}",
            **loaded.locate("format"),
        )
        return None
    if not check_version(loaded, FORMAT_VERSION, findings):
        return None
    ok = _check_layout(loaded, findings)
    devices = _read_devices(loaded, findings)
    if devices is None or not ok:
        return None
    host = data.get("host")
    sampling = data.get("sampling")
    period = sampling.get("requested_period_s") if isinstance(sampling, dict) else None
    return TraceMeta(
        devices,
        _power_limits(data),
        loaded,
        host if isinstance(host, str) else None,
        float(period) if is_number(period) and period > 0 else None,
    )


def read_samples(tree: Tree, csv_rel: str, meta: TraceMeta, findings: Findings) -> CsvTrace | None:
    """power.csv's samples of the devices power.json lists, each problem a finding on its line."""
    raw = tree.read(csv_rel)
    if raw is None:
        return None
    text = decode(raw, csv_rel, findings)
    if text is None:
        return None
    trace = read_csv(text, [d.key for d in meta.devices])
    for line, message in trace.problems:
        findings.add("SB-PWR-002", csv_rel, message, line=line)
    return trace


def _check_layout(loaded: Loaded, findings: Findings) -> bool:
    """power.json names the CSV file and columns this reader knows."""
    data, ok = loaded.data, True
    if data.get("csv", CSV_NAME) != CSV_NAME:
        findings.add(
            "SB-PWR-002",
            loaded.file,
            f"expected csv {CSV_NAME!r}, found {data.get('csv')!r}",
            **loaded.locate("csv"),
        )
        ok = False
    if "columns" in data and data["columns"] != list(COLUMNS):
        findings.add(
            "SB-PWR-002",
            loaded.file,
            f"expected columns {list(COLUMNS)}, found {data['columns']!r}",
            **loaded.locate("columns"),
        )
        ok = False
    return ok


def _read_devices(loaded: Loaded, findings: Findings) -> list[Device] | None:
    meters = loaded.data.get("meters")
    if not isinstance(meters, list) or not meters:
        findings.add(
            "SB-PWR-002",
            loaded.file,
            f"expected a non-empty list of meters, found {type(meters).__name__}",
            **loaded.locate("meters"),
        )
        return None
    devices: list[Device] = []
    for i, meter in enumerate(meters):
        entries = meter.get("devices") if isinstance(meter, dict) else None
        if not isinstance(entries, list):
            findings.add(
                "SB-PWR-002",
                loaded.file,
                "expected each meter to list its devices, found none",
                **loaded.locate("meters", i),
            )
            return None
        for j, entry in enumerate(entries):
            try:
                if not isinstance(entry, dict):
                    raise PowerError(f"expected a device object, found {type(entry).__name__}")
                devices.append(Device.from_dict(entry))
            except (PowerError, TypeError, ValueError) as err:
                findings.add(
                    "SB-PWR-002",
                    loaded.file,
                    f"expected a device entry, found: {err}",
                    **loaded.locate("meters", i, "devices", j),
                )
                return None
    _check_unique(devices, loaded, findings)
    return devices


def _check_unique(devices: list[Device], loaded: Loaded, findings: Findings) -> None:
    seen_keys: set[str] = set()
    seen_ids: set[str] = set()
    for device in devices:
        for value, seen, what in (
            (device.key, seen_keys, "key"),
            (device.uuid or device.pci_bus_id, seen_ids, "identity"),
        ):
            if value is None:
                continue
            if value in seen:
                findings.add(
                    "SB-PWR-010",
                    loaded.file,
                    f"expected each device once, found {what} {value!r} twice",
                    **loaded.locate("meters"),
                )
            seen.add(value)


def _power_limits(data: dict[str, Any]) -> dict[str, float]:
    limits: dict[str, float] = {}
    for name in ("state_start", "state_end"):
        states = data.get(name)
        if not isinstance(states, dict):
            continue
        for key, state in states.items():
            limit = state.get("power_limit_w") if isinstance(state, dict) else None
            if is_number(limit) and limit > 0:
                limits[key] = max(limits.get(key, 0.0), float(limit))
    return limits
