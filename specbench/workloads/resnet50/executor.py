"""The ResNet-50 executor: torchvision's resnet50 (v1.5) trained to a target quality or timed for throughput.

Data: real ImageNet from `--data` (decoded and augmented on the GPU or in CPU workers, see
datapath.py), the generated learnable set of the smoke profile, or synthetic tensors on the device for throughput runs (CARAML's way; such results
say synthetic and are never ranked for quality). Precision (fp32, tf32, bf16, fp16), memory
format and torch.compile are options recorded in layers 6 and 7.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.utils._triton as triton_support
import torchvision

from specbench.data.imagedata import EVAL_SEED, TRAIN_SEED, TensorBatches, generate_images, tensor_sha256
from specbench.data.imagenet import scan_tree
from specbench.errors import UsageError
from specbench.run.base import Executor, RunOutcome
from specbench.run.config import Option, RunConfig, Value
from specbench.run.context import RunContext
from specbench.run.loop import train_to_quality
from specbench.run.training import TimedSteps, timed_steps, warm_up, warmup_cosine
from specbench.spec.resolve import ResolvedSpec
from specbench.workloads import lars
from specbench.workloads.conv import CONV_OPTIONS, set_backends, wrap_model
from specbench.workloads.conv import memory_format as conv_memory_format
from specbench.workloads.resnet50.datapath import (
    DATA_OPTIONS,
    check_data_settings,
    close_loaders,
    image_loaders,
    train_batches,
)
from specbench.workloads.resnet50.training import State
from specbench.workloads.resnet50.training import evaluate as _evaluate  # the names the loops call (tests stub them)
from specbench.workloads.resnet50.training import train_step as _step
from specbench.workloads.training import decay_groups, mixed_precision, optimizer_kernel, set_learning_rate


@dataclass(frozen=True)
class FusedKernelsOption(Option):
    """`fused_kernels`: `pool` on an NVIDIA GPU that Triton runs on (1.02x the step on an H200:
    docs/performance.md), `none` elsewhere (a CPU, ROCm, no working Triton)."""

    def default(self, device: str) -> Value | None:
        if device == "cuda" and torch.version.hip is None and _triton_runs():
            return "pool"
        return "none"

    def refuse(self, value: Value, device: str, settings: dict[str, Any]) -> str | None:
        if value != "none" and device != "cuda":
            return "runs Triton kernels on a CUDA device (--device cuda)"
        return None


def _triton_runs() -> bool:
    """torch's own answer to whether Triton runs on this host's GPU; no where CUDA is claimed but cannot start."""
    try:
        return bool(triton_support.has_triton())
    except (RuntimeError, AssertionError):  # torch.cuda says available, but there is no driver to initialise
        return False


OPTIONS = {
    **CONV_OPTIONS,
    **DATA_OPTIONS,
    "fused_kernels": FusedKernelsOption(
        "fused_kernels",
        "framework",
        "batch norms with their residual adds and ReLUs, and the stem's max pooling: none (torch's operators, fused "
        "by torch.compile where it runs), pool (specbench's Triton kernel for the stem's pooling only; the default on "
        "an NVIDIA GPU with Triton) or triton (its kernels for both); CUDA: docs/execute.md",
        ("none", "pool", "triton"),
        absent="none",  # before the option, torch's operators ran
    ),
}
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


class ResNet50Executor(Executor):
    """ResNet-50 v1.5 to a top-1 target (SGD or MLPerf's LARS), or timed steps on synthetic tensors for throughput."""

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
        fused_kernels = ctx.settings.get("fused_kernels", "none")
        problem = OPTIONS["fused_kernels"].refuse(fused_kernels, ctx.device, ctx.settings)
        if problem is not None:  # build_configs refused it already; a context built by hand is checked here
            raise UsageError(f"fused_kernels={fused_kernels}: {problem}")
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
        if fused_kernels != "none":
            from specbench.workloads.resnet50.fused import fuse, fuse_pool

            model = fuse(model) if fused_kernels == "triton" else fuse_pool(model)
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
            assert spec.throughput is not None and synthetic is not None
            images, labels = synthetic
            warm_up(ctx, spec.throughput.warmup_steps, lambda: _step(state, images, labels, device), "img")
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
    groups = decay_groups(model, float(_hp(ctx, "weight_decay")), decay_vectors=bool(_hp(ctx, "weight_decay_on_bn")))
    lr = float(ctx.hyperparameters["base_learning_rate"])
    kernel = optimizer_kernel(ctx.device == "cuda")
    return torch.optim.SGD(
        groups, lr=lr, momentum=float(_hp(ctx, "momentum")), nesterov=bool(_hp(ctx, "nesterov")), **kernel
    )


def _learning_rate(ctx: RunContext, step: int, total_steps: int, steps_per_epoch: int) -> float:
    if lars.uses_lars(ctx.hyperparameters):
        return lars.learning_rate(ctx.hyperparameters, step, steps_per_epoch)
    return warmup_cosine(
        step,
        peak=float(ctx.hyperparameters["base_learning_rate"]),
        warmup_steps=int(float(_hp(ctx, "warmup_epochs")) * steps_per_epoch),
        total_steps=total_steps,
    )


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
    assert state.synthetic_batch is not None
    device = torch.device(ctx.device)
    images, labels = state.synthetic_batch
    return timed_steps(
        ctx,
        TimedSteps(
            step=lambda: _step(state, images, labels, device),
            samples_per_step=state.batch_size,
            train_samples=ctx.resolved.spec.workload.dataset.train_samples,
            unit="img",
        ),
    )
