"""The fused batch-norm, add and ReLU kernels against torch's batch_norm: in Triton's interpreter on a CPU, on CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
import torch

pytestmark = pytest.mark.needs("torch", "triton")

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
# Triton 3.6's interpreter (the GPU machine's) fails on a loop bounded by a runtime argument
# ("only 0-dimensional arrays can be converted to Python scalars"); 3.8's runs the kernels
INTERPRETER = pytest.mark.skipif(
    tuple(int(v) for v in __import__("triton").__version__.split(".")[:2]) < (3, 8),
    reason="Triton's interpreter before 3.8 cannot run the kernels' loops",
)

# Run in a child process: Triton reads TRITON_INTERPRET when a kernel is defined, at import.
COMPARE = r"""
import json, sys
import torch, torch.nn.functional as F
from specbench.workloads.fused_bn import bn_act

device, dtype = sys.argv[1], getattr(torch, sys.argv[2])
g = torch.Generator(device=device).manual_seed(3)
report = {}
# (batch, channels, height, width, residual, relu): ragged channel and row counts, every kind of site
for n, c, h, w, res, relu in ((4, 64, 8, 8, False, True), (3, 96, 5, 7, True, True), (2, 130, 4, 4, False, False),
                              (5, 32, 9, 9, True, True), (2, 8, 3, 3, False, True)):
    def act(scale, offset):
        t = torch.randn(n, c, h, w, device=device, generator=g) * scale + offset
        return t.to(dtype).contiguous(memory_format=torch.channels_last).requires_grad_()
    x = act(2.0, 3.0)  # a mean far from zero: the shifted sums must keep the variance's precision
    r = act(1.0, 0.0) if res else None
    weight = (torch.rand(c, device=device, generator=g) + 0.5).requires_grad_()
    bias = (torch.randn(c, device=device, generator=g) * 0.1).requires_grad_()
    rm = torch.randn(c, device=device, generator=g) * 0.1 + 2.5
    rv = torch.rand(c, device=device, generator=g) + 0.5
    rm_ref, rv_ref = rm.clone(), rv.clone()
    leaves = [x, weight, bias] + ([r] if res else [])
    y = bn_act(x, weight, bias, rm, rv, r, relu)
    grad = torch.randn(y.shape, device=device, generator=g).to(dtype)
    got = [y, *torch.autograd.grad(y, leaves, grad)]
    ref_leaves = [t.detach().float().requires_grad_() for t in leaves]
    y_ref = F.batch_norm(ref_leaves[0], rm_ref, rv_ref, ref_leaves[1], ref_leaves[2], training=True, momentum=0.1, eps=1e-5)
    if res:
        y_ref = y_ref + ref_leaves[3]
    if relu:
        y_ref = F.relu(y_ref)
    want = [y_ref, *torch.autograd.grad(y_ref, ref_leaves, grad.float())]
    key = f"{n}x{c}x{h}x{w} res={res} relu={relu}"
    names = ("y", "dx", "dweight", "dbias", "dresidual")
    report[key] = {name: float((a.float() - b).abs().max() / b.abs().max()) for name, a, b in zip(names, got, want)}
    report[key]["running_mean"] = float((rm - rm_ref).abs().max())
    report[key]["running_var"] = float((rv - rv_ref).abs().max())
    report[key]["channels_last"] = y.is_contiguous(memory_format=torch.channels_last)
    report[key]["dtypes"] = [str(t.dtype) for t in got[1:]] == [str(t.dtype) for t in leaves]
print(json.dumps(report))
"""


def run_script(script: str, *args: str, interpret: bool, timeout: int = 600) -> dict[str, Any]:
    """A script's last line of JSON, run in a child (in Triton's interpreter, without a GPU, if `interpret`)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""} if interpret else dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def compare(device: str, dtype: str, interpret: bool) -> dict[str, Any]:
    return run_script(COMPARE, device, dtype, interpret=interpret)


def assert_close(report: dict[str, dict[str, float]], tolerance: float) -> None:
    assert len(report) == 5
    for key, row in report.items():
        assert row.pop("channels_last") and row.pop("dtypes"), key
        assert row["running_mean"] < 1e-5 and row["running_var"] < 1e-4, (key, row)
        worst = max(row.values())
        assert worst < tolerance, (key, row)


@INTERPRETER
def test_float32_matches_torch_in_the_interpreter() -> None:
    assert_close(compare("cpu", "float32", interpret=True), 1e-5)


@INTERPRETER
def test_bfloat16_matches_torch_to_bfloat16_rounding_in_the_interpreter() -> None:
    assert_close(compare("cpu", "bfloat16", interpret=True), 2e-2)


@CUDA
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_matches_torch_on_cuda(dtype: str) -> None:
    assert_close(compare("cuda", dtype, interpret=False), 1e-4 if dtype == "float32" else 2e-2)


