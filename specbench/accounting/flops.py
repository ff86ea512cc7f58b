"""Analytical model FLOPs: the counts specs state and scores use.

Model FLOPs count the arithmetic the model needs (forward and backward), never work redone by
activation recomputation; hardware FLOPs, where reported, are labelled separately.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GptShape:
    """A GPT-2-style decoder: learned positions, tied input and output embeddings."""

    hidden: int
    layers: int
    heads: int
    sequence: int
    vocab: int = 50257

    def parameters(self) -> int:
        """All trainable parameters, as transformers' GPT2LMHeadModel counts them."""
        h = self.hidden
        per_layer = 12 * h * h + 13 * h
        return self.layers * per_layer + self.vocab * h + self.sequence * h + 2 * h

    def matmul_parameters(self) -> int:
        """Parameters that take part in a matrix product per token (all but position embeddings and norms)."""
        return self.parameters() - self.sequence * self.hidden


def gpt_train_flops_per_token(shape: GptShape) -> float:
    """6 x parameters (forward and backward matrix products) plus attention scores and values.

    Attention: 2 x 2 x sequence x hidden per layer forward (QK^T and AV), tripled for backward,
    i.e. 12 x layers x hidden x sequence per token. No credit for recomputation.
    """
    return 6.0 * shape.matmul_parameters() + 12.0 * shape.layers * shape.hidden * shape.sequence
