"""The whole-image decode path: torchvision's nvjpeg call for the rest of each batch, libjpeg-turbo for its share.

The crops are drawn when the batch is assembled, from the decoded images' sizes. With the libjpeg
decoder the CPU's share is the whole batch and nvjpeg is never called.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from specbench.data.jpegfiles import JpegFiles, Read
from specbench.data.jpegoptions import ShareControl


@dataclass
class TorchvisionJpeg:
    """torchvision's nvjpeg decoder on the loader's device, with libjpeg-turbo for the images it refuses.

    `cpu_only` is the loader's set of images nvjpeg refused once: they go to the CPU from then on."""

    files: JpegFiles
    device: torch.device
    stream: torch.cuda.Stream | None
    decode_stream: torch.cuda.Stream | None
    cpu_only: set[int]

    def decode(self, index: np.ndarray, data: list[torch.Tensor]) -> list[torch.Tensor]:
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
        decode_cpu = self.files.decode_cpu
        return [img if img is not None else decode_cpu(int(index[k]), data[k]) for k, img in enumerate(out)]

    def _torchvision_nvjpeg(self, data: list[torch.Tensor]) -> list[torch.Tensor]:
        """torchvision's nvjpeg call, its outputs allocated on `decode_stream`, on which nothing else allocates.

        nvjpeg's hardware decoder writes its outputs when the call is made, not when its stream gets there
        (torchvision pull request 9606, torchcodec pull request 1634: on H100s), and torchvision allocates
        them on the current stream. Allocated on the loader's stream, an output could be memory that kernels
        queued there still read. On a stream of their own, outputs only ever reuse earlier outputs, which
        the loader's `_retire` lets go once their batch's kernels are done. The loader's stream then waits for
        the decode."""
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
            return self.files.decode_cpu(index, data)


@dataclass(frozen=True)
class WholeImages:
    """The decode path of whole images: libjpeg-turbo's share uploaded, the rest in one nvjpeg call."""

    files: JpegFiles
    nvjpeg: TorchvisionJpeg
    share: ShareControl

    def read(self, indices: list[int]) -> list[torch.Tensor]:
        """Runs in a reading thread: the files' bytes."""
        return self.files.load_many(indices)

    def batches(
        self, reads: Iterator[Read], stop: threading.Event, generator: torch.Generator
    ) -> Iterator[tuple[np.ndarray, list[torch.Tensor]]]:
        """Whole images from torchvision's decoders; the crops are drawn when the batch is assembled."""
        for index, on_cpu, decodes, loads in reads:
            encoded = [data for future in loads for data in future.result()]
            t_nv = time.perf_counter()
            images = self.nvjpeg.decode(index[on_cpu:], encoded) if encoded else []
            t0 = time.perf_counter()
            uploaded = [image for future in decodes for image in self.files.upload(*future.result())]
            t1 = time.perf_counter()
            yield index, uploaded + images
            self.share.update(cpu_wait_s=t1 - t0, handover_s=time.perf_counter() - t1, nvjpeg_s=t0 - t_nv)
