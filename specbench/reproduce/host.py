"""This host's devices, read as execute records them in system.yaml, against the submission's.

A reproduction is only evidence on the devices the claim was made on: the same accelerator model and
count (on a host without one, the same CPU model and core count). Anything else is refused before a
run starts; GPUs beyond the submission's count can be hidden with CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from specbench.errors import UsageError
from specbench.formats.reproduction import HostFacts
from specbench.host import host
from specbench.scoring.reproduction import device_mismatch


def device_of(hardware: Mapping[str, Any]) -> str:
    """execute's --device for the submission's hardware: 'cuda' where it names accelerators, else 'cpu'."""
    return "cuda" if hardware.get("accelerator_count") else "cpu"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or taskset narrows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def visible_gpus() -> int:
    """The CUDA devices this process sees (CUDA_VISIBLE_DEVICES applied); 0 without torch or CUDA (loads torch)."""
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def check_cpu_scale(processes: int, cpus: int) -> None:
    """Refuse a CPU re-run of more processes than this host's usable CPUs, before anything starts (UsageError)."""
    if processes > cpus:
        raise UsageError(
            f"cannot reproduce on this host: the submission ran {processes} processes on the CPU "
            f"(system.yaml communication.world_size), and this host has {cpus} usable CPUs "
            f"(os.sched_getaffinity); run reproduce on a host with at least {processes} CPUs"
        )


def check_gpu_scale(processes: int, accelerators: int, gpus: int) -> None:
    """Refuse a GPU re-run of more processes or accelerators than this host's visible GPUs (UsageError)."""
    needed = max(processes, accelerators)
    if needed > gpus:
        raise UsageError(
            f"cannot reproduce on this host: the submission ran {processes} processes on {accelerators} GPUs "
            f"(system.yaml communication.world_size, hardware.accelerator_count), and this host has {gpus} visible "
            f"GPUs; run reproduce on a host with at least {needed} GPUs"
        )


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
