"""ResNet-50 on ImageNet-format JPEGs against the same executor on synthetic data, in one call.

Generates an ImageNet-format tree on this machine (specbench.data.jpegtree: ImageNet's typical sizes,
about 96 KB per JPEG, flat val/ with LOC_val_solution.csv, labels independent of the pixels so that the
run trains its whole budget), then measures (a) the loaders alone: the GPU pipeline (read, read + nvjpeg,
everything) and the CPU path (PIL in DataLoader workers); (b) `specbench execute caraml-resnet50` on
synthetic tensors; (c) `specbench execute` of the resnet50 spec, its problem scaled to the tree, with
`--data`. Prints img/s, J/img and real / synthetic (training epochs after the first, energy from the
run's own NVML trace over those epochs), and writes a JSON with date, device, driver, torch and command.

    python benchmarks/imagenet_input.py --tree /tmp/imagenet-tree --out results.json --work /tmp/runs
    python benchmarks/imagenet_input.py --smoke --tree /tmp/t --out /tmp/r.json --work /tmp/w   (CPU, minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")  # as `specbench execute` sets it (specbench/cli.py)
import numpy as np
import torch
import torchvision
from ruamel.yaml import YAML

from specbench.data import cropkernel
from specbench.data.imagedata import imagenet_loaders
from specbench.data.imagenet import scan_tree
from specbench.data.jpegloader import DeviceImageLoader, LoaderOptions
from specbench.data.jpegtree import TreeSpec, default_processes, write_tree
from specbench.power.trace import read_trace
from specbench.spec import builtin
from specbench.workloads.conv import workers_per_process
from specbench.workloads.resnet50.datapath import DATA_OPTIONS, crop_geometry

FULL = TreeSpec(classes=128, train_per_class=200, val_per_class=4, flat_val=True, learnable=False)
SMOKE = TreeSpec(classes=4, train_per_class=16, val_per_class=4, widths=(40, 56), heights=(32, 44), flat_val=True)
SETS = ["precision=bf16", "memory_format=channels_last"]


def ensure_tree(root: Path, spec: TreeSpec = FULL) -> tuple[Any, dict[str, Any] | None]:
    """The tree at `root`, written first where it is missing; and what writing it made (None: it was there)."""
    made = write_tree(root, spec, default_processes()) if not (root / "train").is_dir() else None
    return scan_tree(root), made


def derived_spec(path: Path, tree: Any, epochs: int, smoke: bool) -> Path:
    """The built-in resnet50 spec with its problem scaled to the tree (counts, budget); all else as shipped."""
    yaml = YAML(typ="safe")
    spec = yaml.load(builtin.find_spec("resnet50").read_text())
    spec.update(id="resnet50-jpeg-tree", extends="hpcai500", title="ResNet-50 on a generated ImageNet-format tree")
    dataset = spec["workload"]["dataset"]
    dataset.update(name="specbench-jpeg-tree", train_samples=len(tree.train), eval_samples=len(tree.val))
    spec["budget"]["epochs"] = epochs
    spec["measurement"]["runs"] = {"count": 1, "aggregation": "mean", "max_failed": 0}
    if smoke:
        dataset.update(sample_shape=[3, 32, 32], num_classes=10)
        spec["workload"]["flops_per_sample"] = 495771648
        spec["hyperparameters"].update(global_batch_size=16, base_learning_rate=0.016)
        spec["measurement"]["power"].update(required=False, min_samples=1)
    spec["profiles"] = {k: v for k, v in spec["profiles"].items() if k in ("official", "smoke")}
    spec["profiles"]["smoke"] = {"description": "the same", "ranked": False}
    with path.open("w") as handle:
        yaml.dump(spec, handle)
    return path


def execute(argv: list[str], ok: tuple[int, ...] = (0,)) -> tuple[list[str], list[str]]:
    """Run `specbench execute`; the command and its `data path:` lines (what an automatic CPU share came to)."""
    command = [sys.executable, "-m", "specbench.cli", "execute", *argv]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode not in ok:
        raise SystemExit(f"specbench execute failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return command, [line for line in proc.stderr.splitlines() if line.startswith("data path:")]


def rate(loader: Any, batches: int, device: str) -> float:
    """Images per second over `batches` batches, after two warm-up batches."""
    iterator = iter(loader.epoch(1) if isinstance(loader, DeviceImageLoader) else loader)
    for _ in range(2):
        next(iterator)
    if device == "cuda":
        torch.cuda.synchronize()
    t0, seen = time.perf_counter(), 0
    for _ in range(batches):
        seen += len(next(iterator)[1])
    if device == "cuda":
        torch.cuda.synchronize()
    return seen / (time.perf_counter() - t0)


def loaders_alone(tree: Any, batch: int, device: str, smoke: bool) -> dict[str, Any]:
    """The GPU pipeline in stages (read; read + decode; all) and the CPU path, each without training."""
    geometry = crop_geometry([3, 32, 32] if smoke else [3, 224, 224])
    workers = workers_per_process()
    decoder = "nvjpeg" if device == "cuda" else "libjpeg"
    common: dict[str, Any] = {"batch_size": batch, "geometry": geometry, "workers": workers, "seed": 1}
    kernel = "triton" if cropkernel.available(device) else "torch"  # as `specbench execute` picks them
    if decoder == "nvjpeg":
        common.update(kernel=kernel, decode_threads=int(DATA_OPTIONS["data_decode_threads"].default(device) or 1))
    out: dict[str, Any] = {"workers": workers, "decoder": decoder, "kernel": kernel}
    steps = min(len(tree.train) // batch - 3, 60)
    options = LoaderOptions(device=torch.device(device), decoder=decoder, **common)
    pipe = DeviceImageLoader(tree.root, tree.train, options, train=True)
    keep = {"read": ("decode", "assemble"), "read+decode": ("assemble",), "all": ()}
    out["hardware decoder"] = pipe.hardware is not None  # then nvjpeg decodes crop regions, in no nvjpeg.decode
    if decoder != "nvjpeg":
        del keep["read+decode"]
    if pipe.hardware is not None:
        del keep["read"]
    for name, patched in keep.items():
        if "decode" in patched:
            pipe.nvjpeg.decode = lambda index, data: data  # type: ignore[method-assign]
        if "assemble" in patched:
            pipe.assemble = lambda index, images, *_: (images, torch.zeros(len(index)), None)  # type: ignore[method-assign]
        out["pipeline img/s" if name == "all" else f"pipeline {name} img/s"] = rate(pipe, steps, device)
        pipe.close_producer()
        for attribute in patched:
            delattr(pipe.nvjpeg if attribute == "decode" else pipe, attribute)
    pipe.close()
    if decoder == "nvjpeg":
        auto_options = LoaderOptions(device=torch.device(device), decoder=decoder, cpu_share="auto", **common)
        auto = DeviceImageLoader(tree.root, tree.train, auto_options, train=True)
        out["pipeline data_cpu_share=auto img/s"] = rate(auto, steps, device)
        out["pipeline data_cpu_share=auto mean share"] = auto.share.mean
        auto.close()
        if kernel != "torch":
            torch_options = LoaderOptions(device=torch.device(device), decoder=decoder, **{**common, "kernel": "torch"})
            other = DeviceImageLoader(tree.root, tree.train, torch_options, train=True)
            out["pipeline augment_kernel=torch img/s"] = rate(other, steps, device)
            other.close()
    train, _ = imagenet_loaders(tree, geometry.size, geometry.resize, batch, workers, 1, pin=device == "cuda")
    out["cpu path (pil) img/s"] = rate(train, min(steps, 30), "cpu")
    return out


def epoch_windows(log: Path) -> list[tuple[int, float, float]]:
    events = [json.loads(line.split(" ", 1)[1]) for line in log.read_text().splitlines() if line.startswith(":::MLLOG")]
    starts = {e["metadata"]["epoch_num"]: e["time_ms"] / 1000 for e in events if e["key"] == "epoch_start"}
    stops = {e["metadata"]["epoch_num"]: e["time_ms"] / 1000 for e in events if e["key"] == "epoch_stop"}
    return [(n, starts[n], stops[n]) for n in sorted(stops)]


def energy_between(run_dir: Path, t0: float, t1: float) -> float | None:
    """Joules the accelerators' energy counters advanced between two wall-clock times."""
    if not (run_dir / "power.json").is_file():
        return None
    trace = read_trace(run_dir)
    total = 0.0
    for device in trace.devices:
        rows = [
            (s.t_wall_s, s.energy_counter_j) for s in trace.samples_of(device.key) if s.energy_counter_j is not None
        ]
        if len(rows) < 2:
            return None
        times, counts = np.array(rows).T
        total += float(np.interp(t1, times, counts) - np.interp(t0, times, counts))
    return total


