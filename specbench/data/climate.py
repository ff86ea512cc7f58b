"""CAM5-layout climate data for the extreme-weather benchmark: a generator and a loader.

The layout is MLPerf HPC DeepCAM's: `train/` and `validation/` folders of HDF5 files, each with
`climate/data` (H, W, 16) and `climate/labels_0` (H, W) with classes 0 background, 1 tropical
cyclone, 2 atmospheric river, and `stats.h5` with per-channel `climate/minval` and
`climate/maxval` for min-max normalisation. A user with the real CAM5 data points `--data` at it;
the generator writes learnable synthetic fields in exactly that layout for tests and smoke runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from specbench.errors import UsageError

CHANNELS = 16
CLASSES = 3
SPLITS = ("train", "validation")


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as err:
        raise UsageError("CAM5-layout data needs h5py: pip install 'specbench[run]'") from err
    return h5py


def synthetic_sample(height: int, width: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One sample: cyclone-like vortices and river-like filaments over smooth background fields.

    Vortices are rotating Gaussian lows (pressure dips, wind swirls, warm moist cores); rivers are
    long meandering bands of water vapour. Labels come from the same fields that make them.
    """
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    ys, xs = ys / height, xs / width
    fields = np.empty((height, width, CHANNELS), dtype=np.float32)
    for c in range(CHANNELS):
        phase = rng.uniform(0, 2 * math.pi)
        fields[..., c] = 0.3 * np.sin(2 * math.pi * (xs * (1 + c % 3) + ys * (c % 2)) + phase)
    fields += 0.15 * rng.standard_normal(fields.shape).astype(np.float32)
    cyclone = np.zeros((height, width), dtype=np.float32)
    for _ in range(rng.integers(1, 4)):
        cy, cx, radius = rng.uniform(0.15, 0.85), rng.uniform(0.1, 0.9), rng.uniform(0.05, 0.1)
        r2 = ((ys - cy) ** 2 + (xs - cx) ** 2) / radius**2
        core = np.exp(-r2)
        angle = np.arctan2(ys - cy, xs - cx)
        cyclone = np.maximum(cyclone, core)
        fields[..., 0] -= 2.0 * core  # sea-level pressure dip
        fields[..., 1] += 2.0 * core * np.cos(angle)  # swirling winds
        fields[..., 2] += 2.0 * core * np.sin(angle)
        fields[..., 3] += 1.5 * core  # warm core
    river = np.zeros((height, width), dtype=np.float32)
    for _ in range(rng.integers(1, 3)):
        y0, slope = rng.uniform(0.2, 0.8), rng.uniform(-0.4, 0.4)
        wave, freq, width_r = rng.uniform(0.03, 0.08), rng.uniform(1.5, 3.0), rng.uniform(0.025, 0.045)
        centre = y0 + slope * (xs - 0.5) + wave * np.sin(2 * math.pi * freq * xs)
        band = np.exp(-(((ys - centre) / width_r) ** 2)) * (xs > rng.uniform(0.0, 0.3))
        river = np.maximum(river, band)
        fields[..., 4] += 2.5 * band  # integrated water vapour
        fields[..., 5] += 1.5 * band  # moisture flux
    labels = np.zeros((height, width), dtype=np.int64)
    labels[river > 0.5] = 2
    labels[cyclone > 0.5] = 1
    return fields, labels


