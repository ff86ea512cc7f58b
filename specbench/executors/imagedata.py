"""Image data for the ResNet-50 executor: a generated learnable set, ImageNet folders, synthetic batches.

The generated set ("specbench-shapes-N") is made by the project, so the smoke profile needs no
download: each class has its own colour and stripe orientation under noise, which a network
learns in a few epochs. It is deterministic; its sha256 identifies it in submission.yaml.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from specbench.errors import UsageError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
TRAIN_SEED = 20261129
EVAL_SEED = 20261130


def generate_images(count: int, shape: list[int], num_classes: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` images of `shape` (C, H, W) in `num_classes` learnable classes, normalised floats."""
    channels, height, width = shape
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(count) % num_classes
    labels = labels[torch.randperm(count, generator=gen)]
    class_gen = torch.Generator().manual_seed(7)
    colours = torch.rand(num_classes, channels, generator=class_gen) * 2 - 1
    angles = torch.arange(num_classes, dtype=torch.float32) * (math.pi / num_classes)
    ys = torch.linspace(-1, 1, height).view(height, 1)
    xs = torch.linspace(-1, 1, width).view(1, width)
    direction = torch.cos(angles).view(-1, 1, 1) * xs + torch.sin(angles).view(-1, 1, 1) * ys
    stripes = torch.sin(direction * 6 * math.pi)
    images = 1.0 * colours[labels].view(count, channels, 1, 1) + 0.5 * stripes[labels].unsqueeze(1)
    shift = (torch.rand(count, 1, 1, 1, generator=gen) - 0.5) * 0.6
    images = images + shift + 0.25 * torch.randn(count, channels, height, width, generator=gen)
    return images.contiguous(), labels


def tensor_sha256(*tensors: torch.Tensor) -> str:
    digest = hashlib.sha256()
    for tensor in tensors:
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass
class TensorBatches:
    """Shuffled mini-batches over in-memory tensors, without worker processes."""

    images: torch.Tensor
    labels: torch.Tensor
    batch_size: int
    drop_last: bool
    seed: int
    rank: int = 0
    world: int = 1

    def __len__(self) -> int:
        n = self.images.shape[0]
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def epoch(self, epoch: int, shuffle: bool = True) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Global batches of `batch_size`; with several ranks, this rank's contiguous share of each."""
        n = self.images.shape[0]
        generator = torch.Generator().manual_seed(self.seed + epoch)
        order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
        for i in range(len(self)):
            index = order[i * self.batch_size : (i + 1) * self.batch_size]
            share = math.ceil(len(index) / self.world)
            index = index[self.rank * share : (self.rank + 1) * share]
            if len(index):
                yield self.images[index], self.labels[index]


def imagenet_loaders(
    root: Path, batch_size: int, eval_batch_size: int, workers: int, seed: int, pin: bool, rank: int = 0, world: int = 1
) -> tuple[Any, Any]:
    """DataLoaders over an ImageFolder tree with `train/` and `val/` (one folder per class)."""
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder

    for part in ("train", "val"):
        if not (root / part).is_dir():
            raise UsageError(
                f"--data {root}: expected ImageNet in ImageFolder layout with {root / part}/<class>/<image>"
            )
    normalize = T.Normalize(IMAGENET_MEAN, IMAGENET_STD)
    train = ImageFolder(
        str(root / "train"), T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), normalize])
    )
    val = ImageFolder(str(root / "val"), T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), normalize]))
    common: dict[str, Any] = {"num_workers": workers, "pin_memory": pin, "persistent_workers": workers > 0}
    if workers > 0:
        common["prefetch_factor"] = 4
    if world > 1:
        from torch.utils.data.distributed import DistributedSampler

        sampler: DistributedSampler[Any] = DistributedSampler(
            train, num_replicas=world, rank=rank, shuffle=True, seed=seed, drop_last=True
        )
        shard = torch.utils.data.Subset(val, list(range(rank, len(val), world)))
        return (
            torch.utils.data.DataLoader(train, batch_size=batch_size, sampler=sampler, drop_last=True, **common),
            torch.utils.data.DataLoader(shard, batch_size=eval_batch_size, **common),
        )
    train_loader = torch.utils.data.DataLoader(
        train,
        batch_size=batch_size,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(seed),
        **common,
    )
    val_loader = torch.utils.data.DataLoader(val, batch_size=eval_batch_size, shuffle=False, **common)
    return train_loader, val_loader


def folder_listing_sha256(root: Path) -> tuple[str, int, int]:
    """sha256 over the sorted relative paths and sizes of a dataset tree (content is not read), with counts."""
    digest = hashlib.sha256()
    counts = {"train": 0, "val": 0}
    for part in ("train", "val"):
        for path in sorted((root / part).rglob("*")):
            if path.is_file():
                counts[part] += 1
                digest.update(f"{path.relative_to(root).as_posix()}\t{path.stat().st_size}\n".encode())
    return digest.hexdigest(), counts["train"], counts["val"]