# ResNet-50 with fuse(): its stem and blocks against torchvision's, each given the same input and output gradient
# (a whole tiny model is ill-conditioned: a batch norm over two values of one channel turns a rounding
# difference of its input into a sign)
BLOCKS = r"""
import copy, json, sys
import torch, torchvision
from specbench.workloads.resnet50.fused import fuse, stem as fused_stem

device = sys.argv[1]
torch.manual_seed(0)
plain = torchvision.models.resnet50(num_classes=10).to(device).to(memory_format=torch.channels_last)
fused = fuse(copy.deepcopy(plain))
plain.train(); fused.train()
cl = torch.channels_last
report = {}

def stem(m, x):
    return m.maxpool(m.relu(m.bn1(m.conv1(x)))) if m is plain else fused_stem(m, x)

cases = {
    "stem": (lambda m: (lambda x: stem(m, x)), (4, 3, 32, 32)),
    "layer1.0 (downsample)": (lambda m: m.layer1[0], (4, 64, 8, 8)),
    "layer2.1": (lambda m: m.layer2[1], (4, 512, 4, 4)),
    "layer4.0 (downsample)": (lambda m: m.layer4[0], (4, 1024, 4, 4)),
}
for name, (pick, shape) in cases.items():
    x = torch.randn(shape, device=device).contiguous(memory_format=cl)
    outs = {}
    for key, model in (("plain", plain), ("fused", fused)):
        xi = x.clone().requires_grad_()
        y = pick(model)(xi)
        g = torch.randn(y.shape, device=device, generator=torch.Generator(device=device).manual_seed(1))
        y.backward(g)
        outs[key] = (y.detach(), xi.grad)
    row = {
        "output": float((outs["fused"][0] - outs["plain"][0]).abs().max() / outs["plain"][0].abs().max()),
        "input grad": float((outs["fused"][1] - outs["plain"][1]).abs().max() / outs["plain"][1].abs().max()),
    }
    report[name] = row
grads = [(a.grad, b.grad) for a, b in zip(fused.parameters(), plain.parameters()) if b.grad is not None]
report["parameter grads"] = {"worst": max(float((a - b).abs().max() / b.abs().max()) for a, b in grads), "count": len(grads)}
buffers = [(a, b) for a, b in zip(fused.buffers(), plain.buffers())]
report["buffers"] = {"worst": max(float((a.double() - b.double()).abs().max()) for a, b in buffers),
                     "tracked": int(sum(int(b.item()) for b in fused.buffers() if b.dtype == torch.long))}
fused.eval(); plain.eval()
with torch.no_grad():
    x = torch.randn(2, 3, 64, 64, device=device).contiguous(memory_format=cl)
    report["eval"] = float((fused(x) - plain(x)).abs().max() / plain(x).abs().max())
print(json.dumps(report))
"""


def blocks(device: str, interpret: bool) -> dict[str, Any]:
    return run_script(BLOCKS, device, interpret=interpret, timeout=900)


def assert_blocks(report: dict[str, Any], tolerance: float) -> None:
    for name in ("stem", "layer1.0 (downsample)", "layer2.1", "layer4.0 (downsample)"):
        assert max(report[name].values()) < tolerance, (name, report[name])
    # the parameters of the stem (3), of two blocks with a downsampling branch (12 each) and of one without (9)
    assert report["parameter grads"]["count"] == 36 and report["parameter grads"]["worst"] < tolerance, report
    # running statistics as torch's, and each of the 12 batch norms that ran counted its batch once
    assert report["buffers"]["worst"] < tolerance and report["buffers"]["tracked"] == 12, report
    assert report["eval"] < tolerance, report


@INTERPRETER
def test_fused_resnet_blocks_match_torchvision_in_the_interpreter() -> None:
    assert_blocks(blocks("cpu", interpret=True), 1e-4)


@CUDA
def test_fused_resnet_blocks_match_torchvision_on_cuda() -> None:
    assert_blocks(blocks("cuda", interpret=False), 1e-3)


POOL = r"""
import json, sys
import torch, torch.nn.functional as F
from specbench.workloads.fused_pool import max_pool_3x3s2

device = sys.argv[1]
g = torch.Generator().manual_seed(0)
report = {}
for dtype in (torch.float32, torch.bfloat16):
    # odd and even sizes; small integers make ties in most windows, which the first position must win
    for n, c, h, w, ties in ((2, 8, 7, 9, True), (3, 40, 12, 12, False), (1, 64, 5, 6, True)):
        x = torch.randint(0, 3, (n, c, h, w), generator=g).float() if ties else torch.randn(n, c, h, w, generator=g)
        x = x.to(dtype).to(device).contiguous(memory_format=torch.channels_last).requires_grad_()
        gy = torch.randn(n, c, (h - 1) // 2 + 1, (w - 1) // 2 + 1, generator=g).to(dtype).to(device)
        y = max_pool_3x3s2(x)
        (dx,) = torch.autograd.grad(y, [x], gy)
        y_ref = F.max_pool2d(x.detach().float().requires_grad_(), 3, 2, 1)
        (dx_ref,) = torch.autograd.grad(y_ref, [y_ref.grad_fn.next_functions[0][0].variable], gy.float())
        report[f"{dtype} {n}x{c}x{h}x{w}"] = {
            "same output": torch.equal(y.float(), y_ref),
            "grad": float((dx.float() - dx_ref).abs().max()),
            "channels_last": y.is_contiguous(memory_format=torch.channels_last),
        }
print(json.dumps(report))
"""


