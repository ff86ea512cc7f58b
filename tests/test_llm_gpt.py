"""The llm-gpt executor on the CPU: the smoke profile to its loss target, sweeps, token files, options, training math."""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from support.committed import committed

from specbench.accounting.flops import GptShape
from specbench.cli import main
from specbench.data import tokens as tok
from specbench.errors import UsageError
from specbench.power.base import Device, Meter, PowerValues
from specbench.run import harness
from specbench.spec.result import RunResult
from specbench.spec.system import SubmissionMeta
from specbench.spec.yamlio import load_yaml
from specbench.workloads.llm_gpt.data import to_device
from specbench.workloads.llm_gpt.master import MasterWeights
from specbench.workloads.llm_gpt.model import build_model, build_optimizer, compile_regions, output_loss
from specbench.workloads.llm_gpt.plan import Plan
from specbench.workloads.llm_gpt.step import State, forward_loss, learning_rate, train_step

pytestmark = pytest.mark.needs("torch", "transformers", "mlperf_logging")

REPO = Path(__file__).resolve().parent.parent
TINY_TOKENS_PER_STEP = 16 * 128
SMOKE_SEED = 1  # measured: benchmarks/results/smoke_seeds/llm-gpt.json


def results(bench: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(bench.glob("run_*/result.json"))]


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line.split(" ", 1)[1]) for line in log.read_text().splitlines() if line.startswith(":::MLLOG ")]


