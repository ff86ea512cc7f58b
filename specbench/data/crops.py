"""Batched crops of decoded images on the run's device, with torchvision's augmentation semantics.

Training: RandomResizedCrop (scale 0.08-1, ratio 3/4-4/3, ten tries then the centre fallback, as
`torchvision.transforms.RandomResizedCrop.get_params` draws them, here for a whole batch at once),
horizontal flip with p = 0.5, normalisation with ImageNet's mean and std. Evaluation: resize the short
side to `resize`, centre crop `size`, as `Resize` then `CenterCrop` place it. One `roi_align` call resamples
every box of a batch (half-pixel centres, one to n x n bilinear samples per output pixel averaged over its
footprint, n = ceil(box / size), so downscaling is antialiased); a fourth channel of ones marks each
image's extent in the padded canvas, and dividing by it keeps edge pixels from blending with padding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)
ATTEMPTS = 10
CANVAS_BYTES = 2 * 1024**3


def random_resized_boxes(
    heights: torch.Tensor, widths: torch.Tensor, generator: torch.Generator, scale: tuple[float, float] = SCALE
) -> torch.Tensor:
    """(N, 4) int64 boxes `top, left, height, width`, drawn for each image as RandomResizedCrop.get_params does."""
    return boxes_of_draws(heights, widths, box_draws(heights.numel(), generator), scale)


def box_draws(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The uniform numbers `random_resized_boxes` draws for N images: (N, ATTEMPTS) for the areas, (N, ATTEMPTS)
    for the aspect ratios, (N, 2) for the positions. Row k serves image k alone, so that the boxes of part of a
    batch can be made once its sizes are known, and come out as if the whole batch were made at once."""
    areas = torch.rand(n, ATTEMPTS, generator=generator, dtype=torch.float64)
    aspects = torch.rand(n, ATTEMPTS, generator=generator, dtype=torch.float64)
    return areas, aspects, torch.rand(n, 2, generator=generator, dtype=torch.float64)


def boxes_of_draws(
    heights: torch.Tensor,
    widths: torch.Tensor,
    draws: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    scale: tuple[float, float] = SCALE,
) -> torch.Tensor:
    """(N, 4) int64 boxes `top, left, height, width` of N images from their rows of `box_draws`."""
    n = heights.numel()
    h_img = heights.double().view(n, 1)
    w_img = widths.double().view(n, 1)
    area = h_img * w_img
    target = area * (scale[0] + (scale[1] - scale[0]) * draws[0])
    low, high = math.log(RATIO[0]), math.log(RATIO[1])
    aspect = torch.exp(low + (high - low) * draws[1])
    w = torch.round(torch.sqrt(target * aspect))
    h = torch.round(torch.sqrt(target / aspect))
    ok = (w > 0) & (w <= w_img) & (h > 0) & (h <= h_img)
    first = ok.to(torch.int8).argmax(dim=1, keepdim=True)
    h_box = h.gather(1, first).view(n)
    w_box = w.gather(1, first).view(n)
    h_img, w_img = h_img.view(n), w_img.view(n)
    fb_h, fb_w = _fallback(h_img, w_img)
    found = ok.any(dim=1)
    h_box = torch.where(found, h_box, fb_h)
    w_box = torch.where(found, w_box, fb_w)
    u = draws[2]
    top = torch.where(found, torch.floor(u[:, 0] * (h_img - h_box + 1)), torch.floor((h_img - h_box) / 2))
    left = torch.where(found, torch.floor(u[:, 1] * (w_img - w_box + 1)), torch.floor((w_img - w_box) / 2))
    return torch.stack([top, left, h_box, w_box], dim=1).to(torch.int64)


