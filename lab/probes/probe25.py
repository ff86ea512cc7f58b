# ruff: noqa: E402
"""Device probe 6: the hardware-decoder path of DeviceImageLoader run alone, with host-side checks of each
batch's packed layout, to find where an index goes out of bounds (run with CUDA_LAUNCH_BLOCKING=1)."""

import sys
import traceback
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import imagenet_probe as P
import torch
from imagenet_input import ensure_tree

tree, _ = ensure_tree(Path("/tmp/tree"))
for patched in (True, False):
    loader = P._loader(tree, 256, 15, 3, stream_priority=-1, cpu_share="auto")
    print("hardware", loader.hardware is not None, "share", loader.share.value, "patched", patched, flush=True)
    original = loader.assemble

    def checked(index, images, generator, drawn=None, original=original, patched=patched):
        if drawn is not None and drawn[3] is not None:
            flat, layout = drawn[3]
            end = layout[:, 0] + layout[:, 1] * layout[:, 2] * 3
            bad = int((end > flat.numel() - 1).sum())
            if bad:
                print("layout beyond flat:", bad, int(end.max()), flat.numel(), flush=True)
        if patched:
            return images, torch.zeros(len(index)), None
        return original(index, images, generator, drawn)

    loader.assemble = checked
    try:
        for i, _ in enumerate(loader.epoch(1)):
            if i % 20 == 0:
                torch.cuda.synchronize()
                print("batch", i, flush=True)
            if i == 60:
                break
        torch.cuda.synchronize()
        print("ok", flush=True)
    except Exception:
        traceback.print_exc()
        break
    finally:
        loader.close()
