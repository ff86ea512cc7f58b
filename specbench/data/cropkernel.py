"""The GPU pipeline's crops in one Triton kernel: straight from the decoded uint8 pixels to the batch.

`crops.packed_planes` and `crops.crops_of_planes` give the same crops in about a dozen torch kernels: they
build float32 planes of the batch's largest image for every image (RGB and a fourth plane of ones over the
image), resample them with `roi_align`, divide by the fourth plane, flip, normalise and copy into the
batch. For a batch of 256 crop regions of ImageNet's sizes that is gigabytes of memory traffic on the GPU
the training runs on (the regions fill about 37% of the canvas, `lab/probes/probe32.py`). The
kernel here computes each output pixel from the uint8 pixels it samples, with `roi_align`'s arithmetic
(aligned=True, sampling_ratio=-1: ceil(box / size) bilinear samples a side, averaged), the ones plane as
a weight that is 1 inside the image and 0 in the row and column beyond it, the flip and the
normalisation, and writes the batch in its memory format: one kernel, reading each pixel it needs once.

It gives the torch path's crops to float32 rounding (`tests/test_crop_kernel.py`: within 1e-5 in
Triton's interpreter on a CPU, 5e-4 on CUDA, where fused multiply-adds round differently). On an H200
it crops a batch of 256 in 0.72 ms against the torch kernels' 5.3 ms (`benchmarks/crop_kernel.py`).
It needs Triton, which torch's CUDA wheels ship; `available()` says whether it can run on a device.
"""

from __future__ import annotations

import os

import torch

BLOCK = 256  # output pixels per program


try:
    import triton
    import triton.language as tl
except ImportError:  # torch's CPU-only builds for some platforms come without it
    triton = None


def available(device: torch.device | str) -> bool:
    """Whether the kernel can run on `device`: a CUDA device with Triton, or any device in Triton's interpreter
    (TRITON_INTERPRET=1 before this module is imported, for tests on a CPU)."""
    if triton is None:
        return False
    if os.environ.get("TRITON_INTERPRET") == "1":
        return True
    return torch.device(device).type == "cuda"


