"""JPEG batches decoded and augmented on the run's device, produced beside the training step.

Threads read the files of the next batches (torchvision's `read_file`, which leaves the GIL), one
producer thread per loader decodes each batch in one call (nvjpeg through `torchvision.io.decode_jpeg`
on CUDA, or libjpeg-turbo in the reading threads), crops, flips and normalises it with the batched
kernels of `crops.py` on its own CUDA stream, and queues it a few batches ahead; the training thread
waits on the batch's event, never on the host. Once an epoch has been handed out, the next one starts,
so its first batches are ready while the evaluation runs.
"""

from __future__ import annotations

import contextlib
import math
import queue
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.errors import UsageError
from specbench.executors.crops import (
    canvas_groups,
    center_boxes,
    crop_boxes_xyxy,
    pad_images,
    random_resized_boxes,
    resized_crops,
)
from specbench.executors.imagenet import Split

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DECODERS = ("nvjpeg", "libjpeg")
Batch = tuple[torch.Tensor, torch.Tensor, Any]


class _End:
    """Marks the end of an epoch in the queue."""


@dataclass
class _Failure:
    error: BaseException


@dataclass(frozen=True)
class Geometry:
    """Output crop size and, for evaluation, the short side the image is resized to first."""

    size: int
    resize: int


class _Producer:
    """One epoch's batches made by a background thread into a bounded queue; stoppable at any point."""

    def __init__(self, loader: DeviceImageLoader, epoch: int) -> None:
        self.epoch = epoch
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=loader.depth)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(loader,), daemon=True, name=f"specbench-images-{epoch}")
        self.thread.start()

    def _run(self, loader: DeviceImageLoader) -> None:
        try:
            if loader.device.type == "cuda":
                torch.cuda.set_device(loader.device)
            else:  # the batched kernels of a small batch: on one core, beside (not against) the training's threads
                torch.set_num_threads(1)
            for item in loader.produce(self.epoch, self.stop):
                if not self._put(item):
                    return
            self._put(_End())
        except BaseException as err:  # handed to the training thread, which raises it
            self._put(_Failure(err))

    def _put(self, item: Any) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def get(self) -> Any:
        while True:
            try:
                item = self.queue.get(timeout=1.0)
            except queue.Empty:
                if not self.thread.is_alive():
                    raise RuntimeError("the image pipeline's thread ended without handing over a batch") from None
                continue
            if isinstance(item, _Failure):
                raise item.error
            return item

    def close(self) -> None:
        self.stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self.queue.get_nowait()
        self.thread.join(timeout=30)


