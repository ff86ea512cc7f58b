"""bf16 weights with fp32 master copies, as Megatron-LM's --bf16 keeps them (`--set weights=bf16`).

The forward and backward read the model's bf16 weights, so autocast has no fp32 weight to cast at each
matrix product; the optimizer updates an fp32 copy of every parameter, into which each micro-batch's bf16
gradients are summed in fp32 (Megatron's default for bf16, its gradient accumulation in fp32), and the
updated weights are rounded back to bf16 after each step. Gradient clipping sees the fp32 gradients.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import torch


class MasterWeights:
    """The fp32 copy of a model whose own weights are turned to bf16; `optimized` is what the optimizer updates."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.optimized = copy.deepcopy(model).float()
        """The fp32 model: the same structure (and tied weights), so the optimizer groups its parameters by name."""
        model.to(torch.bfloat16)
        self.weights: list[torch.Tensor] = list(model.parameters())
        self.masters: list[torch.Tensor] = list(self.optimized.parameters())
        self.grads = [torch.zeros_like(m) for m in self.masters]
        """The fp32 gradients, kept between steps; each master's .grad is its buffer from the first micro-batch on."""

    def parameters(self) -> Iterator[torch.Tensor]:
        """The fp32 parameters, for gradient clipping."""
        return iter(self.masters)

    @torch.no_grad()
    def take_gradients(self, first: bool) -> None:
        """Move the micro-batch's bf16 gradients into the fp32 ones: replace them after the first micro-batch of
        a step, add to them after the others; a parameter with no gradient counts as zero."""
        pairs = [(g, w.grad) for g, w in zip(self.grads, self.weights, strict=True) if w.grad is not None]
        if first:
            for master, grad in zip(self.masters, self.grads, strict=True):
                master.grad = grad  # bound again each step: a zero_grad(set_to_none=True) must not unbind them
            if len(pairs) < len(self.grads):
                torch._foreach_zero_(self.grads)
        if pairs:
            into, new = (list(side) for side in zip(*pairs, strict=True))
            if first:
                torch._foreach_copy_(into, new)
            else:
                torch._foreach_add_(into, new)  # bf16 added into fp32 in place
        for weight in self.weights:
            weight.grad = None

    @torch.no_grad()
    def publish(self) -> None:
        """Round the updated fp32 weights into the model's bf16 ones."""
        torch._foreach_copy_(self.weights, self.masters)
