"""An MLPerf system description (`systems/<system>.json`) mapped onto the nine layers of system.yaml.

Fields land in the layer they describe, under specbench's usual names where one means exactly the
same (accelerator_model, accelerator_count, cpu_model, os_name, framework, framework_version,
kernel, driver_version) and under MLPerf's own names otherwise; empty strings are "not stated".
Facts about the submission rather than the machine (division, status, the submitter's own names,
notes) go to `declared`. Nothing is guessed: MLPerf's descriptions before v6.1 state no numerical
precision, so layer 7 stays empty. The whole file is kept verbatim in import.json.
"""

from __future__ import annotations

import re
from typing import Any

from specbench.spec.system import SYSTEM_FORMAT_VERSION

HARDWARE_RENAMED = {"accelerator_model_name": "accelerator_model", "host_processor_model_name": "cpu_model"}
HARDWARE_KEPT = (
    "accelerators_per_node",
    "accelerator_memory_capacity",
    "accelerator_memory_configuration",
    "accelerator_frequency",
    "accelerator_on-chip_memories",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_processor_vcpu_count",
    "host_processor_frequency",
    "host_processor_caches",
    "host_processor_interconnect",
    "host_memory_capacity",
    "host_memory_configuration",
    "host_storage_type",
    "host_storage_capacity",
    "host_networking",
    "host_networking_topology",
    "cooling",
)
DECLARED = {
    "submitter": "mlperf_submitter",
    "system_name": "mlperf_system_name",
    "division": "mlperf_division",
    "status": "mlperf_status",
    "hw_notes": "hw_notes",
    "sw_notes": "sw_notes",
}
KERNEL_KEYS = ("kernel_version", "kernel")
DRIVER_KEYS = ("cuda_driver_version", "nvidia_kernel_driver", "driver_version")
_INT = re.compile(r"^\s*\d+\s*$")
_FRAMEWORK = re.compile(r"^\s*([^\s,]+)[\s,]+(.+?)\s*$")
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(name: str) -> str:
    """A folder and identity name specbench accepts (letters, digits, '.', '_', '-'; at most 64)."""
    cleaned = SAFE_NAME.sub("-", name.strip())[:64]
    return cleaned or "unnamed"


def _stated(value: Any) -> bool:
    return value is not None and value != "" and not isinstance(value, (dict, list))


def _number(value: Any) -> Any:
    """'8' -> 8; other values as they are."""
    return int(value) if isinstance(value, str) and _INT.match(value) else value


def node_count(description: dict[str, Any]) -> int:
    nodes = _number(description.get("number_of_nodes"))
    return nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes >= 1 else 1


def accelerator_count(description: dict[str, Any]) -> int | None:
    per_node = _number(description.get("accelerators_per_node"))
    if isinstance(per_node, int) and not isinstance(per_node, bool) and per_node >= 1:
        return per_node * node_count(description)
    return None


def split_framework(text: str) -> tuple[str, str | None]:
    """'PyTorch 2.0.1a0' -> ('PyTorch', '2.0.1a0'); 'tinygrad, commit b399d98' -> ('tinygrad', 'commit b399d98').

    The rest after the first word is the version only when it holds a digit, the same rule for every
    system: 'Mxnet' and 'NVIDIA PyTorch/MxNeti/DGL' state no version.
    """
    match = _FRAMEWORK.match(text)
    if match and any(c.isdigit() for c in match.group(2)):
        return match.group(1), match.group(2)
    return (match.group(1) if match else text.strip()), None


def framework_warning(description: dict[str, Any]) -> str | None:
    """Why the description's framework states no version (SB-MLP-012), or None when it does or states none."""
    framework = description.get("framework")
    if not _stated(framework) or split_framework(str(framework))[1] is not None:
        return None
    return (
        f"expected a framework version in framework (a number, e.g. 'PyTorch NVIDIA Release 24.04'), found "
        f"{str(framework)!r}: framework_version is left unstated (stricter than MLPerf: its system description "
        "checker asks only that the field framework exists)"
    )


def system_yaml(description: dict[str, Any], org: str, system: str, captured_at: str) -> dict[str, Any]:
    """system.yaml's content for an MLPerf system description."""
    hardware: dict[str, Any] = {}
    for source, name in HARDWARE_RENAMED.items():
        if _stated(description.get(source)):
            hardware[name] = description[source]
    count = accelerator_count(description)
    if count is not None:
        hardware["accelerator_count"] = count
    hardware["nodes"] = node_count(description)
    for key in HARDWARE_KEPT:
        if _stated(description.get(key)):
            hardware[key] = _number(description[key])
    layers: dict[str, dict[str, Any]] = {"hardware": hardware}
    if _stated(description.get("operating_system")):
        layers["operating_system"] = {"os_name": description["operating_system"]}
    _software(description.get("other_software_stack"), layers)
    framework = description.get("framework")
    if _stated(framework):
        name, version = split_framework(str(framework))
        layers["framework"] = {"framework": name, "framework_description": framework}
        if version is not None:
            layers["framework"]["framework_version"] = version
    declared = {target: description[key] for key, target in DECLARED.items() if _stated(description.get(key))}
    return {
        "format_version": SYSTEM_FORMAT_VERSION,
        "system": system,
        "submitter": org,
        "captured_at": captured_at,
        "nodes": node_count(description),
        "layers": {name: params for name, params in layers.items() if params},
        "declared": declared,
    }


def _software(stack: Any, layers: dict[str, dict[str, Any]]) -> None:
    """other_software_stack: kernel to layer 2, driver to layer 3, the rest to layer 4 (accelerator libraries)."""
    if isinstance(stack, str) and stack.strip():
        layers["accelerator_libraries"] = {"other_software_stack": stack}
        return
    if not isinstance(stack, dict):
        return
    libraries: dict[str, Any] = {}
    for key, value in stack.items():
        if not _stated(value):
            continue
        if key in KERNEL_KEYS:
            layers.setdefault("operating_system", {})["kernel"] = value
        elif key in DRIVER_KEYS:
            layers.setdefault("driver_firmware", {}).setdefault("driver_version", value)
            if key != "driver_version":
                layers["driver_firmware"][key] = value
        else:
            libraries[key] = value
    if libraries:
        layers["accelerator_libraries"] = libraries
