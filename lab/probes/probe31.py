# ruff: noqa: E402  (imports after sys.path is set)
"""Device probe 31: the loader alone and `specbench execute --data` with one and with several hardware
decoders (data_decode_threads) and fewer reading threads, in one call: img/s of each against one synthetic
run. Writes $OUT/probe31.json after every line, so that a failure keeps what ran.

    python3 -u lab/probes/probe31.py [KEY=VALUE,KEY=VALUE ...]   (each argument one --data run)"""

import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import torch
from imagenet_input import _environment, ensure_tree, rate, real_run, synthetic_run

from specbench.data.jpegloader import DeviceImageLoader
from specbench.workloads.conv import workers_per_process
from specbench.workloads.resnet50.datapath import crop_geometry

tree, _ = ensure_tree(Path("/tmp/tree"))
runs = sys.argv[1:] or ["data_decode_threads=1", "data_decode_threads=2", "data_decode_threads=2,num_workers=8"]
out: dict = {"environment": _environment("cuda"), "command": " ".join(["python3 lab/probes/probe31.py", *runs])}
path = Path(os.environ.get("OUT", "/tmp")) / "probe31.json"
STAMP = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())  # `specbench execute` resumes a folder it finds


def save(key: str, value: object) -> None:
    out[key] = value
    path.write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(key, json.dumps(value, default=str)[:600], flush=True)


geometry = crop_geometry([3, 224, 224])
for threads in (1, 2, 3):
    try:
        loader = DeviceImageLoader(
            tree.root,
            tree.train,
            batch_size=256,
            train=True,
            geometry=geometry,
            device=torch.device("cuda"),
            decoder="nvjpeg",
            workers=workers_per_process(),
            seed=1,
            decode_threads=threads,
        )
        t0 = time.perf_counter()
        value = rate(loader, 60, "cuda")
        save(
            f"loader alone, decode_threads={threads}",
            {
                "img/s": value,
                "slots": len(loader.slots),
                "engine share": loader.engine_images / max(1, loader.region_images),
                "seconds": time.perf_counter() - t0,
            },
        )
        loader.close()
    except Exception:
        save(f"loader alone, decode_threads={threads}", traceback.format_exc())
try:
    synthetic = synthetic_run(Path(f"/tmp/work31-{STAMP}/synthetic"), "cuda", False, "reduce-overhead")
    save("synthetic", synthetic)
except (Exception, SystemExit):
    save("synthetic", traceback.format_exc())
    synthetic = None
for number, run in enumerate(runs):
    sets = run.split(",")
    work = Path(f"/tmp/work31-{STAMP}/real{number}")
    work.mkdir(parents=True, exist_ok=True)
    try:
        real = real_run(work, tree, 4, "cuda", False, "reduce-overhead", sets)
        if synthetic is not None:
            real["ratio"] = real["images_per_s"] / synthetic["images_per_s"]
        save(f"real {number} {run}", real)
    except (Exception, SystemExit):
        save(f"real {number} {run}", traceback.format_exc())