class DeviceImageLoader:
    """Batches `(images, labels)` on `device` from one split: images float32, normalised, in `memory_format`."""

    def __init__(
        self,
        root: Path,
        split: Split,
        *,
        batch_size: int,
        train: bool,
        geometry: Geometry,
        device: torch.device,
        decoder: str,
        workers: int,
        seed: int,
        rank: int = 0,
        world: int = 1,
        depth: int = 3,
        memory_format: torch.memory_format = torch.channels_last,
    ) -> None:
        if decoder not in DECODERS:
            raise UsageError(f"data_decoder {decoder!r}: the device pipeline decodes with one of {', '.join(DECODERS)}")
        if decoder == "nvjpeg" and device.type != "cuda":
            raise UsageError(f"data_decoder nvjpeg decodes on a CUDA device; this run's device is {device.type}")
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.root, self.split, self.batch_size, self.train = root, split, batch_size, train
        self.geometry, self.device, self.decoder, self.seed = geometry, device, decoder, seed
        self.rank, self.world, self.depth, self.memory_format = rank, world, depth, memory_format
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="specbench-read")
        self.cpu_only: set[int] = set()
        self.producer: _Producer | None = None

    def order(self, epoch: int) -> np.ndarray:
        """This rank's images for `epoch`: a shuffle shared by all ranks (then every world-th), or the split in order."""
        n = len(self.split)
        if not self.train:
            return np.arange(self.rank, n, self.world)
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed + epoch)).numpy()
        return perm[: (n // self.world) * self.world][self.rank :: self.world]

    def __len__(self) -> int:
        n = len(self.order(0)) if not self.train else len(self.split) // self.world
        return n // self.batch_size if self.train else math.ceil(n / self.batch_size)

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The batches of `epoch`, ready on the device; the next epoch's production starts once this one is out."""
        producer = self.producer if self.producer is not None and self.producer.epoch == epoch else None
        if producer is None:
            self.close_producer()
            producer = _Producer(self, epoch)
        self.producer = producer
        while not isinstance(item := producer.get(), _End):
            images, labels, event = item
            if event is not None:
                stream = torch.cuda.current_stream(self.device)
                stream.wait_event(event)
                images.record_stream(stream)
                labels.record_stream(stream)
            yield images, labels
        self.producer = _Producer(self, epoch + 1 if self.train else epoch)

    def close_producer(self) -> None:
        if self.producer is not None:
            self.producer.close()
            self.producer = None

    def close(self) -> None:
        """Stop the producer and the reading threads (the run is over)."""
        self.close_producer()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def produce(self, epoch: int, stop: threading.Event) -> Iterator[Batch]:
        """Runs in the producer thread: reads `depth + 1` batches ahead, assembles one batch at a time."""
        order = self.order(epoch)
        count = len(self)
        batches = (order[i * self.batch_size : (i + 1) * self.batch_size] for i in range(count))
        generator = torch.Generator().manual_seed((self.seed * 1_000_003 + epoch * 7919 + self.rank) % 2**62)
        reads: deque[tuple[np.ndarray, list[Future[torch.Tensor]]]] = deque()

        def submit() -> None:
            index = next(batches, None)
            if index is not None:
                reads.append((index, [self.pool.submit(self._load, int(i)) for i in index]))

        for _ in range(self.depth + 1):
            submit()
        streamed = torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()
        with streamed:
            while reads and not stop.is_set():
                index, futures = reads.popleft()
                submit()
                yield self._assemble(index, [f.result() for f in futures], generator)

    def _load(self, index: int) -> torch.Tensor:
        """Runs in a reading thread: the file's bytes, or for libjpeg the decoded (3, H, W) uint8 image."""
        from torchvision.io import ImageReadMode, decode_image, read_file

        path = self.split.path(self.root, index)
        try:
            data = read_file(path)
        except RuntimeError as err:
            raise UsageError(f"--data: cannot read {path}: {err}") from err
        if self.decoder != "libjpeg":
            return data
        try:
            return decode_image(data, mode=ImageReadMode.RGB)
        except RuntimeError as err:
            raise UsageError(f"--data: {path} is not an image torchvision can decode ({err})") from err

    def _assemble(self, index: np.ndarray, loaded: list[torch.Tensor], generator: torch.Generator) -> Batch:
        images = self._decode_nvjpeg(index, loaded) if self.decoder == "nvjpeg" else loaded
        sizes = torch.tensor([[int(img.shape[1]), int(img.shape[2])] for img in images], dtype=torch.int64)
        n, size = len(images), self.geometry.size
        if self.train:
            boxes = crop_boxes_xyxy(random_resized_boxes(sizes[:, 0], sizes[:, 1], generator))
            flips: torch.Tensor | None = torch.rand(n, generator=generator) < 0.5
        else:
            boxes, flips = center_boxes(sizes[:, 0], sizes[:, 1], self.geometry.resize, size), None
        groups = canvas_groups(sizes)
        out = torch.empty((n, 3, size, size), device=self.device).contiguous(memory_format=self.memory_format)
        for group in groups:
            canvas = pad_images([images[i] for i in group])
            if canvas.device != self.device:
                canvas = canvas.pin_memory().to(self.device, non_blocking=True)
            crops = resized_crops(
                canvas,
                sizes[group],
                boxes[group],
                size,
                IMAGENET_MEAN,
                IMAGENET_STD,
                None if flips is None else flips[group],
            )
            if len(groups) == 1:
                out.copy_(crops)
            else:
                out[torch.tensor(group, device=self.device)] = crops
        labels = torch.from_numpy(self.split.labels[index]).to(self.device, non_blocking=True)
        event = None
        if self.stream is not None:
            event = torch.cuda.Event()
            event.record(self.stream)
        return out, labels, event

    def _decode_nvjpeg(self, index: np.ndarray, data: list[torch.Tensor]) -> list[torch.Tensor]:
        """One nvjpeg call for the batch; images it refuses (CMYK, PNG named .JPEG, ...) fall back one by one."""
        from torchvision.io import ImageReadMode, decode_jpeg

        out: list[torch.Tensor | None] = [None] * len(data)
        batch = [k for k in range(len(data)) if int(index[k]) not in self.cpu_only]
        if batch:
            try:
                decoded = decode_jpeg([data[k] for k in batch], mode=ImageReadMode.RGB, device=self.device)
                for k, img in zip(batch, decoded, strict=True):
                    out[k] = img
            except RuntimeError:
                for k in batch:
                    out[k] = self._decode_one(int(index[k]), data[k])
        return [img if img is not None else self._decode_cpu(int(index[k]), data[k]) for k, img in enumerate(out)]

    def _decode_one(self, index: int, data: torch.Tensor) -> torch.Tensor:
        from torchvision.io import ImageReadMode, decode_jpeg

        try:
            return decode_jpeg(data, mode=ImageReadMode.RGB, device=self.device)
        except RuntimeError:
            self.cpu_only.add(index)
            return self._decode_cpu(index, data)

    def _decode_cpu(self, index: int, data: torch.Tensor) -> torch.Tensor:
        from torchvision.io import ImageReadMode, decode_image

        try:
            image = decode_image(data, mode=ImageReadMode.RGB)
        except RuntimeError as err:
            path = self.split.path(self.root, index)
            raise UsageError(f"--data: {path} is not an image torchvision can decode ({err})") from err
        return image.to(self.device)
