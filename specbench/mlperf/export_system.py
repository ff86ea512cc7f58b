"""systems/<system>.json for an export: the imported description, or one built from system.yaml's nine layers.

MLPerf's system description checker (mlperf-logging 4.1.68) asks for 33 fields and, from ruleset
4.0.0 on, a `status` from its list ("Available on-premise", ...). An imported system's description
is written as MLPerf published it, its `status` moved to that list where the round used an older
word (available, onprem, cloud, ...), each such change noted. A specbench submission's is built
from what system.yaml states; what it does not state is "" and noted, except the fields MLPerf's
result summarizer computes with (host_processors_per_node, which system.yaml never records), which
`--field` must give. A field the hardware layer states under MLPerf's own name (as an imported system's
does) is written as stated; host_processor_core_count, cores per processor, is otherwise system.yaml's
cpu_count over host_processors_per_node, noted as such (cpu_count counts logical CPUs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specbench.errors import UsageError
from specbench.spec.system import SystemDescription

REQUIRED = (
    "submitter",
    "division",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processors_per_node",
    "host_processor_model_name",
    "host_processor_core_count",
    "host_processor_vcpu_count",
    "host_processor_frequency",
    "host_processor_caches",
    "host_processor_interconnect",
    "host_memory_capacity",
    "host_storage_type",
    "host_storage_capacity",
    "host_networking",
    "host_networking_topology",
    "host_memory_configuration",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_host_interconnect",
    "accelerator_frequency",
    "accelerator_on-chip_memories",
    "accelerator_memory_configuration",
    "accelerator_memory_capacity",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "cooling",
    "hw_notes",
    "framework",
    "other_software_stack",
    "operating_system",
    "sw_notes",
)
"""The fields MLPerf's system description checker requires (system_desc_checker.py, mlperf-logging 4.1.68)."""
STATUSES = ("Available on-premise", "Available cloud", "Research, Development, or Internal (RDI)", "Preview")
OLD_STATUSES = {
    "available": "Available on-premise",
    "onprem": "Available on-premise",
    "on-premise": "Available on-premise",
    "cloud": "Available cloud",
    "research": "Research, Development, or Internal (RDI)",
    "rdi": "Research, Development, or Internal (RDI)",
    "preview": "Preview",
}
INTEGERS = ("number_of_nodes", "host_processors_per_node", "accelerators_per_node")
"""Fields MLPerf's result summarizer turns into integers (it fails on anything else)."""
SOFTWARE = {"kernel": "kernel_version", "driver_version": "driver_version"}
GIB = 1024**3


def imported_description(content: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The published description, with `status` in the checker's list where an older word stood."""
    out = dict(content)
    status = out.get("status")
    if isinstance(status, str) and status not in STATUSES and status.strip().lower() in OLD_STATUSES:
        out["status"] = OLD_STATUSES[status.strip().lower()]
        notes.append(
            f"status {status!r} written as {out['status']!r}: MLPerf's system description checker accepts "
            f"only {', '.join(STATUSES)} from ruleset 4.0.0 on"
        )
    return out


def built_description(
    system: SystemDescription, division: str, fields: dict[str, str], notes: list[str]
) -> dict[str, Any]:
    """A description of a specbench submission's system, from system.yaml and the `--field` values."""
    layers = system.layers
    hardware, framework = layers.get("hardware", {}), layers.get("framework", {})
    nodes = max(1, int(system.nodes or 1))
    count = hardware.get("accelerator_count")
    known: dict[str, Any] = {
        "submitter": system.submitter,
        "division": division,
        "status": "Available on-premise",
        "system_name": system.system,
        "number_of_nodes": str(nodes),
        "host_processor_model_name": hardware.get("cpu_model"),
        "host_processor_vcpu_count": _text(hardware.get("cpu_count")),
        "host_memory_capacity": _gib(hardware.get("host_memory_bytes")),
        "accelerators_per_node": str(count // nodes) if isinstance(count, int) else None,
        "accelerator_model_name": hardware.get("accelerator_model"),
        "accelerator_memory_capacity": _gib(hardware.get("accelerator_memory_bytes")),
        "framework": " ".join(str(v) for v in (framework.get("framework"), framework.get("framework_version")) if v),
        "operating_system": layers.get("operating_system", {}).get("os_name"),
        "other_software_stack": _software(layers),
        "sw_notes": f"exported from specbench submission {system.submitter}/{system.system}",
    }
    stated = {name: _text(hardware.get(name)) for name in REQUIRED if _text(hardware.get(name))}
    description = {name: stated.get(name) or known.get(name) or "" for name in REQUIRED}
    description.update(fields)
    for name in INTEGERS:
        if not str(description[name]).strip().isdigit():
            raise UsageError(
                f"MLPerf's result summarizer needs {name} as a whole number, and system.yaml does not state it: "
                f"give it with --field {name}=N"
            )
    if not description["host_processor_core_count"]:
        description["host_processor_core_count"] = _cores_per_processor(
            hardware.get("cpu_count"), int(description["host_processors_per_node"]), notes
        )
    unknown = [name for name in REQUIRED if not description[name]]
    if unknown:
        notes.append(
            'not stated in system.yaml, written as "" (give them with --field KEY=VALUE): ' + ", ".join(unknown)
        )
    return description


def _cores_per_processor(cpu_count: Any, processors: int, notes: list[str]) -> str:
    """system.yaml's cpu_count (the node's logical CPUs) over the processors per node, "" where it does not divide."""
    if not isinstance(cpu_count, int) or isinstance(cpu_count, bool) or cpu_count < 1 or processors < 1:
        return ""
    if cpu_count % processors:
        return ""
    cores = cpu_count // processors
    notes.append(
        f"host_processor_core_count {cores}: system.yaml's cpu_count {cpu_count} (logical CPUs, hardware threads "
        f"included) over host_processors_per_node {processors}; give --field host_processor_core_count=N where "
        "a processor has fewer physical cores"
    )
    return str(cores)


def parse_fields(items: list[str]) -> dict[str, str]:
    """`--field KEY=VALUE` items: MLPerf description fields to set."""
    fields: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in REQUIRED:
            raise UsageError(
                f"--field expects KEY=VALUE with KEY one of MLPerf's fields ({', '.join(REQUIRED)}), found {item!r}"
            )
        fields[key.strip()] = value.strip()
    return fields


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _gib(value: Any) -> str | None:
    return f"{value / GIB:.0f} GB" if isinstance(value, (int, float)) and value > 0 else None


def _software(layers: Mapping[Any, Mapping[str, Any]]) -> dict[str, str]:
    stack: dict[str, str] = {}
    kernel = layers.get("operating_system", {}).get("kernel")
    if kernel:
        stack["kernel_version"] = str(kernel)
    driver = layers.get("driver_firmware", {}).get("driver_version")
    if driver:
        stack["driver_version"] = str(driver)
    for key, value in layers.get("accelerator_libraries", {}).items():
        if value not in (None, ""):
            stack[key] = str(value)
    return stack