def generate_arrays(count: int, size: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` samples in memory: fields (count, H, W, 16) float32 and labels (count, H, W) int64."""
    rng = np.random.default_rng(seed)
    pairs = [synthetic_sample(size[0], size[1], rng) for _ in range(count)]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


def normalise(data: np.ndarray, minval: np.ndarray, maxval: np.ndarray) -> np.ndarray:
    """Min-max normalisation per channel as with stats.h5, channels moved first: (..., H, W, C) -> (..., C, H, W)."""
    scaled = (data - minval.astype(np.float32)) / np.maximum(maxval - minval, 1e-6).astype(np.float32)
    return np.ascontiguousarray(np.moveaxis(scaled, -1, -3))


def generate(
    out: Path, samples: int, size: tuple[int, int] = (96, 144), eval_fraction: float = 0.2, seed: int = 0
) -> dict[str, int]:
    """Write `samples` files split into train/ and validation/, plus stats.h5; return the counts."""
    if samples < 2:
        raise UsageError(f"--samples must be at least 2 (one train and one validation file), found {samples}")
    height, width = size
    if height < 16 or width < 16:
        raise UsageError(f"--size must be at least 16 x 16, found {height} x {width}")
    h5py = _h5py()
    rng = np.random.default_rng(seed)
    n_eval = max(1, round(samples * eval_fraction))
    counts = {"train": samples - n_eval, "validation": n_eval}
    minval = np.full(CHANNELS, np.inf, dtype=np.float64)
    maxval = np.full(CHANNELS, -np.inf, dtype=np.float64)
    for split in SPLITS:
        folder = out / split
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(counts[split]):
            data, labels = synthetic_sample(height, width, rng)
            minval = np.minimum(minval, data.min(axis=(0, 1)))
            maxval = np.maximum(maxval, data.max(axis=(0, 1)))
            with h5py.File(folder / f"data-{index:06d}.h5", "w") as handle:
                handle.create_dataset("climate/data", data=data)
                handle.create_dataset("climate/labels_0", data=labels.astype(np.int32))
    with h5py.File(out / "stats.h5", "w") as handle:
        handle.create_dataset("climate/minval", data=minval.astype(np.float32))
        handle.create_dataset("climate/maxval", data=maxval.astype(np.float32))
    return counts


class CamSplit:
    """One split of a CAM5-layout folder: normalised (16, H, W) float32 inputs and (H, W) int64 labels."""

    def __init__(self, root: Path, split: str) -> None:
        h5py = _h5py()
        folder = root / split
        if not folder.is_dir() or not (root / "stats.h5").is_file():
            raise UsageError(
                f"{root}: expected {root / split}/ with HDF5 files and {root / 'stats.h5'} (the CAM5 layout)"
            )
        self.files = sorted(folder.glob("*.h5"))
        if not self.files:
            raise UsageError(f"{folder}: no .h5 files")
        with h5py.File(root / "stats.h5", "r") as handle:
            minval = np.asarray(handle["climate/minval"], dtype=np.float32)
            maxval = np.asarray(handle["climate/maxval"], dtype=np.float32)
        if minval.shape != (CHANNELS,) or maxval.shape != (CHANNELS,):
            raise UsageError(f"{root / 'stats.h5'}: expected climate/minval and climate/maxval of shape ({CHANNELS},)")
        self.minval, self.maxval = minval, maxval

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        h5py = _h5py()
        with h5py.File(self.files[index], "r") as handle:
            data = np.asarray(handle["climate/data"], dtype=np.float32)
            labels = np.asarray(handle["climate/labels_0"], dtype=np.int64)
        if data.ndim != 3 or data.shape[-1] != CHANNELS or labels.shape != data.shape[:2]:
            raise UsageError(
                f"{self.files[index]}: expected climate/data (H, W, {CHANNELS}) and climate/labels_0 (H, W), "
                f"found {data.shape} and {labels.shape}"
            )
        return normalise(data, self.minval, self.maxval), labels


def mean_iou(predicted: np.ndarray, labels: np.ndarray, classes: int = CLASSES) -> float:
    """Mean IoU as MLPerf HPC DeepCAM's reference computes it.

    Per sample, each class contributes tp / (union x classes), and a class whose union is empty
    (absent from prediction and label) contributes 1/classes; the sum over classes is averaged over
    samples. Equivalently: the mean over classes of the IoU, with IoU 1 for an empty union.
    """
    if predicted.shape != labels.shape:
        raise ValueError(f"predicted {predicted.shape} and labels {labels.shape} differ")
    per_sample = []
    for pred, true in zip(predicted.reshape(len(labels), -1), labels.reshape(len(labels), -1), strict=True):
        ious = []
        for c in range(classes):
            p, t = pred == c, true == c
            union = np.logical_or(p, t).sum()
            ious.append(1.0 if union == 0 else np.logical_and(p, t).sum() / union)
        per_sample.append(float(np.mean(ious)))
    return float(np.mean(per_sample))
