"""The LLM spec's model FLOPs against torch.utils.flop_counter, at the real shapes and through the executor's step."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from specbench.accounting.flops import GptShape, gpt_train_flops_per_token
from specbench.spec.loader import load_spec
from specbench.spec.resolve import resolve
from specbench.workloads.llm_gpt.data import random_batches
from specbench.workloads.llm_gpt.model import build_model, build_optimizer, output_loss
from specbench.workloads.llm_gpt.plan import Plan, hardware_flops_per_token
from specbench.workloads.llm_gpt.step import State, train_step

pytestmark = pytest.mark.needs("torch", "transformers")


def non_matmul_parameters(shape: GptShape) -> int:
    """Biases and layer norms: counted in 6 x parameters, but no matrix product touches them."""
    return shape.layers * 13 * shape.hidden + 2 * shape.hidden


def counted_step_flops_on_meta(shape: GptShape) -> float:
    """FlopCounterMode over forward and backward of GPT2LMHeadModel at `shape`, one sequence, on the meta device.

    The blocks are called directly: transformers' mask helpers read tensor values, which meta tensors lack.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=shape.vocab,
        n_positions=shape.sequence,
        n_embd=shape.hidden,
        n_layer=shape.layers,
        n_head=shape.heads,
        attn_implementation="eager",
        use_cache=False,
        bos_token_id=None,
        eos_token_id=None,
    )
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    tokens = torch.randint(0, shape.vocab, (1, shape.sequence), device="meta")
    counter = FlopCounterMode(display=False)
    with counter:
        t: Any = model.transformer
        hidden = t.wte(tokens) + t.wpe(torch.arange(shape.sequence, device="meta"))
        for block in t.h:
            hidden = block(hidden)
        logits = model.lm_head(t.ln_f(hidden))
        F.cross_entropy(logits.view(-1, shape.vocab).float(), tokens.view(-1)).backward()
    return float(counter.get_total_flops())


@pytest.mark.parametrize("variant", ["800M", "13B"])
def test_spec_flops_match_flop_counter_at_the_real_shape(variant: str) -> None:
    spec = resolve(load_spec("llm-gpt"), "official").spec
    entry = spec.workload.variants[variant]
    p = entry.params
    shape = GptShape(int(p["hidden"]), int(p["layers"]), int(p["heads"]), int(p["sequence_length"]), int(p["vocab"]))
    assert entry.flops_per_sample == gpt_train_flops_per_token(shape)
    counted = counted_step_flops_on_meta(shape) / shape.sequence
    assert counted == pytest.approx(entry.flops_per_sample - 6 * non_matmul_parameters(shape), rel=1e-12)
    assert abs(entry.flops_per_sample - counted) / counted < 5e-4


def test_tiny_smoke_variant_flops_match_the_formula() -> None:
    spec = resolve(load_spec("llm-gpt"), "smoke").spec
    tiny = spec.workload.variants["tiny"]
    shape = GptShape(128, 2, 4, 128, 256)
    assert tiny.params == {"hidden": 128, "layers": 2, "heads": 4, "sequence_length": 128, "vocab": 256}
    assert tiny.flops_per_sample == gpt_train_flops_per_token(shape)
    counted = counted_step_flops_on_meta(shape) / shape.sequence
    assert counted == pytest.approx(gpt_train_flops_per_token(shape) - 6 * non_matmul_parameters(shape), rel=1e-12)


def make_state(plan: Plan, hyperparameters: dict[str, Any]) -> State:
    torch.manual_seed(0)
    model = build_model(plan, hyperparameters, "cpu")
    optimizer = build_optimizer(model, hyperparameters, plan)
    batches = random_batches(plan, "cpu", seed=1)
    return State(plan, model, optimizer, None, contextlib.nullcontext, output_loss, batches, None, 10_000, 10)


def tiny_plan(**changes: Any) -> Plan:
    fields: dict[str, Any] = {
        "variant": "t",
        "shape": GptShape(hidden=32, layers=2, heads=2, sequence=16, vocab=200),
        "global_batch": 4,
        "micro_batch": 2,
        "accumulation": 2,
        "precision": "fp32",
        "attention": "eager",
        "compile_mode": "none",
        "checkpointing": False,
        "fused_optimizer": False,
        "padded_vocab": 200,
    }
    return Plan(**{**fields, **changes})


@pytest.mark.parametrize(
    ("padded_vocab", "checkpointing"), [(200, False), (256, False), (200, True), (256, True)], ids=str
)
def test_the_executor_step_does_exactly_the_counted_hardware_flops(padded_vocab: int, checkpointing: bool) -> None:
    """One optimizer step (two micro-batches) through the executor's own code, under FlopCounterMode."""
    plan = tiny_plan(padded_vocab=padded_vocab, checkpointing=checkpointing)
    state = make_state(plan, {"dropout": 0.0})
    counter = FlopCounterMode(display=False)
    with counter:
        train_step(state, {"dropout": 0.0})
    tokens = plan.global_batch * plan.shape.sequence
    assert counter.get_total_flops() == pytest.approx(hardware_flops_per_token(plan) * tokens, rel=1e-12)
    model_flops = gpt_train_flops_per_token(plan.shape) - 6 * non_matmul_parameters(plan.shape)
    extra = counter.get_total_flops() / tokens - model_flops
    recompute = 2 * (2 * 8 * 32 * 32 + 4 * 32 * 16)  # per layer: the block's forward up to the MLP's last matmul
    expected_extra = 6 * (padded_vocab - 200) * 32 + (recompute if checkpointing else 0)
    assert extra == pytest.approx(expected_extra, abs=1e-6)
