"""Device probe for the hybrid decode: variants of the loader beside the compiled step."""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, "benchmarks")
from imagenet_input import FULL, _environment
from imagenet_probe import probe

from specbench.data.imagenet import scan_tree
from specbench.data.jpegtree import default_processes, write_tree

tree_dir = Path("/tmp/tree")
t0 = time.perf_counter()
if not (tree_dir / "train").is_dir():
    write_tree(tree_dir, FULL, default_processes())
print("tree", time.perf_counter() - t0, flush=True)
tree = scan_tree(tree_dir)
V = [
    {"alone": True},
    {"alone": True, "cpu_share": 0.5},
    {"alone": True, "decoder": "libjpeg"},
    {},
    {"stream_priority": -1},
    {"cpu_share": 0.25, "stream_priority": -1},
    {"cpu_share": 0.4, "stream_priority": -1},
    {"cpu_share": 0.55, "stream_priority": -1},
    {"cpu_share": 0.7, "stream_priority": -1},
    {"decoder": "libjpeg", "stream_priority": -1},
    {"cpu_share": 0.4, "stream_priority": -1, "switch_interval": 0.0005},
    {"cpu_share": 0.4, "stream_priority": -1, "workers": 12},
]
out = probe(tree, 256, [], [], V)
out["environment"] = _environment("cuda")
Path(os.environ["OUT"], "probe20.json").write_text(json.dumps(out, indent=2, default=str))
