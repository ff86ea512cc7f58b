"""The extreme-weather executor: DeepLabv3+ segmentation of cyclones and atmospheric rivers to a mean IoU.

In the form of MLPerf HPC DeepCAM: 16 input channels, 3 classes, class-weighted cross entropy with
the reference's weights (class frequency of the CAM5 training set to the power `loss_weight_pow`),
Adam or AdamW with linear warm-up then multistep or cosine decay, mean IoU over the validation split
at the spec's cadence, stopping at the target. Data: the real CAM5 layout with `--data`, or for the
smoke profile fields generated in memory by `specbench.data.climate` (the same generator that
`specbench data extreme-weather` writes to files).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from specbench.data.climate import CHANNELS, CLASSES, CamSplit, generate_arrays, normalise
from specbench.data.imagedata import TensorBatches
from specbench.errors import UsageError
from specbench.run.base import Executor, RunOutcome
from specbench.run.config import Option, RunConfig
from specbench.run.context import RunContext
from specbench.run.loop import epoch_batches, train_to_quality
from specbench.run.training import cosine_decay, linear_warmup
from specbench.spec.resolve import ResolvedSpec
from specbench.workloads.conv import CONV_OPTIONS, set_backends, wrap_model
from specbench.workloads.conv import memory_format as conv_memory_format
from specbench.workloads.extreme_weather.deepcam_reference import DeepCamReference
from specbench.workloads.extreme_weather.deeplab import DeepLabV3Plus
from specbench.workloads.training import backward_step, mixed_precision, optimizer_kernel, set_learning_rate

# Pixel frequencies of background, tropical cyclone and atmospheric river in the CAM5 training set,
# as the DeepCAM reference states them; its loss weights are these to the power -0.125.
CAM5_CLASS_FREQUENCIES = (0.986267818390377, 0.0004578708870701058, 0.01327431072255291)
TRAIN_SEED = 20261201
EVAL_SEED = 20261202

OPTIONS = {
    **CONV_OPTIONS,
    "eval_batch_size": Option("eval_batch_size", "framework", "per-device batch size for evaluation", None, 32, 8),
}
DEFAULTS: dict[str, Any] = {
    "opt_betas": [0.9, 0.999],
    "opt_weight_decay": 0.01,
    "scheduler_lr_warmup_steps": 0,
    "scheduler_lr_warmup_factor": 1.0,
    "scheduler_milestones": [],
    "scheduler_decay_rate": 0.1,
    "scheduler_t_max": 0,
    "scheduler_eta_min": 0.0,
    "loss_weight_pow": -0.125,
}


def _hp(ctx: RunContext, name: str) -> Any:
    return ctx.hyperparameters.get(name, DEFAULTS.get(name))


def _variant(resolved: ResolvedSpec, config: RunConfig) -> dict[str, Any]:
    workload = resolved.spec.workload
    name = str(config.hyperparameters.get("model"))
    if name not in workload.variants:
        raise UsageError(
            f"--set model={name}: spec {resolved.spec.id!r} has the variants {', '.join(workload.variants)}"
        )
    return dict(workload.variants[name].params)


REFERENCE_NETWORK = "mlperf-deepcam-reference"
"""A variant's `network` parameter that selects MLPerf HPC DeepCAM's reference network (deepcam_reference)."""


def build_model(params: dict[str, Any], classes: int) -> torch.nn.Module:
    """The variant's network: MLPerf's DeepCAM reference where `network` names it, else specbench's DeepLabv3+."""
    if _network(params) == REFERENCE_NETWORK:
        return DeepCamReference(CHANNELS, classes)
    return DeepLabV3Plus(
        str(params.get("backbone", "resnet50")),
        CHANNELS,
        classes,
        aspp_channels=int(params.get("aspp_channels", 256)),
        low_level_channels=int(params.get("low_level_channels", 48)),
    )


def _network(params: dict[str, Any]) -> str | None:
    network = params.get("network")
    if network is not None and network != REFERENCE_NETWORK:
        raise UsageError(f"variant network {network!r}: expected {REFERENCE_NETWORK!r} or no network parameter")
    return None if network is None else str(network)


Fields = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str]


