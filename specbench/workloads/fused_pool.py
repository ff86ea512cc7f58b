"""ResNet's stem max pooling (3x3 window, stride 2, padding 1) over a channels-last activation, as Triton kernels.

`max_pool_3x3s2(x)` equals `torch.nn.functional.max_pool2d(x, 3, 2, 1)`, gradient included: the forward
keeps, per output value, which of the window's nine positions held the maximum (the first in row-major
order wins a tie, and the last NaN wins over numbers, as in torch's kernel), in one byte; the backward
gives each input position the sum of the output gradients of the (at most four) windows whose maximum
it was, reading each window's byte instead of scattering into the input gradient.

The activation is seen as (N, H, W, C) with channels contiguous; `x` is NCHW in channels-last memory.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BP": bp, "BC": bc}, num_warps=w) for bp in (16, 32, 64) for bc in (32, 64) for w in (4, 8)]
"""Output (or input) positions and channels per program, and warps, that Triton's autotuner chooses from."""
if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter has no device to time configurations on
    CONFIGS = CONFIGS[4:5]


@triton.autotune(configs=CONFIGS, key=["P", "C", "H", "W"])
@triton.jit
def _forward(X, Y, IDX, P, C, H, W, OH, OW, BP: tl.constexpr, BC: tl.constexpr):
    pos = tl.program_id(0) * BP + tl.arange(0, BP)
    cols = tl.program_id(1) * BC + tl.arange(0, BC)
    pmask = pos < P
    cmask = cols < C
    ow = pos % OW
    oh = (pos // OW) % OH
    n = pos // (OW * OH)
    best = tl.full([BP, BC], float("-inf"), tl.float32)
    where = tl.zeros([BP, BC], dtype=tl.int32)
    for k in tl.static_range(9):
        ih = oh * 2 - 1 + k // 3
        iw = ow * 2 - 1 + k % 3
        inside = pmask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        row = (n.to(tl.int64) * H + ih) * W + iw
        m = inside[:, None] & cmask[None, :]
        v = tl.load(X + row[:, None] * C + cols[None, :], mask=m, other=float("-inf")).to(tl.float32)
        take = m & ((v > best) | (v != v))
        best = tl.where(take, v, best)
        where = tl.where(take, k, where)
    out = pos.to(tl.int64)[:, None] * C + cols[None, :]
    m = pmask[:, None] & cmask[None, :]
    tl.store(Y + out, best.to(Y.dtype.element_ty), mask=m)
    tl.store(IDX + out, where.to(tl.int8), mask=m)


@triton.autotune(configs=CONFIGS, key=["P", "C", "H", "W"])
@triton.jit
def _backward(DY, IDX, DX, P, C, H, W, OH, OW, BP: tl.constexpr, BC: tl.constexpr):
    pos = tl.program_id(0) * BP + tl.arange(0, BP)  # input positions
    cols = tl.program_id(1) * BC + tl.arange(0, BC)
    pmask = pos < P
    cmask = cols < C
    iw = pos % W
    ih = (pos // W) % H
    n = pos // (W * H)
    acc = tl.zeros([BP, BC], dtype=tl.float32)
    # an input row ih lies in the window of output row (ih + 1) // 2 at offset (ih + 1) % 2 and, when ih is
    # odd, also in that of output row (ih - 1) // 2 at offset 2; the same for columns
    for a in tl.static_range(2):
        oh = (ih + 1) // 2 - a
        kh = (ih + 1) % 2 + 2 * a
        h_ok = (oh >= 0) & (oh < OH) & (kh <= 2)
        for b in tl.static_range(2):
            ow = (iw + 1) // 2 - b
            kw = (iw + 1) % 2 + 2 * b
            ok = pmask & h_ok & (ow >= 0) & (ow < OW) & (kw <= 2)
            m = ok[:, None] & cmask[None, :]
            at = ((n.to(tl.int64) * OH + oh) * OW + ow)[:, None] * C + cols[None, :]
            won = tl.load(IDX + at, mask=m, other=-1).to(tl.int32) == (kh * 3 + kw)[:, None]
            g = tl.load(DY + at, mask=m & won, other=0.0).to(tl.float32)
            acc += g
    out = pos.to(tl.int64)[:, None] * C + cols[None, :]
    tl.store(DX + out, acc.to(DX.dtype.element_ty), mask=pmask[:, None] & cmask[None, :])


def _grid(p: int, c: int) -> Any:
    return lambda meta: (triton.cdiv(p, meta["BP"]), triton.cdiv(c, meta["BC"]))


def _nhwc(t: torch.Tensor) -> torch.Tensor:
    if not t.is_contiguous(memory_format=torch.channels_last):
        t = t.contiguous(memory_format=torch.channels_last)
    return t.permute(0, 2, 3, 1)


@torch.library.custom_op("specbench::max_pool_3x3s2", mutates_args=(), schema="(Tensor x) -> (Tensor, Tensor)")
def _max_pool(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The pooled activation (channels-last) and, per output value, its window's winning position (int8, NHWC)."""
    n, c, h, w = x.shape
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    y = torch.empty((n, oh, ow, c), device=x.device, dtype=x.dtype)
    idx = torch.empty((n, oh, ow, c), device=x.device, dtype=torch.int8)
    p = n * oh * ow
    _forward[_grid(p, c)](_nhwc(x), y, idx, p, c, h, w, oh, ow)
    return y.permute(0, 3, 1, 2), idx


@_max_pool.register_fake
def _max_pool_fake(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n, c, h, w = x.shape
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    y = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
    return y, x.new_empty((n, oh, ow, c), dtype=torch.int8)


@torch.library.custom_op(
    "specbench::max_pool_3x3s2_backward",
    mutates_args=(),
    schema="(Tensor dy, Tensor idx, SymInt h, SymInt w) -> Tensor",
)
def _max_pool_backward(dy: torch.Tensor, idx: torch.Tensor, h: int, w: int) -> torch.Tensor:
    n, oh, ow, c = idx.shape
    dx = torch.empty((n, h, w, c), device=dy.device, dtype=dy.dtype)
    p = n * h * w
    _backward[_grid(p, c)](_nhwc(dy), idx, dx, p, c, h, w, oh, ow)
    return dx.permute(0, 3, 1, 2)


@_max_pool_backward.register_fake
def _max_pool_backward_fake(dy: torch.Tensor, idx: torch.Tensor, h: int, w: int) -> torch.Tensor:
    n, _, _, c = idx.shape
    return torch.empty((n, c, h, w), dtype=dy.dtype, device=dy.device, memory_format=torch.channels_last)


def _setup(ctx: Any, inputs: tuple[torch.Tensor], output: tuple[torch.Tensor, torch.Tensor]) -> None:
    ctx.save_for_backward(output[1])
    ctx.size = inputs[0].shape[2], inputs[0].shape[3]


def _grad(ctx: Any, dy: torch.Tensor, _: Any) -> torch.Tensor:
    (idx,) = ctx.saved_tensors
    return _max_pool_backward(dy, idx, *ctx.size)  # type: ignore[no-any-return]


_max_pool.register_autograd(_grad, setup_context=_setup)


def max_pool_3x3s2(x: torch.Tensor) -> torch.Tensor:
    """max_pool2d(x, kernel_size=3, stride=2, padding=1) over a 4-d activation, with the kernels above.

    An operator of its own (`torch.ops.specbench.max_pool_3x3s2`), so that torch.compile keeps it whole.
    """
    return _max_pool(x)[0]  # type: ignore[no-any-return]
