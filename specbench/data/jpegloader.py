"""JPEG batches decoded and augmented on the run's device, produced beside the training step.

Threads read the files of the next batches in chunks (torchvision's `read_file`, which leaves the
GIL) and decode a share of each batch with libjpeg-turbo (`data_cpu_share`, balanced batch by batch
by `ShareControl`); a decoding thread decodes the rest with one of the decode paths (`jpegwhole.py`:
one nvjpeg call through torchvision; `jpegregions.py`: the GPU's JPEG engines, crop regions only); an
assembling thread packs the batch into one buffer and crops, flips and normalises it in one Triton
kernel (`cropkernel.py`) or with the batched kernels of `crops.py`, on the loader's own CUDA stream,
without a host sync, and queues it a few batches ahead (stages.py); the training thread waits on the
batch's event, never on the host. Once an epoch has been handed out, the next one starts, so its first
batches are ready while the evaluation runs.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.data import cropkernel
from specbench.data.crops import (
    canvas_groups,
    center_boxes,
    crop_boxes_xyxy,
    crops_of_planes,
    normalisation,
    packed_planes,
    random_resized_boxes,
)
from specbench.data.imagenet import Split
from specbench.data.jpegfiles import DecodeCounts, DecodePath, JpegFiles, Read, one_intra_op_thread
from specbench.data.jpegoptions import IMAGENET_MEAN, IMAGENET_STD, Geometry, LoaderOptions, ShareControl
from specbench.data.jpegregions import EngineRegions, EngineSlots, Slot
from specbench.data.jpegwhole import TorchvisionJpeg, WholeImages
from specbench.data.nvjpeg import HardwareJpeg
from specbench.data.stages import End, Producer, StageWork

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "DeviceImageLoader", "Geometry", "LoaderOptions", "ShareControl"]

Batch = tuple[torch.Tensor, torch.Tensor, Any]


def _packed(images: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The images' pixels one after another in one flat uint8 buffer ending in a zero byte, and their (N, 6)
    int64 layout for `packed_planes`: offset, height, width and the channel, row and column strides.

    Each (3, H, W) image is dense in memory whatever its order (nvjpeg writes planes, libjpeg-turbo
    interleaves), so it is copied as it lies, with its own strides; one `cat` copies the whole batch.
    """
    pieces, rows, offset = [], [], 0
    for image in images:
        if not (image.is_contiguous() or image.permute(1, 2, 0).is_contiguous()):
            image = image.contiguous()
        pieces.append(image.as_strided((image.numel(),), (1,), image.storage_offset()))
        _, h, w = image.shape
        sc, sy, sx = image.stride()
        rows.append((offset, h, w, sc, sy, sx))
        offset += image.numel()
    pieces.append(torch.zeros(1, dtype=torch.uint8, device=images[0].device))
    return torch.cat(pieces), torch.tensor(rows, dtype=torch.int64)


