"""JPEG batches decoded and augmented on the run's device, produced beside the training step.

Threads read the files of the next batches in chunks (torchvision's `read_file`, which leaves the
GIL) and decode a share of each batch with libjpeg-turbo (`data_cpu_share`, balanced batch by batch
by `ShareControl`); a decoding thread decodes the rest in one nvjpeg call (`torchvision.io.decode_jpeg`
on CUDA); an assembling thread packs the batch into one buffer and crops, flips and normalises it in
one Triton kernel (`cropkernel.py`) or with the batched kernels of `crops.py`, on the loader's own CUDA
stream, without a host sync, and queues it a few batches ahead (stages.py); the training thread waits on the batch's event, never on the host. Once
an epoch has been handed out, the next one starts, so its first batches are ready while the evaluation
runs.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.data import cropkernel
from specbench.data.crops import (
    box_draws,
    boxes_of_draws,
    canvas_groups,
    center_boxes,
    crop_boxes_xyxy,
    crops_of_planes,
    decode_regions,
    normalisation,
    packed_planes,
    random_resized_boxes,
)
from specbench.data.imagenet import Split
from specbench.data.nvjpeg import HardwareJpeg, NvjpegError
from specbench.data.stages import End, Producer, StageWork
from specbench.errors import UsageError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DECODERS = ("nvjpeg", "libjpeg")
KERNELS = ("torch", "triton")
Batch = tuple[torch.Tensor, torch.Tensor, Any]


@dataclass(frozen=True)
class Geometry:
    """Output crop size and, for evaluation, the short side the image is resized to first."""

    size: int
    resize: int


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


@dataclass
class _RegionBatch:
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


def _one_intra_op_thread() -> None:
    """In each reading thread: torch's CPU ops (packing decoded images) on this thread alone. Without it, every
    reading thread would start a team of intra-op threads as large as the machine, and the teams would fight
    for its cores. Threads whose torch already started (the training thread) keep their own count."""
    torch.set_num_threads(1)


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
        cpu_share: float | str = 0.0,
        stream_priority: int = -1,
        decode_threads: int = 1,
        kernel: str = "torch",
    ) -> None:
        if decoder not in DECODERS:
            raise UsageError(f"data_decoder {decoder!r}: the device pipeline decodes with one of {', '.join(DECODERS)}")
        if decoder == "nvjpeg" and device.type != "cuda":
            raise UsageError(f"data_decoder nvjpeg decodes on a CUDA device; this run's device is {device.type}")
        if kernel not in KERNELS:
            raise UsageError(f"augment_kernel {kernel!r}: expected one of {', '.join(KERNELS)}")
        if kernel == "triton" and not cropkernel.available(device):
            raise UsageError(f"augment_kernel triton runs on a CUDA device with Triton installed; this is {device}")
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.root, self.split, self.batch_size, self.train = root, split, batch_size, train
        self.geometry, self.device, self.decoder, self.seed = geometry, device, decoder, seed
        self.rank, self.world, self.depth, self.memory_format = rank, world, depth, memory_format
        self.kernel = kernel
        self.stream = torch.cuda.Stream(device, priority=stream_priority) if device.type == "cuda" else None
        # the decoders' own stream (see _torchvision_nvjpeg, HardwareJpeg.decode): their outputs are allocated on
        # it, and waiting for the last decode never waits for the crops' kernels on `stream`
        self.decode_stream = torch.cuda.Stream(device, priority=stream_priority) if device.type == "cuda" else None
        self.hardware: Any = HardwareJpeg.open(device, batch_size) if decoder == "nvjpeg" else None
        if self.hardware is not None and cpu_share == "auto":
            cpu_share = 0.0  # the engines outpace the training (29,000 img/s alone on an H200): the CPU stays free
        self.share = ShareControl(1.0 if decoder == "libjpeg" else cpu_share)
        self.engine_images = 0  # decoded (their crops' regions) by the hardware decoder
        self.decode_threads, self.stream_priority = max(1, decode_threads), stream_priority
        self.slots: list[tuple[Any, torch.cuda.Stream | None, ThreadPoolExecutor | None]] = []  # see _slots
        self.region_images = 0  # all the images of the batches the decoding thread handed out (engines' or not)
        self.workers = max(1, workers)
        self.pool = ThreadPoolExecutor(
            max_workers=self.workers, thread_name_prefix="specbench-read", initializer=_one_intra_op_thread
        )
        self.norm = normalisation(IMAGENET_MEAN, IMAGENET_STD, device)
        self.cpu_only: set[int] = set()
        self.staged: list[torch.Tensor] = []  # pinned copies of the batch being assembled
        self.in_flight: deque[tuple[torch.cuda.Event, list[torch.Tensor]]] = deque()
        self.producer: Producer | None = None

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
        generator = torch.Generator().manual_seed((self.seed * 1_000_003 + epoch * 7919 + self.rank) % 2**62)
        work = StageWork(
            setup=self._thread_setup,
            decoded=lambda stop: self.decoded(epoch, stop, generator),
            assemble=lambda item: self.assemble(item[0], item[1], generator, item[2] if len(item) > 2 else None),
        )
        return Producer(work, epoch, self.depth)

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

    def decoded(self, epoch: int, stop: threading.Event, generator: torch.Generator) -> Iterator[Any]:
        """Decoding thread: reads `depth + 1` batches ahead in chunks; the first `cpu_share` of each batch is
        decoded by libjpeg-turbo in the reading threads, the rest by one nvjpeg call here."""
        if self.hardware is not None:
            return self._decoded_regions(epoch, stop, generator)
        return self._decoded_whole(epoch, stop)

    def _reads(
        self, epoch: int, stop: threading.Event, reader: Any
    ) -> Iterator[tuple[np.ndarray, int, list[Future[Any]], list[Future[Any]]]]:
        """The epoch's batches in order, each as its indices, its first `cpu_share` count and the futures of its
        chunks: libjpeg-turbo's decodes (`_decode_many`) of the first part, `reader`'s of the rest. The reading
        threads work `depth + 1` batches ahead: the next batch is submitted before one is handed out."""
        order = self.order(epoch)
        batches = (order[i * self.batch_size : (i + 1) * self.batch_size] for i in range(len(self)))
        chunk = max(8, math.ceil(self.batch_size / self.workers))
        reads: deque[tuple[np.ndarray, int, list[Future[Any]]]] = deque()

        def submit() -> None:
            index = next(batches, None)
            if index is None:
                return
            on_cpu = round(len(index) * self.share.value)
            futures: list[Future[Any]] = [
                self.pool.submit(self._decode_many, index[k : min(k + chunk, on_cpu)].tolist())
                for k in range(0, on_cpu, chunk)
            ]
            futures += [
                self.pool.submit(reader, index[k : k + chunk].tolist()) for k in range(on_cpu, len(index), chunk)
            ]
            reads.append((index, on_cpu, futures))

        for _ in range(self.depth + 1):
            submit()
        while reads and not stop.is_set():
            index, on_cpu, futures = reads.popleft()
            submit()
            parts = math.ceil(on_cpu / chunk)
            yield index, on_cpu, futures[:parts], futures[parts:]

    def _decoded_whole(self, epoch: int, stop: threading.Event) -> Iterator[tuple[np.ndarray, list[torch.Tensor]]]:
        """Whole images from torchvision's decoders; the crops are drawn when the batch is assembled."""
        for index, on_cpu, decodes, loads in self._reads(epoch, stop, self._load_many):
            encoded = [data for future in loads for data in future.result()]
            t_nv = time.perf_counter()
            images = self._decode_nvjpeg(index[on_cpu:], encoded) if encoded else []
            t0 = time.perf_counter()
            uploaded = [image for future in decodes for image in self._upload(*future.result())]
            t1 = time.perf_counter()
            yield index, uploaded + images
            self.share.update(cpu_wait_s=t1 - t0, handover_s=time.perf_counter() - t1, nvjpeg_s=t0 - t_nv)

    def _load_many(self, indices: list[int]) -> list[torch.Tensor]:
        """Runs in a reading thread: the files' bytes."""
        return [self._read(i) for i in indices]

    def _decoded_regions(self, epoch: int, stop: threading.Event, generator: torch.Generator) -> Iterator[Any]:
        """With the hardware decoder: the reading threads also parse each header for its size, so that the
        batch's crops are drawn here, before decoding, and the engines decode only the pixels each crop reads
        (with the batch's first `cpu_share`, whole, from libjpeg-turbo). The crops are the ones drawn from the
        same generator for whole images: `box_draws` gives each image its own row of numbers.

        With `decode_threads` above 1, batch k goes to decoder k mod `decode_threads`, each with its own state,
        stream and thread, so that one decode's waits (nvjpeg waits on the GPU image by image) overlap the
        next's; the batches are handed out in order."""
        slots = self._slots()
        pending: deque[tuple[_RegionBatch, Callable[[], Any]]] = deque()
        for number, item in enumerate(self._reads(epoch, stop, self._read_sized)):
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

    def _slots(self) -> list[tuple[Any, torch.cuda.Stream | None, ThreadPoolExecutor | None]]:
        """The hardware decoders: this loader's own, then `decode_threads - 1` more (each its own handle, state,
        stream and thread), as many as open; with one, it runs in the decoding thread."""
        if self.slots and self.slots[0][0] is self.hardware:
            return self.slots
        self.close_slots()
        engines = [self.hardware]
        while len(engines) < self.decode_threads:
            another = self.hardware.another()
            if another is None:
                break
            engines.append(another)
        if len(engines) == 1:
            self.slots = [(self.hardware, self.decode_stream, None)]
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

    def close_slots(self) -> None:
        for _, _, thread in self.slots:
            if thread is not None:
                thread.shutdown(wait=True, cancel_futures=True)
        self.slots = []

    def _region_batch(
        self,
        index: np.ndarray,
        on_cpu: int,
        decodes: list[Future[Any]],
        sized: list[Future[Any]],
        generator: torch.Generator,
    ) -> _RegionBatch:
        """A batch read, its crops drawn (in batch order: the same numbers whatever the decoders) and the regions
        of the images the engines take."""
        n = len(index)
        draws = box_draws(n, generator) if self.train else None
        flips = torch.rand(n, generator=generator) < 0.5 if self.train else torch.zeros(n, dtype=torch.bool)
        read = [item for future in sized for item in future.result()]
        engine = [k for k, (_, size) in enumerate(read) if size is not None]
        work = _RegionBatch(index, on_cpu, decodes, read, draws, flips, engine)
        if engine:
            rows = [on_cpu + k for k in engine]
            sizes = torch.tensor([read[k][1] for k in engine], dtype=torch.float64)
            regions, work.moved = decode_regions(self._boxes(sizes, draws, rows), sizes)
            work.regions = regions.numpy()
        return work

    def _engines_decode(
        self, work: _RegionBatch, engine: Any, stream: torch.cuda.Stream | None
    ) -> tuple[torch.Tensor, np.ndarray, torch.cuda.Event | None]:
        """One decoder's call for the batch's regions, and an event on its stream once the pixels are there."""
        flat, layout = engine.decode([work.read[k][0] for k in work.engine], work.regions, stream)
        decoded = None
        if stream is not None:
            decoded = torch.cuda.Event()
            decoded.record(stream)
        return flat, layout, decoded

    def _regions_done(self, work: _RegionBatch, decode: Callable[[], Any]) -> Iterator[Any]:
        """The batch once its decode is done: what the engines refused decoded whole by the CPU, the CPU's share
        uploaded, its boxes, handed out; then the share control learns how long each part was waited for."""
        index, on_cpu, read, draws = work.index, work.on_cpu, work.read, work.draws
        n = len(index)
        self.region_images += n
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
                self.engine_images += len(engine)
                if len(engine) == n:  # the usual case: the batch is already packed in one buffer
                    packed = (flat, torch.from_numpy(layout))
                else:
                    for k, (offset, h, w, _, pitch, _) in zip(engine, layout.tolist(), strict=True):
                        pixels = flat[offset : offset + h * pitch].view(h, pitch)
                        images[on_cpu + k] = pixels[:, : w * 3].reshape(h, w, 3).permute(2, 0, 1)
        decoded_by_engines = set(engine)
        for k, (data, _) in enumerate(read):
            if k not in decoded_by_engines:  # progressive, CMYK, not a JPEG: the whole image, by the CPU
                self.cpu_only.add(int(index[on_cpu + k]))
                image = self._decode_cpu(int(index[on_cpu + k]), data)
                images[on_cpu + k] = image
                hw = torch.tensor([[image.shape[1], image.shape[2]]], dtype=torch.float64)
                boxes[on_cpu + k] = self._boxes(hw, draws, [on_cpu + k])[0]
        t0 = time.perf_counter()
        uploaded = [image for future in work.decodes for image in self._upload(*future.result())]
        t1 = time.perf_counter()
        if uploaded:
            hw = torch.tensor([[image.shape[1], image.shape[2]] for image in uploaded], dtype=torch.float64)
            boxes[:on_cpu] = self._boxes(hw, draws, list(range(on_cpu)))
            images[:on_cpu] = uploaded
        yield index, None if packed is not None else images, (boxes, work.flips, keep, packed, decoded)
        self.share.update(cpu_wait_s=t1 - t0, handover_s=time.perf_counter() - t1, nvjpeg_s=t0 - t_nv)

    def _boxes(self, sizes: torch.Tensor, draws: Any, rows: list[int]) -> torch.Tensor:
        """(N, 4) float64 crop boxes x1 y1 x2 y2 of images of `sizes` (N, 2 height, width), at `rows` of the batch."""
        if draws is None:
            return center_boxes(sizes[:, 0], sizes[:, 1], self.geometry.resize, self.geometry.size)
        picked = tuple(d[rows] for d in draws)
        return crop_boxes_xyxy(boxes_of_draws(sizes[:, 0], sizes[:, 1], picked))

    def _read_sized(self, indices: list[int]) -> list[tuple[torch.Tensor, tuple[int, int] | None]]:
        """Runs in a reading thread: the files' bytes and their sizes from the headers (None: not for the engines)."""
        out = []
        for i in indices:
            data = self._read(i)
            out.append((data, self.hardware.size(data) if data.numel() else None))
        return out

    def _read(self, index: int) -> torch.Tensor:
        from torchvision.io import read_file

        path = self.split.path(self.root, index)
        try:
            return read_file(path)
        except RuntimeError as err:
            raise UsageError(f"--data: cannot read {path}: {err}") from err

    def _decode_many(self, indices: list[int]) -> tuple[torch.Tensor, list[tuple[int, int, int]]]:
        """Runs in a reading thread: the files decoded by libjpeg-turbo, packed (height, width, channel)
        one after the other into one buffer (pinned for a GPU run), so that one copy takes them to the device."""
        from torchvision.io import ImageReadMode, decode_image

        planes = []
        for i in indices:
            try:
                image = decode_image(self._read(i), mode=ImageReadMode.RGB)
            except RuntimeError as err:
                path = self.split.path(self.root, i)
                raise UsageError(f"--data: {path} is not an image torchvision can decode ({err})") from err
            planes.append(image.permute(1, 2, 0))  # torchvision's decoders return a (C, H, W) view of HWC pixels
        shapes = [(int(p.shape[0]), int(p.shape[1]), int(p.shape[2])) for p in planes]
        packed = torch.empty(
            sum(h * w * c for h, w, c in shapes), dtype=torch.uint8, pin_memory=self.stream is not None
        )
        torch.cat([p.reshape(-1) for p in planes], out=packed)
        return packed, shapes

    def _upload(self, packed: torch.Tensor, shapes: list[tuple[int, int, int]]) -> list[torch.Tensor]:
        """The packed images on the device, as (3, H, W) views; one asynchronous copy on the loader's stream."""
        flat = packed.to(self.device, non_blocking=True)
        out, offset = [], 0
        for h, w, c in shapes:
            out.append(flat[offset : offset + h * w * c].view(h, w, c).permute(2, 0, 1))
            offset += h * w * c
        return out

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
            boxes = center_boxes(sizes[:, 0], sizes[:, 1], self.geometry.resize, self.geometry.size)
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
        n, size = len(index), self.geometry.size
        out = torch.empty((n, 3, size, size), device=self.device).contiguous(memory_format=self.memory_format)
        if self.kernel == "triton":  # every crop straight from the packed pixels, in one kernel
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
        while self.in_flight and (len(self.in_flight) > self.depth + 1 or self.in_flight[0][0].query()):
            oldest, _ = self.in_flight.popleft()
            oldest.synchronize()

    def _decode_nvjpeg(self, index: np.ndarray, data: list[torch.Tensor]) -> list[torch.Tensor]:
        """One nvjpeg call for the batch; images it refuses (CMYK, PNG named .JPEG, ...) fall back one by one."""
        out: list[torch.Tensor | None] = [None] * len(data)
        batch = [k for k in range(len(data)) if int(index[k]) not in self.cpu_only]
        if batch:
            try:
                decoded = self._torchvision_nvjpeg([data[k] for k in batch])
                for k, img in zip(batch, decoded, strict=True):
                    out[k] = img
            except RuntimeError:
                for k in batch:
                    out[k] = self._decode_one(int(index[k]), data[k])
        return [img if img is not None else self._decode_cpu(int(index[k]), data[k]) for k, img in enumerate(out)]

    def _torchvision_nvjpeg(self, data: list[torch.Tensor]) -> list[torch.Tensor]:
        """torchvision's nvjpeg call, its outputs allocated on `decode_stream`, on which nothing else allocates.

        nvjpeg's hardware decoder writes its outputs when the call is made, not when its stream gets there
        (torchvision pull request 9606, torchcodec pull request 1634: on H100s), and torchvision allocates
        them on the current stream. Allocated on the loader's stream, an output could be memory that kernels
        queued there still read. On a stream of their own, outputs only ever reuse earlier outputs, which
        `_retire` lets go once their batch's kernels are done. The loader's stream then waits for the decode."""
        from torchvision.io import ImageReadMode, decode_jpeg

        assert self.stream is not None and self.decode_stream is not None
        with torch.cuda.stream(self.decode_stream):
            decoded = decode_jpeg(data, mode=ImageReadMode.RGB, device=self.device)
        self.stream.wait_stream(self.decode_stream)
        return list(decoded)

    def _decode_one(self, index: int, data: torch.Tensor) -> torch.Tensor:
        try:
            return self._torchvision_nvjpeg([data])[0]
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
