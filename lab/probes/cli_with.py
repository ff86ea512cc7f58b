"""`specbench` with process-wide torch settings the executors do not expose, for one-off probes on the device.

    SB_CUDNN_BENCHMARK_LIMIT=0 SB_INDUCTOR='{"conv_1x1_as_mm": true}' python3 lab/probes/cli_with.py execute ...

SB_CUDNN_BENCHMARK_LIMIT sets torch.backends.cudnn.benchmark_limit (how many cuDNN algorithms the
benchmark mode tries per convolution; torch's default is 10, 0 means all); SB_INDUCTOR is a JSON object
of torch._inductor.config values set before the run.
"""

import json
import os
import sys

import torch

if "SB_CUDNN_BENCHMARK_LIMIT" in os.environ:
    torch.backends.cudnn.benchmark_limit = int(os.environ["SB_CUDNN_BENCHMARK_LIMIT"])
    print(f"cudnn.benchmark_limit = {torch.backends.cudnn.benchmark_limit}", flush=True)
if os.environ.get("SB_INDUCTOR"):
    import torch._inductor.config as inductor_config

    for key, value in json.loads(os.environ["SB_INDUCTOR"]).items():
        setattr(inductor_config, key, value)
        print(f"inductor.config.{key} = {value!r}", flush=True)

from specbench.cli import main

sys.exit(main(sys.argv[1:]))
