# ruff: noqa: E402  (imports after sys.path is set)
"""Device probe 9: do the hardware engines wait for the work queued before the call on its stream?

On the loader's stream: a 0.3 s sleep kernel, then the output buffer filled with a marker (171), then the
decode call, with HardwareJpeg's wait for the stream turned off. If the engines follow the stream, the
regions hold the decoded pixels (the fill ran first); if they start when the call hands them the batch, the
fill, still queued behind the sleep, overwrites what they wrote and the regions read 171. The same without
the sleep, and with the wait on, as controls. Writes $OUT/probe28.json."""

import json
import os
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import torch
from imagenet_input import _environment, ensure_tree
from torchvision.io import ImageReadMode, decode_jpeg, read_file

from specbench.data.crops import crop_boxes_xyxy, decode_regions, random_resized_boxes
from specbench.data.nvjpeg import HardwareJpeg

tree, _ = ensure_tree(Path("/tmp/tree"))
dev = torch.device("cuda", 0)
hw = HardwareJpeg.open(dev, 64)
files = [read_file(tree.train.path(tree.root, i)) for i in range(64)]
sizes = torch.tensor([hw.size(f) for f in files], dtype=torch.float64)
regions, _ = decode_regions(
    crop_boxes_xyxy(random_resized_boxes(sizes[:, 0], sizes[:, 1], torch.Generator().manual_seed(0))), sizes
)
whole = decode_jpeg(files, mode=ImageReadMode.RGB, device=dev)
stream = torch.cuda.Stream(dev, priority=-1)
out = {"environment": _environment("cuda"), "command": "python3 lab/probes/probe28.py", "cases": {}}
real_empty = torch.empty


def marked(*a, **kw):
    t = real_empty(*a, **kw)
    t.fill_(171)
    return t


for name, sleep, wait in (
    ("no sleep, no wait", False, False),
    ("sleep, no wait", True, False),
    ("sleep, wait", True, True),
):
    hw.wait_for_stream = wait
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        if sleep:
            torch.cuda._sleep(600_000_000)
    torch.empty = marked
    try:
        flat, layout = hw.decode(files, regions.numpy(), stream)
    finally:
        torch.empty = real_empty
    stream.synchronize()
    right = marker = 0
    for k, (off, h, w, _, pitch, _) in enumerate(layout.tolist()):
        got = flat[off : off + h * pitch].view(h, pitch)[:, : 3 * w].reshape(h, w, 3).permute(2, 0, 1)
        x, y = int(regions[k, 0]), int(regions[k, 1])
        ref = whole[k][:, y : y + h, x : x + w]
        right += int(torch.equal(got, ref))
        marker += int(bool((got == 171).all()))
    out["cases"][name] = {"regions equal to the whole decode": right, "regions all marker": marker, "of": len(files)}
    print(name, out["cases"][name], flush=True)
Path(os.environ["OUT"], "probe28.json").write_text(json.dumps(out, indent=2, default=str))
