"""The llm-gpt decoder (transformers' GPT2LMHeadModel) as a list of layers per token, for its byte model.

Token and position embeddings, then per block: layer norm, QKV projection, attention, output projection,
residual add, layer norm, MLP up-projection, GELU, down-projection, residual add; the final norm, the
output projection (tied to the token embedding) and the loss. tests/roofline checks the parameters
against the model.
"""

from __future__ import annotations

from dataclasses import replace

from specbench.accounting.flops import GptShape
from specbench.roofline.layers import Layer, elementwise, fc


def gpt_layers(
    shape: GptShape, padded_vocab: int, *, eager_attention: bool, dropout: bool, checkpointing: bool
) -> list[Layer]:
    """Every layer one token passes through, named as the model's modules are; `checkpointing` marks the blocks
    whose forward runs again in backward."""
    h = shape.hidden
    layers = [
        Layer("transformer.wte", "embedding", h, h),
        Layer("transformer.wpe", "embedding", h, h, params=shape.sequence * h),
        Layer("transformer.embed_add", "add", 2 * h, h),
    ]
    if dropout:
        layers.append(elementwise("transformer.drop", "dropout", h))
    for index in range(shape.layers):
        block = _block(f"transformer.h.{index}", shape, eager_attention, dropout)
        layers += [replace(layer, recomputed=True) for layer in block] if checkpointing else block
    layers.append(elementwise("transformer.ln_f", "ln", h, 2 * h))
    layers.append(fc("lm_head", h, padded_vocab, bias=False))
    layers.append(elementwise("loss", "loss", padded_vocab))
    return layers


def _block(prefix: str, shape: GptShape, eager_attention: bool, dropout: bool) -> list[Layer]:
    h = shape.hidden
    attention = [
        elementwise(f"{prefix}.ln_1", "ln", h, 2 * h),
        fc(f"{prefix}.attn.c_attn", h, 3 * h),
        Layer(f"{prefix}.attn.attention", "attention", 3 * h, h),
    ]
    if eager_attention:
        scores = shape.heads * shape.sequence
        attention.append(Layer(f"{prefix}.attn.scores", "scores", scores, scores))
    attention.append(fc(f"{prefix}.attn.c_proj", h, h))
    mlp = [
        elementwise(f"{prefix}.ln_2", "ln", h, 2 * h),
        fc(f"{prefix}.mlp.c_fc", h, 4 * h),
        elementwise(f"{prefix}.mlp.act", "gelu", 4 * h),
        fc(f"{prefix}.mlp.c_proj", 4 * h, h),
    ]
    layers: list[Layer] = []
    for part, name in ((attention, "attn"), (mlp, "mlp")):
        layers += part
        if dropout:
            layers.append(elementwise(f"{prefix}.{name}.resid_dropout", "dropout", h))
        layers.append(Layer(f"{prefix}.{name}.add", "add", 2 * h, h))
    return layers
