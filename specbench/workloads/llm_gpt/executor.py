"""The LLM executor: CARAML's GPT training benchmark with a transformers GPT-2-style decoder.

The model is transformers' GPT2LMHeadModel built from the spec variant's shape with random
initialisation (nothing is downloaded), fp32 weights under bf16/fp16 autocast or fp32 (or bf16 weights
with fp32 master copies, master.py), trained with AdamW on next-token prediction (model.py, step.py).
Data: random tokens on the device (the official throughput profile, or --synthetic), a memory-mapped
token file (--data, see specbench.data.tokens), or the project's generated text (the smoke profile,
which trains to a loss target) (data.py). What a configuration decides, and the FLOPs it executes, are
in plan.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from specbench.data import tokens as tokdata
from specbench.errors import UsageError
from specbench.run.base import Executor, RunOutcome
from specbench.run.compilecache import describe, use_compile_cache
from specbench.run.config import RunConfig
from specbench.run.context import RunContext
from specbench.run.training import TimedSteps, timed_steps, warm_up
from specbench.spec.resolve import ResolvedSpec
from specbench.workloads.llm_gpt.data import data_kind, load_tokens, random_facts, run_data
from specbench.workloads.llm_gpt.master import MasterWeights
from specbench.workloads.llm_gpt.model import (
    attention_kernel,
    build_model,
    build_optimizer,
    compile_regions,
    data_parallel,
    restrict_sdpa,
)
from specbench.workloads.llm_gpt.plan import DEFAULTS, OPTIONS, Plan, hardware_flops_per_token, make_plan
from specbench.workloads.llm_gpt.step import State, evaluate, train_step
from specbench.workloads.training import StepTimer, mixed_precision


class LlmGptExecutor(Executor):
    """GPT training throughput, with the held-out loss at the spec's step cadence where the data has one."""

    name = "llm-gpt"
    options = OPTIONS
    defaults = DEFAULTS

    def __init__(self) -> None:
        self.device = "cpu"
        """The job's device, known from `check`: dataset_facts checks each configuration's plan against it."""

    def check(self, resolved: ResolvedSpec, device: str, synthetic: bool, data: Path | None) -> None:
        self.device = device
        spec = resolved.spec
        if spec.kind != "throughput" or spec.throughput is None:
            raise UsageError(f"the llm-gpt executor runs throughput specs; {spec.id!r} is {spec.kind}")
        if not spec.workload.variants:
            raise UsageError(f"spec {spec.id!r} has no workload.variants with the model shapes")
        optimizer = spec.hyperparameters.get("optimizer", "adamw")
        if optimizer != "adamw":
            raise UsageError(f"the llm-gpt executor trains with AdamW; spec {spec.id!r} asks for {optimizer!r}")
        if data is not None and synthetic:
            raise UsageError("give either --data PATH or --synthetic, not both")
        if data is not None:
            tokdata.open_token_file(data)
        data_kind(resolved, data, synthetic)

    def dataset_facts(
        self, resolved: ResolvedSpec, config: RunConfig, data: Path | None, synthetic: bool
    ) -> dict[str, Any]:
        """The data's facts. Being the first call that sees a configuration, it also checks it (make_plan)
        and records the derived gradient_accumulation_steps among the hyperparameters, so that the log
        and submission.yaml state it."""
        plan = make_plan(resolved, config, self.device)
        config.hyperparameters["gradient_accumulation_steps"] = plan.accumulation
        if data_kind(resolved, data, synthetic) == "random":
            return random_facts(plan)
        return load_tokens(resolved, data, plan.shape.sequence, plan.shape.vocab).facts

    def setup(self, ctx: RunContext) -> State:
        spec = ctx.resolved.spec
        assert spec.throughput is not None
        plan = make_plan(ctx.resolved, ctx.config, ctx.device)
        state = _build(ctx, plan, spec.throughput.warmup_steps + spec.throughput.measure_steps)
        _log_facts(ctx, plan)
        warm_up(ctx, spec.throughput.warmup_steps, lambda: train_step(state, ctx.hyperparameters), "token")
        if state.held_out is not None and plan.compile_mode != "none":
            evaluate(state, ctx.device, limit_batches=1)
        ctx.sync()
        return state

    def train(self, ctx: RunContext, state: State) -> RunOutcome:
        held_out = state.held_out is not None
        return timed_steps(
            ctx,
            TimedSteps(
                step=lambda: train_step(state, ctx.hyperparameters),
                samples_per_step=state.plan.tokens_per_step,
                train_samples=state.train_tokens,
                unit="token",
                describe=lambda loss: f" loss {float(loss):.3f}",
                clock=StepTimer(ctx.device),
                evaluate=(lambda: evaluate(state, ctx.device)) if held_out else None,
            ),
        )


def _build(ctx: RunContext, plan: Plan, total_steps: int) -> State:
    """Model, precision, compiled regions, data-parallel wrapper, optimizer and data of one run, seeded by it."""
    torch.manual_seed(ctx.seed)
    restrict_sdpa(plan.attention)
    model = build_model(plan, ctx.hyperparameters, ctx.device)
    master = MasterWeights(model) if plan.weights == "bf16" else None
    autocast, scaler = mixed_precision(ctx.device, plan.precision)
    if plan.compile_mode != "none":
        ctx.progress.message(describe(*use_compile_cache()))
    loss_fn = compile_regions(model, plan.compile_mode)
    wrapped = data_parallel(plan, model, loss_fn, ctx.dist, ctx.device) if ctx.dist.active else None
    optimized = master.optimized if master is not None else wrapped if wrapped is not None else model
    optimizer = build_optimizer(optimized, ctx.hyperparameters, plan)
    data = run_data(ctx, plan)
    return State(
        plan,
        model,
        optimizer,
        scaler,
        autocast,
        loss_fn,
        data.batches,
        data.held_out,
        data.train_tokens,
        total_steps,
        0,
        wrapped,
        master,
    )


def _log_facts(ctx: RunContext, plan: Plan) -> None:
    """The attention kernel, parameter count, padded vocabulary and executed FLOPs per token, in the log."""
    _, kernel = attention_kernel(plan.attention)
    ctx.log.event("attention_kernel", kernel)
    ctx.log.event("model_parameters", plan.shape.parameters())
    ctx.log.event("padded_vocab_size", plan.padded_vocab)
    ctx.log.event(
        "hardware_flops_per_sample",
        hardware_flops_per_token(plan),
        metadata={"unit": "FLOP per token", "counts": "matrix products executed, incl. recompute and padding"},
    )
