# ruff: noqa: E402  (imports after sys.path is set)
"""Device probe 8: the hardware decoder's loader path against torchvision's, alone and feeding the CUDA-graph
training step, in one process (one compile): img/s, the ratio to synthetic tensors, where the decoding
thread spends its time. Writes $OUT/probe27.json after every line, so that a failure keeps what ran."""

import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import imagenet_probe as P
import torch
import torchvision
from imagenet_input import _environment, ensure_tree

tree, _ = ensure_tree(Path("/tmp/tree"))
out = {"environment": _environment("cuda"), "command": "python3 lab/probes/probe27.py"}
if os.environ.get("TRAIN_STREAM"):  # the training on a stream of its own, not the legacy default stream
    torch.cuda.set_stream(torch.cuda.Stream())
    out["command"] = "TRAIN_STREAM=1 " + out["command"]


def show(k, v):
    out[k] = v
    print(f"{k:<72} {v}", flush=True)
    Path(
        os.environ["OUT"], "probe27_train_stream.json" if os.environ.get("TRAIN_STREAM") else "probe27.json"
    ).write_text(json.dumps(out, indent=2, default=str))


def timed(obj, name, acc):
    f = getattr(obj, name)

    def w(*a, **k):
        t = time.perf_counter()
        r = f(*a, **k)
        acc[name] = acc.get(name, 0.0) + time.perf_counter() - t
        return r

    setattr(obj, name, w)


def make(hardware, workers=15, depth=3, share=0.0):
    loader = P._loader(tree, 256, workers, depth, stream_priority=-1, cpu_share=share)
    if not hardware:
        loader.hardware = None
    acc = {}
    if loader.hardware is not None:
        timed(loader.hardware, "decode", acc)
    else:
        timed(loader, "_decode_nvjpeg", acc)
    timed(loader, "assemble", acc)
    return loader, acc


def alone(name, hardware, **kw):
    loader, acc = make(hardware, **kw)
    try:
        it = iter(loader.epoch(1))
        for _ in range(3):
            next(it)
        torch.cuda.synchronize()
        acc.clear()
        t = time.perf_counter()
        for _ in range(60):
            next(it)
        torch.cuda.synchronize()
        rate = 60 * 256 / (time.perf_counter() - t)
        show(f"alone {name}: img/s, ms per batch", [round(rate), {k: round(v * 1000 / 60, 1) for k, v in acc.items()}])
    except Exception:
        show(f"alone {name}: failed", traceback.format_exc()[-1500:])
    finally:
        loader.close()


check = P._loader(tree, 256, 2, 1)
show("hardware decoder available", check.hardware is not None)
check.close()
alone("torchvision nvjpeg", False)  # first: a device-side assert in a later variant ends the process's CUDA
alone("engines, regions", True)

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
for name, hardware, kw in (
    ("torchvision nvjpeg, share 0.45", False, {"share": 0.45}),
    ("engines, regions", True, {}),
    ("engines, regions, 8 reading threads", True, {"workers": 8}),
    ("engines, regions, depth 5", True, {"depth": 5}),
    ("engines, regions, share 0.2", True, {"share": 0.2}),
):
    loader, acc = make(hardware, **kw)
    try:
        r, w = P._timed(step, iter(loader.epoch(1)), 90, 256)
        show(
            f"fed {name}: img/s, ratio, waiting, ms per batch",
            [round(r), round(r / base, 3), round(w, 3), {k: round(v * 1000 / 93, 1) for k, v in acc.items()}],
        )
    except Exception:
        show(f"fed {name}: failed", traceback.format_exc()[-1500:])
    finally:
        loader.close()
base, _ = P._timed(step, repeat(), 90, 256)
show("graphs synthetic again img/s", round(base))