@pytest.fixture(scope="module")
def quick_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """specs/llm-gpt.yaml with a smoke profile of 3 timed steps on a small generated set (rules unchanged)."""
    text = (REPO / "specs" / "llm-gpt.yaml").read_text()
    for old, new in (
        ("extends: ../rules/hpcai500.yaml", "extends: hpcai500"),
        ("train_samples: 262144", "train_samples: 16384"),
        ("eval_samples: 16384", "eval_samples: 2048"),
        ("warmup_steps: 2\n", "warmup_steps: 1\n"),
        ("measure_steps: 120\n", "measure_steps: 3\n"),
        ("eval_every_steps: 30", "eval_every_steps: 2"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path_factory.mktemp("spec") / "llm-gpt-quick.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    train, held_out = tok.generated_splits(16384, 2048)
    folder = tmp_path_factory.mktemp("data") / "text"
    tok.write_token_file(folder, train, held_out, 256, "generated for tests")
    return folder


def test_smoke_profile_trains_to_its_loss_target_at_the_default_level_and_validates(tmp_path: Path) -> None:
    out = tmp_path / "acme" / "cpu-box"
    args = ["execute", "llm-gpt", "--profile", "smoke", "--seed", str(SMOKE_SEED), "--power", "none", "--out", str(out)]
    assert main(args) == 0
    bench = out / "llm-gpt"
    (result,) = results(bench)
    RunResult.model_validate(result)
    assert result["status"] == "success" and result["level"] == "system" and result["spec_version"] == "1.1.0"
    quality = result["quality"]
    assert quality["metric"] == "eval_loss" and quality["direction"] == "lower" and quality["target"] == 2.0
    assert quality["reached"] and quality["best"] <= 2.0
    curve = [p["value"] for p in quality["curve"]]
    assert [p["step"] for p in quality["curve"]] == [30, 60, 90, 120]
    assert curve[0] < np.log(256) and curve[-1] < curve[0]
    assert result["samples_processed"] == 120 * TINY_TOKENS_PER_STEP and result["sample_unit"] == "token"
    assert result["model_flops"] == pytest.approx(2970624 * 120 * TINY_TOKENS_PER_STEP)
    assert result["throughput"]["samples_per_s"] == pytest.approx(result["samples_processed"] / result["duration_s"])
    assert 0 < result["throughput"]["step_time_s_median"] < result["duration_s"]
    meta = SubmissionMeta.model_validate(load_yaml(bench / "submission.yaml").data)
    train, held_out = tok.generated_splits(262144, 16384)
    assert meta.dataset["sha256"] == tok.arrays_sha256(train, held_out)
    assert meta.dataset["name"] == "specbench-generated-text" and meta.variant == "tiny" and meta.seed == SMOKE_SEED
    logged = {e["key"]: e for e in events(bench / "run_1" / "log.txt")}
    assert logged["hardware_flops_per_sample"]["value"] == pytest.approx(
        6 * (2 * 12 * 128 * 128 + 256 * 128) + 12 * 2 * 128 * 128
    )
    assert logged["gradient_accumulation_steps"]["value"] == 1
    from specbench.validator.validate import validate_submission

    report = validate_submission(out)
    assert [f"{f.code} {f.message}" for f in report.findings if f.severity == "error"] == []


def test_the_official_shapes_keep_their_sequence_of_2048_at_the_system_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["execute", "llm-gpt", "--profile", "smoke", "--set", "model=800M", "--power", "none"]
    assert main([*args, "--out", str(tmp_path / "a" / "b")]) == 2
    assert capsys.readouterr().err.startswith(
        "error: the configuration sequence_length=128 breaks rules.workload.sequence_length (layer 8, workload) at "
        "level system: expected 2048 (CARAML's shapes; the smoke profile's tiny model has its own sequence of 128)"
    )


def test_a_seed_replays_a_run(quick_spec: Path, tmp_path: Path) -> None:
    curves = []
    for name in ("first", "second"):
        out = tmp_path / "acme" / name
        assert (
            main(
                ["execute", str(quick_spec), "--profile", "smoke", "--seed", "5", "--power", "none", "--out", str(out)]
            )
            == 0
        )
        (result,) = results(out / "llm-gpt")
        curves.append((result["seed"], [p["value"] for p in result["quality"]["curve"]]))
    assert curves[0] == curves[1] and curves[0][0] == 5 and len(curves[0][1]) == 1


def test_bf16_weights_train_as_the_fp32_weights_under_autocast_do(quick_spec: Path, tmp_path: Path) -> None:
    """The quick profile's held-out loss after 4 steps, seed 5, bf16 autocast over fp32 or bf16 weights."""
    losses = {}
    for weights in ("fp32", "bf16"):
        out = tmp_path / "acme" / weights
        args = ["execute", str(quick_spec), "--profile", "smoke", "--level", "free", "--seed", "5", "--power", "none"]
        assert main([*args, "--out", str(out), "--set", "precision=bf16", "--set", f"weights={weights}"]) == 0
        meta = load_yaml(out / "llm-gpt" / "submission.yaml").data
        assert meta["layers"]["parallelism_precision"]["weights"] == weights
        (result,) = results(out / "llm-gpt")
        assert result["status"] == "success"
        losses[weights] = result["quality"]["curve"][0]["value"]
    assert losses["bf16"] < np.log(256) and losses["bf16"] == pytest.approx(losses["fp32"], rel=0.02)


def test_released_1_0_0_submissions_still_validate() -> None:
    """The committed llm-gpt submissions name spec 1.0.0, kept verbatim under specs/released."""
    from specbench.validator.validate import validate_submission

    for folder in ("h200-llm", "h200x2-llm"):
        report = validate_submission(committed(folder))
        assert report.compliant(), (folder, [f.to_dict() for f in report.findings if f.severity == "error"])


def test_a_global_batch_sweep_on_a_token_file_accumulates_gradients(quick_spec: Path, token_file: Path) -> None:
    out = token_file.parent / "acme" / "box"
    args = [
        "execute", str(quick_spec), "--profile", "smoke", "--level", "free", "--power", "none", "--out", str(out),
        "--data", str(token_file), "--set", "global_batch_size=4,8", "--set", "micro_batch_size=4",
    ]  # fmt: skip
    assert main(args) == 0
    digest, _ = tok.scan(tok.open_token_file(token_file))
    for batch, accumulation in ((4, 1), (8, 2)):
        bench = out / f"llm-gpt--global_batch_size={batch},micro_batch_size=4"
        meta = SubmissionMeta.model_validate(load_yaml(bench / "submission.yaml").data)
        assert meta.hyperparameters["gradient_accumulation_steps"] == accumulation
        assert meta.hyperparameters["micro_batch_size"] == 4
        assert meta.dataset["sha256"] == digest and meta.dataset["synthetic"] is False
        assert meta.dataset["path"] == str((token_file / "tokens.bin").resolve())
        (result,) = results(bench)
        assert result["status"] == "success" and result["synthetic_data"] is True  # the spec's smoke data flag
        assert result["samples_processed"] == 3 * batch * 128
        logged = events(bench / "run_1" / "log.txt")
        assert [e["value"] for e in logged if e["key"] == "gradient_accumulation_steps"] == [accumulation]
        assert [e["metadata"]["samples_count"] for e in logged if e["key"] == "block_stop"] == [3 * batch * 128]
        assert len([e for e in logged if e["key"] == "eval_accuracy"]) == 1


class ConstantMeter(Meter):
    """A 300 W device whose energy counter advances with the monotonic clock."""

    kind = "constant"

    def __init__(self) -> None:
        super().__init__([Device(key="gpu0", meter="constant", scope="accelerator")])
        self.t0 = time.monotonic()

    def read(self) -> list[PowerValues]:
        elapsed = time.monotonic() - self.t0
        return [PowerValues(power_instant_w=300.0, power_average_w=300.0, energy_j=100.0 + 300.0 * elapsed)]

    def _shutdown(self) -> None:
        pass


def test_synthetic_tokens_give_throughput_and_energy_per_token_without_quality(
    quick_spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "open_run_meters", lambda *args, **kwargs: ([ConstantMeter()], None))
    out = tmp_path / "acme" / "box"
    args = ["execute", str(quick_spec), "--profile", "smoke", "--level", "free", "--synthetic", "--out", str(out)]
    assert main([*args, "--set", "activation_checkpointing=true", "--set", "precision=bf16"]) == 0
    (result,) = results(out / "llm-gpt")
    assert result["quality"] is None
    power = result["power"]
    assert power["measured"] and power["mean_power_w"] == pytest.approx(300.0, rel=1e-3)
    assert power["energy_j"] / result["samples_processed"] == pytest.approx(
        300.0 / result["throughput"]["samples_per_s"], rel=1e-2
    )
    meta = load_yaml(out / "llm-gpt" / "submission.yaml").data
    assert meta["dataset"] == {
        "name": "synthetic-tokens",
        "generator": "torch.randint",
        "vocab_size": 256,
        "synthetic": True,
    }
    assert (
        meta["hyperparameters"]["activation_checkpointing"] is True and meta["hyperparameters"]["precision"] == "bf16"
    )
    assert meta["layers"]["framework"] == {"compile_mode": "none", "fused_optimizer": False}
    assert meta["layers"]["parallelism_precision"] == {"weights": "fp32", "vocab_padding": 1, "parallelism": "ddp"}
    logged = {e["key"]: e["value"] for e in events(out / "llm-gpt" / "run_1" / "log.txt")}
    assert logged["attention_kernel"] == "sdpa (PyTorch chooses the kernel)"
    recompute = 2 * (2 * 8 * 128 * 128 + 4 * 128 * 128)
    assert logged["hardware_flops_per_sample"] == pytest.approx(2970624 - 6 * (2 * 13 * 128 + 256) + recompute)


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["global_batch_size=6", "micro_batch_size=4"], "global_batch_size 6 is not a multiple of micro_batch_size 4"),
        (["attention=cudnn"], "attention=cudnn needs a CUDA GPU"),
        (["attention=flash"], "attention=flash needs a CUDA GPU; on the CPU use sdpa"),
        (["attention=xformers"], "attention='xformers': expected one of sdpa, flash, cudnn, eager"),
        (["compile_mode=fast"], "--set compile_mode=fast: expected one of none, default, max-autotune-no-cudagraphs"),
        (["vocab_padding=0"], "vocab_padding must be a positive integer, found 0"),
        (["model=9B"], "--set model=9B: spec 'llm-gpt' has the variants 800M, 13B, 175B, tiny"),
        (["gradient_accumulation_steps=2"], "--set gradient_accumulation_steps: unknown parameter"),
        (["weights=bf16"], "weights=bf16 needs precision=bf16, found precision=fp32"),
        (["weights=fp16", "precision=fp16"], "--set weights=fp16: expected one of fp32, bf16"),
    ],
)
def test_bad_configurations_are_refused_before_anything_runs(
    quick_spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], sets: list[str], message: str
) -> None:
    out = tmp_path / "acme" / "box"
    args = ["execute", str(quick_spec), "--profile", "smoke", "--level", "free", "--power", "none", "--out", str(out)]
    for item in sets:
        args += ["--set", item]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not list(out.glob("*/run_*"))


