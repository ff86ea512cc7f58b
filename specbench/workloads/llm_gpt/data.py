"""The llm-gpt executor's data: random tokens on the device, a memory-mapped token file, or the generated text.

Random tokens serve the official throughput profile and --synthetic; a token file comes with --data
(see specbench.data.tokens); the smoke profile trains on the project's generated text to a loss target.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specbench.data import tokens as tokdata
from specbench.errors import UsageError
from specbench.run.context import RunContext
from specbench.spec.resolve import ResolvedSpec
from specbench.workloads.llm_gpt.plan import Plan

RANDOM_DATA_NAME = "synthetic-tokens"

Batch = tuple[torch.Tensor, torch.Tensor]


def to_device(window: np.ndarray, device: str) -> Batch:
    """A micro-batch of token windows on the device, as (inputs, next-token targets)."""
    batch = torch.from_numpy(window)
    if device == "cuda":
        batch = batch.pin_memory().to(device, non_blocking=True)
    return batch[:, :-1], batch[:, 1:]


def random_batches(plan: Plan, device: str, seed: int) -> Iterator[Batch]:
    """One fixed micro-batch of uniform random tokens on the device, repeated (CARAML's synthetic data)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    window = torch.randint(
        0, plan.shape.vocab, (plan.micro_batch, plan.shape.sequence + 1), device=device, generator=gen
    )
    inputs, targets = window[:, :-1].contiguous(), window[:, 1:].contiguous()
    while True:
        yield inputs, targets


@dataclass
class TokenData:
    """Training and held-out windows over token arrays, with the facts submission.yaml records."""

    train: tokdata.Windows
    eval: tokdata.Windows
    facts: dict[str, Any]


def data_kind(resolved: ResolvedSpec, data: Path | None, synthetic: bool) -> str:
    """'file' (--data), 'random' (--synthetic or a random-token spec) or 'generated'; refuses a real dataset without --data."""
    if data is not None:
        return "file"
    if synthetic or resolved.spec.workload.dataset.name == RANDOM_DATA_NAME:
        return "random"
    if resolved.spec.workload.dataset.name == tokdata.GENERATED_NAME:
        return "generated"
    raise UsageError(
        f"spec {resolved.spec.id!r} at profile {resolved.profile!r} trains on {resolved.spec.workload.dataset.name}: "
        "give its token file with --data PATH (see docs/llm.md), or --synthetic for random tokens"
    )


def load_tokens(resolved: ResolvedSpec, data: Path | None, sequence: int, vocab: int) -> TokenData:
    """The token file given with --data, or the generated text at the spec's sample counts."""
    dataset = resolved.spec.workload.dataset
    if data is None:
        train, held_out = tokdata.generated_splits(dataset.train_samples, dataset.eval_samples)
        facts = {
            "name": dataset.name,
            "generator": "specbench.data.tokens.generate_text",
            "vocab_size": tokdata.GENERATED_VOCAB,
            "train_samples": len(train),
            "eval_samples": len(held_out),
            "sha256": tokdata.arrays_sha256(train, held_out),
            "synthetic": True,
        }
        return TokenData(tokdata.Windows(train, sequence), tokdata.Windows(held_out, sequence), facts)
    file = tokdata.open_token_file(data)
    digest, largest = tokdata.scan(file)
    if largest >= min(vocab, file.vocab_size):
        raise UsageError(
            f"--data {data}: token id {largest} is outside the vocabulary (file: {file.vocab_size}, model: {vocab})"
        )
    facts = {
        "name": file.source or file.path.parent.name,
        "path": str(file.path.resolve()),
        "format": f"{tokdata.FORMAT} v{tokdata.FORMAT_VERSION}",
        "dtype": file.dtype,
        "vocab_size": file.vocab_size,
        "train_samples": file.train_tokens,
        "eval_samples": file.eval_tokens,
        "sha256": digest,
        "synthetic": False,
    }
    return TokenData(tokdata.Windows(file.train, sequence), tokdata.Windows(file.eval, sequence), facts)


def random_facts(plan: Plan) -> dict[str, Any]:
    """What submission.yaml records of random tokens."""
    return {"name": RANDOM_DATA_NAME, "generator": "torch.randint", "vocab_size": plan.shape.vocab, "synthetic": True}


@dataclass
class RunData:
    """One run's training micro-batches (this process's share), held-out windows and training-set size in tokens."""

    batches: Iterator[Batch]
    held_out: tokdata.Windows | None
    train_tokens: int


def run_data(ctx: RunContext, plan: Plan) -> RunData:
    """Random tokens on the device, or the token windows shuffled by the run's seed and split over the processes."""
    spec = ctx.resolved.spec
    if data_kind(ctx.resolved, ctx.data, ctx.synthetic) == "random":
        batches = random_batches(plan, ctx.device, ctx.seed + ctx.dist.rank)
        return RunData(batches, None, spec.workload.dataset.train_samples)
    tokens = load_tokens(ctx.resolved, ctx.data, plan.shape.sequence, plan.shape.vocab)
    windows = tokens.train.shuffled(plan.micro_batch, ctx.seed, ctx.dist.rank, ctx.dist.world)
    held_out = tokens.eval if spec.quality is not None and tokens.eval.count else None
    return RunData((to_device(w, ctx.device) for w in windows), held_out, int(tokens.facts["train_samples"]))
