"""The `--data` image path of the ResNet-50 executor: its options, their checks, and the loaders they pick.

Settings recorded in layer 6 (framework) of submission.yaml: `data_decoder` (pil: PIL in DataLoader
worker processes; libjpeg: torchvision's libjpeg-turbo decoder in threads; nvjpeg: the GPU's decoder),
`augment_device` (cpu: per image in the workers, or batched on the CPU; cuda: batched kernels on the
GPU), with cuda `augment_kernel` (triton: one fused kernel, cropkernel.py; torch: crops.py's kernels),
`num_workers` (processes or reading threads) and, with nvjpeg, `data_cpu_share` (the share of each batch
that libjpeg-turbo decodes in the reading threads beside it) and `data_decode_threads`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import torch

from specbench.data import cropkernel
from specbench.data.imagedata import TensorBatches, imagenet_loaders
from specbench.data.imagenet import scan_tree
from specbench.data.jpegloader import DeviceImageLoader, Geometry, LoaderOptions, ShareControl
from specbench.errors import UsageError
from specbench.run.config import Option, RunConfig
from specbench.run.context import RunContext
from specbench.spec.resolve import ResolvedSpec
from specbench.workloads.conv import memory_format

DATA_OPTIONS = {
    "data_decoder": Option(
        "data_decoder",
        "framework",
        "JPEG decoder for --data: pil (DataLoader workers), libjpeg (torchvision, CPU threads), nvjpeg (GPU)",
        ("pil", "libjpeg", "nvjpeg"),
        "pil",
        "nvjpeg",
    ),
    "augment_device": Option(
        "augment_device",
        "framework",
        "where crops, flips and normalisation of --data run: cpu or cuda (batched kernels)",
        ("cpu", "cuda"),
        "cpu",
        "cuda",
    ),
    "data_cpu_share": Option(
        "data_cpu_share",
        "framework",
        "with data_decoder=nvjpeg, the share of each batch decoded by libjpeg-turbo in the reading threads: "
        "auto (balanced batch by batch) or a fraction from 0 to 1",
        None,
        "auto",
        "auto",
    ),
    "data_decode_threads": Option(
        "data_decode_threads",
        "framework",
        "with data_decoder=nvjpeg on a GPU with JPEG engines, how many hardware decoders (each its own state, "
        "stream and thread) take the batches in turn: 1 to 4",
        (1, 2, 3, 4),
        1,
        3,
    ),
    "augment_kernel": Option(
        "augment_kernel",
        "framework",
        "with augment_device=cuda, the kernels that crop, flip and normalise a batch: triton (one fused kernel "
        "from the decoded pixels) or torch (float planes of the batch, roi_align, then the rest)",
        ("triton", "torch"),
        None,
        "triton",
    ),
}
DATA_SETTINGS = (
    "data_decoder",
    "augment_device",
    "augment_kernel",
    "num_workers",
    "data_cpu_share",
    "data_decode_threads",
)
NVJPEG_ONLY = ("data_cpu_share", "data_decode_threads")
VALID = {("pil", "cpu"), ("libjpeg", "cpu"), ("libjpeg", "cuda"), ("nvjpeg", "cuda")}


def check_data_settings(resolved: ResolvedSpec, config: RunConfig) -> None:
    """Refuse a decoder and augmentation place that do not go together; throughput runs read no files."""
    if resolved.spec.kind == "throughput":
        given = [name for name in DATA_SETTINGS if name in config.overrides]
        if given:
            raise UsageError(
                f"--set {given[0]}: applies to --data runs; spec {resolved.spec.id!r} times synthetic tensors"
            )
        for name in DATA_SETTINGS:
            config.settings.pop(name, None)
        return
    pair = (config.settings.get("data_decoder"), config.settings.get("augment_device"))
    if pair not in VALID:
        choices = ", ".join(f"{d}+{a}" for d, a in sorted(VALID))
        raise UsageError(f"data_decoder={pair[0]} with augment_device={pair[1]} does not go together; choose {choices}")
    share = config.settings.get("data_cpu_share", "auto")
    if pair[0] != "nvjpeg":
        for name in NVJPEG_ONLY:
            if name in config.overrides:
                raise UsageError(f"--set {name}: applies to data_decoder=nvjpeg; this run decodes with {pair[0]}")
            config.settings.pop(name, None)
    elif not ShareControl.valid(share):
        raise UsageError(f"--set data_cpu_share={share}: expected auto or a fraction from 0 to 1")
    if pair[1] != "cuda":
        if "augment_kernel" in config.overrides:
            raise UsageError("--set augment_kernel: applies to augment_device=cuda; this run augments on the CPU")
        config.settings.pop("augment_kernel", None)
    elif config.settings.get("augment_kernel") == "triton" and not cropkernel.available("cuda"):
        if "augment_kernel" in config.overrides:
            raise UsageError(
                "--set augment_kernel=triton: Triton is not installed here (torch's CUDA wheels ship it); "
                "--set augment_kernel=torch runs the same crops in torch's kernels"
            )
        config.settings["augment_kernel"] = "torch"  # what runs is what is recorded
    if pair[1] == "cuda" and not torch.cuda.is_available():
        raise UsageError(
            f"augment_device=cuda (data_decoder={pair[0]}) needs a CUDA GPU, and torch sees none here; "
            "--set data_decoder=pil --set augment_device=cpu runs the CPU path"
        )


def crop_geometry(sample_shape: list[int] | None) -> Geometry:
    """The spec's square sample size, and the evaluation's short side in ImageNet's 256 / 224 proportion."""
    _, height, width = sample_shape or [3, 224, 224]
    if height != width:
        raise UsageError(f"--data crops square images; the spec's sample_shape is {height} x {width}")
    return Geometry(size=height, resize=round(height * 256 / 224))