if triton is not None:

    @triton.jit
    def _corner(flat_ptr, base, yy, xx, h, w, sc, sy, sx, weight, valid):  # type: ignore[no-untyped-def]
        """One of a sample's four bilinear corners: its weighted R, G, B and ones (0 beyond the image)."""
        inside = valid & (yy < h) & (xx < w)
        at = flat_ptr + base + yy * sy + xx * sx
        r = weight * tl.load(at, mask=inside, other=0).to(tl.float32)
        g = weight * tl.load(at + sc, mask=inside, other=0).to(tl.float32)
        b = weight * tl.load(at + 2 * sc, mask=inside, other=0).to(tl.float32)
        return r, g, b, weight * tl.where(inside, 1.0, 0.0)

    @triton.jit
    def _crops_kernel(  # type: ignore[no-untyped-def]
        flat_ptr,
        layout_ptr,
        params_ptr,
        grids_ptr,
        norm_ptr,
        out_ptr,
        out_sn,
        out_sc,
        out_sy,
        out_sx,
        SIZE: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        n = tl.program_id(0)
        pixel = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        valid = pixel < SIZE * SIZE
        ph = pixel // SIZE
        pw = pixel % SIZE
        row = layout_ptr + n * 6
        base = tl.load(row)
        h = tl.load(row + 1)
        w = tl.load(row + 2)
        sc = tl.load(row + 3)
        sy = tl.load(row + 4)
        sx = tl.load(row + 5)
        start_h = tl.load(params_ptr + n * 5)
        start_w = tl.load(params_ptr + n * 5 + 1)
        bin_h = tl.load(params_ptr + n * 5 + 2)
        bin_w = tl.load(params_ptr + n * 5 + 3)
        flip = tl.load(params_ptr + n * 5 + 4)
        grid_h = tl.load(grids_ptr + n * 2)
        grid_w = tl.load(grids_ptr + n * 2 + 1)
        src_w = tl.where(flip > 0.5, SIZE - 1 - pw, pw)  # a flipped crop's column k is the crop's column SIZE-1-k
        # roi_align samples a canvas one row and one column larger than the image (crops.py's padding), whose
        # RGB and ones planes are 0 beyond the image
        height = h + 1
        width = w + 1
        acc_r = tl.zeros((BLOCK,), tl.float32)
        acc_g = tl.zeros((BLOCK,), tl.float32)
        acc_b = tl.zeros((BLOCK,), tl.float32)
        acc_m = tl.zeros((BLOCK,), tl.float32)
        for iy in range(0, grid_h):
            y = start_h + ph.to(tl.float32) * bin_h + tl.math.div_rn((iy + 0.5) * bin_h, grid_h.to(tl.float32))
            for ix in range(0, grid_w):
                x = start_w + src_w.to(tl.float32) * bin_w + tl.math.div_rn((ix + 0.5) * bin_w, grid_w.to(tl.float32))
                # torchvision's bilinear_interpolate (roi_align_kernel.cu), branch for branch
                empty = (y < -1.0) | (y > height.to(tl.float32)) | (x < -1.0) | (x > width.to(tl.float32))
                yc = tl.maximum(y, 0.0)
                xc = tl.maximum(x, 0.0)
                y_low = yc.to(tl.int64)
                x_low = xc.to(tl.int64)
                y_edge = y_low >= height - 1
                x_edge = x_low >= width - 1
                y_low = tl.where(y_edge, height - 1, y_low)
                x_low = tl.where(x_edge, width - 1, x_low)
                y_high = tl.where(y_edge, y_low, y_low + 1)
                x_high = tl.where(x_edge, x_low, x_low + 1)
                yc = tl.where(y_edge, y_low.to(tl.float32), yc)
                xc = tl.where(x_edge, x_low.to(tl.float32), xc)
                ly = yc - y_low.to(tl.float32)
                lx = xc - x_low.to(tl.float32)
                hy = tl.where(empty, 0.0, 1.0 - ly)
                ly = tl.where(empty, 0.0, ly)
                hx = 1.0 - lx
                r1, g1, b1, m1 = _corner(flat_ptr, base, y_low, x_low, h, w, sc, sy, sx, hy * hx, valid)
                r2, g2, b2, m2 = _corner(flat_ptr, base, y_low, x_high, h, w, sc, sy, sx, hy * lx, valid)
                r3, g3, b3, m3 = _corner(flat_ptr, base, y_high, x_low, h, w, sc, sy, sx, ly * hx, valid)
                r4, g4, b4, m4 = _corner(flat_ptr, base, y_high, x_high, h, w, sc, sy, sx, ly * lx, valid)
                acc_r += r1 + r2 + r3 + r4
                acc_g += g1 + g2 + g3 + g4
                acc_b += b1 + b2 + b3 + b4
                acc_m += m1 + m2 + m3 + m4
        count = tl.maximum(grid_h * grid_w, 1).to(tl.float32)
        ones = tl.maximum(tl.math.div_rn(acc_m, count), 1e-6)
        out = out_ptr + n * out_sn + ph * out_sy + pw * out_sx
        r = tl.math.div_rn(tl.math.div_rn(acc_r, count), ones)
        g = tl.math.div_rn(tl.math.div_rn(acc_g, count), ones)
        b = tl.math.div_rn(tl.math.div_rn(acc_b, count), ones)
        tl.store(out, tl.load(norm_ptr + 3) + r * tl.load(norm_ptr), mask=valid)
        tl.store(out + out_sc, tl.load(norm_ptr + 4) + g * tl.load(norm_ptr + 1), mask=valid)
        tl.store(out + 2 * out_sc, tl.load(norm_ptr + 5) + b * tl.load(norm_ptr + 2), mask=valid)


def fused_crops(
    flat: torch.Tensor,
    layout: torch.Tensor,
    boxes: torch.Tensor,
    flips: torch.Tensor,
    norm: tuple[torch.Tensor, ...],
    out: torch.Tensor,
) -> torch.Tensor:
    """`out` (N, 3, S, S) float32, in any memory format, filled with the normalised crops of `boxes` (x1, y1, x2,
    y2) of the N images packed in `flat` (uint8, as `crops.packed_planes` reads it, its (N, 6) int64 `layout`
    on the same device), mirrored where `flips` (N) is set; as `packed_planes` then `crops_of_planes` give
    them. `norm` comes from `crops.normalisation`. No host sync: the per-image numbers are computed on the
    device, in float32 as roi_align computes them."""
    if triton is None:
        raise RuntimeError("the Triton crop kernel needs triton (torch's CUDA wheels ship it)")
    n, size = out.shape[0], out.shape[-1]
    if n == 0:
        return out
    device = flat.device
    boxes = boxes.to(device=device, dtype=torch.float32, non_blocking=True)
    # roi_align's float32 arithmetic: start = x1 - 0.5, extent = (x2 - 0.5) - start, bin = extent / size,
    # ceil(extent / size) samples a side
    start = boxes[:, :2] - 0.5
    extent = (boxes[:, 2:] - 0.5) - start
    bins = extent / size
    grids = torch.ceil(extent / size).to(torch.int32)
    flipped = flips.to(device=device, dtype=torch.float32, non_blocking=True).view(n, 1)
    # (N, 5) start_h, start_w, bin_h, bin_w, flip: boxes are x, y pairs, the kernel takes rows first
    params = torch.cat([start[:, [1, 0]], bins[:, [1, 0]], flipped], dim=1).contiguous()
    grids = grids[:, [1, 0]].contiguous()
    scale, shift = norm
    packed_norm = torch.cat([scale.reshape(3), shift.reshape(3)]).to(device=device, dtype=torch.float32)
    sn, sc, sy, sx = out.stride()
    _crops_kernel[(n, -(-size * size // BLOCK))](
        flat, layout.contiguous(), params, grids, packed_norm, out, sn, sc, sy, sx, SIZE=size, BLOCK=BLOCK
    )
    return out
