"""MLPerf's LARS in the ResNet-50 executor: the trust ratio, the excluded parameters, the polynomial schedule."""

from __future__ import annotations

import pytest
import torch

from specbench.workloads import lars

pytestmark = pytest.mark.needs("torch")

HP = {
    "opt_name": "lars",
    "lars_opt_base_learning_rate": 3.0,
    "lars_opt_end_learning_rate": 0.0001,
    "lars_opt_learning_rate_decay_poly_power": 2,
    "lars_opt_learning_rate_decay_steps": 100,
    "lars_opt_learning_rate_warmup_epochs": 2,
    "lars_opt_momentum": 0.9,
    "lars_opt_weight_decay": 0.0001,
    "lars_epsilon": 0.0,
}


def test_a_weight_steps_by_its_trust_ratio_and_a_bias_by_the_plain_rate() -> None:
    layer = torch.nn.Linear(3, 2)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0]]))  # norm 3
        layer.bias.copy_(torch.tensor([0.5, -0.5]))
    weight, bias = layer.weight.detach().clone(), layer.bias.detach().clone()
    gw, gb = torch.tensor([[0.0, 4.0, 0.0], [0.0, 0.0, 3.0]]), torch.tensor([1.0, 2.0])  # gradient norm 5
    layer.weight.grad, layer.bias.grad = gw.clone(), gb.clone()
    optimizer = lars.optimizer(layer, HP)
    optimizer.step()
    wd, lr = 0.0001, 3.0
    trust = 0.001 * 3.0 / (5.0 + wd * 3.0)
    torch.testing.assert_close(layer.weight.detach(), weight - lr * trust * (gw + wd * weight))
    torch.testing.assert_close(layer.bias.detach(), bias - lr * gb)  # no trust ratio, no weight decay
    layer.weight.grad, layer.bias.grad = gw.clone(), gb.clone()
    before = layer.bias.detach().clone()
    optimizer.step()
    torch.testing.assert_close(layer.bias.detach(), before - (0.9 * lr * gb + lr * gb))  # momentum


def test_the_rate_warms_up_linearly_then_decays_polynomially_to_the_end_rate() -> None:
    steps_per_epoch = 10
    assert lars.learning_rate(HP, 0, steps_per_epoch) == pytest.approx(3.0 / 20)
    assert lars.learning_rate(HP, 19, steps_per_epoch) == pytest.approx(3.0)
    assert lars.learning_rate(HP, 20, steps_per_epoch) == pytest.approx(3.0)
    assert lars.learning_rate(HP, 70, steps_per_epoch) == pytest.approx((3.0 - 0.0001) * 0.25 + 0.0001)
    assert lars.learning_rate(HP, 120, steps_per_epoch) == pytest.approx(0.0001)
    assert lars.learning_rate(HP, 500, steps_per_epoch) == pytest.approx(0.0001)


def test_a_lars_spec_records_lars_defaults_not_sgd_ones() -> None:
    from specbench.spec import load_spec, resolve
    from specbench.workloads.resnet50.executor import ResNet50Executor

    executor = ResNet50Executor()
    defaults = executor.defaults_for(resolve(load_spec("mlperf-resnet50"), "smoke"))
    assert defaults == {"lars_trust_coefficient": 0.001, "label_smoothing": 0.1, "zero_init_residual": True}
    assert (
        "optimizer" not in defaults
        and executor.defaults_for(resolve(load_spec("resnet50"), "smoke"))["optimizer"] == "sgd"
    )
