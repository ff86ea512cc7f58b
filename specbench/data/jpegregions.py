"""The hardware decoder's path: crops drawn from the headers' sizes, and only the pixels each crop reads decoded.

The reading threads also parse each header for its size, so that the batch's crops are drawn in the
decoding thread before decoding, and the GPU's JPEG engines (`nvjpeg.HardwareJpeg`) decode only each
crop's region; what they refuse (progressive, CMYK, not a JPEG) libjpeg-turbo decodes whole. The crops
are the ones the whole-image path draws from the same generator: `box_draws` gives each image its row.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from specbench.data.crops import box_draws, boxes_of_draws, center_boxes, crop_boxes_xyxy, decode_regions
from specbench.data.jpegfiles import DecodeCounts, JpegFiles, Read
from specbench.data.jpegoptions import Geometry, ShareControl
from specbench.data.nvjpeg import NvjpegError

Slot = tuple[Any, torch.cuda.Stream | None, ThreadPoolExecutor | None]
"""A hardware decoder, the stream it decodes on, and its own thread (None: it runs in the decoding thread)."""


@dataclass
class RegionBatch:
    """A batch on its way through the hardware decoders: its reads (bytes and header sizes), drawn crops and
    flips, which of its images the engines take and their regions (x, y, width, height) and moved boxes."""

    index: np.ndarray
    on_cpu: int
    decodes: list[Future[Any]]
    read: list[tuple[torch.Tensor, tuple[int, int] | None]]
    draws: Any
    flips: torch.Tensor
    engine: list[int]
    regions: np.ndarray | None = None
    moved: torch.Tensor | None = None


def crop_boxes(geometry: Geometry, sizes: torch.Tensor, draws: Any, rows: list[int]) -> torch.Tensor:
    """(N, 4) float64 crop boxes x1 y1 x2 y2 of images of `sizes` (N, 2 height, width), at `rows` of the batch."""
    if draws is None:
        return center_boxes(sizes[:, 0], sizes[:, 1], geometry.resize, geometry.size)
    picked = tuple(d[rows] for d in draws)
    return crop_boxes_xyxy(boxes_of_draws(sizes[:, 0], sizes[:, 1], picked))


@dataclass
class EngineSlots:
    """The loader's hardware decoders, kept from epoch to epoch: its own, then `decode_threads - 1` more."""

    device: torch.device
    decode_stream: torch.cuda.Stream | None
    stream_priority: int
    decode_threads: int
    slots: list[Slot] = field(default_factory=list)

    def get(self, hardware: Any) -> list[Slot]:
        """The hardware decoders: `hardware`, then `decode_threads - 1` more (each its own handle, state,
        stream and thread), as many as open; with one, it runs in the decoding thread."""
        if self.slots and self.slots[0][0] is hardware:
            return self.slots
        self.close()
        engines = [hardware]
        while len(engines) < self.decode_threads:
            another = hardware.another()
            if another is None:
                break
            engines.append(another)
        if len(engines) == 1:
            self.slots = [(hardware, self.decode_stream, None)]
            return self.slots
        for k, engine in enumerate(engines):
            stream = self.decode_stream
            if k > 0 and self.device.type == "cuda":
                stream = torch.cuda.Stream(self.device, priority=self.stream_priority)
            thread = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"specbench-decode{k}", initializer=self._decoder_thread_setup
            )
            self.slots.append((engine, stream, thread))
        return self.slots

    def _decoder_thread_setup(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)

    def close(self) -> None:
        for _, _, thread in self.slots:
            if thread is not None:
                thread.shutdown(wait=True, cancel_futures=True)
        self.slots = []


