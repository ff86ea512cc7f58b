"""Training pieces every workload shares that need torch: precision, parameter groups, the optimizer step, step timing."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

Params = list[torch.nn.Parameter]


def mixed_precision(device: str, precision: str) -> tuple[Callable[[], Any], Any]:
    """An autocast context factory for bf16/fp16 (a no-op otherwise) and a GradScaler for fp16."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    autocast = (lambda: torch.autocast(device, dtype=dtype)) if dtype else contextlib.nullcontext
    scaler = torch.amp.GradScaler(device) if precision == "fp16" else None
    return autocast, scaler


def optimizer_kernel(fused: bool) -> dict[str, bool]:
    """The optimizer's implementation: one fused kernel, else the foreach kernels."""
    return {"fused": True} if fused else {"foreach": True}


def split_decay(model: torch.nn.Module, decay_vectors: bool = False) -> tuple[Params, Params]:
    """(matrices and embeddings, which take weight decay; batch-norm, layer-norm and bias vectors, which do not).

    With `decay_vectors` every parameter takes weight decay (the second list is empty).
    """
    decay: Params = []
    no_decay: Params = []
    for param in model.parameters():
        (no_decay if param.ndim <= 1 and not decay_vectors else decay).append(param)
    return decay, no_decay


def decay_groups(model: torch.nn.Module, weight_decay: float, decay_vectors: bool = False) -> list[dict[str, Any]]:
    """Two parameter groups: weight decay on matrices and embeddings, none on vectors (unless `decay_vectors`)."""
    decay, no_decay = split_decay(model, decay_vectors)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def set_learning_rate(optimizer: torch.optim.Optimizer, value: float) -> None:
    """One learning rate for every parameter group (each schedule here gives one rate per step)."""
    for group in optimizer.param_groups:
        group["lr"] = value


def backward_step(loss: torch.Tensor, optimizer: torch.optim.Optimizer, scaler: Any) -> None:
    """Clear the gradients, back-propagate `loss` (scaled under fp16) and take the optimizer step."""
    optimizer.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()


class StepTimer:
    """Per-step device time without synchronising inside the loop: CUDA events, or the monotonic clock on CPU."""

    def __init__(self, device: str) -> None:
        self.cuda = device == "cuda"
        self.marks: list[tuple[Any, Any]] = []
        self._start: Any = None

    def _now(self) -> Any:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.monotonic()

    def start(self) -> None:
        self._start = self._now()

    def stop(self) -> None:
        self.marks.append((self._start, self._now()))

    def median_s(self) -> float | None:
        """Call after a synchronize."""
        if not self.marks:
            return None
        if self.cuda:
            return statistics.median(a.elapsed_time(b) / 1000.0 for a, b in self.marks)
        return statistics.median(b - a for a, b in self.marks)
