"""ImageNet as people have it on disk: `train/<class>/<image>`, and `val/` in class folders or flat with its labels.

A flat `val/` (the ILSVRC2012 archive unpacked as it comes) takes its labels from one ground-truth file at
the root of the data folder: Kaggle's `LOC_val_solution.csv`, a `val.txt` of `<file> <label>` lines (the
label a class folder name or an index into the sorted classes), or the devkit's
`ILSVRC2012_devkit_t12/data/` (`ILSVRC2012_validation_ground_truth.txt` with `meta.mat`, read with scipy).
Every layout is checked with a message that names the file and the fix.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from specbench.errors import UsageError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
MAX_LABEL_FILE_BYTES = 64 * 1024 * 1024
KAGGLE_FILE = "LOC_val_solution.csv"
TEXT_FILE = "val.txt"
DEVKIT_DIR = "ILSVRC2012_devkit_t12/data"
LABEL_FILES = (KAGGLE_FILE, TEXT_FILE, f"{DEVKIT_DIR}/ILSVRC2012_validation_ground_truth.txt", f"{DEVKIT_DIR}/meta.mat")
LAYOUT_HELP = (
    "expected train/<class>/<image> and either val/<class>/<image> or a flat val/ with its labels in "
    f"{KAGGLE_FILE}, {TEXT_FILE} or {DEVKIT_DIR}/ beside train/ (docs/data-path.md)"
)


@dataclass(frozen=True)
class Split:
    """One split's images: paths relative to the data folder (bytes, compact for a million files) and labels."""

    files: np.ndarray
    labels: np.ndarray
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.files)

    def path(self, root: Path, index: int) -> str:
        return os.path.join(root, self.files[index].decode())


@dataclass(frozen=True)
class ImageTree:
    """A checked ImageNet-format tree: class names (sorted folder names of train/), both splits, the val layout."""

    root: Path
    classes: tuple[str, ...]
    train: Split
    val: Split
    val_layout: str
    label_file: Path | None

    def listing_sha256(self) -> str:
        """sha256 over every image's relative path and size, and the label file's bytes (pixels are not read)."""
        digest = hashlib.sha256()
        for split in (self.train, self.val):
            for name, size in zip(split.files.tolist(), split.sizes.tolist(), strict=True):
                digest.update(name + b"\t" + str(size).encode() + b"\n")
        if self.label_file is not None:
            digest.update(self.label_file.relative_to(self.root).as_posix().encode() + b"\n")
            digest.update(hashlib.sha256(self.label_file.read_bytes()).digest())
        return digest.hexdigest()


