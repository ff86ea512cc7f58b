# ruff: noqa: E402  (imports after sys.path is set)
"""Device probe 10: what GPU work does a hardware-decoder call queue, on which streams, and what slows the
call beside the graphed training step? Decodes batches of 256 crop regions in a thread (as the loader's
decoding thread does) alone and beside the training (stepped one at a time, as when fed), times each call,
and records a profile of both windows: per stream, the kernels and copies, their count and total time.
Also tries the decoders' stream at each priority torch offers. Writes $OUT/probe29.json after each part."""

import json
import os
import sys
import threading
import time
import traceback
import warnings
from collections import defaultdict
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import torch
import torchvision
from imagenet_input import _environment, ensure_tree
from torch.profiler import ProfilerActivity, profile
from torchvision.io import read_file

from specbench.data.crops import crop_boxes_xyxy, decode_regions, random_resized_boxes
from specbench.data.nvjpeg import HardwareJpeg

tree, _ = ensure_tree(Path("/tmp/tree"))
out = {"environment": _environment("cuda"), "command": "python3 lab/probes/probe29.py"}


def show(k, v):
    out[k] = v
    print(f"{k:<60} {json.dumps(v, default=str)[:1500]}", flush=True)
    Path(os.environ["OUT"], "probe29.json").write_text(json.dumps(out, indent=2, default=str))


dev = torch.device("cuda", 0)
hw = HardwareJpeg.open(dev, 256)
batches = []
for b in range(8):
    files = [read_file(tree.train.path(tree.root, b * 256 + i)) for i in range(256)]
    sizes = torch.tensor([hw.size(f) for f in files], dtype=torch.float64)
    boxes = crop_boxes_xyxy(random_resized_boxes(sizes[:, 0], sizes[:, 1], torch.Generator().manual_seed(b)))
    regions, _ = decode_regions(boxes, sizes)
    batches.append((files, regions.numpy()))


def by_stream(prof):
    """Per (stream, kind): count, total us, the top names."""
    table = defaultdict(lambda: {"count": 0, "us": 0.0, "names": defaultdict(float)})
    for e in prof.profiler.kineto_results.events():
        if e.device_type() != torch.autograd.DeviceType.CUDA:
            continue
        row = table[f"stream {e.device_resource_id()}"]
        us = e.duration_ns() / 1000
        row["count"] += 1
        row["us"] += us
        row["names"][e.name()[:70]] += us
    return {
        k: {
            "count": v["count"],
            "ms": round(v["us"] / 1000, 2),
            "top": sorted(((n, round(t / 1000, 2)) for n, t in v["names"].items()), key=lambda x: -x[1])[:8],
        }
        for k, v in table.items()
    }


def decode_loop(stream, count, times, stop=None):
    torch.cuda.set_device(dev)
    for i in range(count):
        if stop is not None and stop.is_set():
            return
        files, regions = batches[i % len(batches)]
        t = time.perf_counter()
        hw.decode(files, regions, stream)
        t1 = time.perf_counter()
        stream.synchronize()
        times.append((t1 - t, time.perf_counter() - t))


def ms(times):
    if not times:
        return None
    call = sorted(c for c, _ in times)[len(times) // 2]
    full = sorted(f for _, f in times)[len(times) // 2]
    return {"calls": len(times), "median call ms": round(call * 1000, 2), "median call+sync ms": round(full * 1000, 2)}


try:
    stream = torch.cuda.Stream(dev, priority=-1)
    decode_loop(stream, 4, [])
    times = []
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        decode_loop(stream, 4, times)
    show("alone: decode times", ms(times))
    show("alone: GPU work by stream (4 calls)", by_stream(prof))
    show("the decoders' stream id", stream.stream_id)
except Exception:
    show("alone failed", traceback.format_exc()[-1500:])

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


def beside(priority, steps, profiled=False, free=False):
    stream = torch.cuda.Stream(dev, priority=priority)
    times, stop = [], threading.Event()
    thread = threading.Thread(target=decode_loop, args=(stream, 10_000, times, stop))
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) if profiled else None
    thread.start()
    time.sleep(0.2)
    if prof:
        prof.__enter__()
    t = time.perf_counter()
    for _ in range(steps):
        step()
        if not free:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    rate = steps * 256 / (time.perf_counter() - t)
    if prof:
        prof.__exit__(None, None, None)
    stop.set()
    thread.join()
    return rate, times, prof


try:
    rate, times, prof = beside(-1, 6, profiled=True)
    show("beside (stepped, profiled): train img/s, decode", [round(rate), ms(times)])
    show("beside: GPU work by stream", by_stream(prof))
    prof.export_chrome_trace(str(Path(os.environ["OUT"], "probe29_beside_trace.json")))
except Exception:
    show("beside profiled failed", traceback.format_exc()[-1500:])
for priority in (0, -1, -2, -3, -5):
    try:
        rate, times, _ = beside(priority, 60)
        show(f"beside stepped, decode stream priority {priority}: train img/s, decode", [round(rate), ms(times)])
    except Exception:
        show(f"beside priority {priority} failed", traceback.format_exc()[-800:])
rate, times, _ = beside(-1, 60, free=True)
show("beside free-running, priority -1: train img/s, decode", [round(rate), ms(times)])