def pooled(device: str, interpret: bool) -> dict[str, Any]:
    return run_script(POOL, device, interpret=interpret)


def assert_pooled(report: dict[str, dict[str, Any]]) -> None:
    assert len(report) == 6
    for key, row in report.items():
        assert row["same output"] and row["channels_last"], (key, row)
        # the gradient of float32 inputs is exact (each input sums at most four output gradients); a bfloat16
        # gradient is that sum rounded once to bfloat16 (under 0.04 for these sums of at most four normal values)
        assert row["grad"] < (1e-6 if "float32" in key else 0.04), (key, row)


@INTERPRETER
def test_max_pool_matches_torch_ties_included_in_the_interpreter() -> None:
    assert_pooled(pooled("cpu", interpret=True))


@CUDA
def test_max_pool_matches_torch_ties_included_on_cuda() -> None:
    assert_pooled(pooled("cuda", interpret=False))


# fused_kernels=pool: torchvision's ResNet-50 with only the stem's pooling on the kernel, the whole model against
# torchvision's (every other operator is torch's, so outputs agree to the pooling gradient's summation order)
POOL_MODEL = r"""
import copy, json, sys
import torch, torchvision
from specbench.workloads.resnet50.fused import MaxPool3x3s2, fuse_pool

device, size = sys.argv[1], int(sys.argv[2])
# fp32 throughout, in a fixed order: with TF32 convolutions and cuDNN free to pick its algorithms, the pooling
# gradient's own summation order (a last-bit difference) grew to 0.7% of a gradient's largest value through the
# layers below it (the contiguous layout on the H200, 2026-12-03); forward outputs were identical either way
torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
report = {}
for layout in ("channels_last", "contiguous"):
    fmt = getattr(torch, layout + "_format" if layout == "contiguous" else layout)
    torch.manual_seed(0)
    plain = torchvision.models.resnet50(num_classes=10).to(device).to(memory_format=fmt)
    pooled = fuse_pool(copy.deepcopy(plain))
    x = torch.randn(4, 3, size, size, device=device).contiguous(memory_format=fmt)
    outs = []
    for model in (plain, pooled):
        model.train()
        y = model(x)
        y.float().square().sum().backward()
        stem = model.maxpool(model.relu(model.bn1(model.conv1(x))))
        model.eval()
        with torch.no_grad():
            z = model(x)
        outs.append((y.detach(), [p.grad for p in model.parameters()], z, stem))
    (y0, g0, z0, s0), (y1, g1, z1, s1) = outs
    report[layout] = {
        "kernel": isinstance(pooled.maxpool, MaxPool3x3s2),
        "same keys": list(plain.state_dict()) == list(pooled.state_dict()),
        "same stem layout": s1.stride() == s0.stride(),
        "output": float((y1 - y0).abs().max() / y0.abs().max()),
        "grads": max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-12)) for a, b in zip(g1, g0)),
        "eval": float((z1 - z0).abs().max() / z0.abs().max()),
    }
print(json.dumps(report))
"""


def assert_pool_model(report: dict[str, Any], tolerance: float) -> None:
    assert set(report) == {"channels_last", "contiguous"}
    for layout, row in report.items():
        assert row.pop("kernel") and row.pop("same keys") and row.pop("same stem layout"), (layout, row)
        assert max(row.values()) < tolerance, (layout, row)


@INTERPRETER
def test_pool_only_resnet_matches_torchvision_in_the_interpreter() -> None:
    # 32 x 32 images: the interpreter runs each pooling program in Python (a quarter of the 64 x 64 work)
    assert_pool_model(run_script(POOL_MODEL, "cpu", "32", interpret=True, timeout=900), 1e-4)


@CUDA
def test_pool_only_resnet_matches_torchvision_on_cuda() -> None:
    assert_pool_model(run_script(POOL_MODEL, "cuda", "64", interpret=False), 1e-3)


def test_pool_only_needs_the_max_pooling_stem() -> None:
    from specbench.errors import UsageError
    from specbench.workloads.resnet50.fused import fuse_pool

    with pytest.raises(UsageError, match="fused_kernels=pool needs torchvision's ResNet"):
        fuse_pool(torch.nn.Sequential(torch.nn.MaxPool2d(3, 2, 1)))
    import torchvision

    model = torchvision.models.resnet18()
    model.maxpool = torch.nn.MaxPool2d(2, 2)
    with pytest.raises(UsageError, match="fused_kernels=pool needs the stem's 3x3, stride-2 max pooling"):
        fuse_pool(model)
