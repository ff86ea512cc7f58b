"""CARAML's 13B GPT shape on one GPU, a few layers at a time: memory per layer and rate, and the 4-GPU FSDP plan.

The full 13B shape (hidden 5120, 40 layers, 32 heads, sequence 2048) needs about 16 bytes per
parameter for fp32 weights, gradients and AdamW's two moments (about 200 GiB): more than one H200.
This script trains the same blocks as `specbench execute llm-gpt --set model=13B` (the executor's
build_model / build_optimizer / output_loss: fp32 weights under bf16 autocast, fused AdamW, cuDNN
attention, random tokens) with 2, 4 and 8 of the 40 layers, with and without activation
checkpointing, at micro-batches 1, 2 and 4, and measures peak memory and the step time. From the
per-layer differences it plans the full model under FSDP2 on 4 GPUs (weights, gradients and
optimizer state sharded 4 ways; activations per GPU), and gives the model TFLOP/s per GPU the
blocks reach on one GPU (an upper bound for 4 GPUs: no communication).

    python benchmarks/llm_13b_memory_plan.py --out benchmarks/results/llm_13b_memory_plan_h200.json
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
from gpu_env import environment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specbench.accounting.flops import GptShape, gpt_train_flops_per_token
from specbench.workloads.llm_gpt.model import build_model, build_optimizer, output_loss
from specbench.workloads.llm_gpt.plan import Plan

HIDDEN, LAYERS, HEADS, SEQUENCE, VOCAB, PADDED = 5120, 40, 32, 2048, 50257, 50304
FLOPS_PER_TOKEN_13B = 82090567680  # specs/llm-gpt.yaml, variant 13B (model FLOPs, no recompute credit)
GPUS = 4
GIB = 2**30


def model_flops_per_token(layers: int) -> float:
    """The spec's 13B count (specbench.accounting.flops) for a model of `layers` of its blocks."""
    return gpt_train_flops_per_token(GptShape(HIDDEN, layers, HEADS, SEQUENCE, VOCAB))


def plan(layers: int, micro: int, checkpointing: bool) -> Plan:
    return Plan(
        variant="13B",
        shape=GptShape(hidden=HIDDEN, layers=layers, heads=HEADS, sequence=SEQUENCE, vocab=VOCAB),
        global_batch=micro,
        micro_batch=micro,
        accumulation=1,
        precision="bf16",
        attention="cudnn",
        compile_mode="none",
        checkpointing=checkpointing,
        fused_optimizer=True,
        padded_vocab=PADDED,
    )


