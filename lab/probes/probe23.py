# ruff: noqa: E402  (imports after sys.path is set)
"""Device probe 4: packed assemble; CUDA-graph training fed by the pipeline, CPU share sweep."""

import json
import os
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import imagenet_probe as P
import torch
import torchvision
from imagenet_input import FULL, _environment

from specbench.data.imagenet import scan_tree
from specbench.data.jpegtree import default_processes, write_tree

tree_dir = Path("/tmp/tree")
if not (tree_dir / "train").is_dir():
    write_tree(tree_dir, FULL, default_processes())
tree = scan_tree(tree_dir)
out = {"environment": _environment("cuda")}


def show(k, v):
    out[k] = v
    print(f"{k:<60} {v}", flush=True)


def timed_method(obj, name, acc):
    f = getattr(obj, name)

    def w(*a, **k):
        t = time.perf_counter()
        r = f(*a, **k)
        acc[name] = acc.get(name, 0.0) + time.perf_counter() - t
        return r

    setattr(obj, name, w)


for share in (0.0, 0.5, 1.0):
    loader = P._loader(tree, 256, 15, 3, stream_priority=-1, cpu_share=share)
    acc = {}
    for name in ("_decode_nvjpeg", "assemble"):
        timed_method(loader, name, acc)
    it = iter(loader.epoch(1))
    [next(it) for _ in range(3)]
    torch.cuda.synchronize()
    acc.clear()
    t = time.perf_counter()
    for _ in range(60):
        next(it)
    torch.cuda.synchronize()
    show(
        f"alone share={share} img/s",
        [round(60 * 256 / (time.perf_counter() - t)), {k: round(v * 1000 / 60, 1) for k, v in acc.items()}],
    )
    loader.close()
model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.875, fused=True)
crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
compiled = torch.compile(model, mode="reduce-overhead")


def step(images, labels):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = crit(compiled(images), labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


images = torch.randn(256, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
synthetic = (images, torch.randint(0, 1000, (256,), device="cuda"))
for _ in range(20):
    step(*synthetic)


def repeat():
    while True:
        yield synthetic


base, _ = P._timed(step, repeat(), 90, 256)
show("graphs synthetic img/s", round(base))
for share, workers, prio in (
    (0.0, 15, -1),
    (0.25, 15, -1),
    (0.35, 15, -1),
    (0.45, 15, -1),
    (0.55, 15, -1),
    (0.45, 15, 0),
    (0.45, 12, -1),
):
    loader = P._loader(tree, 256, workers, 3, stream_priority=prio, cpu_share=share)
    acc = {}
    for name in ("_decode_nvjpeg", "assemble"):
        timed_method(loader, name, acc)
    r, w = P._timed(step, iter(loader.epoch(1)), 90, 256)
    loader.close()
    show(
        f"graphs fed share={share} workers={workers} prio={prio}: img/s ratio waiting",
        [round(r), round(r / base, 3), round(w, 3), {k: round(v * 1000 / 93, 1) for k, v in acc.items()}],
    )
base, _ = P._timed(step, repeat(), 90, 256)
show("graphs synthetic again img/s", round(base))
Path(os.environ["OUT"], "probe23.json").write_text(json.dumps(out, indent=2, default=str))