def test_a_token_file_whose_size_disagrees_with_its_sidecar_is_refused(
    quick_spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad"
    tok.write_token_file(path, np.arange(1000) % 256, np.arange(10), 256, "s")
    with (path / "tokens.bin").open("ab") as handle:
        handle.write(b"\0")
    args = ["execute", str(quick_spec), "--profile", "smoke", "--level", "free", "--power", "none"]
    assert main([*args, "--out", str(tmp_path / "a" / "b"), "--data", str(path)]) == 2
    assert "expected 1010 uint16 tokens (2020 bytes) as tokens.json says, found 2021 bytes" in capsys.readouterr().err


# the training step's arithmetic


def plan(**changes: Any) -> Plan:
    fields: dict[str, Any] = {
        "variant": "t",
        "shape": GptShape(hidden=32, layers=2, heads=2, sequence=16, vocab=200),
        "global_batch": 4,
        "micro_batch": 4,
        "accumulation": 1,
        "precision": "fp32",
        "attention": "sdpa",
        "compile_mode": "none",
        "checkpointing": False,
        "fused_optimizer": False,
        "padded_vocab": 200,
    }
    return Plan(**{**fields, **changes})


HP = {"dropout": 0.0, "learning_rate": 1e-3, "grad_clip_norm": 0.0}


def state_for(p: Plan, windows: np.ndarray, seed: int = 0) -> State:
    torch.manual_seed(seed)
    model = build_model(p, HP, "cpu")
    master = MasterWeights(model) if p.weights == "bf16" else None
    optimizer = build_optimizer(master.optimized if master is not None else model, HP, p)
    micro = (to_device(windows[i : i + p.micro_batch], "cpu") for i in range(0, len(windows), p.micro_batch))
    autocast: Any = contextlib.nullcontext
    if p.precision != "fp32":
        dtype = torch.bfloat16 if p.precision == "bf16" else torch.float16
        autocast = lambda: torch.autocast("cpu", dtype=dtype)  # noqa: E731
    scaler = torch.amp.GradScaler("cpu") if p.precision == "fp16" else None
    return State(p, model, optimizer, scaler, autocast, output_loss, micro, None, 1000, 10, master=master)


def windows(count: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.Generator(np.random.PCG64(seed)).integers(0, 200, (count, 17)).astype(np.int64)


def test_accumulating_two_micro_batches_equals_one_batch_of_both() -> None:
    data = windows()
    whole, split = state_for(plan(), data), state_for(plan(micro_batch=2, accumulation=2), data)
    loss_whole, loss_split = train_step(whole, HP), train_step(split, HP)
    assert float(loss_whole) == pytest.approx(float(loss_split), rel=1e-5)
    for a, b in zip(whole.model.parameters(), split.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert whole.step == split.step == 1


def test_padding_the_vocabulary_leaves_the_model_and_its_gradients_unchanged() -> None:
    data = windows()
    plain, padded = state_for(plan(), data), state_for(plan(padded_vocab=256), data)
    with torch.no_grad():
        padded.model.transformer.wte.weight[:200] = plain.model.transformer.wte.weight
        for a, b in zip(plain.model.transformer.h.parameters(), padded.model.transformer.h.parameters(), strict=True):
            b.copy_(a)
        padded.model.transformer.wpe.weight.copy_(plain.model.transformer.wpe.weight)
    inputs, targets = to_device(data, "cpu")
    losses = [forward_loss(s, inputs, targets) for s in (plain, padded)]
    torch.testing.assert_close(losses[0], losses[1])
    losses[1].backward()
    grad = padded.model.transformer.wte.weight.grad
    assert grad is not None and torch.count_nonzero(grad[200:]) == 0 and torch.count_nonzero(grad[:200]) > 0
    assert padded.model.lm_head.weight is padded.model.transformer.wte.weight


@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "bf16 autocast"])
def test_the_masked_loss_is_the_loss_over_the_sliced_logits(autocast: bool) -> None:
    """output_loss masks the padded vocabulary; the loss and both gradients are those of slicing it away."""
    torch.manual_seed(0)
    head = torch.nn.Linear(32, 256, bias=False)
    hidden = torch.randn(3, 5, 32, requires_grad=True)
    targets = torch.randint(0, 200, (3, 5))

    def sliced(lm_head: torch.nn.Module, x: torch.Tensor, t: torch.Tensor, vocab: int) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(lm_head(x)[..., :vocab].reshape(-1, vocab).float(), t.reshape(-1))

    results = []
    for loss_fn in (sliced, output_loss):
        context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
        with context:
            loss = loss_fn(head, hidden, targets, 200)
        results.append((loss.detach(), *torch.autograd.grad(loss, [hidden, head.weight])))
    for expected, got in zip(*results, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-7)
    assert torch.count_nonzero(results[1][2][200:]) == 0 and torch.count_nonzero(results[1][2][:200]) > 0


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_each_precision_takes_a_finite_step_that_moves_the_weights(precision: str) -> None:
    state = state_for(plan(precision=precision), windows())
    before = [p.detach().clone() for p in state.model.parameters()]
    loss = train_step(state, HP)
    assert torch.isfinite(loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, state.model.parameters(), strict=True))


