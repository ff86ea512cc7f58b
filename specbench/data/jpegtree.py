"""Write an ImageNet-format JPEG tree on this machine (no download): for data-path tests and benchmarks.

`train/<wnid>/<wnid>_<k>.JPEG` and the validation set either in class folders or flat as
`val/ILSVRC2012_val_<k>.JPEG` with Kaggle's `LOC_val_solution.csv`. Each image has a random size in
the given ranges (ImageNet's typical 380-520 x 300-420 by default) and a random texture with detail at
every scale, so that its JPEG has a realistic size; a learnable tree also gives each class its own
colour and stripe orientation, an unlearnable one draws labels independently of the pixels.
"""

from __future__ import annotations

import io
import math
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

WIDTHS = (380, 520)
HEIGHTS = (300, 420)


@dataclass(frozen=True)
class TreeSpec:
    """What to write: class and image counts, size ranges, JPEG quality, val layout, learnability, seed."""

    classes: int
    train_per_class: int
    val_per_class: int
    widths: tuple[int, int] = WIDTHS
    heights: tuple[int, int] = HEIGHTS
    quality: int = 90
    detail: float = 24.0
    texture: float = 30.0
    flat_val: bool = False
    learnable: bool = True
    seed: int = 0


def wnid(label: int) -> str:
    """A WordNet-style class id, as ImageNet names its folders."""
    return f"n{label:08d}"


def _colour(pattern: int, classes: int) -> np.ndarray:
    """A class colour: hues spread round the colour wheel, so that few classes are far apart."""
    import colorsys

    value = 0.55 + 0.3 * ((pattern * 7) % 5) / 4
    return np.array(colorsys.hsv_to_rgb(pattern / max(1, classes), 0.75, value), dtype=np.float32) * 255


def _image(spec: TreeSpec, label: int, rng: np.random.Generator) -> bytes:
    from PIL import Image

    width = int(rng.integers(spec.widths[0], spec.widths[1] + 1))
    height = int(rng.integers(spec.heights[0], spec.heights[1] + 1))
    pattern = label if spec.learnable else int(rng.integers(spec.classes))
    colour = _colour(pattern, spec.classes)
    angle = math.pi * pattern / max(1, spec.classes)
    wave = np.float32(2 * math.pi / 24.0)
    xs = np.arange(width, dtype=np.float32) * np.float32(math.cos(angle)) * wave
    ys = np.arange(height, dtype=np.float32) * np.float32(math.sin(angle)) * wave
    stripes = np.float32(45.0) * np.sin(ys[:, None] + xs[None, :])
    coarse = rng.normal(0, spec.texture, size=(height // 32 + 2, width // 32 + 2, 3)).astype(np.float32)
    coarse_img = Image.fromarray(np.clip(coarse + 128, 0, 255).astype(np.uint8)).resize(
        (width, height), Image.Resampling.BILINEAR
    )
    pixels = rng.standard_normal((height, width, 3), dtype=np.float32)
    pixels *= np.float32(spec.detail)
    pixels += np.asarray(coarse_img, dtype=np.float32)
    pixels += (colour - 128)[None, None, :] + stripes[..., None]
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=spec.quality)
    return buffer.getvalue()


def _write_chunk(args: tuple[TreeSpec, Path, list[tuple[str, int, int]]]) -> int:
    spec, root, items = args
    written = 0
    for rel, label, number in items:
        rng = np.random.default_rng([spec.seed, number])
        data = _image(spec, label, rng)
        (root / rel).write_bytes(data)
        written += len(data)
    return written


def plan(spec: TreeSpec) -> tuple[list[tuple[str, int, int]], list[tuple[str, str]]]:
    """Every image to write (relative path, label, number) and the flat validation set's label rows."""
    items: list[tuple[str, int, int]] = []
    number = 0
    for label in range(spec.classes):
        for k in range(spec.train_per_class):
            items.append((f"train/{wnid(label)}/{wnid(label)}_{k}.JPEG", label, number))
            number += 1
    val_labels = [label for label in range(spec.classes) for _ in range(spec.val_per_class)]
    np.random.default_rng(spec.seed + 1).shuffle(val_labels)
    rows: list[tuple[str, str]] = []
    for k, label in enumerate(val_labels, start=1):
        if spec.flat_val:
            stem = f"ILSVRC2012_val_{k:08d}"
            items.append((f"val/{stem}.JPEG", label, number))
            rows.append((stem, wnid(label)))
        else:
            items.append((f"val/{wnid(label)}/ILSVRC2012_val_{k:08d}.JPEG", label, number))
        number += 1
    return items, rows


def write_tree(root: Path, spec: TreeSpec, processes: int = 1) -> dict[str, float]:
    """Write the tree under `root` (which must not hold one yet); returns counts and the mean file size."""
    root = Path(root)
    items, rows = plan(spec)
    folders = {str(Path(rel).parent) for rel, _, _ in items}
    for folder in sorted(folders):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "val").mkdir(parents=True, exist_ok=True)
    if spec.flat_val:
        lines = ["ImageId,PredictionString"] + [f"{stem},{label} 0 0 10 10" for stem, label in rows]
        (root / "LOC_val_solution.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    processes = max(1, processes)
    chunks = [(spec, root, items[i::processes]) for i in range(processes)]
    if processes == 1:
        total = _write_chunk(chunks[0])
    else:
        with ProcessPoolExecutor(max_workers=processes) as pool:
            total = sum(pool.map(_write_chunk, chunks))
    train = spec.classes * spec.train_per_class
    return {
        "train_images": train,
        "val_images": len(items) - train,
        "mean_file_kb": total / max(1, len(items)) / 1000.0,
        "bytes": float(total),
    }


def default_processes() -> int:
    """Processes for writing: the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
