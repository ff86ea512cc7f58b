"""Reading one run's power files: power.json typed and bounded (its meters, devices and limits), then power.csv.

Each reader adds its findings and returns None where the file cannot be used, so the checks that
follow only ever see a trace whose metadata held up. A limit or period that breaks its bound is
an error; the checks after it still run.
"""

from __future__ import annotations

from dataclasses import dataclass

from specbench.power.base import Device
from specbench.power.csvread import CSV_ROWS, CsvTrace, count_rows, read_csv
from specbench.power.metadata import PowerJson
from specbench.power.trace import COLUMNS, CSV_NAME, FORMAT, FORMAT_VERSION
from specbench.validator.declared import limit_breaches, period_breaches, range_breaches
from specbench.validator.documents import Loaded, check_mapping, check_version, decode, load_json, to_model
from specbench.validator.files import Tree
from specbench.validator.findings import Findings
from specbench.validator.origin import TraceOrigin
from specbench.validator.values import show


@dataclass
class TraceMeta:
    devices: list[Device]
    power_limit_w: dict[str, float]
    loaded: Loaded
    origin: TraceOrigin
    host: str | None = None
    requested_period_s: float | None = None


def power_files(folder: str) -> tuple[str, str]:
    """The paths of a run folder's power.csv and power.json, relative to the submission."""
    return f"{folder}/{CSV_NAME}", f"{folder}/power.json"


def read_metadata(tree: Tree, json_rel: str, findings: Findings, system_model: str | None = None) -> TraceMeta | None:
    """power.json's format, columns, typed fields, bounds and devices, or None (with findings) where they do not hold up.

    `system_model` is system.yaml's accelerator_model, the device-table row of a device the trace does not name.
    """
    loaded = load_json(tree, json_rel, findings)
    if loaded is None or not check_mapping(loaded, findings):
        return None
    data = loaded.data
    if data.get("format") != FORMAT:
        findings.add(
            "SB-PWR-002",
            loaded.file,
            f"expected format {FORMAT!r}, found {show(data.get('format'))}",
            **loaded.locate("format"),
        )
        return None
    if not check_version(loaded, FORMAT_VERSION, findings) or not _check_layout(loaded, findings):
        return None
    power = to_model(PowerJson, loaded, findings)
    if power is None:
        return None
    for breach in [*period_breaches(power), *limit_breaches(power, system_model), *range_breaches(power)]:
        findings.add(breach.code, loaded.file, breach.message, **loaded.locate(*breach.path))
    devices = [device for device, _ in power.devices()]
    _check_unique(devices, loaded, findings)
    period = power.sampling.requested_period_s if power.sampling is not None else None
    return TraceMeta(devices, power.power_limits(), loaded, TraceOrigin.of(power), power.host, period)


def read_samples(tree: Tree, csv_rel: str, meta: TraceMeta, findings: Findings) -> CsvTrace | None:
    """power.csv's samples of the devices power.json lists, each problem a finding on its line.

    A trace of more than CSV_ROWS rows is refused (SB-STR-003) before it is decoded; the bytes are dropped once decoded.
    """
    raw = tree.read(csv_rel)
    if raw is None:
        return None
    rows = count_rows(raw)
    if rows > CSV_ROWS:
        findings.add("SB-STR-003", csv_rel, f"expected at most {CSV_ROWS} rows after the header, found {rows}")
        return None
    text = decode(raw, csv_rel, findings)
    del raw
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
            f"expected csv {CSV_NAME!r}, found {show(data.get('csv'))}",
            **loaded.locate("csv"),
        )
        ok = False
    if "columns" in data and data["columns"] != list(COLUMNS):
        findings.add(
            "SB-PWR-002",
            loaded.file,
            f"expected columns {list(COLUMNS)}, found {show(data['columns'])}",
            **loaded.locate("columns"),
        )
        ok = False
    return ok


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
