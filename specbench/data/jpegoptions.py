"""What a device image loader is asked for: crop geometry, decoder, kernel, threads, and the CPU's share of decoding.

One frozen `LoaderOptions` travels from the executor's settings to the loader; it refuses a decoder or
kernel the run's device cannot use before any thread starts.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specbench.data import cropkernel
from specbench.errors import UsageError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DECODERS = ("nvjpeg", "libjpeg")
KERNELS = ("torch", "triton")


@dataclass(frozen=True)
class Geometry:
    """Output crop size and, for evaluation, the short side the image is resized to first."""

    size: int
    resize: int


@dataclass(frozen=True)
class LoaderOptions:
    """How a `DeviceImageLoader` makes its batches: their size and crops, where and with what it decodes
    (`decoder`, `cpu_share`, `decode_threads`) and crops (`kernel`), which shard (`rank` of `world`), how far
    ahead (`depth` batches) and at what stream priority."""

    batch_size: int
    geometry: Geometry
    device: torch.device
    decoder: str
    workers: int
    seed: int
    rank: int = 0
    world: int = 1
    depth: int = 3
    memory_format: torch.memory_format = torch.channels_last
    cpu_share: float | str = 0.0
    stream_priority: int = -1
    decode_threads: int = 1
    kernel: str = "torch"

    def __post_init__(self) -> None:
        decoder, kernel, device = self.decoder, self.kernel, self.device
        if decoder not in DECODERS:
            raise UsageError(f"data_decoder {decoder!r}: the device pipeline decodes with one of {', '.join(DECODERS)}")
        if decoder == "nvjpeg" and device.type != "cuda":
            raise UsageError(f"data_decoder nvjpeg decodes on a CUDA device; this run's device is {device.type}")
        if kernel not in KERNELS:
            raise UsageError(f"augment_kernel {kernel!r}: expected one of {', '.join(KERNELS)}")
        if kernel == "triton" and not cropkernel.available(device):
            raise UsageError(f"augment_kernel triton runs on a CUDA device with Triton installed; this is {device}")


class ShareControl:
    """The share of each batch that libjpeg-turbo decodes in the reading threads while nvjpeg decodes the rest.

    A number from 0 to 1 is kept as given. `auto` starts at AUTO_START and moves by STEP after each batch:
    down when the decoding thread had to wait for the CPU's part once nvjpeg was done (the CPU is behind:
    a wait longer than a tenth of the nvjpeg call, at least WAIT_S, as shorter ones are thread scheduling),
    up when it neither waited for the CPU nor for the next stage to take the batch (nvjpeg is the slowest
    stage), unchanged when the next stage was the one that held it up (decoding is ahead of the training).
    """

    AUTO_START = 0.25
    STEP = 1.0 / 64
    WAIT_S = 0.001

    @staticmethod
    def valid(share: object) -> bool:
        """Whether `share` is `auto` or a fraction from 0 to 1 (a bool is neither)."""
        if share == "auto":
            return True
        return isinstance(share, (int, float)) and not isinstance(share, bool) and 0.0 <= float(share) <= 1.0

    def __init__(self, share: float | str) -> None:
        if not self.valid(share):
            raise UsageError(f"data_cpu_share {share!r}: expected auto or a fraction from 0 to 1")
        self.auto = share == "auto"
        self.value = self.AUTO_START if self.auto else float(share)
        self.batches = 0
        self.total = 0.0

    def update(self, cpu_wait_s: float, handover_s: float, nvjpeg_s: float = 0.0) -> None:
        """After a batch: how long its CPU part was waited for, how long the next stage took to accept it, and
        how long its nvjpeg call took."""
        self.batches += 1
        self.total += self.value
        if not self.auto:
            return
        if cpu_wait_s > max(self.WAIT_S, 0.1 * nvjpeg_s):
            self.value = max(0.0, self.value - self.STEP)
        elif handover_s <= self.WAIT_S:
            self.value = min(1.0, self.value + self.STEP)

    @property
    def mean(self) -> float | None:
        """The mean share over the batches so far (None before the first)."""
        return self.total / self.batches if self.batches else None