def test_bf16_weights_are_the_fp32_masters_rounded_after_each_step() -> None:
    state = state_for(plan(precision="bf16", weights="bf16"), windows())
    assert state.master is not None
    start = [m.detach().clone() for m in state.master.masters]
    loss = train_step(state, {**HP, "grad_clip_norm": 1.0})
    assert torch.isfinite(loss) and state.step == 1
    weights, masters = list(state.model.parameters()), state.master.masters
    assert {w.dtype for w in weights} == {torch.bfloat16} and {m.dtype for m in masters} == {torch.float32}
    assert state.model.lm_head.weight is state.model.transformer.wte.weight  # still tied, in both copies
    assert state.master.optimized.lm_head.weight is state.master.optimized.transformer.wte.weight
    for weight, master in zip(weights, masters, strict=True):
        assert torch.equal(weight, master.to(torch.bfloat16)) and weight.grad is None
    moved = [not torch.equal(a, b) for a, b in zip(start, masters, strict=True)]
    assert all(moved)


def test_bf16_weights_accumulate_micro_batches_and_clip_the_fp32_gradients() -> None:
    """One step over two micro-batches gives the fp32 gradients of one batch of both; clipping acts on them."""
    data = windows(8)
    whole = state_for(plan(precision="bf16", weights="bf16", global_batch=8, micro_batch=8), data)
    split = state_for(plan(precision="bf16", weights="bf16", global_batch=8, micro_batch=4, accumulation=2), data)
    for state in (whole, split):
        train_step(state, HP)
    assert whole.master is not None and split.master is not None
    for a, b in zip(whole.master.grads, split.master.grads, strict=True):
        torch.testing.assert_close(b, a, rtol=0.02, atol=2e-4)
    clipped = state_for(plan(precision="bf16", weights="bf16"), data)
    train_step(clipped, {**HP, "grad_clip_norm": 1e-3})
    assert clipped.master is not None
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in clipped.master.grads]))
    assert float(norm) == pytest.approx(1e-3, rel=1e-3)


