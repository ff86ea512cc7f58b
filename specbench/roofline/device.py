"""The identity of the device the ceilings are measured on, and its last-level cache and free memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.errors import UsageError
from specbench.host import host, meminfo_bytes
from specbench.roofline.format import DeviceIdentity

CPU_CACHE_FALLBACK_BYTES = 32 * 2**20
HOST_FREE_FALLBACK_BYTES = 4 * 2**30


def choose_device(requested: str) -> str:
    """The device to measure on, chosen as `execute` chooses it: `cuda` where no GPU is visible is refused."""
    try:
        import torch  # noqa: F401 (only whether it imports)
    except ImportError as err:
        raise UsageError("measuring a roofline needs torch: pip install 'specbench[run]'") from err
    from specbench.run.request import choose_device as choose

    return choose(requested)


def cpu_cache_bytes() -> int:
    """The largest cache sysfs lists for cpu0 (the last level), or 32 MiB where sysfs says nothing."""
    sizes = []
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=CPU_CACHE_FALLBACK_BYTES)


def _nvml_facts(uuid: str | None) -> dict[str, Any]:
    """Driver version and enforced power limit of the GPU with this UUID, where NVML answers."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVML here: those facts stay unknown
        return {}
    try:
        facts: dict[str, Any] = {"driver_version": _text(pynvml.nvmlSystemGetDriverVersion())}
        if uuid:
            handle = pynvml.nvmlDeviceGetHandleByUUID(uuid.encode() if isinstance(uuid, str) else uuid)
            facts["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
        return facts
    except Exception:
        return {}
    finally:
        pynvml.nvmlShutdown()


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def gpu_uuid(torch: Any, device: Any) -> str | None:
    """The GPU's UUID as NVML writes it ('GPU-...'), or None."""
    raw = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    if raw is None:
        return None
    text = str(raw)
    return text if text.startswith("GPU-") else f"GPU-{text}"


def identify(torch: Any, device: Any) -> DeviceIdentity:
    common: dict[str, Any] = {
        "torch_version": str(torch.__version__),
        "cpu_model": host().cpu_model,
        "cpu_threads": torch.get_num_threads(),
        "hostname": host().hostname,
    }
    if device.type != "cuda":
        return DeviceIdentity(kind="cpu", name=common["cpu_model"] or "cpu", vendor="cpu", **common)
    props = torch.cuda.get_device_properties(device)
    uuid = gpu_uuid(torch, device)
    facts = {} if torch.version.hip else _nvml_facts(uuid)
    return DeviceIdentity(
        kind="cuda",
        name=props.name,
        vendor="AMD" if torch.version.hip else "NVIDIA",
        uuid=uuid,
        compute_capability=f"{props.major}.{props.minor}",
        multiprocessors=props.multi_processor_count,
        memory_bytes=props.total_memory,
        l2_cache_bytes=getattr(props, "L2_cache_size", None),
        driver_version=facts.get("driver_version"),
        power_limit_w=facts.get("power_limit_w"),
        cuda_version=torch.version.hip or torch.version.cuda,
        cudnn_version=str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
        **common,
    )


def cache_and_free_bytes(torch: Any, device: Any) -> tuple[int, float]:
    """Last-level cache and free memory of the device, for sizing rotated input sets."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        props = torch.cuda.get_device_properties(device)
        return int(getattr(props, "L2_cache_size", 0) or 64 * 2**20), float(free)
    available = meminfo_bytes("MemAvailable")
    return cpu_cache_bytes(), float(HOST_FREE_FALLBACK_BYTES if available is None else available)
