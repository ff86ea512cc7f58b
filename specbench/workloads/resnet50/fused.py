"""ResNet-50 on specbench's Triton kernels: each batch norm fused with its residual add and ReLU, the stem's pooling.

`fuse(model)` rebinds the forward of torchvision's ResNet-50 and of its bottleneck blocks so that, in
training mode, each batch normalisation runs with what follows it as one operator
(`specbench.workloads.fused_bn.bn_act`: statistics, normalisation, residual add and ReLU forward, and
their gradients in two passes backward) and the stem's 3x3, stride-2 max pooling as another
(`specbench.workloads.fused_pool`). The arithmetic is the model's own: batch statistics, running
statistics updated with the layer's momentum (unbiased variance), `num_batches_tracked` counted; in
evaluation mode the norms use the running statistics through torch. Parameters, buffers and the
state dict are unchanged, so a checkpoint loads either way.

Chosen with the executor setting `fused_kernels=triton` (framework layer); CUDA only. `fused_kernels=pool`
(`fuse_pool(model)`) puts only the stem's pooling on its kernel and leaves every batch norm to torch (and
so to torch.compile's own fusion).
"""

from __future__ import annotations

import types

import torch
import torch.nn.functional as F
from torchvision.models.resnet import Bottleneck, ResNet

from specbench.errors import UsageError
from specbench.workloads.fused_bn import bn_act
from specbench.workloads.fused_pool import max_pool_3x3s2


def _norm(
    bn: torch.nn.BatchNorm2d, x: torch.Tensor, residual: torch.Tensor | None = None, relu: bool = True
) -> torch.Tensor:
    if not bn.training:
        y = F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps)
        if residual is not None:
            y = y + residual
        return F.relu(y) if relu else y
    assert bn.running_mean is not None and bn.running_var is not None and bn.momentum is not None
    if bn.num_batches_tracked is not None:
        bn.num_batches_tracked.add_(1)
    return bn_act(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, residual, relu, bn.momentum, bn.eps)


def _bottleneck(self: Bottleneck, x: torch.Tensor) -> torch.Tensor:
    out = _norm(self.bn1, self.conv1(x))
    out = _norm(self.bn2, self.conv2(out))
    if self.downsample is None:
        identity = x
    else:
        conv, bn = self.downsample
        identity = _norm(bn, conv(x), relu=False)
    return _norm(self.bn3, self.conv3(out), residual=identity)


def stem(model: ResNet, x: torch.Tensor) -> torch.Tensor:
    """The fused model's stem: convolution, batch norm and ReLU, max pooling."""
    return max_pool_3x3s2(_norm(model.bn1, model.conv1(x)))


def _forward_impl(self: ResNet, x: torch.Tensor) -> torch.Tensor:
    x = stem(self, x)
    x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
    return self.fc(torch.flatten(self.avgpool(x), 1))


class MaxPool3x3s2(torch.nn.Module):
    """The stem's 3x3, stride-2, padding-1 max pooling on specbench's kernel (`fused_pool.max_pool_3x3s2`).

    The kernel works in channels-last memory; the output keeps the input's layout, so a contiguous model
    stays contiguous after its stem (the kernel's own layout costs a copy either side there).
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = max_pool_3x3s2(x)
        return y if x.is_contiguous(memory_format=torch.channels_last) else y.contiguous()


def _check_stem(model: torch.nn.Module, setting: str) -> None:
    pool = getattr(model, "maxpool", None)
    if not isinstance(model, ResNet) or not isinstance(pool, torch.nn.MaxPool2d):
        raise UsageError(f"fused_kernels={setting} needs torchvision's ResNet with its max-pooling stem")
    if (pool.kernel_size, pool.stride, pool.padding, pool.dilation, pool.ceil_mode) not in ((3, 2, 1, 1, False),):
        raise UsageError(f"fused_kernels={setting} needs the stem's 3x3, stride-2 max pooling, found {pool}")


def fuse_pool(model: torch.nn.Module) -> torch.nn.Module:
    """The same model with only its stem's max pooling on specbench's kernel (no parameters or buffers change)."""
    _check_stem(model, "pool")
    model.maxpool = MaxPool3x3s2()
    return model


def fuse(model: torch.nn.Module) -> torch.nn.Module:
    """The same model, its forward on the fused kernels (see the module's text); checks that it is ResNet-50's shape."""
    _check_stem(model, "triton")
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if any(bn.momentum is None or not bn.track_running_stats for bn in norms):
        raise UsageError("fused_kernels=triton needs batch norms with a momentum and running statistics")
    for block in model.modules():
        if isinstance(block, Bottleneck):
            block.forward = types.MethodType(_bottleneck, block)  # type: ignore[method-assign]
    model._forward_impl = types.MethodType(_forward_impl, model)  # type: ignore[method-assign,assignment]
    return model
