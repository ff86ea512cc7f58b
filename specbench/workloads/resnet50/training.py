"""ResNet-50's training state, step and evaluation, shared by the resnet50 and mlperf-resnet50 executors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from specbench.run.context import RunContext
from specbench.workloads.resnet50.datapath import eval_batches
from specbench.workloads.training import backward_step


@dataclass
class State:
    """One run's model, optimizer, loss, precision and data (loaders, or one synthetic batch for throughput)."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    criterion: torch.nn.Module
    scaler: Any
    autocast: Any
    memory_format: torch.memory_format
    train: Any
    val: Any
    batch_size: int
    steps_per_epoch: int
    synthetic_batch: tuple[torch.Tensor, torch.Tensor] | None


def train_step(state: State, images: torch.Tensor, labels: torch.Tensor, device: torch.device) -> torch.Tensor:
    """One optimizer step on a batch (moved to the device in the run's memory format); returns its loss."""
    images = images.to(device, non_blocking=True).contiguous(memory_format=state.memory_format)
    labels = labels.to(device, non_blocking=True)
    with state.autocast():
        loss = state.criterion(state.model(images), labels)
    backward_step(loss, state.optimizer, state.scaler)
    return loss


def evaluate(state: State, device: torch.device, ctx: RunContext) -> float:
    """Top-1 accuracy over the whole validation split, summed over every process."""
    state.model.eval()
    correct = total = 0
    with torch.no_grad(), state.autocast():
        for images, labels in eval_batches(state.val):
            images = images.to(device, non_blocking=True).contiguous(memory_format=state.memory_format)
            labels = labels.to(device, non_blocking=True)
            correct += int((state.model(images).argmax(1) == labels).sum())
            total += labels.numel()
    state.model.train()
    summed_correct, summed_total = ctx.dist.all_sum([float(correct), float(total)])
    return summed_correct / max(1.0, summed_total)
