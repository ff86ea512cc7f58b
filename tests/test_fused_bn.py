"""The fused batch-norm, add and ReLU kernels against torch's batch_norm: in Triton's interpreter on a CPU, on CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def compare(device: str, dtype: str, interpret: bool) -> dict[str, dict[str, float]]:
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""} if interpret else dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", COMPARE, device, dtype], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


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