def _fallback(h_img: torch.Tensor, w_img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole image, clipped to the ratio range, when ten tries found no box (get_params' last branch)."""
    in_ratio = w_img / h_img
    narrow = in_ratio < RATIO[0]
    wide = in_ratio > RATIO[1]
    w = torch.where(wide, torch.round(h_img * RATIO[1]), w_img)
    h = torch.where(narrow, torch.round(w_img / RATIO[0]), h_img)
    return h, w


def center_boxes(heights: torch.Tensor, widths: torch.Tensor, resize: int, size: int) -> torch.Tensor:
    """(N, 4) float64 source boxes `x1, y1, x2, y2` of Resize(resize) then CenterCrop(size)."""
    h, w = heights.double(), widths.double()
    short_is_h = h <= w
    long_new = torch.floor(resize * torch.maximum(h, w) / torch.minimum(h, w))
    h_new = torch.where(short_is_h, torch.full_like(h, resize), long_new)
    w_new = torch.where(short_is_h, long_new, torch.full_like(w, resize))
    top = torch.round((h_new - size) / 2.0)
    left = torch.round((w_new - size) / 2.0)
    sy, sx = h / h_new, w / w_new
    return torch.stack([left * sx, top * sy, (left + size) * sx, (top + size) * sy], dim=1)


def crop_boxes_xyxy(boxes: torch.Tensor) -> torch.Tensor:
    """`top, left, height, width` boxes as `x1, y1, x2, y2` float64 (the pixel edges they cover)."""
    top, left, h, w = boxes.double().unbind(1)
    return torch.stack([left, top, left + w, top + h], dim=1)


def pad_images(images: Sequence[torch.Tensor]) -> torch.Tensor:
    """(N, 3, Hmax, Wmax) uint8 with each (3, H, W) image at the top left and zeros beyond it."""
    height = max(int(img.shape[1]) for img in images)
    width = max(int(img.shape[2]) for img in images)
    canvas = torch.zeros((len(images), 3, height, width), dtype=torch.uint8, device=images[0].device)
    for index, img in enumerate(images):
        canvas[index, :, : img.shape[1], : img.shape[2]] = img
    return canvas


def normalisation(mean: Sequence[float], std: Sequence[float], device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """Scale and shift that take 0-255 values to (x / 255 - mean) / std, as (1, 3, 1, 1) tensors on `device`."""
    scale = torch.tensor([1.0 / (255.0 * s) for s in std]).view(1, 3, 1, 1)
    shift = torch.tensor([-m / s for m, s in zip(mean, std, strict=True)]).view(1, 3, 1, 1)
    return scale.to(device), shift.to(device)


def resized_crops(
    canvas: torch.Tensor,
    sizes: torch.Tensor,
    boxes: torch.Tensor,
    size: int,
    norm: tuple[torch.Tensor, ...],
    flips: torch.Tensor | None = None,
) -> torch.Tensor:
    """(N, 3, size, size) float32 normalised crops of `boxes` (x1, y1, x2, y2) from a padded uint8 canvas.

    `sizes` holds each image's (height, width) inside the canvas, `norm` comes from `normalisation`,
    `flips` mirrors the chosen crops. Small inputs already on the canvas's device keep it free of host syncs.
    """
    device = canvas.device
    n, _, height, width = canvas.shape
    sizes = sizes.to(device, non_blocking=True)
    planes = torch.empty((n, 4, height, width), dtype=torch.float32, device=device)
    planes[:, :3] = canvas
    rows = torch.arange(height, device=device).view(1, height, 1) < sizes[:, 0].view(n, 1, 1)
    cols = torch.arange(width, device=device).view(1, 1, width) < sizes[:, 1].view(n, 1, 1)
    planes[:, 3] = rows & cols
    return crops_of_planes(planes, boxes, size, norm, flips)


def packed_planes(flat: torch.Tensor, layout: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(N, 4, height, width) float32 planes of N images packed in one flat uint8 buffer: RGB, then ones over
    each image's extent, zeros beyond it (what `resized_crops` builds from a padded canvas).

    `layout` is (N, 6) int64 on `flat`'s device: offset of the image's first byte, its height and width,
    and its channel, row and column strides (H * W, W, 1 for a (3, H, W) image; 1, 3W, 3 for (H, W, 3)).
    `flat` ends with one zero byte, which every pixel outside an image reads. A fixed number of kernels
    for the whole batch, whatever its size: no per-image work on the host.
    """
    n = layout.shape[0]
    device = flat.device
    offset, h, w, sc, sy, sx = (layout[:, k].view(n, 1, 1) for k in range(6))
    y = torch.arange(height, device=device).view(1, height, 1)
    x = torch.arange(width, device=device).view(1, 1, width)
    inside = (y < h) & (x < w)
    pixel = torch.where(inside, offset + y * sy + x * sx, flat.numel() - 1)
    planes = torch.empty((n, 4, height, width), dtype=torch.float32, device=device)
    for channel in range(3):
        planes[:, channel] = flat[torch.where(inside, pixel + channel * sc, pixel)]
    planes[:, 3] = inside
    return planes


def crops_of_planes(
    planes: torch.Tensor,
    boxes: torch.Tensor,
    size: int,
    norm: tuple[torch.Tensor, ...],
    flips: torch.Tensor | None = None,
) -> torch.Tensor:
    """(N, 3, size, size) float32 normalised crops of `boxes` (x1, y1, x2, y2) from (N, 4, H, W) planes."""
    from torchvision.ops import roi_align

    device = planes.device
    n = planes.shape[0]
    index = torch.arange(n, device=device, dtype=torch.float32).view(n, 1)
    rois = torch.cat([index, boxes.to(device=device, dtype=torch.float32, non_blocking=True)], dim=1)
    out = roi_align(planes, rois, (size, size), spatial_scale=1.0, sampling_ratio=-1, aligned=True)
    rgb = out[:, :3] / out[:, 3:].clamp_min(1e-6)
    if flips is not None:
        rgb = torch.where(flips.to(device, non_blocking=True).view(n, 1, 1, 1), rgb.flip(-1), rgb)
    scale, shift = norm
    return torch.addcmul(shift, rgb, scale)


def canvas_groups(sizes: torch.Tensor, budget_bytes: int = CANVAS_BYTES) -> list[list[int]]:
    """Indices split so that each group's padded float canvas stays within `budget_bytes` and is at most half padding.

    The usual batch (ImageNet's images are mostly at most 500 pixels a side) is one group, in order.
    """
    if len(sizes) * int(sizes[:, 0].max()) * int(sizes[:, 1].max()) * 16 <= budget_bytes:
        return [list(range(len(sizes)))]
    areas = (sizes[:, 0] * sizes[:, 1]).tolist()
    order = sorted(range(len(areas)), key=lambda i: -areas[i])
    groups: list[list[int]] = []
    height = width = 0
    for i in order:
        h, w = int(sizes[i, 0]), int(sizes[i, 1])
        new_h, new_w = max(height, h), max(width, w)
        if groups and (len(groups[-1]) + 1) * new_h * new_w * 16 <= budget_bytes and new_h * new_w <= 2 * h * w:
            groups[-1].append(i)
            height, width = new_h, new_w
        else:
            groups.append([i])
            height, width = h, w
    return groups


def decode_regions(boxes: torch.Tensor, sizes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The pixels each crop reads, and its box in them: (N, 4) int64 regions `x, y, width, height` (the box
    widened by one pixel on each side, for the bilinear sampling at its edges, and kept inside the image) and
    the (N, 4) float64 boxes `x1, y1, x2, y2` moved into their regions. Cropping a region decoded alone then
    gives the pixels that cropping the whole image gives. `sizes` is (N, 2) height, width."""
    boxes = boxes.double()
    h, w = sizes[:, 0].double(), sizes[:, 1].double()
    x0 = torch.clamp(torch.floor(boxes[:, 0]) - 1, min=0)
    y0 = torch.clamp(torch.floor(boxes[:, 1]) - 1, min=0)
    x1 = torch.minimum(torch.ceil(boxes[:, 2]) + 1, w)
    y1 = torch.minimum(torch.ceil(boxes[:, 3]) + 1, h)
    regions = torch.stack([x0, y0, x1 - x0, y1 - y0], dim=1).to(torch.int64)
    moved = boxes - torch.stack([x0, y0, x0, y0], dim=1)
    return regions, moved