def _generate(train: int, evaluation: int, size: tuple[int, int]) -> Fields:
    """The smoke profile's data: generated, normalised with the training split's per-channel range, and its sha256."""
    x, y = generate_arrays(train, size, TRAIN_SEED)
    vx, vy = generate_arrays(evaluation, size, EVAL_SEED)
    minval, maxval = x.min(axis=(0, 1, 2)), x.max(axis=(0, 1, 2))
    tensors = (
        torch.from_numpy(normalise(x, minval, maxval)),
        torch.from_numpy(y),
        torch.from_numpy(normalise(vx, minval, maxval)),
        torch.from_numpy(vy),
    )
    digest = hashlib.sha256()
    for tensor in tensors:
        digest.update(tensor.numpy().tobytes())
    return (*tensors, digest.hexdigest())


def _cam_listing(root: Path) -> tuple[str, int, int]:
    """sha256 over the relative paths and sizes of a CAM5 folder (content not read), and the split sizes."""
    digest = hashlib.sha256()
    counts = {}
    for split in ("train", "validation"):
        files = sorted((root / split).glob("*.h5"))
        counts[split] = len(files)
        for path in files:
            digest.update(f"{split}/{path.name}\t{path.stat().st_size}\n".encode())
    stats = root / "stats.h5"
    digest.update(f"stats.h5\t{stats.stat().st_size}\n".encode())
    return digest.hexdigest(), counts["train"], counts["validation"]


def class_weights(power: float) -> torch.Tensor:
    return torch.tensor(CAM5_CLASS_FREQUENCIES, dtype=torch.float32) ** power


def iou_sum(predicted: torch.Tensor, labels: torch.Tensor, classes: int = CLASSES) -> torch.Tensor:
    """Sum over samples of the per-sample mean IoU (a class with an empty union counts as 1), as DeepCAM's reference."""
    pred = predicted.reshape(predicted.shape[0], -1)
    true = labels.reshape(labels.shape[0], -1)
    total = torch.zeros(pred.shape[0], dtype=torch.float64, device=pred.device)
    for c in range(classes):
        p, t = pred == c, true == c
        union = (p | t).sum(1).double()
        inter = (p & t).sum(1).double()
        total += torch.where(union > 0, inter / union.clamp(min=1), torch.ones_like(union))
    return (total / classes).sum()


@dataclass
class State:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    weights: torch.Tensor
    scaler: Any
    autocast: Any
    memory_format: torch.memory_format
    train: Any
    val: Any
    batch_size: int
    local_batch: int
    steps_per_epoch: int


