"""The ResNet-50 executor: torchvision's resnet50 (v1.5) trained to a target quality or timed for throughput.

Data: real ImageNet from `--data` (decoded and augmented on the GPU or in CPU workers, see
datapath.py), the generated learnable set of the smoke profile, or synthetic tensors on the device for throughput runs (CARAML's way; such results
say synthetic and are never ranked for quality). Precision (fp32, tf32, bf16, fp16), memory
format and torch.compile are options recorded in layers 6 and 7.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torchvision

from specbench.data.imagedata import EVAL_SEED, TRAIN_SEED, TensorBatches, generate_images, tensor_sha256
from specbench.data.imagenet import scan_tree
from specbench.errors import UsageError
from specbench.run.base import RunOutcome
from specbench.run.config import RunConfig
from specbench.run.context import RunContext
from specbench.run.loop import train_to_quality
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import ThroughputResult
from specbench.workloads import lars
from specbench.workloads.conv import CONV_OPTIONS, mixed_precision, set_backends, set_learning_rate, wrap_model
from specbench.workloads.conv import memory_format as conv_memory_format
from specbench.workloads.resnet50.datapath import (
    DATA_OPTIONS,
    check_data_settings,
    close_loaders,
    eval_batches,
    image_loaders,
    train_batches,
)

OPTIONS = {**CONV_OPTIONS, **DATA_OPTIONS}
DEFAULTS: dict[str, Any] = {
    "optimizer": "sgd",
    "momentum": 0.875,
    "nesterov": False,
    "weight_decay": 3.0517578125e-05,
    "weight_decay_on_bn": False,
    "label_smoothing": 0.1,
    "lr_schedule": "cosine",
    "warmup": "linear",
    "warmup_epochs": 0,
    "zero_init_residual": True,
}


def _hp(ctx: RunContext, name: str) -> Any:
    return ctx.hyperparameters.get(name, DEFAULTS.get(name))


@dataclass
class State:
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


class ResNet50Executor:
    name = "resnet50"
    options = OPTIONS
    defaults = DEFAULTS

    def check(self, resolved: ResolvedSpec, device: str, synthetic: bool, data: Path | None) -> None:
        spec = resolved.spec
        optimizer = spec.hyperparameters.get("optimizer", spec.hyperparameters.get("opt_name", "sgd"))
        if optimizer not in ("sgd", "lars"):
            raise UsageError(
                f"the resnet50 executor trains with SGD or MLPerf's LARS; spec {spec.id!r} asks for optimizer {optimizer!r}"
            )
        self.check_data(resolved, synthetic, data)

    def check_data(self, resolved: ResolvedSpec, synthetic: bool, data: Path | None) -> None:
        """Refuse data the spec's kind and profile cannot run on, naming the fix."""
        spec = resolved.spec
        dataset = spec.workload.dataset
        if spec.kind == "time_to_quality" and synthetic:
            raise UsageError("--synthetic gives throughput only; a time_to_quality run needs real or generated data")
        if spec.kind == "time_to_quality" and not dataset.synthetic and data is None:
            raise UsageError(
                f"spec {spec.id!r} at profile {resolved.profile!r} trains on {dataset.name}: give its ImageFolder "
                "tree with --data PATH (train/ and val/), or run --profile smoke on generated data"
            )
        if data is not None and not data.is_dir():
            raise UsageError(f"--data {data}: no such folder")
        if data is not None and spec.kind == "time_to_quality" and not synthetic:
            scan_tree(data)

    def check_config(self, resolved: ResolvedSpec, config: RunConfig) -> None:
        check_data_settings(resolved, config)

    def defaults_for(self, resolved: ResolvedSpec) -> dict[str, Any]:
        """The hyperparameters used where the spec states none: MLPerf's LARS has its own, not SGD's."""
        return lars.DEFAULTS if lars.uses_lars(resolved.spec.hyperparameters) else DEFAULTS

    def dataset_facts(
        self, resolved: ResolvedSpec, config: RunConfig, data: Path | None, synthetic: bool
    ) -> dict[str, Any]:
        dataset = resolved.spec.workload.dataset
        if resolved.spec.kind == "throughput" or synthetic:
            return {
                "name": "synthetic-random",
                "synthetic": True,
                "sample_shape": dataset.sample_shape,
                "num_classes": dataset.num_classes,
            }
        if data is not None:
            tree = scan_tree(data)
            return {
                "name": dataset.name,
                "path": str(data.resolve()),
                "train_samples": len(tree.train),
                "eval_samples": len(tree.val),
                "val_layout": tree.val_layout,
                "listing_sha256": tree.listing_sha256(),
                "synthetic": False,
            }
        shape, classes = dataset.sample_shape or [3, 32, 32], dataset.num_classes or 10
        x, y = generate_images(dataset.train_samples, shape, classes, TRAIN_SEED)
        vx, vy = generate_images(dataset.eval_samples, shape, classes, EVAL_SEED)
        return {
            "name": dataset.name,
            "generator": "specbench.data.imagedata.generate_images",
            "train_samples": dataset.train_samples,
            "eval_samples": dataset.eval_samples,
            "sha256": tensor_sha256(x, y, vx, vy),
            "synthetic": True,
        }

    def setup(self, ctx: RunContext) -> State:
        torch.manual_seed(ctx.seed)
        spec = ctx.resolved.spec
        device = torch.device(ctx.device)
        precision = ctx.settings.get("precision") or "fp32"
        set_backends(ctx.device, precision)
        dataset = spec.workload.dataset
        classes = dataset.num_classes or 1000
        memory_format = conv_memory_format(ctx)
        model = torchvision.models.resnet50(
            num_classes=classes, zero_init_residual=bool(_hp(ctx, "zero_init_residual"))
        )
        model = model.to(device, memory_format=memory_format)
        batch = int(ctx.hyperparameters["global_batch_size"])
        local_batch = batch // ctx.dist.world
        optimizer = self.configure(ctx, model)
        criterion = torch.nn.CrossEntropyLoss(label_smoothing=float(_hp(ctx, "label_smoothing")))
        autocast, scaler = mixed_precision(ctx.device, precision)
        model = wrap_model(ctx, model)
        train = val = synthetic = None
        if spec.kind == "throughput" or ctx.synthetic:
            shape = dataset.sample_shape or [3, 224, 224]
            x = torch.randn(local_batch, *shape, device=device).contiguous(memory_format=memory_format)
            y = torch.randint(0, classes, (local_batch,), device=device)
            synthetic = (x, y)
            steps_per_epoch = max(1, dataset.train_samples // batch)
        elif ctx.data is not None:
            train, val = image_loaders(ctx, local_batch)
            steps_per_epoch = len(train)
        else:
            shape = dataset.sample_shape or [3, 32, 32]
            x, y = generate_images(dataset.train_samples, shape, classes, TRAIN_SEED)
            vx, vy = generate_images(dataset.eval_samples, shape, classes, EVAL_SEED)
            train = TensorBatches(x, y, batch, drop_last=True, seed=ctx.seed, rank=ctx.dist.rank, world=ctx.dist.world)
            val = TensorBatches(vx, vy, batch, drop_last=False, seed=0, rank=ctx.dist.rank, world=ctx.dist.world)
            steps_per_epoch = len(train)
        state = State(
            model, optimizer, criterion, scaler, autocast, memory_format, train, val, batch, steps_per_epoch, synthetic
        )
        if spec.kind == "throughput":
            assert spec.throughput is not None
            for step in range(spec.throughput.warmup_steps):
                assert synthetic is not None
                _step(state, synthetic[0], synthetic[1], device)
                ctx.progress.update(
                    stage=f"warm-up {step + 1}/{spec.throughput.warmup_steps}",
                    done=step + 1,
                    total=None,
                    rate=None,
                    unit="img",
                    power_w=ctx.power_now_w(),
                )
        return state

    def configure(self, ctx: RunContext, model: torch.nn.Module) -> torch.optim.Optimizer:
        """The optimizer of the (unwrapped) model; a subclass may also adapt the model's layers here."""
        return _optimizer(ctx, model)

    def train(self, ctx: RunContext, state: State) -> RunOutcome:
        if ctx.resolved.spec.kind == "throughput":
            return _throughput(ctx, state)
        try:
            return _time_to_quality(ctx, state)
        finally:
            close_loaders(state.train, state.val)


def _optimizer(ctx: RunContext, model: torch.nn.Module) -> torch.optim.Optimizer:
    if lars.uses_lars(ctx.hyperparameters):
        return lars.optimizer(model, ctx.hyperparameters)
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for _name, param in model.named_parameters():
        (no_decay if (param.ndim <= 1 and not _hp(ctx, "weight_decay_on_bn")) else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": float(_hp(ctx, "weight_decay"))},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    lr = float(ctx.hyperparameters["base_learning_rate"])
    kernel = {"fused": True} if ctx.device == "cuda" else {"foreach": True}
    return torch.optim.SGD(
        groups, lr=lr, momentum=float(_hp(ctx, "momentum")), nesterov=bool(_hp(ctx, "nesterov")), **kernel
    )


def _step(state: State, images: torch.Tensor, labels: torch.Tensor, device: torch.device) -> torch.Tensor:
    images = images.to(device, non_blocking=True).contiguous(memory_format=state.memory_format)
    labels = labels.to(device, non_blocking=True)
    with state.autocast():
        loss = state.criterion(state.model(images), labels)
    state.optimizer.zero_grad(set_to_none=True)
    if state.scaler is not None:
        state.scaler.scale(loss).backward()
        state.scaler.step(state.optimizer)
        state.scaler.update()
    else:
        loss.backward()
        state.optimizer.step()
    return loss


def _learning_rate(ctx: RunContext, step: int, total_steps: int, steps_per_epoch: int) -> float:
    if lars.uses_lars(ctx.hyperparameters):
        return lars.learning_rate(ctx.hyperparameters, step, steps_per_epoch)
    base = float(ctx.hyperparameters["base_learning_rate"])
    warmup = int(float(_hp(ctx, "warmup_epochs")) * steps_per_epoch)
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return 0.5 * base * (1 + math.cos(math.pi * min(1.0, progress)))


def _evaluate(state: State, device: torch.device, ctx: RunContext) -> float:
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


def _time_to_quality(ctx: RunContext, state: State) -> RunOutcome:
    assert ctx.resolved.spec.budget.epochs is not None
    device = torch.device(ctx.device)
    total_steps = math.ceil(ctx.resolved.spec.budget.epochs) * state.steps_per_epoch

    def step(batch: tuple[torch.Tensor, torch.Tensor], index: int) -> None:
        set_learning_rate(state.optimizer, _learning_rate(ctx, index, total_steps, state.steps_per_epoch))
        _step(state, batch[0], batch[1], device)

    return train_to_quality(
        ctx,
        batches=lambda epoch: train_batches(state.train, epoch),
        steps_per_epoch=state.steps_per_epoch,
        batch_size=state.batch_size,
        unit="img",
        step=step,
        evaluate=lambda: _evaluate(state, device, ctx),
    )


def _throughput(ctx: RunContext, state: State) -> RunOutcome:
    spec = ctx.resolved.spec
    assert spec.throughput is not None and state.synthetic_batch is not None
    c = ctx.log.constants
    device = torch.device(ctx.device)
    steps = spec.throughput.measure_steps
    images, labels = state.synthetic_batch
    ctx.run_start()
    ctx.log.start(c.BLOCK_START, metadata={"first_epoch_num": 1, "samples_count": steps * state.batch_size})
    t0 = time.monotonic()
    report_every = max(1, steps // 5)
    for step in range(1, steps + 1):
        _step(state, images, labels, device)
        if step % report_every == 0 or step == steps:
            ctx.sync()
            rate = step * state.batch_size / max(1e-9, time.monotonic() - t0)
            ctx.progress.update(
                stage=f"step {step}/{steps}", done=step, total=steps, rate=rate, unit="img", power_w=ctx.power_now_w()
            )
    ctx.log.end(c.BLOCK_STOP, metadata={"first_epoch_num": 1, "samples_count": steps * state.batch_size})
    ctx.run_stop(success=True)
    duration = (ctx.stopped_mono or 0) - (ctx.started_mono or 0)
    samples = steps * state.batch_size
    return RunOutcome(
        status="success",
        samples=samples,
        steps=steps,
        epochs=samples / spec.workload.dataset.train_samples,
        reached=True,
        throughput=ThroughputResult(
            warmup_steps=spec.throughput.warmup_steps,
            timed_steps=steps,
            samples_per_s=samples / duration if duration > 0 else 0.0,
        ),
    )


EXECUTOR = ResNet50Executor()
