"""MLPerf ResNet-50's optimizer pieces: the batch-norm span, LARS and its schedule.

LARS and the warm-up plus polynomial-decay schedule are those of `lars.py` (MLPerf's reference
form, shared with the resnet50 executor): for each weight tensor the step is scaled by the trust
ratio eta * ||w|| / (||g|| + weight_decay * ||w|| + epsilon) with eta = 0.001, momentum on the
scaled update; batch-norm and bias parameters (one dimension) take a plain momentum step without
weight decay. The schedule rises linearly over the warm-up steps, then decays from the base to the
end learning rate as (1 - t / decay_steps) ** power and stays at the end rate after that.
"""

from __future__ import annotations

from typing import Any

import torch

from specbench.errors import UsageError
from specbench.workloads.lars import TRUST_COEFFICIENT, Lars, Schedule

__all__ = ["TRUST_COEFFICIENT", "Lars", "Schedule", "batch_norm_span"]


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
