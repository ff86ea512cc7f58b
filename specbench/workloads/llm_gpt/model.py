"""The llm-gpt model: transformers' GPT2LMHeadModel at a plan's shape, its optimizer, loss, compilation and wrapping.

Built from the spec variant's shape with random initialisation (nothing is downloaded), fp32 weights,
AdamW; DDP or FSDP2 across processes; regional torch.compile of the transformer blocks.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from specbench.workloads.llm_gpt.plan import DEFAULTS, Plan
from specbench.workloads.training import decay_groups, optimizer_kernel

COMPILE_BACKEND = "inductor"


def attention_kernel(attention: str) -> tuple[str, str]:
    """(transformers attn_implementation, what runs) for an attention choice."""
    if attention == "eager":
        return "eager", "eager (matmul + softmax)"
    if attention == "flash" and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2", "flash_attn package"
    if attention in ("flash", "cudnn"):
        return "sdpa", f"sdpa restricted to its {attention} kernel"
    return "sdpa", "sdpa (PyTorch chooses the kernel)"


def restrict_sdpa(attention: str) -> None:
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
    return torch.optim.AdamW(
        decay_groups(model, float(hp["weight_decay"])),
        lr=float(hp["learning_rate"]),
        betas=(float(hp["adam_beta1"]), float(hp["adam_beta2"])),
        eps=float(hp["adam_eps"]),
        **optimizer_kernel(plan.fused_optimizer),
    )


def output_loss(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, vocab: int) -> torch.Tensor:
    """Mean next-token cross-entropy over the real vocabulary, in fp32: the padded columns' logits count as minus
    infinity, so they add nothing to the softmax and get no gradient.

    The same loss and gradients as slicing the logits to `vocab` columns, but every row keeps the padded
    length, which the GPU reads faster (benchmarks/loss_kernels.py: 7.8 against 10.7 ms per GPT 800M step on
    the H200, identical values). A target in the padding would give an infinite loss rather than an index error;
    load_tokens refuses any token id outside the vocabulary before a run starts.
    """
    logits = lm_head(hidden).float()
    padded = logits.shape[-1]
    if padded > vocab:
        logits = logits.masked_fill(torch.arange(padded, device=logits.device) >= vocab, float("-inf"))
    return F.cross_entropy(logits.reshape(-1, padded), targets.reshape(-1))


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
