"""The GPU's hardware JPEG decoder (NVJPG engines: A100, H100, H200), driven through nvjpeg's batched API.

torchvision's `decode_jpeg(device='cuda')` already picks nvjpeg's hardware backend where the GPU has one,
but it decodes on a stream of its own at the lowest priority, allocates every image separately and waits
on the host until the batch is done. Beside a training step that keeps the SMs busy, the small kernels of
that decode (colour conversion, output writes) queue behind the training's and each call takes 2.6 times
as long as alone. `HardwareJpeg` drives the same library (the copy torchvision loaded) on a stream of the loader's
for decoding alone, at the loader's priority, writing a whole batch into one buffer, optionally only a
region of each image, and returns without waiting: an event on that stream says when the pixels are there.

Only baseline JPEGs go to the engines (nvjpeg says which: `nvjpegDecodeBatchedSupported`); the rest
(progressive, CMYK, PNG named .JPEG) are returned as refused, for the caller's other decoder.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

NVJPEG_BACKEND_HARDWARE = 3
NVJPEG_OUTPUT_RGBI = 5
NVJPEG_MAX_COMPONENT = 4
STATUS_NAMES = {
    0: "success",
    1: "not initialized",
    2: "invalid parameter",
    3: "bad jpeg",
    4: "jpeg not supported",
    5: "allocator failure",
    6: "execution failed",
    7: "arch mismatch (no hardware decoder)",
    8: "internal error",
    9: "implementation not supported",
    10: "incomplete bitstream",
}
SLACK_ROWS = 16  # a block row of 4:2:0 JPEG
SLACK_BYTES = 16 * 3  # a block's width of RGB pixels
MAX_PIXELS = 64_000_000  # a larger image is not a training image; it goes to the fallback decoder


class NvjpegError(RuntimeError):
    """An nvjpeg call failed; `status` is nvjpeg's code."""

    def __init__(self, call: str, status: int) -> None:
        super().__init__(f"{call}: nvjpeg status {status} ({STATUS_NAMES.get(status, 'unknown')})")
        self.status = status


@dataclass(frozen=True)
class Region:
    """The pixels to decode: columns x to x + width, rows y to y + height."""

    x: int
    y: int
    width: int
    height: int


def library_path() -> str | None:
    """The libnvjpeg that torchvision's image extension loaded, else one shipped beside torch or torchvision."""
    with contextlib.suppress(ImportError):
        import torchvision.io.image  # noqa: F401  (loads torchvision's image.so and with it libnvjpeg)
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split()[-1]
            if "libnvjpeg" in os.path.basename(path):
                return path
    except OSError:
        pass
    import torch as _torch

    roots = [Path(_torch.__file__).parents[1]]
    patterns = ["torchvision.libs/libnvjpeg*.so*", "nvidia/*/lib/libnvjpeg.so*", "nvidia/nvjpeg/lib/libnvjpeg.so*"]
    for root in roots:
        for pattern in patterns:
            found = sorted(glob.glob(str(root / pattern)))
            if found:
                return found[0]
    return None


