"""One llm-gpt training step: gradient accumulation over micro-batches, clipping, the scaled optimizer step;
the held-out loss; the warm-up plus cosine learning rate."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from specbench.data import tokens as tokdata
from specbench.run.training import warmup_cosine
from specbench.workloads.llm_gpt.data import Batch, to_device
from specbench.workloads.llm_gpt.master import MasterWeights
from specbench.workloads.llm_gpt.plan import DEFAULTS, Plan
from specbench.workloads.training import set_learning_rate


@dataclass
class State:
    """A run's model, optimizer, precision, loss and data; `step` counts optimizer steps (warm-up included)."""

    plan: Plan
    model: torch.nn.Module
    optimizer: torch.optim.AdamW
    scaler: Any
    autocast: Callable[[], Any]
    loss_fn: Callable[..., torch.Tensor]
    batches: Iterator[Batch]
    held_out: tokdata.Windows | None
    train_tokens: int
    total_steps: int
    step: int = 0
    wrapped: torch.nn.Module | None = None
    master: MasterWeights | None = None
    """The fp32 master weights the optimizer updates, where the model's own are bf16 (weights=bf16)."""


def gradient_sync(state: State, last: bool) -> Any:
    """Skip the all-reduce on all but the last micro-batch of a step (DDP's no_sync, FSDP's requires_gradient_sync)."""
    wrapped = state.wrapped
    if wrapped is None:
        return contextlib.nullcontext()
    if state.plan.parallelism == "fsdp":
        wrapped.set_requires_gradient_sync(last)  # type: ignore[operator]
        return contextlib.nullcontext()
    return contextlib.nullcontext() if last else wrapped.no_sync()  # type: ignore[operator]


def forward_loss(state: State, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean next-token loss of one micro-batch, through the DDP or FSDP wrapper where there is one."""
    if state.wrapped is not None:
        return state.wrapped(inputs, targets)
    model: Any = state.model
    hidden = model.transformer(input_ids=inputs, use_cache=False).last_hidden_state
    return state.loss_fn(model.lm_head, hidden, targets, state.plan.shape.vocab)


def train_step(state: State, hyperparameters: dict[str, Any]) -> torch.Tensor:
    """One optimizer step over gradient-accumulation micro-batches; returns the mean loss (on the device)."""
    plan = state.plan
    set_learning_rate(state.optimizer, learning_rate(hyperparameters, state.step, state.total_steps))
    total: torch.Tensor | None = None
    for index in range(plan.accumulation):
        inputs, targets = next(state.batches)
        with gradient_sync(state, index == plan.accumulation - 1):
            with state.autocast():
                loss = forward_loss(state, inputs, targets)
            scaled = loss / plan.accumulation
            (state.scaler.scale(scaled) if state.scaler is not None else scaled).backward()
        if state.master is not None:
            state.master.take_gradients(first=index == 0)
        total = loss.detach() if total is None else total + loss.detach()
    clip = float(hyperparameters.get("grad_clip_norm", DEFAULTS["grad_clip_norm"]))
    if state.scaler is not None:
        state.scaler.unscale_(state.optimizer)
    if clip > 0:
        optimized = state.master.parameters() if state.master is not None else state.model.parameters()
        torch.nn.utils.clip_grad_norm_(optimized, clip, foreach=True)
    if state.scaler is not None:
        state.scaler.step(state.optimizer)
        state.scaler.update()
    else:
        state.optimizer.step()
    if state.master is not None:
        state.master.publish()  # the fp32 gradients stay in place: the next step's first micro-batch replaces them
    else:
        state.optimizer.zero_grad(set_to_none=True)
    state.step += 1
    assert total is not None
    return total / plan.accumulation


def evaluate(state: State, device: str, limit_batches: int | None = None) -> float:
    """Mean next-token loss (nats) over the held-out windows."""
    assert state.held_out is not None
    state.model.eval()
    loss_sum, count = 0.0, 0
    with torch.no_grad(), state.autocast():
        for index, window in enumerate(state.held_out.in_order(state.plan.micro_batch)):
            if limit_batches is not None and index >= limit_batches:
                break
            inputs, targets = to_device(window, device)
            loss_sum += float(forward_loss(state, inputs, targets)) * targets.numel()
            count += targets.numel()
    state.model.train()
    return loss_sum / max(1, count)


def learning_rate(hyperparameters: dict[str, Any], step: int, total_steps: int) -> float:
    """Linear warm-up over lr_warmup_steps, then cosine decay to min_learning_rate at total_steps."""
    hp = {**DEFAULTS, **hyperparameters}
    return warmup_cosine(
        step,
        peak=float(hp["learning_rate"]),
        warmup_steps=int(hp["lr_warmup_steps"]),
        total_steps=total_steps,
        floor=float(hp["min_learning_rate"]),
    )
