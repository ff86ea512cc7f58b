"""The MLPerf ResNet-50 executor: the resnet50 executor's model and data, trained the way MLPerf's rules name it.

`opt_name` lars (LARS with MLPerf's reference trust coefficient 0.001) or sgd (momentum SGD),
each with a linear warm-up over `*_warmup_epochs` and a polynomial decay from the base to the end
learning rate over `*_decay_steps` optimizer steps after it (as MLPerf's reference convergence
points count them), label smoothing, no weight decay on batch-norm and bias parameters, and
batch-norm statistics over `model_bn_span` images. The hyperparameters are logged under MLPerf's
keys, so MLPerf's compliance checker reads the log with its ResNet rules.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from specbench.errors import UsageError
from specbench.run.base import RunOutcome
from specbench.run.config import RunConfig
from specbench.run.context import RunContext
from specbench.run.distributed import from_env
from specbench.run.loop import epoch_batches, train_to_quality
from specbench.spec.resolve import ResolvedSpec
from specbench.workloads.mlperf_resnet50.optim import Lars, Schedule, batch_norm_span
from specbench.workloads.resnet50.executor import ResNet50Executor
from specbench.workloads.resnet50.training import State
from specbench.workloads.resnet50.training import evaluate as _evaluate  # the names the loop calls (tests stub them)
from specbench.workloads.resnet50.training import train_step as _step
from specbench.workloads.training import decay_groups, optimizer_kernel, set_learning_rate

DEFAULTS: dict[str, Any] = {"label_smoothing": 0.1, "gradient_accumulation_steps": 1}
OPTIMIZERS = ("lars", "sgd")


def _keys(opt_name: str) -> dict[str, str]:
    """MLPerf's log keys of one optimizer's hyperparameters (SGD's warm-up key has no prefix)."""
    p = f"{opt_name}_opt_"
    warmup = "lars_opt_learning_rate_warmup_epochs" if opt_name == "lars" else "opt_learning_rate_warmup_epochs"
    return {
        "base": f"{p}base_learning_rate",
        "end": f"{p}end_learning_rate",
        "power": f"{p}learning_rate_decay_poly_power",
        "decay_steps": f"{p}learning_rate_decay_steps",
        "warmup_epochs": warmup,
        "momentum": f"{p}momentum",
        "weight_decay": f"{p}weight_decay",
    }


def _number(ctx_hp: dict[str, Any], key: str) -> float:
    value = ctx_hp.get(key)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise UsageError(f"hyperparameter {key} must be a number, found {value!r}: --set {key}=VALUE")
    return float(value)


class MlperfResNet50Executor(ResNet50Executor):
    """ResNet-50 to MLPerf's target with its optimizer, schedule, batch-norm span and log keys."""

    name = "mlperf-resnet50"
    defaults = DEFAULTS

    def check(self, resolved: ResolvedSpec, device: str, synthetic: bool, data: Path | None) -> None:
        if resolved.spec.kind != "time_to_quality":
            raise UsageError(f"the {self.name} executor trains to a target quality; spec {resolved.spec.id!r} is not")
        opt_name = resolved.spec.hyperparameters.get("opt_name", "lars")
        if opt_name not in OPTIMIZERS:
            raise UsageError(f"the {self.name} executor trains with opt_name lars or sgd, the spec names {opt_name!r}")
        self.check_data(resolved, synthetic, data)

    def check_config(self, resolved: ResolvedSpec, config: RunConfig) -> None:
        """Refuse, before anything starts, what this executor cannot do: accumulation, a batch-norm span it cannot split."""
        hp = config.hyperparameters
        if hp.get("opt_name") not in OPTIMIZERS:
            raise UsageError(f"--set opt_name: expected lars or sgd, found {hp.get('opt_name')!r}")
        if hp.get("gradient_accumulation_steps", 1) != 1:
            raise UsageError("gradient_accumulation_steps must be 1: this executor does not accumulate gradients")
        for key in _keys(str(hp["opt_name"])).values():
            _number(hp, key)
        world = from_env().world
        batch, span = int(hp["global_batch_size"]), hp.get("model_bn_span")
        if span is not None:
            batch_norm_span(batch // world, span)

    def configure(self, ctx: RunContext, model: torch.nn.Module) -> torch.optim.Optimizer:
        """Batch-norm statistics over model_bn_span images, then LARS or SGD as opt_name says."""
        hp = ctx.hyperparameters
        local_batch = int(hp["global_batch_size"]) // ctx.dist.world
        span = hp.get("model_bn_span")
        if span is not None:
            batch_norm_span(local_batch, span, model)
        else:  # MLPerf asks it only with SGD; the statistics span the per-process batch, logged as a fact
            ctx.log.event("model_bn_span", local_batch)
        keys = _keys(str(hp["opt_name"]))
        groups = decay_groups(model, _number(hp, keys["weight_decay"]))
        lr, momentum = _number(hp, keys["base"]), _number(hp, keys["momentum"])
        if hp["opt_name"] == "lars":
            return Lars(groups, lr=lr, momentum=momentum, epsilon=_number(hp, "lars_epsilon"))
        return torch.optim.SGD(groups, lr=lr, momentum=momentum, **optimizer_kernel(ctx.device == "cuda"))

    def train(self, ctx: RunContext, state: State) -> RunOutcome:
        hp, keys = ctx.hyperparameters, _keys(str(ctx.hyperparameters["opt_name"]))
        schedule = Schedule(
            base=_number(hp, keys["base"]),
            end=_number(hp, keys["end"]),
            power=_number(hp, keys["power"]),
            warmup_steps=round(_number(hp, keys["warmup_epochs"]) * state.steps_per_epoch),
            decay_steps=max(1, int(_number(hp, keys["decay_steps"]))),
        )
        every = max(1, round(ctx.resolved.spec.quality.eval_every_epochs or 1))  # type: ignore[union-attr]
        epochs = math.ceil(schedule.total_steps / state.steps_per_epoch / every) * every  # ends on an evaluation
        budget = ctx.resolved.spec.budget.epochs
        device = torch.device(ctx.device)

        def step(batch: tuple[torch.Tensor, torch.Tensor], index: int) -> None:
            set_learning_rate(state.optimizer, schedule.rate(index))
            _step(state, batch[0], batch[1], device)

        return train_to_quality(
            ctx,
            batches=lambda epoch: epoch_batches(state.train, epoch),
            steps_per_epoch=state.steps_per_epoch,
            batch_size=state.batch_size,
            unit="img",
            step=step,
            evaluate=lambda: _evaluate(state, device, ctx),
            epochs=min(epochs, math.ceil(budget)) if budget is not None else epochs,
        )