class ExtremeWeatherExecutor(Executor):
    """DeepLabv3+ on CAM5 fields to DeepCAM's mean IoU target, the way MLPerf HPC's reference trains it."""

    name = "extreme-weather"
    options = OPTIONS
    defaults = DEFAULTS

    def __init__(self) -> None:
        self._fields: dict[tuple[int, int, tuple[int, int]], Fields] = {}
        """The smoke profile's generated fields, made once per job: dataset_facts hashes them, each run trains on them."""

    def _generated(self, train: int, evaluation: int, size: tuple[int, int]) -> Fields:
        key = (train, evaluation, size)
        if key not in self._fields:
            self._fields[key] = _generate(train, evaluation, size)
        return self._fields[key]

    def check(self, resolved: ResolvedSpec, device: str, synthetic: bool, data: Path | None) -> None:
        spec = resolved.spec
        if spec.kind != "time_to_quality":
            raise UsageError(
                f"the extreme-weather executor trains to a quality target; spec {spec.id!r} is {spec.kind}"
            )
        if synthetic:
            raise UsageError(
                "--synthetic gives throughput only; extreme-weather trains to a mean IoU on real or generated "
                "fields (the smoke profile generates its own; benchmarks/extreme_weather_throughput.py times the model)"
            )
        dataset = spec.workload.dataset
        if data is None and not dataset.synthetic:
            raise UsageError(
                f"spec {spec.id!r} at profile {resolved.profile!r} trains on {dataset.name}: give the CAM5 folder "
                "with --data PATH (train/, validation/, stats.h5), make one with `specbench data extreme-weather`, "
                "or run --profile smoke on generated fields"
            )
        if data is not None:
            for part in (data / "train", data / "validation", data / "stats.h5"):
                if not part.exists():
                    raise UsageError(f"--data {data}: expected {part} (the CAM5 layout; see docs/extreme-weather.md)")

    def check_config(self, resolved: ResolvedSpec, config: RunConfig) -> None:
        optimizer = config.hyperparameters.get("opt_name")
        if optimizer not in ("Adam", "AdamW"):
            raise UsageError(
                f"the extreme-weather executor trains with Adam or AdamW (torch has no LAMB); "
                f"the configuration asks for opt_name {optimizer!r}: --set opt_name=AdamW"
            )
        _network(_variant(resolved, config))
        betas = config.hyperparameters.get("opt_betas", DEFAULTS["opt_betas"])
        if not (isinstance(betas, list) and len(betas) == 2):
            raise UsageError(f"opt_betas: expected two numbers, found {betas!r}")

    def dataset_facts(
        self, resolved: ResolvedSpec, config: RunConfig, data: Path | None, synthetic: bool
    ) -> dict[str, Any]:
        dataset = resolved.spec.workload.dataset
        if data is not None:
            digest, train, val = _cam_listing(data)
            return {
                "name": dataset.name if not dataset.synthetic else "cam5-layout-folder",
                "path": str(data.resolve()),
                "train_samples": train,
                "eval_samples": val,
                "listing_sha256": digest,
                "synthetic": False,
            }
        shape = dataset.sample_shape or [CHANNELS, 64, 96]
        *_, digest = self._generated(dataset.train_samples, dataset.eval_samples, (shape[1], shape[2]))
        return {
            "name": dataset.name,
            "generator": "specbench.data.climate.generate_arrays",
            "train_samples": dataset.train_samples,
            "eval_samples": dataset.eval_samples,
            "sample_shape": shape,
            "sha256": digest,
            "synthetic": True,
        }

    def setup(self, ctx: RunContext) -> State:
        torch.manual_seed(ctx.seed)
        spec = ctx.resolved.spec
        device = torch.device(ctx.device)
        precision = ctx.settings.get("precision") or "fp32"
        set_backends(ctx.device, precision)
        memory_format = conv_memory_format(ctx)
        model = build_model(_variant(ctx.resolved, ctx.config), spec.workload.dataset.num_classes or CLASSES).to(device)
        model = model.to(memory_format=memory_format)
        batch = int(ctx.hyperparameters["global_batch_size"])
        if batch % ctx.dist.world:
            raise UsageError(f"global_batch_size {batch} is not a multiple of the {ctx.dist.world} processes")
        local_batch = batch // ctx.dist.world
        if local_batch < 2:
            raise UsageError(f"global_batch_size {batch} gives {local_batch} per process; batch norm needs at least 2")
        betas = tuple(float(b) for b in _hp(ctx, "opt_betas"))
        kind = torch.optim.AdamW if ctx.hyperparameters["opt_name"] == "AdamW" else torch.optim.Adam
        kernel = optimizer_kernel(ctx.device == "cuda")
        optimizer = kind(
            model.parameters(),
            lr=float(ctx.hyperparameters["opt_lr"]),
            betas=betas,  # type: ignore[arg-type]
            eps=float(ctx.hyperparameters["opt_eps"]),
            weight_decay=float(_hp(ctx, "opt_weight_decay")),
            **kernel,
        )
        autocast, scaler = mixed_precision(ctx.device, precision)
        model = wrap_model(ctx, model)
        eval_batch = int(ctx.settings.get("eval_batch_size") or 8)
        if ctx.data is not None:
            train, val = _cam_loaders(ctx, local_batch, eval_batch)
            steps_per_epoch = len(train)
        else:
            dataset = spec.workload.dataset
            shape = dataset.sample_shape or [CHANNELS, 64, 96]
            x, y, vx, vy, _ = self._generated(dataset.train_samples, dataset.eval_samples, (shape[1], shape[2]))
            train = TensorBatches(x, y, batch, drop_last=True, seed=ctx.seed, rank=ctx.dist.rank, world=ctx.dist.world)
            val = TensorBatches(
                vx, vy, eval_batch * ctx.dist.world, drop_last=False, seed=0, rank=ctx.dist.rank, world=ctx.dist.world
            )
            steps_per_epoch = len(train)
        if steps_per_epoch == 0:
            raise UsageError(f"global_batch_size {batch} is larger than the training split")
        return State(
            model,
            optimizer,
            class_weights(float(_hp(ctx, "loss_weight_pow"))).to(device),
            scaler,
            autocast,
            memory_format,
            train,
            val,
            batch,
            local_batch,
            steps_per_epoch,
        )

    def train(self, ctx: RunContext, state: State) -> RunOutcome:
        return _time_to_quality(ctx, state)


