"""Capture the layers of the machines a job executes on, and write them as the submission's system.yaml."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specbench.errors import UsageError
from specbench.files import atomic_write_yaml
from specbench.host import host
from specbench.run.distributed import Dist
from specbench.run.runfolder import check_same
from specbench.spec.system import SystemDescription
from specbench.spec.yamlio import load_yaml

ParamMap = dict[str, Any]


def _nvml_facts(count: int) -> ParamMap:
    """Driver version and enforced power limit from NVML, where it answers."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # NVML absent or no driver: those facts are simply not captured
        return {}
    try:
        facts: ParamMap = {"driver_version": pynvml.nvmlSystemGetDriverVersion()}
        limits = []
        for index in range(count):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            limits.append(pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)
        if limits:
            facts["power_limit_w"] = limits[0] if len(set(limits)) == 1 else limits
        return facts
    except Exception:
        return {}
    finally:
        pynvml.nvmlShutdown()


def capture_layers(device: str, world_size: int = 1) -> dict[str, ParamMap]:
    """Layers 1 to 6 as found on this machine."""
    import torch

    here = host()
    hardware: ParamMap = {
        "cpu_model": here.cpu_name,
        "cpu_count": here.cpu_count,
        "host_memory_bytes": here.memory_bytes,
        "nodes": 1,
    }
    driver: ParamMap = {}
    libraries: ParamMap = {}
    if device == "cuda" and torch.cuda.is_available():
        count = torch.cuda.device_count()
        props = torch.cuda.get_device_properties(0)
        hardware.update(
            accelerator_vendor="AMD" if torch.version.hip else "NVIDIA",
            accelerator_model=props.name,
            accelerator_count=count,
            accelerator_memory_bytes=props.total_memory,
        )
        driver.update(_nvml_facts(count) if not torch.version.hip else {})
        libraries.update(
            cuda_version=torch.version.cuda,
            rocm_version=torch.version.hip,
            cudnn_version=torch.backends.cudnn.version(),
        )
        if not torch.version.hip:  # the hardware work queues CUDA started with (specbench/cli.py raises them)
            libraries["cuda_device_max_connections"] = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "8")
        try:
            libraries["nccl_version"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:
            libraries["nccl_version"] = None
    else:
        hardware.update(accelerator_vendor="none", accelerator_model="cpu", accelerator_count=0)
    import torchvision

    return {
        "hardware": hardware,
        "operating_system": {"os_name": here.os_name, "kernel": here.kernel, "hostname": here.hostname},
        "driver_firmware": driver,
        "accelerator_libraries": libraries,
        "communication": {
            "backend": "none" if world_size == 1 else ("nccl" if device == "cuda" else "gloo"),
            "world_size": world_size,
        },
        "framework": {
            "framework": "pytorch",
            "framework_version": torch.__version__,
            "torchvision_version": torchvision.__version__,
            "python_version": here.python_version,
        },
    }


def describe_system(org: str, system: str, device: str, world_size: int = 1) -> SystemDescription:
    """The machine's layers 1 to 6; a benchmark's own choices (layers 6 to 9) go in its submission.yaml."""
    return SystemDescription(
        format_version=1,
        system=system,
        submitter=org,
        captured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        nodes=1,
        layers=capture_layers(device, world_size),  # type: ignore[arg-type]
    )


def describe_job(dist: Dist, org: str, system: str, device: str) -> dict[str, Any]:
    """system.yaml of a job, on rank 0: node 0's layers with job-wide totals, each node's own under `per_node`.

    Every rank must call this (it gathers); other ranks get {}.
    """
    mine = describe_system(org, system, device, dist.world).model_dump(mode="json") if dist.owner else None
    gathered = dist.gather(mine)
    if gathered is None:
        return {}
    nodes = [d for d in gathered if d is not None]
    description = nodes[0]
    if dist.nnodes > 1 or dist.active:
        description["nodes"] = dist.nnodes
        hardware = description["layers"]["hardware"]
        hardware["nodes"] = dist.nnodes
        hardware["accelerator_count"] = sum(int(n["layers"]["hardware"].get("accelerator_count") or 0) for n in nodes)
        description["layers"]["communication"] = {
            "backend": "nccl" if device == "cuda" else "gloo",
            "world_size": dist.world,
        }
        description["declared"] = {**description.get("declared", {}), "processes": dist.world}
        if len(nodes) > 1:
            description["per_node"] = [n["layers"] for n in nodes]
    return description


def write_system(out: Path, description: dict[str, Any]) -> None:
    """Write system.yaml, or refuse a folder whose system.yaml describes another system or other hardware."""
    out.mkdir(parents=True, exist_ok=True)
    system_file = out / "system.yaml"
    if not system_file.exists():
        atomic_write_yaml(system_file, description)
        return
    check_same(system_file, description, "system", ["system", "submitter", "nodes"])
    existing = load_yaml(system_file).data.get("layers", {})
    existing = existing if isinstance(existing, dict) else {}
    for layer in ("hardware", "accelerator_libraries"):
        for key in ("accelerator_model", "accelerator_count", "cuda_version", "rocm_version"):
            old = existing.get(layer, {})
            if key in old and old[key] != description["layers"][layer].get(key):
                raise UsageError(
                    f"{system_file} describes other hardware or libraries ({layer}.{key} differs); use a new --out"
                )
