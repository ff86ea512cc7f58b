"""Training-mode batch normalisation fused with its residual add and ReLU, as Triton kernels (NHWC, CUDA).

`bn_act(x, weight, bias, running_mean, running_var, residual, relu, momentum, eps)` computes
`relu(batch_norm(x) + residual)` (the add and the ReLU each optional) over a channels-last activation
with the batch's statistics, updates the running statistics as torch does (unbiased variance), and
differentiates by the kernels below:

- forward: one pass over x for per-channel sums (less a pivot row of each split, combined split by split, so the variance keeps its
  precision), a small kernel for mean, 1/std and the running statistics, one pass for the output;
- backward: one pass over the output gradient and x (the ReLU's mask recomputed from x, or read from
  the output where a residual was added) for the two per-channel sums, one pass for the input gradient.

The activation is seen as a matrix of rows (N x H x W) by channels, channels contiguous.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import triton
import triton.language as tl

ROWS = 128
"""The largest rows of one tile in the reduction passes (the splits are counted in these)."""
TARGET_PROGRAMS = 132 * 8
"""About eight programs per streaming multiprocessor of an H100/H200 for the split reductions."""


REDUCE_CONFIGS = [triton.Config({"BM": bm}, num_warps=w) for bm in (32, 64, 128) for w in (4, 8)]
TILE_CONFIGS = [
    triton.Config({"BM": bm, "BC": bc}, num_warps=w) for bm in (32, 64, 128) for bc in (32, 64) for w in (4, 8)
]
"""Tile shapes and warps Triton's autotuner chooses from, once per activation shape."""
if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter has no device to time configurations on
    REDUCE_CONFIGS, TILE_CONFIGS = REDUCE_CONFIGS[2:3], TILE_CONFIGS[2:3]


@triton.autotune(configs=REDUCE_CONFIGS, key=["M", "C"])
@triton.jit
def _stats(X, PIVOT, PSUM, PSQ, M, C, ROWS_PER, BM: tl.constexpr, BC: tl.constexpr):
    # sums of x less the split's first row: a pivot within the data's spread keeps the variance's precision
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    split = tl.program_id(1)
    cmask = cols < C
    start = split * ROWS_PER
    pivot = tl.load(X + start.to(tl.int64) * C + cols, mask=cmask & (start < M), other=0.0).to(tl.float32)
    acc = tl.zeros([BM, BC], dtype=tl.float32)
    acc2 = tl.zeros([BM, BC], dtype=tl.float32)
    for r in range(0, ROWS_PER, BM):
        rows = start + r + tl.arange(0, BM)
        m = (rows[:, None] < M) & cmask[None, :]
        x = tl.load(X + rows[:, None].to(tl.int64) * C + cols[None, :], mask=m, other=0.0).to(tl.float32)
        d = tl.where(m, x - pivot[None, :], 0.0)
        acc += d
        acc2 += d * d
    tl.store(PIVOT + split * C + cols, pivot, mask=cmask)
    tl.store(PSUM + split * C + cols, tl.sum(acc, 0), mask=cmask)
    tl.store(PSQ + split * C + cols, tl.sum(acc2, 0), mask=cmask)


@triton.jit
def _finish_stats(
    PIVOT, PSUM, PSQ, SPLITS, ROWS_PER, W, B, RMEAN, RVAR, NEW_RMEAN, NEW_RVAR, MEAN, RSTD, SCALE, SHIFT,
    M, C, momentum, eps, BC: tl.constexpr,
):  # fmt: skip
    # each split's mean and sum of squared deviations, combined split by split (Chan et al.'s pairwise update)
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    cmask = cols < C
    count = tl.zeros([BC], dtype=tl.float32)
    mean = tl.zeros([BC], dtype=tl.float32)
    m2 = tl.zeros([BC], dtype=tl.float32)
    for i in range(0, SPLITS):
        n_i = tl.minimum(tl.maximum(M - i * ROWS_PER, 0), ROWS_PER).to(tl.float32)
        if n_i > 0:
            s = tl.load(PSUM + i * C + cols, mask=cmask, other=0.0)
            q = tl.load(PSQ + i * C + cols, mask=cmask, other=0.0)
            mean_i = tl.load(PIVOT + i * C + cols, mask=cmask, other=0.0) + s / n_i
            m2_i = tl.maximum(q - s * s / n_i, 0.0)
            total = count + n_i
            delta = mean_i - mean
            mean += delta * (n_i / total)
            m2 += m2_i + delta * delta * (count * n_i / total)
            count = total
    var = m2 / M
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=cmask, other=1.0).to(tl.float32)
    b = tl.load(B + cols, mask=cmask, other=0.0).to(tl.float32)
    scale = w * rstd
    tl.store(MEAN + cols, mean, mask=cmask)
    tl.store(RSTD + cols, rstd, mask=cmask)
    tl.store(SCALE + cols, scale, mask=cmask)
    tl.store(SHIFT + cols, b - mean * scale, mask=cmask)
    rmean = tl.load(RMEAN + cols, mask=cmask, other=0.0)
    rvar = tl.load(RVAR + cols, mask=cmask, other=0.0)
    tl.store(NEW_RMEAN + cols, rmean * (1.0 - momentum) + mean * momentum, mask=cmask)
    tl.store(NEW_RVAR + cols, rvar * (1.0 - momentum) + var * (M / (M - 1.0)) * momentum, mask=cmask)