def _cam_loaders(ctx: RunContext, local_batch: int, eval_batch: int) -> tuple[Any, Any]:
    assert ctx.data is not None
    train_set: Any = CamSplit(ctx.data, "train")
    val_set: Any = CamSplit(ctx.data, "validation")
    workers = int(ctx.settings.get("num_workers") or 0)
    common: dict[str, Any] = {"num_workers": workers, "pin_memory": ctx.device == "cuda"}
    if workers > 0:
        common.update(persistent_workers=True, prefetch_factor=2)
    to_tensors = _collate
    if ctx.dist.world > 1:
        from torch.utils.data.distributed import DistributedSampler

        sampler: Any = DistributedSampler(
            train_set, num_replicas=ctx.dist.world, rank=ctx.dist.rank, shuffle=True, seed=ctx.seed, drop_last=True
        )
        shard: Any = torch.utils.data.Subset(val_set, list(range(ctx.dist.rank, len(val_set), ctx.dist.world)))
        train: Any = torch.utils.data.DataLoader(
            train_set, batch_size=local_batch, sampler=sampler, drop_last=True, collate_fn=to_tensors, **common
        )
        val = torch.utils.data.DataLoader(shard, batch_size=eval_batch, collate_fn=to_tensors, **common)
        return train, val
    train = torch.utils.data.DataLoader(
        train_set,
        batch_size=local_batch,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(ctx.seed),
        collate_fn=to_tensors,
        **common,
    )
    val = torch.utils.data.DataLoader(val_set, batch_size=eval_batch, collate_fn=to_tensors, **common)
    return train, val


def _collate(items: list[tuple[np.ndarray, np.ndarray]]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.from_numpy(np.stack([i[0] for i in items])), torch.from_numpy(np.stack([i[1] for i in items]))


def learning_rate(hp: dict[str, Any], step: int) -> float:
    """DeepCAM's schedule: linear warm-up to opt_lr x warmup_factor, then multistep (milestones in steps
    after warm-up) or cosine annealing over scheduler_t_max steps down to scheduler_eta_min."""
    base = float(hp["opt_lr"])
    warmup = int(hp.get("scheduler_lr_warmup_steps", 0))
    factor = float(hp.get("scheduler_lr_warmup_factor", 1.0))
    if step < warmup:
        if factor == 1.0:
            return linear_warmup(step, warmup, base)
        return base * (1.0 + (factor - 1.0) * step / warmup)
    peak = base * factor
    after = step - warmup
    if hp.get("scheduler_type") == "cosine_annealing":
        t_max = max(1, int(hp.get("scheduler_t_max") or 1))
        eta_min = float(hp.get("scheduler_eta_min", 0.0))
        return cosine_decay(after, t_max, peak, eta_min)
    milestones = [int(m) for m in (hp.get("scheduler_milestones") or [])]
    passed = sum(1 for m in milestones if after >= m)
    return peak * float(hp.get("scheduler_decay_rate", 0.1)) ** passed


def _step(state: State, fields: torch.Tensor, labels: torch.Tensor, device: torch.device) -> torch.Tensor:
    fields = fields.to(device, non_blocking=True).contiguous(memory_format=state.memory_format)
    labels = labels.to(device, non_blocking=True)
    with state.autocast():
        logits = state.model(fields)
    loss = F.cross_entropy(logits.float(), labels, weight=state.weights)
    backward_step(loss, state.optimizer, state.scaler)
    return loss


def _evaluate(state: State, device: torch.device, ctx: RunContext) -> float:
    state.model.eval()
    total = torch.zeros((), dtype=torch.float64, device=device)
    count = 0
    batches = state.val.epoch(0, shuffle=False) if isinstance(state.val, TensorBatches) else state.val
    with torch.no_grad(), state.autocast():
        for fields, labels in batches:
            fields = fields.to(device, non_blocking=True).contiguous(memory_format=state.memory_format)
            labels = labels.to(device, non_blocking=True)
            total += iou_sum(state.model(fields).argmax(1), labels)
            count += labels.shape[0]
    state.model.train()
    summed, samples = ctx.dist.all_sum([float(total), float(count)])
    return summed / max(1.0, samples)


def _time_to_quality(ctx: RunContext, state: State) -> RunOutcome:
    device = torch.device(ctx.device)

    def step(batch: tuple[torch.Tensor, torch.Tensor], index: int) -> None:
        set_learning_rate(state.optimizer, learning_rate(ctx.hyperparameters, index))
        _step(state, batch[0], batch[1], device)

    return train_to_quality(
        ctx,
        batches=lambda epoch: epoch_batches(state.train, epoch),
        steps_per_epoch=state.steps_per_epoch,
        batch_size=state.batch_size,
        unit="sample",
        step=step,
        evaluate=lambda: _evaluate(state, device, ctx),
    )