def measure(layers: int, micro: int, checkpointing: bool, steps: int = 6) -> dict[str, Any]:
    """Peak memory and median step time of `steps` optimizer steps after 2 warm-up steps."""
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    p = plan(layers, micro, checkpointing)
    model = build_model(p, {"dropout": 0.1}, "cuda")
    optimizer = build_optimizer(model, {}, p)
    static = torch.cuda.memory_allocated()
    tokens = torch.randint(0, VOCAB, (micro, SEQUENCE + 1), device="cuda")
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    times = []
    try:
        for step in range(steps + 2):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                hidden = model.transformer(input_ids=inputs, use_cache=False).last_hidden_state
                loss = output_loss(model.lm_head, hidden, targets, VOCAB)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            if step >= 2:
                times.append(time.perf_counter() - t0)
        oom = False
    except torch.OutOfMemoryError:
        oom = True
    peak = torch.cuda.max_memory_allocated()
    del model, optimizer
    step_s = sorted(times)[len(times) // 2] if times else None
    tokens_per_s = micro * SEQUENCE / step_s if step_s else None
    out = {
        "layers": layers,
        "micro_batch": micro,
        "activation_checkpointing": checkpointing,
        "oom": oom,
        "model_and_optimizer_init_bytes": static,
        "peak_bytes": peak,
        "step_s_median": step_s,
        "tokens_per_s": tokens_per_s,
        "model_tflops": model_flops_per_token(layers) * tokens_per_s / 1e12 if tokens_per_s else None,
    }
    return out


def fit(rows: list[dict[str, Any]], micro: int, checkpointing: bool) -> dict[str, Any] | None:
    """Per-layer and fixed peak memory and step time from the runs at 2..8 layers (least squares on layers)."""
    pts = [
        r for r in rows if r["micro_batch"] == micro and r["activation_checkpointing"] == checkpointing and not r["oom"]
    ]
    if len(pts) < 2:
        return None

    def line(key: str) -> tuple[float, float]:
        xs = [r["layers"] for r in pts]
        ys = [r[key] for r in pts]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
        return slope, my - slope * mx

    peak_per_layer, peak_fixed = line("peak_bytes")
    time_per_layer, time_fixed = line("step_s_median")
    params_per_layer = 12 * HIDDEN**2 + 13 * HIDDEN
    state_per_layer = 16 * params_per_layer  # fp32 weight, gradient, two AdamW moments
    embedding_state = 16 * (PADDED * HIDDEN + SEQUENCE * HIDDEN)
    activations_per_layer = peak_per_layer - state_per_layer
    gather = 2 * 2 * params_per_layer  # FSDP2 all-gathers bf16 weights of the block in use and the next one
    per_gpu = (LAYERS * state_per_layer + embedding_state) / GPUS + LAYERS * activations_per_layer + gather
    per_gpu += peak_fixed - embedding_state  # logits, loss and workspace at this micro-batch (not sharded)
    step_40 = time_fixed + LAYERS * time_per_layer
    return {
        "micro_batch": micro,
        "activation_checkpointing": checkpointing,
        "peak_bytes_per_layer": peak_per_layer,
        "state_bytes_per_layer": state_per_layer,
        "activation_bytes_per_layer": activations_per_layer,
        "fixed_peak_bytes": peak_fixed,
        "planned_bytes_per_gpu_fsdp4_40_layers": per_gpu,
        "planned_gib_per_gpu_fsdp4_40_layers": per_gpu / GIB,
        "step_s_per_layer": time_per_layer,
        "step_s_40_layers_one_gpu_compute": step_40,
        "model_tflops_per_gpu_compute_bound": FLOPS_PER_TOKEN_13B * micro * SEQUENCE / step_40 / 1e12,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--micro", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    result: dict[str, Any] = {
        "environment": environment(command=" ".join(["python", *sys.argv])),
        "runs": [],
        "plans": [],
    }
    capacity = torch.cuda.get_device_properties(0).total_memory
    result["device_memory_bytes"] = capacity
    for checkpointing in (False, True):
        for micro in args.micro:
            for layers in args.layers:
                row = measure(layers, micro, checkpointing)
                result["runs"].append(row)
                print(
                    f"layers {layers} micro {micro} ckpt {checkpointing}: peak {row['peak_bytes'] / GIB:.1f} GiB, "
                    f"step {row['step_s_median'] or float('nan'):.3f} s, {row['model_tflops'] or float('nan'):.0f} TFLOP/s"
                    + (" OOM" if row["oom"] else ""),
                    flush=True,
                )
                args.out.write_text(json.dumps(result, indent=2) + "\n")
            planned = fit(result["runs"], micro, checkpointing)
            if planned is not None:
                planned["fits_in_gib"] = capacity / GIB
                planned["fits"] = planned["planned_bytes_per_gpu_fsdp4_40_layers"] < 0.95 * capacity
                result["plans"].append(planned)
                print(
                    f"  plan 13B/FSDP x{GPUS}, micro {micro}, ckpt {checkpointing}: "
                    f"{planned['planned_gib_per_gpu_fsdp4_40_layers']:.1f} GiB per GPU (fits: {planned['fits']}), "
                    f"compute-bound {planned['model_tflops_per_gpu_compute_bound']:.0f} TFLOP/s per GPU",
                    flush=True,
                )
                args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