def _images(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        found = [e for e in entries if e.name.lower().endswith(IMAGE_EXTENSIONS) and e.is_file()]
    return sorted(found, key=lambda e: e.name)


def _split(root: Path, rows: list[tuple[str, int, int]]) -> Split:
    files = np.array([r[0].encode() for r in rows], dtype=bytes)
    return Split(
        files=files,
        labels=np.array([r[1] for r in rows], dtype=np.int64),
        sizes=np.array([r[2] for r in rows], dtype=np.int64),
    )


def _class_folders(root: Path, part: str, classes: dict[str, int]) -> list[tuple[str, int, int]]:
    rows: list[tuple[str, int, int]] = []
    for name in sorted(classes):
        folder = root / part / name
        if not folder.is_dir():
            continue
        rows += [(f"{part}/{name}/{e.name}", classes[name], e.stat().st_size) for e in _images(folder)]
    return rows


def scan_tree(root: Path) -> ImageTree:
    """The tree at `root`, checked; cached while the folders and label files keep their modification times."""
    root = Path(root)
    for part in ("train", "val"):
        if not (root / part).is_dir():
            raise UsageError(f"--data {root}: no folder {root / part}; {LAYOUT_HELP}")
    watched = [root / "train", root / "val", *(root / name for name in LABEL_FILES)]
    stamps = tuple(os.stat(p).st_mtime_ns if p.exists() else 0 for p in watched)
    return _scan(str(root.resolve()), stamps)


@lru_cache(maxsize=4)
def _scan(root_text: str, _stamps: tuple[int, ...]) -> ImageTree:
    root = Path(root_text)
    names = sorted(e.name for e in os.scandir(root / "train") if e.is_dir())
    if not names:
        raise UsageError(f"--data {root}: {root / 'train'} holds no class folders; {LAYOUT_HELP}")
    classes = {name: index for index, name in enumerate(names)}
    train = _class_folders(root, "train", classes)
    empty = sorted(set(names) - {r[0].split("/")[1] for r in train})
    if empty:
        raise UsageError(
            f"--data {root}: {len(empty)} class folders of train/ hold no images (first: train/{empty[0]}); "
            f"image files end in {', '.join(IMAGE_EXTENSIONS)}"
        )
    val_dirs = sorted(e.name for e in os.scandir(root / "val") if e.is_dir())
    if val_dirs:
        unknown = sorted(set(val_dirs) - set(names))
        if unknown:
            raise UsageError(
                f"--data {root}: val/ has class folders that train/ lacks ({len(unknown)}, first: val/{unknown[0]}); "
                "the validation classes must be those of train/"
            )
        val, layout, label_file = _class_folders(root, "val", classes), "class folders", None
    else:
        val, label_file = _flat_val(root, classes)
        layout = f"flat, labels from {label_file.relative_to(root).as_posix()}"
    if not val:
        raise UsageError(f"--data {root}: val/ holds no images; {LAYOUT_HELP}")
    return ImageTree(root, tuple(names), _split(root, train), _split(root, val), layout, label_file)


def _flat_val(root: Path, classes: dict[str, int]) -> tuple[list[tuple[str, int, int]], Path]:
    """Images directly in val/ with their labels from the ground-truth file beside train/."""
    images = {e.name: e.stat().st_size for e in _images(root / "val")}
    present = [root / name for name in LABEL_FILES[:3] if (root / name).is_file()]
    if not present:
        raise UsageError(
            f"--data {root}: val/ holds {len(images)} images and no class folders, and no ground-truth file was "
            f"found; {LAYOUT_HELP}"
        )
    label_file = present[0]
    if label_file.name == KAGGLE_FILE:
        named = _kaggle_labels(label_file)
    elif label_file.name == TEXT_FILE:
        named = _text_labels(label_file, list(classes))
    else:
        named = _devkit_labels(label_file)
    return _join_labels(root, label_file, images, named, classes), label_file


def _read_text(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_LABEL_FILE_BYTES:
        raise UsageError(f"{path}: {size} bytes, more than the {MAX_LABEL_FILE_BYTES} a ground-truth file may have")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: not UTF-8 text ({err})") from err


def _kaggle_labels(path: Path) -> dict[str, str]:
    """`ImageId,PredictionString` rows; the class is the first word of the prediction string."""
    reader = csv.reader(io.StringIO(_read_text(path)))
    header = next(reader, None)
    if header is None or [h.strip() for h in header[:2]] != ["ImageId", "PredictionString"]:
        raise UsageError(f"{path}:1: expected the header 'ImageId,PredictionString', found {header!r}")
    labels: dict[str, str] = {}
    for line, row in enumerate(reader, start=2):
        if len(row) < 2 or not row[1].split():
            raise UsageError(f"{path}:{line}: expected 'ImageId,<class> ...', found {','.join(row)!r}")
        labels[row[0].strip()] = row[1].split()[0]
    return labels


def _text_labels(path: Path, names: list[str]) -> dict[str, str]:
    """`<file> <label>` lines; the label is a class folder name or an index into the sorted class names."""
    labels: dict[str, str] = {}
    for line, text in enumerate(_read_text(path).splitlines(), start=1):
        parts = text.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise UsageError(f"{path}:{line}: expected '<file name> <class or index>', found {text!r}")
        name, label = parts
        if label.isdigit():
            if int(label) >= len(names):
                raise UsageError(
                    f"{path}:{line}: class index {label} is outside 0..{len(names) - 1} (train/'s classes)"
                )
            label = names[int(label)]
        labels[name] = label
    return labels


def _devkit_labels(path: Path) -> dict[str, str]:
    """The devkit's ground truth: line k holds the ILSVRC2012_ID of ILSVRC2012_val_<k>; meta.mat maps IDs to classes."""
    meta = path.parent / "meta.mat"
    if not meta.is_file():
        raise UsageError(f"{path}: the devkit's labels need {meta} beside it, to map ILSVRC2012_IDs to class folders")
    if meta.stat().st_size > MAX_LABEL_FILE_BYTES:
        raise UsageError(f"{meta}: more than {MAX_LABEL_FILE_BYTES} bytes; not the devkit's meta.mat")
    try:
        from scipy.io import loadmat
    except ImportError as err:
        raise UsageError(
            f"{meta}: reading the devkit's meta.mat needs scipy (pip install scipy); or give {KAGGLE_FILE} or {TEXT_FILE}"
        ) from err
    try:
        synsets = loadmat(str(meta), squeeze_me=True)["synsets"]
        wnids = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in synsets if int(s["num_children"]) == 0}
    except Exception as err:  # a damaged or foreign .mat file: say which and why
        raise UsageError(f"{meta}: not the ILSVRC2012 devkit's meta.mat ({type(err).__name__}: {err})") from err
    labels: dict[str, str] = {}
    for line, text in enumerate(_read_text(path).split(), start=1):
        if not text.isdigit() or int(text) not in wnids:
            raise UsageError(f"{path}:{line}: expected an ILSVRC2012_ID that meta.mat lists, found {text!r}")
        labels[f"ILSVRC2012_val_{line:08d}"] = wnids[int(text)]
    return labels


def _join_labels(
    root: Path, label_file: Path, images: dict[str, int], named: dict[str, str], classes: dict[str, int]
) -> list[tuple[str, int, int]]:
    """Each image of val/ with its label; images without one, labels without an image, or unknown classes fail."""
    by_stem = {name.rsplit(".", 1)[0]: name for name in images}
    resolved: dict[str, str] = {}
    for key, label in named.items():
        if "/" in key or "\\" in key or key in ("", ".", ".."):
            raise UsageError(f"{label_file}: entry {key!r} is not a plain file name of val/")
        name = key if key in images else by_stem.get(key)
        if name is None:
            raise UsageError(
                f"{label_file}: labels {len(named)} images, but {key!r} is not in {root / 'val'} "
                f"({len(images)} images there); give the complete validation set or a ground-truth file for these images"
            )
        if label not in classes:
            raise UsageError(f"{label_file}: {key!r} is labelled {label!r}, which is not a class folder of train/")
        resolved[name] = label
    missing = sorted(set(images) - set(resolved))
    if missing:
        raise UsageError(f"{label_file}: {len(missing)} images of val/ have no label (first: val/{missing[0]})")
    return [(f"val/{name}", classes[resolved[name]], images[name]) for name in sorted(images)]
