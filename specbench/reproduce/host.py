"""This host's devices, read as execute records them in system.yaml, against the submission's.

A reproduction is only evidence on the devices the claim was made on: the same accelerator model and
count (on a host without one, the same CPU model and core count). Anything else is refused before a
run starts; GPUs beyond the submission's count can be hidden with CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specbench.errors import UsageError
from specbench.formats.reproduction import HostFacts
from specbench.host import host
from specbench.scoring.reproduction import device_mismatch


def device_of(hardware: Mapping[str, Any]) -> str:
    """execute's --device for the submission's hardware: 'cuda' where it names accelerators, else 'cpu'."""
    return "cuda" if hardware.get("accelerator_count") else "cpu"


def this_host(device: str, processes: int) -> dict[str, Any]:
    """This host's layers 1 to 6 as execute captures them for system.yaml (loads torch)."""
    from specbench.run.sysinfo import capture_layers

    return capture_layers(device, processes)


def check_devices(submitted: Mapping[str, Any], here: Mapping[str, Any]) -> None:
    """Refuse a host whose devices differ from the submission's in model or count (UsageError, exit code 2)."""
    mismatch = device_mismatch(submitted, here, "this host has")
    if mismatch is not None:
        raise UsageError(
            f"cannot reproduce on this host: {mismatch}; run reproduce "
            "on a host with the submission's devices (CUDA_VISIBLE_DEVICES hides GPUs beyond its count)"
        )


def host_facts(layers: Mapping[str, Any]) -> HostFacts:
    """What the record keeps of the re-run's host (its system.yaml holds the rest)."""
    hardware = layers.get("hardware", {})
    framework = layers.get("framework", {})
    return HostFacts(
        hostname=host().hostname,
        cpu_model=hardware.get("cpu_model"),
        cpu_count=hardware.get("cpu_count"),
        accelerator_model=str(hardware.get("accelerator_model")),
        accelerator_count=int(hardware.get("accelerator_count") or 0),
        framework_version=framework.get("framework_version"),
    )