def test_bf16_weights_are_refused_across_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    from specbench.run.config import build_configs
    from specbench.spec.loader import load_spec
    from specbench.spec.resolve import resolve
    from specbench.workloads.llm_gpt import plan as gpt_plan

    resolved = resolve(load_spec(REPO / "specs" / "llm-gpt.yaml"), "smoke", "free")
    sets = ["precision=bf16", "weights=bf16", "micro_batch_size=8"]
    (config,) = build_configs(resolved, gpt_plan.OPTIONS, sets, "cpu", gpt_plan.DEFAULTS)
    assert gpt_plan.make_plan(resolved, config, "cpu").weights == "bf16"
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(UsageError, match=r"weights=bf16 runs in one process \(2 here\)"):
        gpt_plan.make_plan(resolved, config, "cpu")


def test_bf16_weights_sum_micro_batch_gradients_in_fp32() -> None:
    layer = torch.nn.Linear(3, 2)
    master = MasterWeights(layer)
    weight, bias = layer.weight, layer.bias
    first = torch.tensor([[1.0, 2.0**-9, 3.0], [4.0, 5.0, 6.0]], dtype=torch.bfloat16)
    weight.grad, bias.grad = first, torch.ones(2, dtype=torch.bfloat16)
    master.take_gradients(first=True)
    assert weight.grad is None and bias.grad is None
    weight.grad = torch.full((2, 3), 256.0, dtype=torch.bfloat16)  # 256 + 2**-9 is not a bf16 number
    master.take_gradients(first=False)  # the bias has no gradient this time: it keeps the first one
    grads = [m.grad for m in master.masters]
    assert grads[0] is not None and grads[0].dtype == torch.float32
    torch.testing.assert_close(grads[0], first.float() + 256.0, rtol=0, atol=0)
    torch.testing.assert_close(grads[1], torch.ones(2), rtol=0, atol=0)
    weight.grad = torch.ones(2, 3, dtype=torch.bfloat16)
    master.take_gradients(first=True)  # a new step: the weight's gradient replaced, the bias's zero
    torch.testing.assert_close(grads[0], torch.ones(2, 3), rtol=0, atol=0)
    torch.testing.assert_close(grads[1], torch.zeros(2), rtol=0, atol=0)


