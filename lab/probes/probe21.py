# ruff: noqa: E402, B007, B023  (imports after sys.path is set; the consumer thread's closure is per variant)
"""Device probe 2: where the pipeline's time goes; training beside (not fed by) the pipeline; CUDA graphs."""

import json
import os
import sys
import threading
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import imagenet_probe as P
import torch
from imagenet_input import FULL, _environment

from specbench.data import crops
from specbench.data.imagenet import scan_tree
from specbench.data.jpegtree import default_processes, write_tree

tree_dir = Path("/tmp/tree")
if not (tree_dir / "train").is_dir():
    write_tree(tree_dir, FULL, default_processes())
tree = scan_tree(tree_dir)
out = {"environment": _environment("cuda")}


def show(k, v):
    out[k] = v
    print(f"{k:<55} {v}", flush=True)


# A. one batch's pieces, CPU overhead (no sync) and with sync
loader = P._loader(tree, 256, 15, 3, stream_priority=-1)
idx = loader.order(1)[:256]
data = loader._load_many(idx.tolist())
for rep in range(3):
    torch.cuda.synchronize()
    t = time.perf_counter()
    imgs = loader._decode_nvjpeg(idx, data)
    torch.cuda.synchronize()
    tdec = time.perf_counter() - t
    g = torch.Generator().manual_seed(rep)
    t = time.perf_counter()
    c0 = time.thread_time()
    m = loader._metadata(idx, imgs, g)
    tm = time.perf_counter() - t
    t = time.perf_counter()
    c1 = time.thread_time()
    canvas = crops.pad_images(imgs)
    tp = time.perf_counter() - t
    cp = time.thread_time() - c1
    torch.cuda.synchronize()
    tp_sync = time.perf_counter() - t
    t = time.perf_counter()
    nt = torch.nested.as_nested_tensor(imgs)
    pad2 = torch.nested.to_padded_tensor(nt, 0)
    tn = time.perf_counter() - t
    torch.cuda.synchronize()
    tn_sync = time.perf_counter() - t
    same = bool(torch.equal(pad2, canvas))
    t = time.perf_counter()
    loader.assemble(idx, imgs, g)
    ta = time.perf_counter() - t
    torch.cuda.synchronize()
    ta_sync = time.perf_counter() - t
show(
    "A decode/metadata/pad/pad_sync/nested/nested_sync/assemble/assemble_sync ms",
    [round(x * 1000, 2) for x in (tdec, tm, tp, tp_sync, tn, tn_sync, ta, ta_sync)] + [same],
)
t = time.perf_counter()
d2 = loader._load_many(idx.tolist())
show("A read 256 ms", round((time.perf_counter() - t) * 1000, 2))
loader.close()


# B. stage timers, pipeline alone
def timed_method(obj, name, acc):
    f = getattr(obj, name)

    def w(*a, **k):
        t = time.perf_counter()
        r = f(*a, **k)
        acc[name] = acc.get(name, 0.0) + time.perf_counter() - t
        acc[name + " n"] = acc.get(name + " n", 0) + 1
        return r

    setattr(obj, name, w)


for share in (0.0, 0.3):
    loader = P._loader(tree, 256, 15, 3, stream_priority=-1, cpu_share=share)
    acc = {}
    for name in ("_decode_nvjpeg", "assemble", "_upload"):
        timed_method(loader, name, acc)
    it = iter(loader.epoch(1))
    [next(it) for _ in range(3)]
    torch.cuda.synchronize()
    acc.clear()
    t = time.perf_counter()
    for _ in range(60):
        next(it)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    show(f"B alone share={share} img/s", round(60 * 256 / dt))
    show(
        f"B alone share={share} stage ms per batch",
        {k: round(v * 1000 / 60, 2) for k, v in acc.items() if not k.endswith(" n")},
    )
    loader.close()

# C. training on synthetic beside a consumer of the pipeline
step, synthetic = P._model(256)
for _ in range(20):
    step(*synthetic)


def repeat():
    while True:
        yield synthetic


base, _ = P._timed(step, repeat(), 90, 256)
show("C synthetic img/s", round(base))
for share in (0.0, 0.3):
    loader = P._loader(tree, 256, 15, 3, stream_priority=-1, cpu_share=share)
    got = [0]
    stop = threading.Event()

    def consume():
        for e in range(1, 20):
            for images, labels in loader.epoch(e):
                got[0] += 1
                if stop.is_set():
                    return

    th = threading.Thread(target=consume, daemon=True)
    th.start()
    time.sleep(1.0)
    g0 = got[0]
    t = time.perf_counter()
    r, _ = P._timed(step, repeat(), 60, 256)
    dt = time.perf_counter() - t
    g1 = got[0]
    stop.set()
    th.join(timeout=30)
    loader.close()
    show(f"C beside share={share}: training img/s, pipeline img/s", [round(r), round((g1 - g0) * 256 / dt)])
# fed again for reference
for share in (0.0,):
    loader = P._loader(tree, 256, 15, 3, stream_priority=-1, cpu_share=share)
    r, w = P._timed(step, iter(loader.epoch(1)), 90, 256)
    loader.close()
    show(f"C fed share={share} img/s, waiting", [round(r), round(w, 3)])
# D. CUDA graphs
torch._dynamo.reset()
import torchvision

model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.875, fused=True)
crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
compiled = torch.compile(model, mode="reduce-overhead")


def step2(images, labels):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = crit(compiled(images), labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


try:
    for _ in range(20):
        step2(*synthetic)
    base2, _ = P._timed(step2, repeat(), 90, 256)
    show("D graphs synthetic img/s", round(base2))
    for share in (0.0, 0.3):
        loader = P._loader(tree, 256, 15, 3, stream_priority=-1, cpu_share=share)
        r, w = P._timed(step2, iter(loader.epoch(1)), 90, 256)
        loader.close()
        show(f"D graphs fed share={share} img/s, waiting", [round(r), round(w, 3)])
except Exception as e:
    show("D error", repr(e)[:500])
Path(os.environ["OUT"], "probe21.json").write_text(json.dumps(out, indent=2, default=str))