def batch_sets(batch: int) -> list[str]:
    """The global batch and the learning rate that resnet50's own scaling rule (`scaled_with`) gives it."""
    rule = YAML(typ="safe").load(builtin.find_spec("resnet50").read_text())["rules"]["workload"]["base_learning_rate"]
    rate = float(rule["reference"]) * batch / float(rule["reference_param"])
    return [f"global_batch_size={batch}", f"base_learning_rate={rate:g}"]


def real_run(
    work: Path, tree: Any, epochs: int, device: str, smoke: bool, compile_mode: str, batch: int, extra: list[str]
) -> dict[str, Any]:
    spec = derived_spec(work / "resnet50-jpeg-tree.yaml", tree, epochs, smoke)
    power = ["--power", "none"] if smoke else ["--power", "nvml"]
    sets = [*([] if smoke else [*SETS, f"compile_mode={compile_mode}", *batch_sets(batch)]), *extra]
    out = work / "real" / "specbench" / device
    argv = [str(spec), "--data", str(tree.root), "--device", device, *power, "--runs", "1", "--out", str(out)]
    command, notes = execute([*argv, *(a for s in sets for a in ("--set", s))], ok=(0, 1))
    run_dir = out / "resnet50-jpeg-tree" / "run_1"
    result = json.loads((run_dir / "result.json").read_text())
    windows = [w for w in epoch_windows(run_dir / "log.txt") if w[0] >= 2]
    seconds = sum(t1 - t0 for _, t0, t1 in windows)
    samples = result["samples_processed"] / max(1, len(epoch_windows(run_dir / "log.txt"))) * len(windows)
    energies = [energy_between(run_dir, t0, t1) for _, t0, t1 in windows]
    energy = sum(e for e in energies if e is not None) if energies and None not in energies else None
    return {
        "command": " ".join(command),
        "data_path": notes,
        "settings": result["settings"],
        "epochs_timed": [w[0] for w in windows],
        "images_per_s": samples / seconds,
        "j_per_image": energy / samples if energy is not None else None,
        "mean_power_w": energy / seconds if energy is not None else None,
        "whole_run_images_per_s": result["samples_processed"] / result["duration_s"],
        "whole_run_j_per_image": result["power"]["energy_j"] / result["samples_processed"]
        if result["power"]["measured"]
        else None,
    }


