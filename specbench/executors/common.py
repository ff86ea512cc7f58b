"""Pieces the convolutional executors (ResNet-50, extreme weather) share: options, precision, model wrapping."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from specbench.executors.config import Option
from specbench.executors.context import RunContext

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
    "num_workers": Option("num_workers", "framework", "data-loading worker processes for --data", None, 0, 8),
}


def set_backends(device: str, precision: str) -> None:
    """TF32 only when asked for, cuDNN autotuning on CUDA."""
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.benchmark = True


def memory_format(ctx: RunContext) -> torch.memory_format:
    return torch.channels_last if ctx.settings.get("memory_format") == "channels_last" else torch.contiguous_format


def mixed_precision(device: str, precision: str) -> tuple[Callable[[], Any], Any]:
    """An autocast context factory for bf16/fp16 (a no-op otherwise) and a GradScaler for fp16."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    autocast = (lambda: torch.autocast(device, dtype=dtype)) if dtype else contextlib.nullcontext
    scaler = torch.amp.GradScaler(device) if precision == "fp16" else None
    return autocast, scaler


def wrap_model(ctx: RunContext, model: torch.nn.Module) -> torch.nn.Module:
    """DistributedDataParallel across the run's processes, then torch.compile if the settings ask for it."""
    if ctx.dist.active:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model, device_ids=[ctx.dist.local_rank] if ctx.device == "cuda" else None)
    compile_mode = ctx.settings.get("compile_mode") or "none"
    if compile_mode != "none":
        model = torch.compile(model, mode=None if compile_mode == "default" else compile_mode)  # type: ignore[assignment]
    return model
