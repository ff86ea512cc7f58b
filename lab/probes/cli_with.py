"""`specbench` with process-wide torch settings the executors do not expose, for one-off probes on the device.

    SB_CUDNN_BENCHMARK_LIMIT=0 SB_INDUCTOR='{"conv_1x1_as_mm": true}' python3 lab/probes/cli_with.py execute ...

SB_CUDNN_BENCHMARK_LIMIT sets torch.backends.cudnn.benchmark_limit (how many cuDNN algorithms the
benchmark mode tries per convolution; torch's default is 10, 0 means all); SB_INDUCTOR is a JSON object
of torch._inductor.config values set before the run. SB_STEM_PAD=C builds torchvision's ResNet-50 with
its stem convolution fed C input channels, the image and the weight padded with zeros inside the model
(the same arithmetic; cuDNN otherwise pads the 3 channels itself on every call). SB_GPT_WHOLE=1 compiles
llm-gpt's whole decoder (embeddings, every block, the final norm) as one graph instead of block by block,
so that inductor may fuse across the blocks' boundaries. SB_GPT_SLICE=1 restores llm-gpt's earlier loss, the
logits sliced to the real vocabulary (the executor now masks the padding instead). (The probe
SB_GPT_BF16_WEIGHTS=1 of commit 92ab2f8 became the executor's --set weights=bf16.)
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

if os.environ.get("SB_STEM_PAD"):
    import torch.nn.functional as F
    import torchvision

    channels = int(os.environ["SB_STEM_PAD"])

    class PaddedStem(torch.nn.Module):
        def __init__(self, conv: torch.nn.Conv2d) -> None:
            super().__init__()
            self.weight = conv.weight
            self.stride, self.padding = conv.stride, conv.padding

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            extra = channels - x.shape[1]
            x = torch.cat([x, x.new_zeros(x.shape[0], extra, *x.shape[2:])], 1)
            x = x.contiguous(memory_format=torch.channels_last)
            w = torch.cat([self.weight, self.weight.new_zeros(self.weight.shape[0], extra, *self.weight.shape[2:])], 1)
            w = w.contiguous(memory_format=torch.channels_last)
            return F.conv2d(x, w, None, self.stride, self.padding)

    original = torchvision.models.resnet50

    def padded_resnet50(*args, **kwargs):  # type: ignore[no-untyped-def]
        model = original(*args, **kwargs)
        model.conv1 = PaddedStem(model.conv1)
        return model

    torchvision.models.resnet50 = padded_resnet50
    print(f"stem convolution on {channels} input channels", flush=True)

if os.environ.get("SB_GPT_WHOLE"):
    import specbench.workloads.llm_gpt.executor as gpt_executor
    from specbench.workloads.llm_gpt import model as gpt_model

    def compile_whole(model, compile_mode, backend=gpt_model.COMPILE_BACKEND):  # type: ignore[no-untyped-def]
        if compile_mode == "none":
            return gpt_model.output_loss
        mode = None if compile_mode == "default" else compile_mode
        model.transformer.compile(mode=mode, backend=backend)
        return torch.compile(gpt_model.output_loss, mode=mode, backend=backend)

    gpt_executor.compile_regions = compile_whole
    print("llm-gpt: the whole decoder compiled as one graph", flush=True)

if os.environ.get("SB_GPT_SLICE"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    from loss_kernels import sliced_loss  # the form benchmarks/loss_kernels.py times against the executor's

    from specbench.workloads.llm_gpt import model as gpt_model

    gpt_model.output_loss = sliced_loss
    print("llm-gpt: the loss over the logits sliced to the vocabulary", flush=True)

from specbench.cli import main

sys.exit(main(sys.argv[1:]))
