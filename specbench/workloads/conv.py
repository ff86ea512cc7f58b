"""Pieces the convolutional executors (ResNet-50, extreme weather) share: options, backends, memory format, wrapping."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from specbench.errors import UsageError
from specbench.run.compilecache import describe, use_compile_cache
from specbench.run.config import Option, Value
from specbench.run.context import RunContext


def workers_per_process() -> int:
    """The cores this process may use (its CPU affinity, shared by the node's ranks), less one for training."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    local = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))
    return max(1, cores // local - 1)


@dataclass(frozen=True)
class WorkersOption(Option):
    """`num_workers`: from the cores per process on an accelerator; 0 on a CPU run, whose cores train."""

    def default(self, device: str) -> Value | None:
        return workers_per_process() if device == "cuda" else 0


@dataclass(frozen=True)
class KernelTuningOption(Option):
    """`kernel_tuning`: tunes the kernels torch.compile generates, so it needs a compile mode."""

    def refuse(self, value: Value, device: str, settings: dict[str, Any]) -> str | None:
        if value != "none" and (settings.get("compile_mode") or "none") == "none":
            return "kernel_tuning tunes torch.compile's kernels: set compile_mode too (e.g. --set compile_mode=default)"
        return None


CONV_OPTIONS = {
    "precision": Option(
        "precision", "parallelism_precision", "numeric precision", ("fp32", "tf32", "bf16", "fp16"), "fp32", "bf16"
    ),
    "memory_format": Option(
        "memory_format",
        "parallelism_precision",
        "tensor layout",
        ("contiguous", "channels_last"),
        "contiguous",
        "channels_last",
    ),
    "compile_mode": Option(
        "compile_mode",
        "framework",
        "torch.compile mode",
        ("none", "default", "max-autotune", "reduce-overhead"),
        "none",
        "none",
    ),
    "kernel_tuning": KernelTuningOption(
        "kernel_tuning",
        "framework",
        "with compile_mode other than none, how inductor tunes its generated kernels: none (its heuristics) or "
        "coordinate-descent (each normalisation and elementwise kernel's block sizes timed on the device at "
        "compile time; minutes on the first run, kept in the compile cache for the next: docs/execute.md)",
        ("none", "coordinate-descent"),
        "none",
        "none",
    ),
    "num_workers": WorkersOption(
        "num_workers", "framework", "data-loading workers for --data (default: cores per process - 1 on a GPU)"
    ),
}


def set_backends(device: str, precision: str) -> None:
    """TF32 only when asked for, cuDNN autotuning on CUDA."""
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.benchmark = True


def memory_format(ctx: RunContext) -> torch.memory_format:
    return torch.channels_last if ctx.settings.get("memory_format") == "channels_last" else torch.contiguous_format


def wrap_model(ctx: RunContext, model: torch.nn.Module) -> torch.nn.Module:
    """DistributedDataParallel across the run's processes, then torch.compile if the settings ask for it."""
    if ctx.dist.active:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model, device_ids=[ctx.dist.local_rank] if ctx.device == "cuda" else None)
    compile_mode = ctx.settings.get("compile_mode") or "none"
    # build_configs refused this already; a context built by hand is checked here
    problem = CONV_OPTIONS["kernel_tuning"].refuse(ctx.settings.get("kernel_tuning", "none"), ctx.device, ctx.settings)
    if problem is not None:
        raise UsageError(problem)
    if compile_mode != "none":
        ctx.progress.message(describe(*use_compile_cache()))
        if ctx.settings.get("kernel_tuning") == "coordinate-descent":
            # torch.compile takes either a mode or options: the mode's own options, then the tuning on top.
            import torch._inductor as inductor

            options: dict[str, Any] = {**inductor.list_mode_options(compile_mode), "coordinate_descent_tuning": True}
            model = torch.compile(model, options=options)  # type: ignore[assignment]
        else:
            model = torch.compile(model, mode=None if compile_mode == "default" else compile_mode)  # type: ignore[assignment]
    return model