@triton.autotune(configs=TILE_CONFIGS, key=["M", "C"])
@triton.jit
def _apply(
    X, RES, Y, SCALE, SHIFT, M, C, HAS_RES: tl.constexpr, RELU: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr
):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BC + tl.arange(0, BC)
    m = (rows[:, None] < M) & (cols[None, :] < C)
    offs = rows[:, None].to(tl.int64) * C + cols[None, :]
    scale = tl.load(SCALE + cols, mask=cols < C, other=0.0)
    shift = tl.load(SHIFT + cols, mask=cols < C, other=0.0)
    y = tl.load(X + offs, mask=m, other=0.0).to(tl.float32) * scale[None, :] + shift[None, :]
    if HAS_RES:
        y += tl.load(RES + offs, mask=m, other=0.0).to(tl.float32)
    if RELU:
        y = tl.maximum(y, 0.0)
    tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=m)


@triton.autotune(configs=REDUCE_CONFIGS, key=["M", "C"])
@triton.jit
def _grad_stats(
    DY, X, Y, DZ, MEAN, RSTD, SCALE, SHIFT, PDB, PDW, M, C, ROWS_PER,
    MASK_FROM_Y: tl.constexpr, RELU: tl.constexpr, WRITE_DZ: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    split = tl.program_id(1)
    cmask = cols < C
    mean = tl.load(MEAN + cols, mask=cmask, other=0.0)
    rstd = tl.load(RSTD + cols, mask=cmask, other=0.0)
    scale = tl.load(SCALE + cols, mask=cmask, other=0.0)
    shift = tl.load(SHIFT + cols, mask=cmask, other=0.0)
    acc_b = tl.zeros([BM, BC], dtype=tl.float32)
    acc_w = tl.zeros([BM, BC], dtype=tl.float32)
    start = split * ROWS_PER
    for r in range(0, ROWS_PER, BM):
        rows = start + r + tl.arange(0, BM)
        m = (rows[:, None] < M) & cmask[None, :]
        offs = rows[:, None].to(tl.int64) * C + cols[None, :]
        x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
        dz = tl.load(DY + offs, mask=m, other=0.0).to(tl.float32)
        if RELU:
            if MASK_FROM_Y:
                y = tl.load(Y + offs, mask=m, other=0.0)
                dz = tl.where(y > 0, dz, 0.0)
            else:
                dz = tl.where(x * scale[None, :] + shift[None, :] > 0, dz, 0.0)
        if WRITE_DZ:
            tl.store(DZ + offs, dz.to(DZ.dtype.element_ty), mask=m)
        dz = tl.where(m, dz, 0.0)
        acc_b += dz
        acc_w += dz * (x - mean[None, :]) * rstd[None, :]
    tl.store(PDB + split * C + cols, tl.sum(acc_b, 0), mask=cmask)
    tl.store(PDW + split * C + cols, tl.sum(acc_w, 0), mask=cmask)


@triton.jit
def _finish_grads(PDB, PDW, SPLITS, DB, DW, C, BC: tl.constexpr):
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    cmask = cols < C
    db = tl.zeros([BC], dtype=tl.float32)
    dw = tl.zeros([BC], dtype=tl.float32)
    for i in range(0, SPLITS):
        db += tl.load(PDB + i * C + cols, mask=cmask, other=0.0)
        dw += tl.load(PDW + i * C + cols, mask=cmask, other=0.0)
    tl.store(DB + cols, db, mask=cmask)
    tl.store(DW + cols, dw, mask=cmask)


@triton.autotune(configs=TILE_CONFIGS, key=["M", "C"])
@triton.jit
def _grad_input(
    DZ, X, DX, MEAN, RSTD, SCALE, SHIFT, DB, DW, M, C,
    RELU: tl.constexpr, BM: tl.constexpr, BC: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BC + tl.arange(0, BC)
    cmask = cols < C
    m = (rows[:, None] < M) & cmask[None, :]
    offs = rows[:, None].to(tl.int64) * C + cols[None, :]
    mean = tl.load(MEAN + cols, mask=cmask, other=0.0)
    rstd = tl.load(RSTD + cols, mask=cmask, other=0.0)
    scale = tl.load(SCALE + cols, mask=cmask, other=0.0)
    shift = tl.load(SHIFT + cols, mask=cmask, other=0.0)
    k_b = tl.load(DB + cols, mask=cmask, other=0.0) / M
    k_w = tl.load(DW + cols, mask=cmask, other=0.0) / M
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    dz = tl.load(DZ + offs, mask=m, other=0.0).to(tl.float32)
    if RELU:
        dz = tl.where(x * scale[None, :] + shift[None, :] > 0, dz, 0.0)
    xhat = (x - mean[None, :]) * rstd[None, :]
    dx = scale[None, :] * (dz - k_b[None, :] - xhat * k_w[None, :])
    tl.store(DX + offs, dx.to(DX.dtype.element_ty), mask=m)


def _block_c(c: int) -> int:
    return min(64, triton.next_power_of_2(c))


def _splits(m: int, c: int, bc: int) -> tuple[int, int]:
    """(programs along the rows, rows per program) of a split reduction over m rows: whole tiles of any size."""
    wanted = max(1, min(triton.cdiv(m, ROWS), TARGET_PROGRAMS // triton.cdiv(c, bc)))
    rows_per = triton.cdiv(triton.cdiv(m, wanted), ROWS) * ROWS
    return triton.cdiv(m, rows_per), rows_per


def _tiles(m: int, c: int) -> Any:
    return lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(c, meta["BC"]))


def _rows(t: torch.Tensor) -> torch.Tensor:
    """An NCHW tensor in channels-last memory as its (N*H*W, C) matrix, without a copy."""
    n, c, h, w = t.shape
    if not t.is_contiguous(memory_format=torch.channels_last):
        t = t.contiguous(memory_format=torch.channels_last)
    return t.permute(0, 2, 3, 1).reshape(n * h * w, c)


def _like(rows: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    n, c, h, w = shape
    return rows.view(n, h, w, c).permute(0, 3, 1, 2)


@torch.library.custom_op(
    "specbench::bn_act",
    mutates_args=(),
    schema="(Tensor x, Tensor weight, Tensor bias, Tensor running_mean, Tensor running_var, Tensor? residual, "
    "bool relu, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
)
def _bn_act(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    residual: torch.Tensor | None,
    relu: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, ...]:
    """The output, the batch's mean, 1/std and folded scale and shift (for the backward), the new running statistics.

    Functional (it returns the running statistics instead of updating them), so that autograd can be registered.
    """
    xr = _rows(x)
    m, c = xr.shape
    bc = _block_c(c)
    splits, rows_per = _splits(m, c, bc)
    f32: dict[str, Any] = {"device": x.device, "dtype": torch.float32}
    pivot, psum, psq = (torch.empty((splits, c), **f32) for _ in range(3))
    _stats[(triton.cdiv(c, bc), splits)](xr, pivot, psum, psq, m, c, rows_per, BC=bc)
    mean, rstd, scale, shift, new_mean, new_var = (torch.empty(c, **f32) for _ in range(6))
    _finish_stats[(triton.cdiv(c, bc),)](
        pivot, psum, psq, splits, rows_per, weight, bias, running_mean, running_var, new_mean, new_var,
        mean, rstd, scale, shift,
        m, c, momentum, eps, BC=bc,
    )  # fmt: skip
    yr = torch.empty_like(xr)
    rr = _rows(residual) if residual is not None else xr
    _apply[_tiles(m, c)](xr, rr, yr, scale, shift, m, c, HAS_RES=residual is not None, RELU=relu)
    return _like(yr, x.shape), mean, rstd, scale, shift, new_mean, new_var


@_bn_act.register_fake
def _bn_act_fake(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, running_mean: torch.Tensor, running_var: torch.Tensor,
    residual: torch.Tensor | None, relu: bool, momentum: float, eps: float,
) -> tuple[torch.Tensor, ...]:  # fmt: skip
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device, memory_format=torch.channels_last)
    return (y, *(x.new_empty(x.shape[1], dtype=torch.float32) for _ in range(6)))


@torch.library.custom_op(
    "specbench::bn_act_backward",
    mutates_args=(),
    schema="(Tensor dy, Tensor x, Tensor? y, Tensor mean, Tensor rstd, Tensor scale, Tensor shift, bool relu) "
    "-> (Tensor, Tensor, Tensor, Tensor)",
)
def _bn_act_backward(
    dy: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor | None,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    relu: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """dx, dweight, dbias (float32) and, when the forward added a residual (y given), its gradient (else empty)."""
    has_res = y is not None
    xr, dyr = _rows(x), _rows(dy)
    m, c = xr.shape
    bc = _block_c(c)
    splits, rows_per = _splits(m, c, bc)
    f32: dict[str, Any] = {"device": xr.device, "dtype": torch.float32}
    pdb = torch.empty((splits, c), **f32)
    pdw = torch.empty((splits, c), **f32)
    # With a residual, the ReLU's gradient is written once (it is also the residual's gradient) and the
    # input gradient reads it back; without, the mask is recomputed from x in both passes.
    dzr = torch.empty_like(xr) if has_res else dyr
    _grad_stats[(triton.cdiv(c, bc), splits)](
        dyr, xr, _rows(y) if y is not None else xr, dzr, mean, rstd, scale, shift, pdb, pdw, m, c, rows_per,
        MASK_FROM_Y=has_res, RELU=relu, WRITE_DZ=has_res, BC=bc,
    )  # fmt: skip
    db = torch.empty(c, **f32)
    dw = torch.empty(c, **f32)
    _finish_grads[(triton.cdiv(c, bc),)](pdb, pdw, splits, db, dw, c, BC=bc)
    dxr = torch.empty_like(xr)
    _grad_input[_tiles(m, c)](dzr, xr, dxr, mean, rstd, scale, shift, db, dw, m, c, RELU=relu and not has_res)
    dres = _like(dzr, x.shape) if has_res else x.new_empty(0)
    return _like(dxr, x.shape), dw, db, dres


@_bn_act_backward.register_fake
def _bn_act_backward_fake(
    dy: torch.Tensor, x: torch.Tensor, y: torch.Tensor | None, mean: torch.Tensor, rstd: torch.Tensor,
    scale: torch.Tensor, shift: torch.Tensor, relu: bool,
) -> tuple[torch.Tensor, ...]:  # fmt: skip
    def act() -> torch.Tensor:
        return torch.empty(x.shape, dtype=x.dtype, device=x.device, memory_format=torch.channels_last)

    c = x.shape[1]
    return act(), mean.new_empty(c), mean.new_empty(c), act() if y is not None else x.new_empty(0)


def _setup(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
    x, weight, _, _, _, residual, relu, _, _ = inputs
    y, mean, rstd, scale, shift, _, _ = output
    ctx.relu = relu
    ctx.has_res = residual is not None
    ctx.param_dtype = weight.dtype
    ctx.save_for_backward(x, y if ctx.has_res else None, mean, rstd, scale, shift)


def _backward(ctx: Any, dy: torch.Tensor, *_: Any) -> tuple[Any, ...]:
    x, y, mean, rstd, scale, shift = ctx.saved_tensors
    dx, dw, db, dres = _bn_act_backward(dy, x, y, mean, rstd, scale, shift, ctx.relu)
    dt = ctx.param_dtype
    return dx, dw.to(dt), db.to(dt), None, None, dres if ctx.has_res else None, None, None, None


_bn_act.register_autograd(_backward, setup_context=_setup)


def bn_act(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    residual: torch.Tensor | None = None,
    relu: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> torch.Tensor:
    """relu(batch_norm(x) + residual) in training mode with the kernels above (see the module's text).

    An operator of its own (`torch.ops.specbench.bn_act`), so that torch.compile keeps it whole.
    """
    out, *_, new_mean, new_var = _bn_act(x, weight, bias, running_mean, running_var, residual, relu, momentum, eps)
    with torch.no_grad():
        running_mean.copy_(new_mean)
        running_var.copy_(new_var)
    return out  # type: ignore[no-any-return]
