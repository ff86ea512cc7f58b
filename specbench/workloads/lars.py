"""MLPerf's LARS for ResNet-50: a layer-wise trust ratio with momentum, and its polynomial learning rate.

As the MLPerf Training reference states it (mlcommons/training, image_classification): each weight
tensor's step is scaled by eta x ||w|| / (||g|| + wd x ||w|| + epsilon), with weight decay added
to its gradient; batch-norm and bias parameters get neither the trust ratio nor weight decay. The
rate warms up linearly over `lars_opt_learning_rate_warmup_epochs`, then decays with power
`lars_opt_learning_rate_decay_poly_power` to `lars_opt_end_learning_rate` over
`lars_opt_learning_rate_decay_steps` steps, and stays there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from specbench.run.training import linear_warmup
from specbench.workloads.training import split_decay

TRUST_COEFFICIENT = 0.001
"""eta of the MLPerf reference's LARS."""
DEFAULTS: dict[str, Any] = {
    "lars_trust_coefficient": TRUST_COEFFICIENT,
    "label_smoothing": 0.1,
    "zero_init_residual": True,
}
"""What a LARS run uses where the spec states nothing; recorded with its hyperparameters."""


def uses_lars(hyperparameters: dict[str, Any]) -> bool:
    return hyperparameters.get("opt_name") == "lars" or hyperparameters.get("optimizer") == "lars"


@dataclass(frozen=True)
class Schedule:
    """Learning rate per optimizer step: linear warm-up, then polynomial decay to `end` over `decay_steps`."""

    base: float
    end: float
    power: float
    warmup_steps: int
    decay_steps: int

    @property
    def total_steps(self) -> int:
        return self.warmup_steps + self.decay_steps

    def rate(self, step: int) -> float:
        """The rate of 0-based `step`; after the decay it stays at `end`."""
        if step < self.warmup_steps:
            return linear_warmup(step, self.warmup_steps, self.base)
        done = min(step - self.warmup_steps, self.decay_steps) / self.decay_steps
        return (self.base - self.end) * (1.0 - done) ** self.power + self.end


class Lars(torch.optim.Optimizer):
    """Momentum SGD whose rate each weight tensor scales by its trust ratio.

    One-dimensional parameters (batch-norm weights, biases) and groups with `lars: False` take a
    plain momentum step; each group's `weight_decay` is added to its gradients.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        momentum: float,
        weight_decay: float = 0.0,
        epsilon: float = 0.0,
        eta: float = TRUST_COEFFICIENT,
    ) -> None:
        if min(lr, momentum, weight_decay, epsilon, eta) < 0:
            raise ValueError(
                f"LARS needs lr, momentum, weight_decay, epsilon and eta >= 0, found {lr}, {momentum}, "
                f"{weight_decay}, {epsilon}, {eta}"
            )
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "epsilon": epsilon, "eta": eta}
        super().__init__(params, {**defaults, "lars": True})

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            decay = group["weight_decay"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad.add(param, alpha=decay) if decay else param.grad
                scaled: torch.Tensor | float = group["lr"]
                if group["lars"] and param.ndim > 1:
                    w_norm, g_norm = torch.linalg.vector_norm(param), torch.linalg.vector_norm(param.grad)
                    ratio = group["eta"] * w_norm / (g_norm + decay * w_norm + group["epsilon"])
                    trust = torch.where((w_norm > 0) & (g_norm > 0), ratio, torch.ones_like(w_norm))
                    scaled = group["lr"] * trust
                state = self.state[param]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(param)
                buffer = state["momentum_buffer"]
                buffer.mul_(group["momentum"]).add_(grad * scaled)
                param.sub_(buffer)
        return loss


def optimizer(model: torch.nn.Module, hyperparameters: dict[str, Any]) -> Lars:
    """LARS over the model's weights; batch-norm weights and biases (1-d tensors) skip trust ratio and decay."""
    scaled, plain = split_decay(model)
    groups = [{"params": scaled}, {"params": plain, "lars": False, "weight_decay": 0.0}]
    return Lars(
        groups,
        lr=float(hyperparameters["lars_opt_base_learning_rate"]),
        momentum=float(hyperparameters["lars_opt_momentum"]),
        weight_decay=float(hyperparameters["lars_opt_weight_decay"]),
        epsilon=float(hyperparameters["lars_epsilon"]),
        eta=float(hyperparameters.get("lars_trust_coefficient", TRUST_COEFFICIENT)),
    )


def learning_rate(hyperparameters: dict[str, Any], step: int, steps_per_epoch: int) -> float:
    """The rate of 0-based `step`: linear warm-up, then polynomial decay to the end rate."""
    return Schedule(
        base=float(hyperparameters["lars_opt_base_learning_rate"]),
        end=float(hyperparameters["lars_opt_end_learning_rate"]),
        power=float(hyperparameters["lars_opt_learning_rate_decay_poly_power"]),
        warmup_steps=int(float(hyperparameters["lars_opt_learning_rate_warmup_epochs"]) * steps_per_epoch),
        decay_steps=max(1, int(hyperparameters["lars_opt_learning_rate_decay_steps"])),
    ).rate(step)