def test_compiled_blocks_share_one_graph_and_match_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regional compilation: every block reuses one compiled graph; the output layer with the loss is a second."""
    from torch._dynamo.utils import counters

    data = windows()
    eager = state_for(plan(), data)
    compiled = state_for(plan(compile_mode="default"), data)
    torch._dynamo.reset()
    counters.clear()
    compiled.loss_fn = compile_regions(compiled.model, "default", backend="aot_eager")
    inputs, targets = to_device(data, "cpu")
    expected = forward_loss(eager, inputs, targets)
    got = forward_loss(compiled, inputs, targets)
    torch.testing.assert_close(got, expected)
    assert counters["stats"]["unique_graphs"] == 2
    assert sum(counters["recompiles"].values()) == 0
    torch._dynamo.reset()


def test_learning_rate_warms_up_linearly_then_decays_to_the_floor() -> None:
    hp = {"learning_rate": 1.0, "min_learning_rate": 0.1, "lr_warmup_steps": 4}
    lrs = [learning_rate(hp, step, 14) for step in range(15)]
    assert lrs[:4] == [0.25, 0.5, 0.75, 1.0]
    assert lrs[4] == pytest.approx(1.0) and lrs[9] == pytest.approx(0.55) and lrs[14] == pytest.approx(0.1)
    assert all(a >= b for a, b in itertools.pairwise(lrs[4:]))