def synthetic_run(
    work: Path, device: str, smoke: bool, compile_mode: str, batch: int, extra: list[str]
) -> dict[str, Any]:
    out = work / "synthetic" / "specbench" / device
    power = ["--power", "none", "--profile", "smoke"] if smoke else ["--power", "nvml"]
    sets = [*([] if smoke else [*SETS, f"compile_mode={compile_mode}", f"global_batch_size={batch}"]), *extra]
    argv = ["caraml-resnet50", "--device", device, *power, "--runs", "1", "--out", str(out)]
    command, _ = execute([*argv, *(a for s in sets for a in ("--set", s))])
    result = json.loads((out / "caraml-resnet50" / "run_1" / "result.json").read_text())
    measured = result["power"]["measured"]
    return {
        "command": " ".join(command),
        "images_per_s": result["throughput"]["samples_per_s"],
        "j_per_image": result["power"]["energy_j"] / result["samples_processed"] if measured else None,
        "mean_power_w": result["power"]["mean_power_w"] if measured else None,
    }


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, required=True, help="where the JPEG tree is (written if missing)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the results")
    parser.add_argument(
        "--work", type=Path, required=True, help="folder for the spec and the submissions (a new subfolder per call)"
    )
    parser.add_argument("--epochs", type=int, default=4, help="training budget of the real run (epochs)")
    parser.add_argument("--smoke", action="store_true", help="a tiny tree and the CPU, to check the script")
    parser.add_argument("--no-probe", dest="probe", action="store_false", help="skip the in-process probe")
    parser.add_argument(
        "--compile-mode",
        default="reduce-overhead",
        choices=("default", "reduce-overhead"),
        help="torch.compile mode of both executor runs (reduce-overhead: CUDA graphs, so that the training "
        "thread launches a step in a few calls and the pipeline's threads cannot delay it)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=256,
        help="global batch of both executor runs (the spec's scaling rule sets the rate)",
    )
    parser.add_argument(
        "--set",
        dest="both_set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more --set for both executor runs (e.g. kernel_tuning=coordinate-descent); repeatable",
    )
    parser.add_argument(
        "--real-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more --set for the --data run only (e.g. data_cpu_share=0.45); repeatable",
    )
    args = parser.parse_args()
    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU (or --smoke)")
    tree_spec = SMOKE if args.smoke else FULL
    report: dict[str, Any] = {
        "benchmark": "imagenet_input",
        "command": " ".join([sys.executable, *sys.argv]),
        "environment": _environment(device),
    }

    def save(**parts: Any) -> None:
        """Write what is measured so far, so that a run cut short still leaves its numbers."""
        report.update(parts)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")

    t0 = time.perf_counter()
    tree, made = ensure_tree(args.tree, tree_spec)
    generated = {"spec": tree_spec.__dict__, "written": made, "seconds": time.perf_counter() - t0}
    save(tree={**generated, "val_layout": tree.val_layout})
    # a folder of this call's own: `specbench execute` resumes a submission folder, and would hand back the
    # results of an earlier call that used the same --work
    work = args.work / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work.mkdir(parents=True, exist_ok=False)
    report["work"] = str(work)
    alone = loaders_alone(tree, 16 if args.smoke else 256, device, args.smoke)
    if not args.smoke and args.probe:
        from imagenet_probe import probe

        alone["in-process probe"] = probe(tree, 256, sorted({8, workers_per_process()}), [2, 4])
    _show(alone)
    save(loaders_alone=alone)
    synthetic = synthetic_run(work, device, args.smoke, args.compile_mode, args.batch, args.both_set)
    save(synthetic=synthetic)
    epochs = 2 if args.smoke else args.epochs
    real = real_run(
        work, tree, epochs, device, args.smoke, args.compile_mode, args.batch, [*args.both_set, *args.real_set]
    )
    ratio = real["images_per_s"] / synthetic["images_per_s"]
    for name, row in (("synthetic (caraml-resnet50)", synthetic), ("real --data (epochs 2..)", real)):
        j = row["j_per_image"]
        print(f"{name:<36} {row['images_per_s']:>10,.1f} img/s  {j if j is None else f'{j:.4f}'} J/img", flush=True)
    print(f"ratio real / synthetic = {ratio:.3f}")
    energy = (
        real["j_per_image"] / synthetic["j_per_image"] if real["j_per_image"] and synthetic["j_per_image"] else None
    )
    save(real=real, ratio_real_over_synthetic=ratio, energy_ratio_real_over_synthetic=energy)


def _show(rows: dict[str, Any], indent: str = "") -> None:
    for name, value in rows.items():
        if isinstance(value, dict):
            _show(value, indent + "  ")
        elif isinstance(value, float):
            print(f"{indent}{name:<44} {value:>10,.3f}", flush=True)
        else:
            print(f"{indent}{name:<44} {value!s:>10}", flush=True)


def _environment(device: str) -> dict[str, Any]:
    if device == "cuda":
        from gpu_env import environment

        return environment(  # type: ignore[no-any-return]
            torchvision=torchvision.__version__,
            physical_cores=_physical_cores(),
            cuda_device_max_connections=os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"),
        )
    return {"device": "cpu", "torch": torch.__version__, "torchvision": torchvision.__version__}


def _physical_cores() -> int | None:
    """Distinct (socket, core) pairs of /proc/cpuinfo: hyperthreads share a core's decoder throughput."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    cores = set()
    for block in text.split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if "core id" in fields:
            cores.add((fields.get("physical id"), fields["core id"]))
    return len(cores) or None


if __name__ == "__main__":
    main()
