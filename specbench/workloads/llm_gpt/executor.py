"""The LLM executor: CARAML's GPT training benchmark with a transformers GPT-2-style decoder.

The model is transformers' GPT2LMHeadModel built from the spec variant's shape with random
initialisation (nothing is downloaded), fp32 weights under bf16/fp16 autocast or fp32, trained with
AdamW on next-token prediction. Data: random tokens on the device (the official throughput
profile, or --synthetic), a memory-mapped token file (--data, see specbench.data.tokens), or
the project's generated text (the smoke profile, which trains to a loss target).

Model FLOPs are the spec's (6 x parameters + attention per token, no credit for recomputation or
vocabulary padding); the matrix-product FLOPs actually executed are logged separately as
`hardware_flops_per_sample`. A sample is a token.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from specbench.accounting.flops import GptShape
from specbench.data import tokens as tokdata
from specbench.errors import UsageError
from specbench.run.base import RunOutcome
from specbench.run.config import Option, RunConfig
from specbench.run.context import RunContext
from specbench.run.distributed import from_env as dist_from_env
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import ThroughputResult
from specbench.workloads.conv import set_learning_rate

OPTIONS = {
    "precision": Option(
        "precision",
        "parallelism_precision",
        "bf16 or fp16 autocast over fp32 weights, or fp32 throughout",
        ("bf16", "fp16", "fp32"),
        "fp32",
        "bf16",
    ),
    "attention": Option(
        "attention",
        "parallelism_precision",
        "attention kernel: sdpa (PyTorch chooses), flash (flash-attn if installed, else SDPA's flash kernel), "
        "cudnn (SDPA's cuDNN kernel), eager (matrix products and softmax)",
        ("sdpa", "flash", "cudnn", "eager"),
        "sdpa",
        "sdpa",
    ),
    "activation_checkpointing": Option(
        "activation_checkpointing",
        "parallelism_precision",
        "recompute each block's activations in backward (costs FLOPs that model FLOPs do not credit)",
        (False, True),
        False,
        False,
    ),
    "micro_batch_size": Option(
        "micro_batch_size",
        "parallelism_precision",
        "sequences per forward/backward; gradient accumulation = global_batch_size / micro_batch_size",
    ),
    "vocab_padding": Option(
        "vocab_padding",
        "parallelism_precision",
        "pad the embedding and output rows to a multiple of this for aligned matrix products (Megatron's "
        "make-vocab-size-divisible-by); padded logits are left out of the loss, so the model is unchanged",
        None,
        1,
        128,
    ),
    "parallelism": Option(
        "parallelism",
        "parallelism_precision",
        "across processes: ddp (weights replicated, gradients all-reduced) or fsdp (weights, gradients and "
        "optimizer state sharded with FSDP2's fully_shard per transformer block)",
        ("ddp", "fsdp"),
        "ddp",
        "ddp",
    ),
    "compile_mode": Option(
        "compile_mode",
        "framework",
        "torch.compile of each transformer block and of the output layer with the loss",
        ("none", "default", "max-autotune-no-cudagraphs"),
        "none",
        "default",
    ),
    "fused_optimizer": Option(
        "fused_optimizer",
        "framework",
        "AdamW as one fused kernel (else the foreach kernels)",
        (True, False),
        False,
        True,
    ),
}
DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-4,
    "min_learning_rate": 1e-5,
    "lr_warmup_steps": 0,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_eps": 1e-8,
    "weight_decay": 0.1,
    "grad_clip_norm": 1.0,
    "dropout": 0.1,
    "init_std": 0.02,
}
COMPILE_BACKEND = "inductor"
RANDOM_DATA_NAME = "synthetic-tokens"


@dataclass(frozen=True)
class Plan:
    """Everything a run's configuration decides, checked once."""

    variant: str
    shape: GptShape
    global_batch: int
    micro_batch: int
    accumulation: int
    precision: str
    attention: str
    compile_mode: str
    checkpointing: bool
    fused_optimizer: bool
    padded_vocab: int
    world: int = 1
    parallelism: str = "ddp"

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.shape.sequence


