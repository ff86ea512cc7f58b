"""What every decode path of the device loader shares: the reads it is handed, the split's files, libjpeg-turbo.

The reading threads read a batch's files in chunks; the batch's first `cpu_share` they also decode
with libjpeg-turbo (`JpegFiles.decode_many`), and the rest goes to a decode path (`DecodePath`) in the
decoding thread. libjpeg-turbo is also every path's fallback for an image the GPU refuses.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from specbench.data.imagenet import Split
from specbench.errors import UsageError

Read = tuple[np.ndarray, int, list[Future[Any]], list[Future[Any]]]
"""One batch from the reading threads: its indices, its first `cpu_share` count, the futures of libjpeg-turbo's
decodes of that part (`decode_many`) and those of the decode path's `read` of the rest."""


class DecodePath(Protocol):
    """One way of decoding the part of each batch that libjpeg-turbo does not: `read` runs in the reading
    threads on chunks of it, `batches` in the decoding thread yields what the assembling thread takes."""

    def read(self, indices: list[int]) -> Any: ...

    def batches(self, reads: Iterator[Read], stop: threading.Event, generator: torch.Generator) -> Iterator[Any]: ...


@dataclass
class DecodeCounts:
    """Images of the batches the region path handed out: all of them, and those the hardware decoder decoded."""

    engine_images: int = 0
    region_images: int = 0


def one_intra_op_thread() -> None:
    """In each reading thread: torch's CPU ops (packing decoded images) on this thread alone. Without it, every
    reading thread would start a team of intra-op threads as large as the machine, and the teams would fight
    for its cores. Threads whose torch already started (the training thread) keep their own count."""
    torch.set_num_threads(1)


@dataclass(frozen=True)
class JpegFiles:
    """A split's JPEG files: read as bytes, decoded by libjpeg-turbo, and taken to the loader's device."""

    root: Path
    split: Split
    device: torch.device
    pinned: bool
    """Whether decoded batches are packed in pinned memory (a GPU run), for one asynchronous copy."""

    def read(self, index: int) -> torch.Tensor:
        from torchvision.io import read_file

        path = self.split.path(self.root, index)
        try:
            return read_file(path)
        except RuntimeError as err:
            raise UsageError(f"--data: cannot read {path}: {err}") from err

    def load_many(self, indices: list[int]) -> list[torch.Tensor]:
        """Runs in a reading thread: the files' bytes."""
        return [self.read(i) for i in indices]

    def decode_many(self, indices: list[int]) -> tuple[torch.Tensor, list[tuple[int, int, int]]]:
        """Runs in a reading thread: the files decoded by libjpeg-turbo, packed (height, width, channel)
        one after the other into one buffer (pinned for a GPU run), so that one copy takes them to the device."""
        from torchvision.io import ImageReadMode, decode_image

        planes = []
        for i in indices:
            try:
                image = decode_image(self.read(i), mode=ImageReadMode.RGB)
            except RuntimeError as err:
                path = self.split.path(self.root, i)
                raise UsageError(f"--data: {path} is not an image torchvision can decode ({err})") from err
            planes.append(image.permute(1, 2, 0))  # torchvision's decoders return a (C, H, W) view of HWC pixels
        shapes = [(int(p.shape[0]), int(p.shape[1]), int(p.shape[2])) for p in planes]
        packed = torch.empty(sum(h * w * c for h, w, c in shapes), dtype=torch.uint8, pin_memory=self.pinned)
        torch.cat([p.reshape(-1) for p in planes], out=packed)
        return packed, shapes

    def upload(self, packed: torch.Tensor, shapes: list[tuple[int, int, int]]) -> list[torch.Tensor]:
        """The packed images on the device, as (3, H, W) views; one asynchronous copy on the loader's stream."""
        flat = packed.to(self.device, non_blocking=True)
        out, offset = [], 0
        for h, w, c in shapes:
            out.append(flat[offset : offset + h * w * c].view(h, w, c).permute(2, 0, 1))
            offset += h * w * c
        return out

    def decode_cpu(self, index: int, data: torch.Tensor) -> torch.Tensor:
        """One image (its file's bytes) decoded whole by libjpeg-turbo and taken to the device."""
        from torchvision.io import ImageReadMode, decode_image

        try:
            image = decode_image(data, mode=ImageReadMode.RGB)
        except RuntimeError as err:
            path = self.split.path(self.root, index)
            raise UsageError(f"--data: {path} is not an image torchvision can decode ({err})") from err
        return image.to(self.device)
