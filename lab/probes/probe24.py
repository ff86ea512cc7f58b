# ruff: noqa: E402  (imports after sys.path is set)
"""Device probe 5: nvjpeg's hardware backend driven directly (specbench.data.nvjpeg) against torchvision's
decode_jpeg, alone and in a thread beside the CUDA-graph training step: full images and crop regions, stream
priorities."""

import json
import os
import sys
import threading
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
import faulthandler

faulthandler.dump_traceback_later(float(os.environ.get("PROBE_TRACE_S", "90")), repeat=True)
sys.path.insert(0, "benchmarks")
import torch
import torchvision
from imagenet_input import FULL, _environment
from torchvision.io import ImageReadMode, decode_jpeg, read_file

from specbench.data.crops import random_resized_boxes
from specbench.data.imagenet import scan_tree
from specbench.data.jpegtree import default_processes, write_tree
from specbench.data.nvjpeg import HardwareJpeg, Region, library_path

tree_dir = Path("/tmp/tree")
if not (tree_dir / "train").is_dir():
    write_tree(tree_dir, FULL, default_processes())
tree = scan_tree(tree_dir)
print("tree ready", flush=True)
out = {"environment": _environment("cuda"), "library": library_path()}


def show(k, v):
    out[k] = v
    print(f"{k:<64} {v}", flush=True)
    Path(os.environ["OUT"], "probe24.json").write_text(json.dumps(out, indent=2, default=str))


dev = torch.device("cuda", 0)
N = 4096
files = [read_file(tree.train.path(tree.root, i)) for i in range(N)]
hw = HardwareJpeg.open(dev, 256)
show("hardware decoder", hw is not None)
if hw is None:
    Path(os.environ["OUT"], "probe24.json").write_text(json.dumps(out, indent=2, default=str))
    sys.exit(0)
t = time.perf_counter()
sizes = [hw.size(f) for f in files]
show("size() per image us", round((time.perf_counter() - t) / N * 1e6, 1))
show("refused by engines", sum(s is None for s in sizes))
gen = torch.Generator().manual_seed(0)
hs = torch.tensor([s[0] for s in sizes], dtype=torch.float64)
ws = torch.tensor([s[1] for s in sizes], dtype=torch.float64)
boxes = random_resized_boxes(hs, ws, gen)  # top, left, h, w
regions = [Region(int(b[1]), int(b[0]), int(b[3]), int(b[2])) for b in boxes]
show("mean region area share", round(float((boxes[:, 2] * boxes[:, 3] / (hs * ws)).mean()), 3))


def batches(size):
    k = 0
    while True:
        if k + size > N:
            k = 0
        yield k, files[k : k + size]
        k += size


# correctness: hardware RGBI vs torchvision (which also uses the engines for baseline JPEGs)
s_lo = torch.cuda.Stream(dev, priority=0)
s_hi = torch.cuda.Stream(dev, priority=-1)
flat, layout = hw.decode(files[:16], None, s_hi)
shapes = [(h, w, 3) for h, w in layout[:, 1:3].tolist()]
s_hi.synchronize()
ref = decode_jpeg(files[:16], mode=ImageReadMode.RGB, device=dev)
off, diffs = 0, []
for (h, w, c), r in zip(shapes, ref, strict=True):
    mine = flat[off : off + h * w * c].view(h, w, c).permute(2, 0, 1)
    diffs.append(int((mine.int() - r.int()).abs().max()))
    off += h * w * c
show("full decode max abs diff vs torchvision (16 images)", diffs)
flat, layout = hw.decode(files[:16], regions[:16], s_hi)
shapes = [(h, w, 3) for h, w in layout[:, 1:3].tolist()]
s_hi.synchronize()
off, diffs = 0, []
for k, ((h, w, c), r) in enumerate(zip(shapes, ref, strict=True)):
    mine = flat[off : off + h * w * c].view(h, w, c).permute(2, 0, 1)
    g = regions[k]
    full = r[:, g.y : g.y + g.height, g.x : g.x + g.width]
    d = (mine.int() - full.int()).abs()
    diffs.append([int(d.max()), round(float(d.float().mean()), 3)])
    off += h * w * c
show("region decode vs crop of full: max, mean abs diff", diffs)


def alone(name, fn, size, count=12):
    it = batches(size)
    for _ in range(3):
        fn(*next(it))
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(count):
        fn(*next(it))
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    show(f"alone {name} batch={size}: img/s, ms/call", [round(count * size / dt), round(dt / count * 1000, 1)])


def tv(k, data):
    decode_jpeg(data, mode=ImageReadMode.RGB, device=dev)


def hw_full(stream, sync):
    def f(k, data):
        hw.decode(data, None, stream)
        if sync:
            stream.synchronize()

    return f


def hw_roi(stream, sync):
    def f(k, data):
        hw.decode(data, regions[k : k + len(data)], stream)
        if sync:
            stream.synchronize()

    return f


for size in (128, 256):
    alone("torchvision", tv, size)
    alone("hw full sync", hw_full(s_hi, True), size)
    alone("hw full async", hw_full(s_hi, False), size)
    alone("hw roi sync", hw_roi(s_hi, True), size)
    alone("hw roi async", hw_roi(s_hi, False), size)

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


def train(count=60):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(count):
        step()
    torch.cuda.synchronize()
    return count * 256 / (time.perf_counter() - t)


base = train()
show("graphs synthetic img/s", round(base))


def beside(name, fn, size, stream=None, depth=3):
    stop = threading.Event()
    done = [0]

    def loop():
        torch.cuda.set_device(dev)
        it = batches(size)
        events = []
        while not stop.is_set():
            fn(*next(it))
            if stream is not None:
                e = torch.cuda.Event()
                e.record(stream)
                events.append(e)
                if len(events) > depth:
                    events.pop(0).synchronize()
            done[0] += size

    th = threading.Thread(target=loop)
    th.start()
    time.sleep(0.5)
    d0, t0 = done[0], time.perf_counter()
    r = train()
    dec = (done[0] - d0) / (time.perf_counter() - t0)
    stop.set()
    th.join()
    torch.cuda.synchronize()
    show(f"beside {name} batch={size}: train img/s, ratio, decode img/s", [round(r), round(r / base, 3), round(dec)])


beside("torchvision", tv, 128)
beside("torchvision", tv, 256)
beside("hw full prio0 async", hw_full(s_lo, False), 128, s_lo)
beside("hw full prio-1 async", hw_full(s_hi, False), 128, s_hi)
beside("hw full prio-1 async", hw_full(s_hi, False), 256, s_hi)
beside("hw full prio-1 sync", hw_full(s_hi, True), 256)
beside("hw roi prio-1 async", hw_roi(s_hi, False), 256, s_hi)
beside("hw roi prio0 async", hw_roi(s_lo, False), 256, s_lo)
show("graphs synthetic again img/s", round(train()))
Path(os.environ["OUT"], "probe24.json").write_text(json.dumps(out, indent=2, default=str))