class HardwareJpeg:
    """One nvjpeg hardware-backend handle and batched state. `size` may run in any thread (each has its own
    parsing state); `decode` in one thread at a time (the loader's decoding thread). `HardwareJpeg.open(device)`
    is None where the library or the engines are missing.

    The header calls take microseconds and keep the GIL (ctypes.PyDLL): releasing it hundreds of times a batch
    would make the thread queue for it again each time behind the training thread; the decode call releases it.
    """

    _lock = threading.Lock()

    def __init__(self, lib: ctypes.CDLL, quick: ctypes.PyDLL, device: torch.device, max_batch: int) -> None:
        self.lib, self.quick, self.device, self.max_batch = lib, quick, device, max_batch
        self.local = threading.local()
        self.handle = ctypes.c_void_p()
        self._check(
            "nvjpegCreateEx", lib.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, None, None, 0, ctypes.byref(self.handle))
        )
        self.state = ctypes.c_void_p()
        self._check("nvjpegJpegStateCreate", lib.nvjpegJpegStateCreate(self.handle, ctypes.byref(self.state)))
        self.params: list[ctypes.c_void_p] = []
        self.initialized = 0
        self.pending: tuple[np.ndarray, ...] = ()  # that batch's descriptor arrays
        self.wait_for_stream = True  # see decode; only probe28 turns it off, to see what the engines wait for

    @classmethod
    def open(cls, device: torch.device, max_batch: int) -> HardwareJpeg | None:
        if device.type != "cuda":
            return None
        path = library_path()
        if path is None:
            return None
        try:
            lib, quick = ctypes.CDLL(path), ctypes.PyDLL(path)
            _declare(lib)
            _declare(quick)
            with cls._lock, torch.cuda.device(device):
                return cls(lib, quick, device, max_batch)
        except (OSError, AttributeError, NvjpegError):
            return None

    def another(self) -> HardwareJpeg | None:
        """One more decoder on the same GPU, with its own handle and state (for a second decoding thread)."""
        return HardwareJpeg.open(self.device, self.max_batch)

    @staticmethod
    def _check(call: str, status: int) -> None:
        if status != 0:
            raise NvjpegError(call, status)

    def _params(self, count: int) -> list[ctypes.c_void_p]:
        while len(self.params) < count:
            params = ctypes.c_void_p()
            self._check(
                "nvjpegDecodeParamsCreate", self.quick.nvjpegDecodeParamsCreate(self.handle, ctypes.byref(params))
            )
            self._check(
                "nvjpegDecodeParamsSetOutputFormat",
                self.quick.nvjpegDecodeParamsSetOutputFormat(params, NVJPEG_OUTPUT_RGBI),
            )
            self.params.append(params)
        return self.params[:count]

    def _jpeg_stream(self) -> ctypes.c_void_p:
        """This thread's parsing state (nvjpeg's JPEG stream objects are not shared between threads)."""
        stream = getattr(self.local, "stream", None)
        if stream is None:
            stream = ctypes.c_void_p()
            self._check("nvjpegJpegStreamCreate", self.quick.nvjpegJpegStreamCreate(self.handle, ctypes.byref(stream)))
            self.local.stream = stream
        return stream

    def size(self, data: torch.Tensor) -> tuple[int, int] | None:
        """(height, width) from the header, or None where the engines cannot decode it."""
        parsed = self._jpeg_stream()
        components, subsampling = ctypes.c_int(), ctypes.c_int()
        widths, heights = (ctypes.c_int * NVJPEG_MAX_COMPONENT)(), (ctypes.c_int * NVJPEG_MAX_COMPONENT)()
        pointer, length = ctypes.c_void_p(data.data_ptr()), ctypes.c_size_t(data.numel())
        if self.quick.nvjpegGetImageInfo(
            self.handle, pointer, length, ctypes.byref(components), ctypes.byref(subsampling), widths, heights
        ):
            return None
        if subsampling.value < 0 or components.value not in (1, 3) or widths[0] * heights[0] > MAX_PIXELS:
            return None
        if self.quick.nvjpegJpegStreamParseHeader(self.handle, pointer, length, parsed):
            return None
        supported = ctypes.c_int(-1)
        if (
            self.quick.nvjpegDecodeBatchedSupported(self.handle, parsed, ctypes.byref(supported))
            or supported.value != 0
        ):
            return None
        return heights[0], widths[0]

    def decode(
        self, data: list[torch.Tensor], regions: np.ndarray | list[Region] | None, stream: torch.cuda.Stream
    ) -> tuple[torch.Tensor, np.ndarray]:
        """The images (or their regions, (N, 4) x, y, width, height) decoded into one flat uint8 buffer on the
        device, (height, width, 3) one after another and one zero byte at the end, and their (N, 6) int64 layout
        for `crops.packed_planes`: offset, height, width and the channel, row and column strides. Enqueued on
        `stream`, a stream for this decoder alone (the output is allocated on it); the call returns once the
        engines have the batch, before the pixels are written: work on other streams waits for an event
        recorded on `stream` after the call.

        Every image must be one `size` accepted; the inputs must stay alive until `stream` has passed this
        point (the caller keeps them with the batch). The descriptors are built with numpy, not per image."""
        n = len(data)
        if n == 0:
            raise ValueError("no images to decode")
        if regions is None:
            found = [self.size(tensor) for tensor in data]
            if any(hw is None for hw in found):
                raise NvjpegError("nvjpegGetImageInfo", 4)
            hw = np.array(found, dtype=np.int64).reshape(n, 2)
            boxes = None
        else:
            boxes = np.asarray(
                regions if isinstance(regions, np.ndarray) else [(r.x, r.y, r.width, r.height) for r in regions],
                dtype=np.int64,
            ).reshape(n, 4)
            hw = boxes[:, [3, 2]]
        # rows of a pitch rounded up to 64 bytes past the region's width, and SLACK_ROWS more rows than it has:
        # the layout probe26 found the engines writing nothing past (a tighter one is unchecked)
        pitch = (hw[:, 1] * 3 + SLACK_BYTES + 63) // 64 * 64
        sizes = (hw[:, 0] + SLACK_ROWS) * pitch
        offsets = np.zeros(n, dtype=np.int64)
        np.cumsum(sizes[:-1], out=offsets[1:])
        total = int(sizes.sum())
        with torch.cuda.stream(stream):
            flat = torch.empty(total + 1, dtype=torch.uint8, device=self.device)
            flat[total:].zero_()
        # The engines start writing when the call hands them the batch, not when `stream` reaches the call (as
        # torchvision pull request 9606 and torchcodec pull request 1634 report on H100s; probe28 saw it here).
        # `flat` is allocated on `stream`, on which only this decoder works: its memory is fresh or an earlier
        # output's, which the caller frees once the kernels reading it are done. Waiting for `stream` (the last
        # batch's decode) keeps the state, its staging buffers and the region parameters to one batch at a
        # time, as DALI and nvImageCodec wait on their last batch; it never waits for the crops' kernels.
        if self.wait_for_stream:
            stream.synchronize()
        descriptors = np.zeros((n, 2 * NVJPEG_MAX_COMPONENT), dtype=np.uint64)  # nvjpegImage_t: channel[4], pitch[4]
        descriptors[:, 0] = flat.data_ptr() + offsets
        descriptors[:, NVJPEG_MAX_COMPONENT] = pitch
        pointers = np.fromiter((t.data_ptr() for t in data), dtype=np.uint64, count=n)
        lengths = np.fromiter((t.numel() for t in data), dtype=np.uint64, count=n)
        if n != self.initialized:
            self._check(
                "nvjpegDecodeBatchedInitialize",
                self.lib.nvjpegDecodeBatchedInitialize(self.handle, self.state, n, 1, NVJPEG_OUTPUT_RGBI),
            )
            self.initialized = n
        handle = ctypes.c_void_p(stream.cuda_stream)
        args = (self.handle, self.state, pointers.ctypes.data, lengths.ctypes.data, descriptors.ctypes.data)
        array = np.zeros(0, dtype=np.uint64)
        try:
            if boxes is None:
                self._check("nvjpegDecodeBatched", self.lib.nvjpegDecodeBatched(*args, handle))
            else:
                params = self._params(n)
                set_roi = self.quick.nvjpegDecodeParamsSetROI
                for p, (x, y, w, h) in zip(params, boxes.tolist(), strict=True):
                    if set_roi(p, x, y, w, h):
                        raise NvjpegError("nvjpegDecodeParamsSetROI", 2)
                array = np.array([p.value for p in params], dtype=np.uint64)
                status = self.lib.nvjpegDecodeBatchedEx(*args, array.ctypes.data, handle)
                self._check("nvjpegDecodeBatchedEx", status)
        except NvjpegError:
            stream.synchronize()  # what reached the engines is done before `flat` and the inputs can go
            self.initialized = 0  # nvjpeg asks for a new nvjpegDecodeBatchedInitialize after a failed batch
            raise
        self.pending = (pointers, lengths, descriptors, array)
        layout = np.stack([offsets, hw[:, 0], hw[:, 1], np.ones(n, np.int64), pitch, np.full(n, 3, np.int64)], axis=1)
        return flat, layout


def _declare(lib: ctypes.CDLL) -> None:
    """Argument types of the calls used (all return nvjpegStatus_t, an int)."""
    p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    ip = ctypes.POINTER(ctypes.c_int)
    signatures: dict[str, list[type]] = {
        "nvjpegCreateEx": [i, p, p, ctypes.c_uint, ctypes.POINTER(p)],
        "nvjpegJpegStateCreate": [p, ctypes.POINTER(p)],
        "nvjpegJpegStreamCreate": [p, ctypes.POINTER(p)],
        "nvjpegDecodeParamsCreate": [p, ctypes.POINTER(p)],
        "nvjpegDecodeParamsSetOutputFormat": [p, i],
        "nvjpegDecodeParamsSetROI": [p, i, i, i, i],
        "nvjpegGetImageInfo": [p, p, sz, ip, ip, ip, ip],
        "nvjpegJpegStreamParseHeader": [p, p, sz, p],
        "nvjpegDecodeBatchedSupported": [p, p, ip],
        "nvjpegDecodeBatchedInitialize": [p, p, i, i, i],
        "nvjpegDecodeBatched": [p, p, p, p, p, p],
        "nvjpegDecodeBatchedEx": [p, p, p, p, p, p, p],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
