"""Does nvjpeg decoding scale over processes, and what does it cost a compiled ResNet-50 step in another process?

Four decoding processes (each its own nvjpeg decoder: torchvision keeps one per process) decode 2,048
in-memory JPEGs of a generated ImageNet-format tree in batches of 256 and resample one 224 x 224 crop
of each with roi_align; one training process runs torch.compile'd ResNet-50 (bf16 autocast,
channels_last, batch 256, synthetic data). Each configuration runs its processes together for 10 s
and prints images/s per process. Without MPS, kernels of different processes time-slice the GPU.

Usage: python3 benchmarks/nvjpeg_processes.py TREE OUT.json   (TREE: specbench.data.jpegtree's
layout; the 2026-12-01 run used TreeSpec(classes=32, train_per_class=256, val_per_class=4,
flat_val=True, learnable=False))
"""

import json
import sys
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

BATCH = 256


def files_of(root: Path, part: int, parts: int, n: int) -> list[Path]:
    files = sorted((root / "train").rglob("*.JPEG"))
    return files[part::parts][:n]


def decoder(part: int, parts: int, root: str, cmd, res, crop: bool, threads_read: bool) -> None:
    from torchvision.io import ImageReadMode, decode_jpeg, read_file
    from torchvision.ops import roi_align

    torch.cuda.set_device(0)
    paths = files_of(Path(root), part, parts, 2048)
    data = [read_file(str(p)) for p in paths]
    stream = torch.cuda.Stream()

    def step(k: int) -> int:
        chunk = [data[(k * BATCH + j) % len(data)] for j in range(BATCH)]
        imgs = decode_jpeg(chunk, mode=ImageReadMode.RGB, device="cuda")
        if crop:
            h = max(i.shape[1] for i in imgs)
            w = max(i.shape[2] for i in imgs)
            canvas = torch.zeros((len(imgs), 3, h, w), dtype=torch.uint8, device="cuda")
            for i, im in enumerate(imgs):
                canvas[i, :, : im.shape[1], : im.shape[2]] = im
            boxes = torch.tensor([[i, 10.0, 10.0, 300.0, 250.0] for i in range(len(imgs))], device="cuda")
            out = roi_align(canvas.float(), boxes, (224, 224), aligned=True)
            out = out.to(torch.bfloat16)
        return len(chunk)

    with torch.cuda.stream(stream):
        step(0)
        torch.cuda.synchronize()
        res.put(("ready", part))
        while True:
            duration = cmd.get()
            if duration is None:
                return
            t0 = time.perf_counter()
            n = k = 0
            while time.perf_counter() - t0 < duration:
                n += step(k)
                k += 1
            torch.cuda.synchronize()
            res.put(("decode", part, n / (time.perf_counter() - t0)))


def trainer(cmd, res) -> None:
    import torchvision

    torch.cuda.set_device(0)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(BATCH, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (BATCH,), device="cuda")

    def train_step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    compiled = torch.compile(train_step)
    for _ in range(20):
        compiled()
    torch.cuda.synchronize()
    res.put(("ready", "T"))
    while True:
        duration = cmd.get()
        if duration is None:
            return
        t0 = time.perf_counter()
        n = 0
        while time.perf_counter() - t0 < duration:
            compiled()
            n += BATCH
            if n % (BATCH * 8) == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        res.put(("train", "T", n / (time.perf_counter() - t0)))


def main() -> None:
    root, out = sys.argv[1], sys.argv[2]
    crop = True
    ctx = mp.get_context("spawn")
    res = ctx.Queue()
    nd = 4
    cmds = {f"D{i}": ctx.Queue() for i in range(nd)}
    cmds["T"] = ctx.Queue()
    procs = [ctx.Process(target=decoder, args=(i, nd, root, cmds[f"D{i}"], res, crop, False)) for i in range(nd)]
    procs.append(ctx.Process(target=trainer, args=(cmds["T"], res)))
    for p in procs:
        p.start()
    for _ in procs:
        print(res.get(), flush=True)
    configs = [
        ["T"],
        ["D0"],
        ["D0", "D1"],
        ["D0", "D1", "D2"],
        ["D0", "D1", "D2", "D3"],
        ["T", "D0"],
        ["T", "D0", "D1"],
        ["T", "D0", "D1", "D2"],
        ["T", "D0", "D1", "D2", "D3"],
    ]
    results = []
    for config in configs:
        for name in config:
            cmds[name].put(10.0)
        got = [res.get() for _ in config]
        row = {
            "config": config,
            "train": sum(g[2] for g in got if g[0] == "train"),
            "decode": sum(g[2] for g in got if g[0] == "decode"),
            "each": [round(g[2]) for g in got],
        }
        print(json.dumps(row), flush=True)
        results.append(row)
    for q in cmds.values():
        q.put(None)
    for p in procs:
        p.join()
    Path(out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