def image_loaders(ctx: RunContext, batch_size: int) -> tuple[Any, Any]:
    """Train and evaluation loaders over the `--data` tree, as the run's settings choose them."""
    assert ctx.data is not None
    tree = scan_tree(ctx.data)
    geometry = crop_geometry(ctx.resolved.spec.workload.dataset.sample_shape)
    decoder = str(ctx.settings.get("data_decoder") or "pil")
    where = str(ctx.settings.get("augment_device") or "cpu")
    workers = int(ctx.settings.get("num_workers") or 0)
    rank, world = ctx.dist.rank, ctx.dist.world
    if decoder == "pil":
        return imagenet_loaders(
            tree, geometry.size, geometry.resize, batch_size, workers, ctx.seed, ctx.device == "cuda", rank, world
        )
    if where == "cuda" and ctx.device != "cuda":
        raise UsageError(f"augment_device=cuda needs --device cuda; this run's device is {ctx.device}")
    device = torch.device(ctx.device if where == "cuda" else "cpu")
    options = LoaderOptions(
        batch_size=batch_size,
        geometry=geometry,
        device=device,
        decoder=decoder,
        workers=workers,
        seed=ctx.seed,
        rank=rank,
        world=world,
        memory_format=memory_format(ctx),
        cpu_share=ctx.settings.get("data_cpu_share", "auto") if decoder == "nvjpeg" else 0.0,
        decode_threads=int(ctx.settings.get("data_decode_threads") or 1) if decoder == "nvjpeg" else 1,
        kernel=str(ctx.settings.get("augment_kernel") or "torch") if where == "cuda" else "torch",
    )
    train = DeviceImageLoader(tree.root, tree.train, options, train=True)
    val = DeviceImageLoader(tree.root, tree.val, options, train=False)
    return train, val


def train_batches(train: Any, epoch: int) -> Iterable[Any]:
    """One epoch of any of the executor's training loaders."""
    if isinstance(train, (TensorBatches, DeviceImageLoader)):
        return train.epoch(epoch)
    set_epoch = getattr(getattr(train, "sampler", None), "set_epoch", None)
    if set_epoch is not None:
        set_epoch(epoch)
    return train  # type: ignore[no-any-return]


def eval_batches(val: Any) -> Iterable[Any]:
    """The whole evaluation split of any of the executor's evaluation loaders, in order."""
    if isinstance(val, TensorBatches):
        return val.epoch(0, shuffle=False)
    if isinstance(val, DeviceImageLoader):
        return val.epoch(0)
    return val  # type: ignore[no-any-return]


def close_loaders(*loaders: Any) -> None:
    """Stop the device pipeline's threads (DataLoader workers end with their iterators); say what an automatic
    CPU share came to."""
    for loader in loaders:
        if isinstance(loader, DeviceImageLoader):
            loader.close()
            if loader.hardware is not None and loader.train and loader.region_images:
                share = loader.engine_images / loader.region_images
                print(
                    f"data path: the GPU's hardware JPEG decoder decoded the crop regions of {share:.1%} of the "
                    f"training images ({loader.share.batches} batches); libjpeg-turbo the rest",
                    file=sys.stderr,
                )
            mean = loader.share.mean
            if loader.share.auto and loader.train and mean is not None:
                print(
                    f"data path: libjpeg-turbo decoded {mean:.1%} of the training images beside nvjpeg "
                    f"(data_cpu_share=auto, {loader.share.batches} batches)",
                    file=sys.stderr,
                )