@dataclass(frozen=True)
class EngineRegions:
    """The decode path of the hardware decoders: regions by the engines, the CPU's share and refusals whole."""

    hardware: Any
    slots: EngineSlots
    files: JpegFiles
    share: ShareControl
    counts: DecodeCounts
    cpu_only: set[int]
    train: bool
    geometry: Geometry

    def read(self, indices: list[int]) -> list[tuple[torch.Tensor, tuple[int, int] | None]]:
        """Runs in a reading thread: the files' bytes and their sizes from the headers (None: not for the engines)."""
        out = []
        for i in indices:
            data = self.files.read(i)
            out.append((data, self.hardware.size(data) if data.numel() else None))
        return out

    def batches(self, reads: Iterator[Read], stop: threading.Event, generator: torch.Generator) -> Iterator[Any]:
        """The batches in order, each handed out once its regions are decoded (with the batch's first
        `cpu_share`, whole, from libjpeg-turbo).

        With `decode_threads` above 1, batch k goes to decoder k mod `decode_threads`, each with its own state,
        stream and thread, so that one decode's waits (nvjpeg waits on the GPU image by image) overlap the
        next's; the batches are handed out in order."""
        slots = self.slots.get(self.hardware)
        pending: deque[tuple[RegionBatch, Callable[[], Any]]] = deque()
        for number, item in enumerate(reads):
            work = self._region_batch(*item, generator)
            engine, stream, thread = slots[number % len(slots)]
            if thread is None or not work.engine:  # one decoder: it decodes here, when the batch is finished
                pending.append((work, functools.partial(self._engines_decode, work, engine, stream)))
            else:
                pending.append((work, thread.submit(self._engines_decode, work, engine, stream).result))
            if len(pending) >= len(slots):
                yield from self._regions_done(*pending.popleft())
        while pending and not stop.is_set():
            yield from self._regions_done(*pending.popleft())

    def _region_batch(
        self,
        index: np.ndarray,
        on_cpu: int,
        decodes: list[Future[Any]],
        sized: list[Future[Any]],
        generator: torch.Generator,
    ) -> RegionBatch:
        """A batch read, its crops drawn (in batch order: the same numbers whatever the decoders) and the regions
        of the images the engines take."""
        n = len(index)
        draws = box_draws(n, generator) if self.train else None
        flips = torch.rand(n, generator=generator) < 0.5 if self.train else torch.zeros(n, dtype=torch.bool)
        read = [item for future in sized for item in future.result()]
        engine = [k for k, (_, size) in enumerate(read) if size is not None]
        work = RegionBatch(index, on_cpu, decodes, read, draws, flips, engine)
        if engine:
            rows = [on_cpu + k for k in engine]
            sizes = torch.tensor([read[k][1] for k in engine], dtype=torch.float64)
            regions, work.moved = decode_regions(crop_boxes(self.geometry, sizes, draws, rows), sizes)
            work.regions = regions.numpy()
        return work

    def _engines_decode(
        self, work: RegionBatch, engine: Any, stream: torch.cuda.Stream | None
    ) -> tuple[torch.Tensor, np.ndarray, torch.cuda.Event | None]:
        """One decoder's call for the batch's regions, and an event on its stream once the pixels are there."""
        flat, layout = engine.decode([work.read[k][0] for k in work.engine], work.regions, stream)
        decoded = None
        if stream is not None:
            decoded = torch.cuda.Event()
            decoded.record(stream)
        return flat, layout, decoded

    def _regions_done(self, work: RegionBatch, decode: Callable[[], Any]) -> Iterator[Any]:
        """The batch once its decode is done: what the engines refused decoded whole by the CPU, the CPU's share
        uploaded, its boxes, handed out; then the share control learns how long each part was waited for."""
        index, on_cpu, read, draws = work.index, work.on_cpu, work.read, work.draws
        n = len(index)
        images: list[torch.Tensor | None] = [None] * n
        boxes = torch.zeros((n, 4), dtype=torch.float64)
        keep: list[Any] = [data for data, _ in read]
        engine, packed, decoded = work.engine, None, None
        t_nv = time.perf_counter()
        if engine:
            try:
                flat, layout, decoded = decode()
            except NvjpegError:  # a file the headers passed but the engines failed on: this batch by the CPU
                engine = []
            else:
                rows = [on_cpu + k for k in engine]
                assert work.moved is not None
                boxes[rows] = work.moved
                keep.append(flat)
                self.counts.region_images += n  # the two counts move together: a reader never sees one alone
                self.counts.engine_images += len(engine)
                if len(engine) == n:  # the usual case: the batch is already packed in one buffer
                    packed = (flat, torch.from_numpy(layout))
                else:
                    for k, (offset, h, w, _, pitch, _) in zip(engine, layout.tolist(), strict=True):
                        pixels = flat[offset : offset + h * pitch].view(h, pitch)
                        images[on_cpu + k] = pixels[:, : w * 3].reshape(h, w, 3).permute(2, 0, 1)
        if not engine:
            self.counts.region_images += n
        decoded_by_engines = set(engine)
        for k, (data, _) in enumerate(read):
            if k not in decoded_by_engines:  # progressive, CMYK, not a JPEG: the whole image, by the CPU
                self.cpu_only.add(int(index[on_cpu + k]))
                image = self.files.decode_cpu(int(index[on_cpu + k]), data)
                images[on_cpu + k] = image
                hw = torch.tensor([[image.shape[1], image.shape[2]]], dtype=torch.float64)
                boxes[on_cpu + k] = crop_boxes(self.geometry, hw, draws, [on_cpu + k])[0]
        t0 = time.perf_counter()
        uploaded = [image for future in work.decodes for image in self.files.upload(*future.result())]
        t1 = time.perf_counter()
        if uploaded:
            hw = torch.tensor([[image.shape[1], image.shape[2]] for image in uploaded], dtype=torch.float64)
            boxes[:on_cpu] = crop_boxes(self.geometry, hw, draws, list(range(on_cpu)))
            images[:on_cpu] = uploaded
        yield index, None if packed is not None else images, (boxes, work.flips, keep, packed, decoded)
        self.share.update(cpu_wait_s=t1 - t0, handover_s=time.perf_counter() - t1, nvjpeg_s=t0 - t_nv)
