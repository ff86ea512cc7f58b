# ruff: noqa: E402  (imports after sys.path is set)
"""Device probe 11: beside the graphed training step (stepped one at a time, as when fed), how many crop
regions per second do 1, 2, 3 or 4 hardware decoders (each its own handle and state, each in its own
thread) decode, and what does the training keep? And does the engines' planar YUV output (no nvjpeg
colour-conversion kernels) decode faster there than interleaved RGB? probe29 found each RGB decode queuing
a conversion kernel and an event wait per image on nvjpeg's own streams, the kernels slowed by the
training's. Means over the window, not medians. With TRAIN_STREAM=1 the training runs on a stream of its
own instead of the legacy default stream. Writes $OUT/probe30.json (or probe30_train_stream.json)."""

import ctypes
import json
import os
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import numpy as np
import torch
import torchvision
from imagenet_input import _environment, ensure_tree
from torchvision.io import read_file

from specbench.data.crops import crop_boxes_xyxy, decode_regions, random_resized_boxes
from specbench.data.nvjpeg import HardwareJpeg

tree, _ = ensure_tree(Path("/tmp/tree"))
out = {"environment": _environment("cuda"), "command": "python3 lab/probes/probe30.py"}


def show(k, v):
    out[k] = v
    print(f"{k:<70} {json.dumps(v, default=str)[:800]}", flush=True)
    Path(
        os.environ["OUT"], "probe30_train_stream.json" if os.environ.get("TRAIN_STREAM") else "probe30.json"
    ).write_text(json.dumps(out, indent=2, default=str))


dev = torch.device("cuda", 0)
if os.environ.get("TRAIN_STREAM"):  # the training on a stream of its own, not the legacy default stream
    torch.cuda.set_stream(torch.cuda.Stream(dev))
    out["command"] = "TRAIN_STREAM=1 " + out["command"]
probe_hw = HardwareJpeg.open(dev, 256)
batches = []
for b in range(12):
    files = [read_file(tree.train.path(tree.root, b * 256 + i)) for i in range(256)]
    sizes = torch.tensor([probe_hw.size(f) for f in files], dtype=torch.float64)
    boxes = crop_boxes_xyxy(random_resized_boxes(sizes[:, 0], sizes[:, 1], torch.Generator().manual_seed(b)))
    regions, _ = decode_regions(boxes, sizes)
    batches.append((files, regions.numpy(), sizes.long().numpy()))


class YuvDecoder:
    """Whole images as planar YUV (nvjpeg's NVJPEG_OUTPUT_YUV): one buffer per plane, chroma at half size
    for 4:2:0 (every generated image is 4:2:0, as ImageNet's are)."""

    def __init__(self):
        self.hw = HardwareJpeg.open(dev, 256)
        self.state = ctypes.c_void_p()
        lib = self.hw.lib
        assert lib.nvjpegJpegStateCreate(self.hw.handle, ctypes.byref(self.state)) == 0
        self.initialized = 0

    def decode(self, files, sizes, stream):
        n = len(files)
        h, w = sizes[:, 0], sizes[:, 1]
        cw, ch = (w + 1) // 2, (h + 1) // 2
        pitch_y = (w + 63) // 64 * 64
        pitch_c = (cw + 63) // 64 * 64
        per = pitch_y * (h + 16) + 2 * pitch_c * (ch + 16)
        offsets = np.zeros(n, dtype=np.int64)
        np.cumsum(per[:-1], out=offsets[1:])
        with torch.cuda.stream(stream):
            flat = torch.empty(int(per.sum()) + 1, dtype=torch.uint8, device=dev)
        stream.synchronize()
        base = flat.data_ptr() + offsets
        d = np.zeros((n, 8), dtype=np.uint64)
        d[:, 0] = base
        d[:, 1] = base + pitch_y * (h + 16)
        d[:, 2] = base + pitch_y * (h + 16) + pitch_c * (ch + 16)
        d[:, 4], d[:, 5], d[:, 6] = pitch_y, pitch_c, pitch_c
        ptrs = np.fromiter((t.data_ptr() for t in files), dtype=np.uint64, count=n)
        lens = np.fromiter((t.numel() for t in files), dtype=np.uint64, count=n)
        lib = self.hw.lib
        if self.initialized != n:
            status = lib.nvjpegDecodeBatchedInitialize(self.hw.handle, self.state, n, 1, 1)  # NVJPEG_OUTPUT_YUV
            assert status == 0, status
            self.initialized = n
        status = lib.nvjpegDecodeBatched(
            self.hw.handle,
            self.state,
            ptrs.ctypes.data,
            lens.ctypes.data,
            d.ctypes.data,
            ctypes.c_void_p(stream.cuda_stream),
        )
        assert status == 0, status
        self.keep = (d, ptrs, lens)
        return flat


