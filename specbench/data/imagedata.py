"""Image data for the ResNet-50 executor: a generated learnable set, and ImageNet through DataLoader workers.

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

from specbench.data.imagenet import ImageTree, Split

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


class ImageList(torch.utils.data.Dataset[tuple[Any, int]]):
    """Images of one split of a scanned tree, opened with PIL and transformed per image (torchvision's way)."""

    def __init__(self, root: Path, split: Split, transform: Any) -> None:
        self.root, self.split, self.transform = root, split, transform

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        from torchvision.datasets.folder import default_loader

        image = default_loader(self.split.path(self.root, index))
        return self.transform(image), int(self.split.labels[index])


def imagenet_loaders(
    tree: ImageTree,
    size: int,
    resize: int,
    batch_size: int,
    workers: int,
    seed: int,
    pin: bool,
    rank: int = 0,
    world: int = 1,
) -> tuple[Any, Any]:
    """DataLoaders with PIL decoding and per-image transforms in `workers` processes (the CPU path)."""
    import torchvision.transforms as T

    normalize = T.Normalize(IMAGENET_MEAN, IMAGENET_STD)
    train = ImageList(
        tree.root, tree.train, T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(), normalize])
    )
    val = ImageList(tree.root, tree.val, T.Compose([T.Resize(resize), T.CenterCrop(size), T.ToTensor(), normalize]))
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
            torch.utils.data.DataLoader(shard, batch_size=batch_size, **common),
        )
    train_loader = torch.utils.data.DataLoader(
        train,
        batch_size=batch_size,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(seed),
        **common,
    )
    val_loader = torch.utils.data.DataLoader(val, batch_size=batch_size, shuffle=False, **common)
    return train_loader, val_loader