def _value(config: RunConfig, name: str, device: str) -> Any:
    """A setting wherever the configuration holds it: an executor option, or a spec hyperparameter of that name."""
    if name in config.settings:
        return config.settings[name]
    if name in config.hyperparameters:
        return config.hyperparameters[name]
    return OPTIONS[name].default(device)


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{what} must be a positive integer, found {value!r}")
    return value


def make_plan(resolved: ResolvedSpec, config: RunConfig, device: str) -> Plan:
    """Check the configuration (shape, batch split, options) and return what the run will do."""
    workload = resolved.spec.workload
    variant = str(config.hyperparameters.get("model"))
    if variant not in workload.variants:
        known = ", ".join(workload.variants)
        raise UsageError(f"--set model={variant}: spec {resolved.spec.id!r} has the variants {known}")
    params = workload.variants[variant].params
    try:
        shape = GptShape(
            hidden=int(params["hidden"]),
            layers=int(params["layers"]),
            heads=int(params["heads"]),
            sequence=int(params["sequence_length"]),
            vocab=int(params["vocab"]),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise UsageError(
            f"variant {variant!r} needs integer params hidden, layers, heads, sequence_length, vocab; found {params}"
        ) from err
    if shape.hidden % shape.heads:
        raise UsageError(f"variant {variant!r}: hidden {shape.hidden} is not a multiple of heads {shape.heads}")
    sequence = config.hyperparameters.get("sequence_length", shape.sequence)
    if sequence != shape.sequence:
        raise UsageError(
            f"sequence_length {sequence} differs from variant {variant!r}'s {shape.sequence} (its FLOPs assume that)"
        )
    global_batch = _positive_int(config.hyperparameters.get("global_batch_size"), "global_batch_size")
    micro = _value(config, "micro_batch_size", device)
    micro = global_batch if micro is None else _positive_int(micro, "micro_batch_size")
    world = dist_from_env().world
    if global_batch % (micro * world):
        raise UsageError(
            f"global_batch_size {global_batch} is not a multiple of micro_batch_size {micro} x {world} processes; "
            "global_batch_size = micro_batch_size x gradient accumulation steps x processes"
        )
    choices: dict[str, Any] = {}
    for name in (
        "precision",
        "attention",
        "compile_mode",
        "activation_checkpointing",
        "fused_optimizer",
        "parallelism",
    ):
        value = _value(config, name, device)
        allowed = OPTIONS[name].choices or ()
        if value not in allowed or type(value) is not type(allowed[0]):
            raise UsageError(f"{name}={value!r}: expected one of {', '.join(map(str, allowed))}")
        choices[name] = value
    if choices["attention"] in ("flash", "cudnn") and device != "cuda":
        raise UsageError(
            f"attention={choices['attention']} needs a CUDA GPU; on the CPU use sdpa (it picks its flash kernel "
            "where that applies) or eager"
        )
    padding = _positive_int(_value(config, "vocab_padding", device), "vocab_padding")
    return Plan(
        variant=variant,
        shape=shape,
        global_batch=global_batch,
        micro_batch=micro,
        accumulation=global_batch // (micro * world),
        precision=choices["precision"],
        attention=choices["attention"],
        compile_mode=choices["compile_mode"],
        checkpointing=choices["activation_checkpointing"],
        fused_optimizer=choices["fused_optimizer"],
        padded_vocab=-(-shape.vocab // padding) * padding,
        world=world,
        parallelism=choices["parallelism"],
    )


def hardware_flops_per_token(plan: Plan) -> float:
    """Matrix-product FLOPs executed per token (as torch.utils.flop_counter counts them), labelled hardware.

    Unlike model FLOPs: the padded vocabulary counts, the recomputed block forward under activation
    checkpointing counts, and biases and norms (not matrix products) do not. The recompute stops
    early (torch.utils.checkpoint's default), before the MLP's output projection, whose result
    backward does not need.
    """
    s = plan.shape
    h2 = s.hidden * s.hidden
    flops = 6.0 * (s.layers * 12 * h2 + plan.padded_vocab * s.hidden) + 12.0 * s.layers * s.hidden * s.sequence
    if plan.checkpointing:
        flops += s.layers * (2.0 * 8 * h2 + 4.0 * s.hidden * s.sequence)
    return flops


# model, optimizer, kernels


def attention_kernel(attention: str) -> tuple[str, str]:
    """(transformers attn_implementation, what runs) for an attention choice."""
    if attention == "eager":
        return "eager", "eager (matmul + softmax)"
    if attention == "flash" and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2", "flash_attn package"
    if attention in ("flash", "cudnn"):
        return "sdpa", f"sdpa restricted to its {attention} kernel"
    return "sdpa", "sdpa (PyTorch chooses the kernel)"


def _restrict_sdpa(attention: str) -> None:
    """Enable only the chosen SDPA kernel (all of them for 'sdpa'); process-wide flags, set every run."""
    only = attention if attention in ("flash", "cudnn") else None
    torch.backends.cuda.enable_flash_sdp(only in (None, "flash"))
    torch.backends.cuda.enable_mem_efficient_sdp(only is None)
    torch.backends.cuda.enable_math_sdp(only is None)
    torch.backends.cuda.enable_cudnn_sdp(only in (None, "cudnn"))


def build_model(plan: Plan, hyperparameters: dict[str, Any], device: str) -> torch.nn.Module:
    """GPT2LMHeadModel at the plan's shape, randomly initialised on `device` (no download)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    dropout = float(hyperparameters.get("dropout", DEFAULTS["dropout"]))
    implementation, _ = attention_kernel(plan.attention)
    s = plan.shape
    config = GPT2Config(  # type: ignore[call-arg]
        vocab_size=plan.padded_vocab,
        n_positions=s.sequence,
        n_embd=s.hidden,
        n_layer=s.layers,
        n_head=s.heads,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        initializer_range=float(hyperparameters.get("init_std", DEFAULTS["init_std"])),
        use_cache=False,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation=implementation,
    )
    with torch.device(device):
        model = GPT2LMHeadModel(config)
    if plan.checkpointing:
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.train()
    return model


def build_optimizer(model: torch.nn.Module, hyperparameters: dict[str, Any], plan: Plan) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices and embeddings only (Megatron's grouping)."""
    hp = {**DEFAULTS, **hyperparameters}
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    groups = [
        {"params": decay, "weight_decay": float(hp["weight_decay"])},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    kernel = {"fused": True} if plan.fused_optimizer else {"foreach": True}
    return torch.optim.AdamW(
        groups,
        lr=float(hp["learning_rate"]),
        betas=(float(hp["adam_beta1"]), float(hp["adam_beta2"])),
        eps=float(hp["adam_eps"]),
        **kernel,
    )


def output_loss(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, vocab: int) -> torch.Tensor:
    """Mean next-token cross-entropy over the real vocabulary (padded logits left out), in fp32."""
    logits = lm_head(hidden)[..., :vocab]
    return F.cross_entropy(logits.reshape(-1, vocab).float(), targets.reshape(-1))


def compile_regions(
    model: torch.nn.Module, compile_mode: str, backend: str = COMPILE_BACKEND
) -> Callable[..., torch.Tensor]:
    """Compile each transformer block in place (they share one graph) and return the compiled loss head.

    Regional compilation: a fraction of whole-model compile time, at the same speed, since the blocks
    hold all but the embedding lookups and the final norm.
    """
    if compile_mode == "none":
        return output_loss
    mode = None if compile_mode == "default" else compile_mode
    for block in model.transformer.h:  # type: ignore[union-attr]
        block.compile(mode=mode, backend=backend)
    return torch.compile(output_loss, mode=mode, backend=backend)


class LossModel(torch.nn.Module):
    """The decoder and its loss as one module, so DDP and FSDP see every forward of the training step."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor], vocab: int) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.vocab = vocab

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        model: Any = self.model
        hidden = model.transformer(input_ids=inputs, use_cache=False).last_hidden_state
        return self.loss_fn(model.lm_head, hidden, targets, self.vocab)


def data_parallel(
    plan: Plan, model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor], dist: Any, device: str
) -> torch.nn.Module:
    """DDP around the decoder and its loss, or FSDP2: fully_shard on each block, then on the whole."""
    wrapper = LossModel(model, loss_fn, plan.shape.vocab)
    if plan.parallelism == "fsdp":
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:  # torch < 2.6 keeps FSDP2 under _composable
            from torch.distributed._composable.fsdp import fully_shard  # type: ignore[no-redef]
        for block in model.transformer.h:  # type: ignore[union-attr]
            fully_shard(block)
        fully_shard(wrapper)
        return wrapper
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(wrapper, device_ids=[dist.local_rank] if device == "cuda" else None)


def _gradient_sync(state: State, last: bool) -> Any:
    """Skip the all-reduce on all but the last micro-batch of a step (DDP's no_sync, FSDP's requires_gradient_sync)."""
    wrapped = state.wrapped
    if wrapped is None:
        return contextlib.nullcontext()
    if state.plan.parallelism == "fsdp":
        wrapped.set_requires_gradient_sync(last)  # type: ignore[operator]
        return contextlib.nullcontext()
    return contextlib.nullcontext() if last else wrapped.no_sync()  # type: ignore[operator]


def learning_rate(hyperparameters: dict[str, Any], step: int, total_steps: int) -> float:
    """Linear warm-up over lr_warmup_steps, then cosine decay to min_learning_rate at total_steps."""
    hp = {**DEFAULTS, **hyperparameters}
    peak, floor, warmup = float(hp["learning_rate"]), float(hp["min_learning_rate"]), int(hp["lr_warmup_steps"])
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * progress))


# data


Batch = tuple[torch.Tensor, torch.Tensor]


def _to_device(window: np.ndarray, device: str) -> Batch:
    batch = torch.from_numpy(window)
    if device == "cuda":
        batch = batch.pin_memory().to(device, non_blocking=True)
    return batch[:, :-1], batch[:, 1:]


def _random_batches(plan: Plan, device: str, seed: int) -> Iterator[Batch]:
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


def _data_kind(resolved: ResolvedSpec, data: Path | None, synthetic: bool) -> str:
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


# training


class StepTimer:
    """Per-step device time without synchronising inside the loop: CUDA events, or the monotonic clock on CPU."""

    def __init__(self, device: str) -> None:
        self.cuda = device == "cuda"
        self.marks: list[tuple[Any, Any]] = []
        self._start: Any = None

    def _now(self) -> Any:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.monotonic()

    def start(self) -> None:
        self._start = self._now()

    def stop(self) -> None:
        self.marks.append((self._start, self._now()))

    def median_s(self) -> float | None:
        """Call after a synchronize."""
        if not self.marks:
            return None
        if self.cuda:
            return statistics.median(a.elapsed_time(b) / 1000.0 for a, b in self.marks)
        return statistics.median(b - a for a, b in self.marks)


@dataclass
class State:
    plan: Plan
    model: torch.nn.Module
    optimizer: torch.optim.AdamW
    scaler: Any
    autocast: Callable[[], Any]
    loss_fn: Callable[..., torch.Tensor]
    batches: Iterator[Batch]
    held_out: tokdata.Windows | None
    train_tokens: int
    total_steps: int
    step: int = 0
    wrapped: torch.nn.Module | None = None


def forward_loss(state: State, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    if state.wrapped is not None:
        return state.wrapped(inputs, targets)
    model: Any = state.model
    hidden = model.transformer(input_ids=inputs, use_cache=False).last_hidden_state
    return state.loss_fn(model.lm_head, hidden, targets, state.plan.shape.vocab)


def train_step(state: State, hyperparameters: dict[str, Any]) -> torch.Tensor:
    """One optimizer step over gradient-accumulation micro-batches; returns the mean loss (on the device)."""
    plan = state.plan
    set_learning_rate(state.optimizer, learning_rate(hyperparameters, state.step, state.total_steps))
    total: torch.Tensor | None = None
    for index in range(plan.accumulation):
        inputs, targets = next(state.batches)
        with _gradient_sync(state, index == plan.accumulation - 1):
            with state.autocast():
                loss = forward_loss(state, inputs, targets)
            scaled = loss / plan.accumulation
            (state.scaler.scale(scaled) if state.scaler is not None else scaled).backward()
        total = loss.detach() if total is None else total + loss.detach()
    clip = float(hyperparameters.get("grad_clip_norm", DEFAULTS["grad_clip_norm"]))
    if state.scaler is not None:
        state.scaler.unscale_(state.optimizer)
    if clip > 0:
        torch.nn.utils.clip_grad_norm_(state.model.parameters(), clip, foreach=True)
    if state.scaler is not None:
        state.scaler.step(state.optimizer)
        state.scaler.update()
    else:
        state.optimizer.step()
    state.optimizer.zero_grad(set_to_none=True)
    state.step += 1
    assert total is not None
    return total / plan.accumulation


def evaluate(state: State, device: str, limit_batches: int | None = None) -> float:
    """Mean next-token loss (nats) over the held-out windows."""
    assert state.held_out is not None
    state.model.eval()
    loss_sum, count = 0.0, 0
    with torch.no_grad(), state.autocast():
        for index, window in enumerate(state.held_out.in_order(state.plan.micro_batch)):
            if limit_batches is not None and index >= limit_batches:
                break
            inputs, targets = _to_device(window, device)
            loss_sum += float(forward_loss(state, inputs, targets)) * targets.numel()
            count += targets.numel()
    state.model.train()
    return loss_sum / max(1, count)


class LlmGptExecutor:
    name = "llm-gpt"
    options = OPTIONS
    defaults = DEFAULTS

    def __init__(self) -> None:
        self.device = "cpu"

    def check(self, resolved: ResolvedSpec, device: str, synthetic: bool, data: Path | None, world: int = 1) -> None:
        self.device = device
        spec = resolved.spec
        if spec.kind != "throughput" or spec.throughput is None:
            raise UsageError(f"the llm-gpt executor runs throughput specs; {spec.id!r} is {spec.kind}")
        if not spec.workload.variants:
            raise UsageError(f"spec {spec.id!r} has no workload.variants with the model shapes")
        optimizer = spec.hyperparameters.get("optimizer", "adamw")
        if optimizer != "adamw":
            raise UsageError(f"the llm-gpt executor trains with AdamW; spec {spec.id!r} asks for {optimizer!r}")
        if data is not None and synthetic:
            raise UsageError("give either --data PATH or --synthetic, not both")
        if data is not None:
            tokdata.open_token_file(data)
        _data_kind(resolved, data, synthetic)

    def dataset_facts(
        self, resolved: ResolvedSpec, config: RunConfig, data: Path | None, synthetic: bool
    ) -> dict[str, Any]:
        """The data's facts. Being the first call that sees a configuration, it also checks it (make_plan)
        and records the derived gradient_accumulation_steps among the hyperparameters, so that the log
        and submission.yaml state it."""
        plan = make_plan(resolved, config, self.device)
        config.hyperparameters["gradient_accumulation_steps"] = plan.accumulation
        if _data_kind(resolved, data, synthetic) == "random":
            return {
                "name": RANDOM_DATA_NAME,
                "generator": "torch.randint",
                "vocab_size": plan.shape.vocab,
                "synthetic": True,
            }
        return load_tokens(resolved, data, plan.shape.sequence, plan.shape.vocab).facts

    def setup(self, ctx: RunContext) -> State:
        spec = ctx.resolved.spec
        assert spec.throughput is not None
        plan = make_plan(ctx.resolved, ctx.config, ctx.device)
        torch.manual_seed(ctx.seed)
        _restrict_sdpa(plan.attention)
        model = build_model(plan, ctx.hyperparameters, ctx.device)
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(plan.precision)
        autocast: Callable[[], Any] = (
            (lambda: torch.autocast(ctx.device, dtype=dtype)) if dtype is not None else contextlib.nullcontext
        )
        scaler = torch.amp.GradScaler(ctx.device) if plan.precision == "fp16" else None
        loss_fn = compile_regions(model, plan.compile_mode)
        wrapped = data_parallel(plan, model, loss_fn, ctx.dist, ctx.device) if ctx.dist.active else None
        optimizer = build_optimizer(wrapped if wrapped is not None else model, ctx.hyperparameters, plan)
        kind = _data_kind(ctx.resolved, ctx.data, ctx.synthetic)
        held_out: tokdata.Windows | None = None
        if kind == "random":
            batches = _random_batches(plan, ctx.device, ctx.seed + ctx.dist.rank)
            train_tokens = spec.workload.dataset.train_samples
        else:
            tokens = load_tokens(ctx.resolved, ctx.data, plan.shape.sequence, plan.shape.vocab)
            windows = tokens.train.shuffled(plan.micro_batch, ctx.seed, ctx.dist.rank, ctx.dist.world)
            batches = (_to_device(w, ctx.device) for w in windows)
            train_tokens = int(tokens.facts["train_samples"])
            if spec.quality is not None and tokens.eval.count:
                held_out = tokens.eval
        total_steps = spec.throughput.warmup_steps + spec.throughput.measure_steps
        state = State(
            plan, model, optimizer, scaler, autocast, loss_fn, batches, held_out, train_tokens, total_steps, 0, wrapped
        )
        self._log_facts(ctx, state)
        for step in range(spec.throughput.warmup_steps):
            train_step(state, ctx.hyperparameters)
            ctx.progress.update(
                stage=f"warm-up {step + 1}/{spec.throughput.warmup_steps}",
                done=step + 1,
                total=None,
                rate=None,
                unit="token",
                power_w=ctx.power_now_w(),
            )
        if held_out is not None and plan.compile_mode != "none":
            evaluate(state, ctx.device, limit_batches=1)
        ctx.sync()
        return state

    @staticmethod
    def _log_facts(ctx: RunContext, state: State) -> None:
        plan = state.plan
        _, kernel = attention_kernel(plan.attention)
        ctx.log.event("attention_kernel", kernel)
        ctx.log.event("model_parameters", plan.shape.parameters())
        ctx.log.event("padded_vocab_size", plan.padded_vocab)
        ctx.log.event(
            "hardware_flops_per_sample",
            hardware_flops_per_token(plan),
            metadata={"unit": "FLOP per token", "counts": "matrix products executed, incl. recompute and padding"},
        )

    def train(self, ctx: RunContext, state: State) -> RunOutcome:
        spec = ctx.resolved.spec
        assert spec.throughput is not None
        c = ctx.log.constants
        plan, steps = state.plan, spec.throughput.measure_steps
        every = spec.quality.eval_every_steps if spec.quality is not None and state.held_out is not None else None
        planned = steps * plan.tokens_per_step
        timer = StepTimer(ctx.device)
        report_every = max(1, steps // 5)
        reached = False
        quality_text: str | None = None
        tokens = 0
        ctx.run_start()
        ctx.log.start(c.BLOCK_START, metadata={"first_epoch_num": 1, "samples_count": planned})
        t0 = time.monotonic()
        for step in range(1, steps + 1):
            timer.start()
            loss = train_step(state, ctx.hyperparameters)
            timer.stop()
            tokens += plan.tokens_per_step
            if every is not None and step % every == 0:
                value = evaluate(state, ctx.device)
                reached = (
                    ctx.evaluated(epoch=tokens / state.train_tokens, step=step, samples=tokens, value=value) or reached
                )
                assert spec.quality is not None
                quality_text = f"{spec.quality.metric} {value:.4f}/{spec.quality.target}"
            elif step % report_every and step != steps:
                continue
            ctx.sync()
            ctx.progress.update(
                stage=f"step {step}/{steps} loss {float(loss):.3f}",
                done=step,
                total=steps,
                rate=tokens / max(1e-9, time.monotonic() - t0),
                unit="token",
                quality=quality_text,
                power_w=ctx.power_now_w(),
                force=every is not None and step % every == 0,
            )
        ctx.log.end(c.BLOCK_STOP, metadata={"first_epoch_num": 1, "samples_count": tokens})
        ctx.run_stop(success=True)
        duration = (ctx.stopped_mono or 0) - (ctx.started_mono or 0)
        return RunOutcome(
            status="success",
            samples=tokens,
            steps=steps,
            epochs=tokens / state.train_tokens,
            reached=reached,
            throughput=ThroughputResult(
                warmup_steps=spec.throughput.warmup_steps,
                timed_steps=steps,
                samples_per_s=tokens / duration if duration > 0 else 0.0,
                step_time_s_median=timer.median_s(),
            ),
        )


EXECUTOR = LlmGptExecutor()