class DeviceImageLoader:
    """Batches `(images, labels)` on the options' device from one split: images float32, normalised, in
    `memory_format`; shuffled and cropped at random for training (`train`), centre-cropped in order if not."""

    def __init__(self, root: Path, split: Split, options: LoaderOptions, *, train: bool) -> None:
        device = options.device
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.root, self.split, self.options, self.train, self.device = root, split, options, train, device
        self.stream = torch.cuda.Stream(device, priority=options.stream_priority) if device.type == "cuda" else None
        # the decoders' own stream (see TorchvisionJpeg, HardwareJpeg.decode): their outputs are allocated on
        # it, and waiting for the last decode never waits for the crops' kernels on `stream`
        self.decode_stream = (
            torch.cuda.Stream(device, priority=options.stream_priority) if device.type == "cuda" else None
        )
        self.hardware: Any = HardwareJpeg.open(device, options.batch_size) if options.decoder == "nvjpeg" else None
        cpu_share = options.cpu_share
        if self.hardware is not None and cpu_share == "auto":
            cpu_share = 0.0  # the engines outpace the training (29,000 img/s alone on an H200): the CPU stays free
        self.share = ShareControl(1.0 if options.decoder == "libjpeg" else cpu_share)
        self.counts = DecodeCounts()
        self.engines = EngineSlots(device, self.decode_stream, options.stream_priority, max(1, options.decode_threads))
        self.workers = max(1, options.workers)
        self.pool = ThreadPoolExecutor(
            max_workers=self.workers, thread_name_prefix="specbench-read", initializer=one_intra_op_thread
        )
        self.norm = normalisation(IMAGENET_MEAN, IMAGENET_STD, device)
        self.cpu_only: set[int] = set()  # images nvjpeg refused once: the CPU decodes them from then on
        self.files = JpegFiles(root, split, device, pinned=self.stream is not None)
        self.nvjpeg = TorchvisionJpeg(self.files, device, self.stream, self.decode_stream, self.cpu_only)
        self.staged: list[torch.Tensor] = []  # pinned copies of the batch being assembled
        self.in_flight: deque[tuple[torch.cuda.Event, list[torch.Tensor]]] = deque()
        self.producer: Producer | None = None

    @property
    def engine_images(self) -> int:
        """Images whose crop regions the hardware decoder decoded."""
        return self.counts.engine_images

    @property
    def region_images(self) -> int:
        """All the images of the batches the region path handed out (the engines' or not)."""
        return self.counts.region_images

    @property
    def slots(self) -> list[Slot]:
        return self.engines.slots

    # scheduling

    def order(self, epoch: int) -> np.ndarray:
        """This rank's images for `epoch`: a shuffle shared by all ranks (then every world-th), or the split in order."""
        n, rank, world = len(self.split), self.options.rank, self.options.world
        if not self.train:
            return np.arange(rank, n, world)
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(self.options.seed + epoch)).numpy()
        return perm[: (n // world) * world][rank::world]

    def __len__(self) -> int:
        n = len(self.order(0)) if not self.train else len(self.split) // self.options.world
        batch_size = self.options.batch_size
        return n // batch_size if self.train else math.ceil(n / batch_size)

    def epoch(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The batches of `epoch`, ready on the device; the next epoch's production starts once this one is out."""
        producer = self.producer if self.producer is not None and self.producer.epoch == epoch else None
        if producer is None:
            self.close_producer()
            producer = self._start(epoch)
        self.producer = producer
        while not isinstance(item := producer.get(), End):
            images, labels, event = item
            if event is not None:
                stream = torch.cuda.current_stream(self.device)
                stream.wait_event(event)
                images.record_stream(stream)
                labels.record_stream(stream)
            yield images, labels
        self.producer = self._start(epoch + 1 if self.train else epoch)

    def _start(self, epoch: int) -> Producer:
        seed, rank = self.options.seed, self.options.rank
        generator = torch.Generator().manual_seed((seed * 1_000_003 + epoch * 7919 + rank) % 2**62)
        work = StageWork(
            setup=self._thread_setup,
            decoded=lambda stop: self.decoded(epoch, stop, generator),
            assemble=lambda item: self.assemble(item[0], item[1], generator, item[2] if len(item) > 2 else None),
        )
        return Producer(work, epoch, self.options.depth)

    @contextlib.contextmanager
    def _thread_setup(self) -> Iterator[None]:
        """In each stage thread: the run's GPU and the loader's stream; on a CPU run, one intra-op thread."""
        if self.stream is None:
            torch.set_num_threads(1)  # small batched kernels beside (not against) the training's threads
            yield
            return
        torch.cuda.set_device(self.device)
        with torch.cuda.stream(self.stream):
            yield

    def close_producer(self) -> None:
        if self.producer is not None:
            self.producer.close()
            self.producer = None

    def close(self) -> None:
        """Stop the producer and the reading threads (the run is over)."""
        self.close_producer()
        self.close_slots()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close_slots(self) -> None:
        self.engines.close()

    def decoded(self, epoch: int, stop: threading.Event, generator: torch.Generator) -> Iterator[Any]:
        """Decoding thread: reads `depth + 1` batches ahead in chunks; the first `cpu_share` of each batch is
        decoded by libjpeg-turbo in the reading threads, the rest by the decode path here."""
        path = self.decode_path()
        return path.batches(self._reads(epoch, stop, path.read), stop, generator)

    def decode_path(self) -> DecodePath:
        """The hardware decoder's regions where there is one, else whole images (nvjpeg or libjpeg-turbo)."""
        if self.hardware is not None:
            return EngineRegions(
                self.hardware,
                self.engines,
                self.files,
                self.share,
                self.counts,
                self.cpu_only,
                self.train,
                self.options.geometry,
            )
        return WholeImages(self.files, self.nvjpeg, self.share)

    def _reads(self, epoch: int, stop: threading.Event, reader: Callable[[list[int]], Any]) -> Iterator[Read]:
        """The epoch's batches in order, each as its indices, its first `cpu_share` count and the futures of its
        chunks: libjpeg-turbo's decodes (`JpegFiles.decode_many`) of the first part, `reader`'s of the rest. The
        reading threads work `depth + 1` batches ahead: the next batch is submitted before one is handed out."""
        order = self.order(epoch)
        batch_size = self.options.batch_size
        batches = (order[i * batch_size : (i + 1) * batch_size] for i in range(len(self)))
        chunk = max(8, math.ceil(batch_size / self.workers))
        reads: deque[tuple[np.ndarray, int, list[Future[Any]]]] = deque()

        def submit() -> None:
            index = next(batches, None)
            if index is None:
                return
            on_cpu = round(len(index) * self.share.value)
            futures: list[Future[Any]] = [
                self.pool.submit(self.files.decode_many, index[k : min(k + chunk, on_cpu)].tolist())
                for k in range(0, on_cpu, chunk)
            ]
            futures += [
                self.pool.submit(reader, index[k : k + chunk].tolist()) for k in range(on_cpu, len(index), chunk)
            ]
            reads.append((index, on_cpu, futures))

        for _ in range(self.options.depth + 1):
            submit()
        while reads and not stop.is_set():
            index, on_cpu, futures = reads.popleft()
            submit()
            parts = math.ceil(on_cpu / chunk)
            yield index, on_cpu, futures[:parts], futures[parts:]

    # assembling

    def _metadata(
        self, index: np.ndarray, sizes: torch.Tensor, generator: torch.Generator, drawn: Any = None
    ) -> torch.Tensor:
        """(N, 8) float64 on the device, one copy from pinned memory: sizes, boxes x1 y1 x2 y2, flip, label.
        The boxes and flips are drawn here unless the decoding thread drew them (`drawn`)."""
        sizes = sizes.double()
        n = len(sizes)
        if drawn is not None:
            boxes, flips = drawn[0], drawn[1].double()
        elif self.train:
            boxes = crop_boxes_xyxy(random_resized_boxes(sizes[:, 0], sizes[:, 1], generator))
            flips = (torch.rand(n, generator=generator) < 0.5).double()
        else:
            geometry = self.options.geometry
            boxes = center_boxes(sizes[:, 0], sizes[:, 1], geometry.resize, geometry.size)
            flips = torch.zeros(n, dtype=torch.float64)
        labels = torch.from_numpy(self.split.labels[index]).double()
        meta = torch.cat([sizes, boxes, flips.view(n, 1), labels.view(n, 1)], dim=1)
        return self._to_device(meta)

    def _to_device(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.stream is None:
            return tensor
        pinned = tensor.pin_memory()
        self.staged.append(pinned)  # kept with the batch until its event: the copy reads it asynchronously
        return pinned.to(self.device, non_blocking=True)

    def assemble(
        self, index: np.ndarray, images: list[torch.Tensor] | None, generator: torch.Generator, drawn: Any = None
    ) -> Batch:
        """Assembling thread: the batch's images packed into one buffer (one copy), every crop of the batch in
        one fused kernel (`kernel` triton) or one roi_align per canvas group (torch), with a fixed number of
        kernels and no host sync. `drawn`: the boxes, flips, buffers to keep, packed images and decoding event
        of a batch whose crops the decoding thread drew."""
        if drawn is not None and drawn[4] is not None:
            assert self.stream is not None
            self.stream.wait_event(drawn[4])  # the engines' pixels, written on the decoders' stream
        if drawn is not None and drawn[3] is not None:
            flat, layout = drawn[3]
        else:
            assert images is not None
            flat, layout = _packed(images)
        sizes = layout[:, 1:3]
        meta = self._metadata(index, sizes, generator, drawn)
        rows_all = self._to_device(layout)
        n, size = len(index), self.options.geometry.size
        out = torch.empty((n, 3, size, size), device=self.device).contiguous(memory_format=self.options.memory_format)
        if self.options.kernel == "triton":  # every crop straight from the packed pixels, in one kernel
            cropkernel.fused_crops(flat, rows_all, meta[:, 2:6], meta[:, 6], self.norm, out)
        else:
            self._torch_crops(flat, rows_all, sizes, meta, out)
        labels = meta[:, 7].long()
        event = None
        if self.stream is not None:
            event = torch.cuda.Event()
            event.record(self.stream)
            self._retire(event, [*(images or []), flat, *self.staged, *(drawn[2] if drawn is not None else [])])
        self.staged = []
        return out, labels, event

    def _torch_crops(
        self, flat: torch.Tensor, rows_all: torch.Tensor, sizes: torch.Tensor, meta: torch.Tensor, out: torch.Tensor
    ) -> None:
        """`out` filled with crops.py's kernels: float planes per canvas group, one roi_align each, flip, normalise."""
        groups = canvas_groups(sizes)
        for group in groups:
            chosen = None if len(groups) == 1 else self._to_device(torch.tensor(group))
            rows = meta if chosen is None else meta[chosen]
            # one row and column of padding beyond the largest image: every image's right and bottom edges then
            # meet padding (never roi_align's clamping at the canvas edge), so that an image's crop does not
            # depend on the batch it came with, nor on whether only its crop's region was decoded
            height, width = (int(v) + 1 for v in sizes[group].max(dim=0).values)
            planes = packed_planes(flat, rows_all if chosen is None else rows_all[chosen], height, width)
            crops = crops_of_planes(planes, rows[:, 2:6], out.shape[-1], self.norm, rows[:, 6] > 0.5)
            if chosen is None:
                out.copy_(crops)
            else:
                out[chosen] = crops

    def _retire(self, event: torch.cuda.Event, images: list[torch.Tensor]) -> None:
        """Keep decoded images alive until the kernels reading them are done: the decoders allocate their next
        outputs on `decode_stream`, which does not wait for this loader's stream before reusing freed memory."""
        self.in_flight.append((event, images))
        while self.in_flight and (len(self.in_flight) > self.options.depth + 1 or self.in_flight[0][0].query()):
            oldest, _ = self.in_flight.popleft()
            oldest.synchronize()
