"""MLPerf ResNet-50's optimizer pieces: LARS, the warm-up plus polynomial-decay schedule, the batch-norm span.

LARS follows MLPerf's reference: for each weight tensor the step is scaled by the trust ratio
eta * ||w|| / (||g|| + weight_decay * ||w|| + epsilon) with eta = 0.001, momentum on the scaled
update; batch-norm and bias parameters (one dimension) take a plain momentum step without weight
decay. The schedule rises linearly over the warm-up steps, then decays from the base to the end
learning rate as (1 - t / decay_steps) ** power and stays at the end rate after that.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

from specbench.errors import UsageError

TRUST_COEFFICIENT = 0.001
"""eta of MLPerf's LARS reference; MLPerf logs no key for it."""


@dataclass(frozen=True)
class Schedule:
    """Learning rate per optimizer step: linear warm-up, then polynomial decay to `end` over `decay_steps`."""

    base: float
    end: float
    power: float
    warmup_steps: int
    decay_steps: int

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.decay_steps

    def rate(self, step: int) -> float:
        if step < self.warmup_steps:
            return self.base * (step + 1) / self.warmup_steps
        done = min(step - self.warmup_steps, self.decay_steps) / self.decay_steps
        return (self.base - self.end) * (1.0 - done) ** self.power + self.end


def split_decay(model: torch.nn.Module) -> tuple[list[torch.nn.Parameter], list[torch.nn.Parameter]]:
    """(weights with weight decay, batch-norm and bias parameters without it)."""
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for param in model.parameters():
        (no_decay if param.ndim <= 1 else decay).append(param)
    return decay, no_decay


class Lars(torch.optim.Optimizer):
    """Layer-wise adaptive rate scaling with momentum, MLPerf's ResNet-50 reference form."""

    def __init__(self, params: Iterable[Any], lr: float, momentum: float, epsilon: float = 0.0) -> None:
        if lr < 0 or momentum < 0 or epsilon < 0:
            raise ValueError(f"LARS needs lr, momentum and epsilon >= 0, found {lr}, {momentum}, {epsilon}")
        super().__init__(params, {"lr": lr, "momentum": momentum, "epsilon": epsilon, "weight_decay": 0.0})

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            lr, momentum, decay, eps = group["lr"], group["momentum"], group["weight_decay"], group["epsilon"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                if param.ndim > 1:
                    w_norm, g_norm = torch.linalg.vector_norm(param), torch.linalg.vector_norm(grad)
                    trust = TRUST_COEFFICIENT * w_norm / (g_norm + decay * w_norm + eps)
                    trust = torch.where((w_norm > 0) & (g_norm > 0), trust, torch.ones_like(trust))
                    update = (grad + decay * param) * trust
                else:
                    update = grad + decay * param if decay else grad
                state = self.state[param]
                buffer = state.get("momentum_buffer")
                if buffer is None:
                    buffer = state["momentum_buffer"] = torch.zeros_like(param)
                buffer.mul_(momentum).add_(update, alpha=lr)
                param.sub_(buffer)
        return loss


class _SpanBatchNorm2d(torch.nn.BatchNorm2d):
    """BatchNorm2d whose training statistics are taken over chunks of `span` images of the batch."""

    span: int

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or x.shape[0] <= self.span:
            return super().forward(x)
        return torch.cat([super(_SpanBatchNorm2d, self).forward(chunk) for chunk in x.split(self.span)])


def batch_norm_span(local_batch: int, span: Any, model: torch.nn.Module | None = None) -> None:
    """Check that batch-norm statistics can span `span` images of a per-process batch; apply it to `model`.

    The span must divide the per-process batch (statistics over the whole of it, or over equal
    parts); a span across processes would need synchronized batch norm, which this executor lacks.
    """
    if not isinstance(span, int) or isinstance(span, bool) or span < 1:
        raise UsageError(f"model_bn_span must be a whole number of images >= 1, found {span!r}")
    if span > local_batch or local_batch % span:
        raise UsageError(
            f"model_bn_span {span} must divide the per-process batch of {local_batch} images "
            f"(global_batch_size / processes): --set model_bn_span={local_batch}"
        )
    if model is None or span == local_batch:
        return
    for module in model.modules():
        if type(module) is torch.nn.BatchNorm2d:
            module.__class__ = _SpanBatchNorm2d
            module.span = span  # type: ignore[assignment]
