# ruff: noqa: E402
"""Device probe 7 (needs the decoder's slack rows and bytes, SLACK_ROWS and SLACK_BYTES: commit 10f799f, and from 233b37e): does nvjpeg's hardware backend write only inside each region, and only before the stream
passes the decode? Fills the output with a marker, decodes region batches, then counts marker bytes overwritten
in each image's slack (rows past its height, bytes past its width) and bytes that change after the stream's
event has completed."""

import json
import os
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import torch
from imagenet_input import ensure_tree
from torchvision.io import read_file

from specbench.data import nvjpeg
from specbench.data.crops import crop_boxes_xyxy, decode_regions, random_resized_boxes

tree, _ = ensure_tree(Path("/tmp/tree"))
dev = torch.device("cuda", 0)
hw = nvjpeg.HardwareJpeg.open(dev, 256)
files = [read_file(tree.train.path(tree.root, i)) for i in range(2048)]
sizes = torch.tensor([hw.size(f) for f in files], dtype=torch.float64)
boxes = crop_boxes_xyxy(random_resized_boxes(sizes[:, 0], sizes[:, 1], torch.Generator().manual_seed(0)))
regions, _ = decode_regions(boxes, sizes)
stream = torch.cuda.Stream(dev, priority=-1)
real_empty = torch.empty
out = {"slack_rows": nvjpeg.SLACK_ROWS, "slack_bytes": nvjpeg.SLACK_BYTES, "batches": []}
for b in range(8):
    k = b * 256

    def empty(*a, **kw):
        t = real_empty(*a, **kw)
        t.fill_(171)
        return t

    torch.empty = empty
    try:
        flat, layout = hw.decode(files[k : k + 256], regions[k : k + 256].numpy(), stream)
    finally:
        torch.empty = real_empty
    e = torch.cuda.Event()
    e.record(stream)
    e.synchronize()
    a = flat.cpu()
    time.sleep(0.05)
    c = flat.cpu()
    host = a.numpy()
    past_rows = past_width = 0
    for off, h, w, _, pitch, _ in layout.tolist():
        img = host[off : off + (h + nvjpeg.SLACK_ROWS) * pitch].reshape(h + nvjpeg.SLACK_ROWS, pitch)
        past_rows += int((img[h:] != 171).sum())
        past_width += int((img[:h, w * 3 :] != 171).sum())
    row = {"changed_after_event": int((a != c).sum()), "written_past_rows": past_rows, "written_past_width": past_width}
    out["batches"].append(row)
    print(b, row, flush=True)
Path(os.environ["OUT"], "probe26.json").write_text(json.dumps(out, indent=2))