def rgb_loop(hw, stream, stop, counter):
    torch.cuda.set_device(dev)
    i = 0
    while not stop.is_set():
        files, regions, _ = batches[i % len(batches)]
        hw.decode(files, regions, stream)
        stream.synchronize()
        counter[0] += len(files)
        i += 1


def whole_rgb_loop(hw, stream, stop, counter):
    torch.cuda.set_device(dev)
    i = 0
    while not stop.is_set():
        files, _, _ = batches[i % len(batches)]
        hw.decode(files, None, stream)
        stream.synchronize()
        counter[0] += len(files)
        i += 1


def yuv_loop(dec, stream, stop, counter):
    torch.cuda.set_device(dev)
    i = 0
    while not stop.is_set():
        files, _, sizes = batches[i % len(batches)]
        dec.decode(files, sizes, stream)
        stream.synchronize()
        counter[0] += len(files)
        i += 1


def run(decoders, loop, step=None, seconds=3.0):
    stop = threading.Event()
    counters = [[0] for _ in decoders]
    streams = [torch.cuda.Stream(dev, priority=-1) for _ in decoders]
    threads = [
        threading.Thread(target=loop, args=(d, s, stop, c)) for d, s, c in zip(decoders, streams, counters, strict=True)
    ]
    for t in threads:
        t.start()
    time.sleep(0.5)
    start = [c[0] for c in counters]
    t0 = time.perf_counter()
    steps = 0
    if step is None:
        time.sleep(seconds)
    else:
        while time.perf_counter() - t0 < seconds:
            step()
            torch.cuda.synchronize()
            steps += 1
    dt = time.perf_counter() - t0
    decoded = sum(c[0] for c in counters) - sum(start)
    stop.set()
    for t in threads:
        t.join()
    return round(decoded / dt), round(steps * 256 / dt)


try:
    dec = YuvDecoder()
    flat = dec.decode(batches[0][0][:4], batches[0][2][:4], torch.cuda.current_stream())
    torch.cuda.synchronize()
    show("yuv decode works", True)
except Exception:
    dec = None
    show("yuv decode failed", traceback.format_exc()[-1200:])

pool = [HardwareJpeg.open(dev, 256) for _ in range(4)]
for k in (1, 2, 4) if not os.environ.get("TRAIN_STREAM") else (1,):
    show(f"alone: {k} RGB region decoders: img/s", run(pool[:k], rgb_loop)[0])
show("alone: 1 RGB whole decoder: img/s", run(pool[:1], whole_rgb_loop)[0])
if dec is not None:
    show("alone: 1 YUV whole decoder: img/s", run([dec], yuv_loop)[0])

model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.875, fused=True)
crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
compiled = torch.compile(model, mode="reduce-overhead")
images = torch.randn(256, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
labels = torch.randint(0, 1000, (256,), device="cuda")


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = crit(compiled(images), labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


for _ in range(20):
    step()
torch.cuda.synchronize()
show("training alone (stepped): img/s", run([], rgb_loop, step)[1])
for k in (1, 2, 3, 4):
    show(f"beside: {k} RGB region decoders: decoded img/s, train img/s", run(pool[:k], rgb_loop, step))
show("beside: 1 RGB whole decoder: decoded img/s, train img/s", run(pool[:1], whole_rgb_loop, step))
if dec is not None:
    show("beside: 1 YUV whole decoder: decoded img/s, train img/s", run([dec], yuv_loop, step))
    dec2 = YuvDecoder()
    show("beside: 2 YUV whole decoders: decoded img/s, train img/s", run([dec, dec2], yuv_loop, step))
show("training alone again (stepped): img/s", run([], rgb_loop, step)[1])
