"""Usage mistakes of `show`, `execute --set` and `roofline`: each answered by one line that names the value, what was
expected and the fix, with exit code 2, before anything heavy starts."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from specbench.cli import main
from specbench.errors import EXIT_UNUSABLE, InputError, UsageError
from specbench.run.config import Option, build_configs
from specbench.spec import builtin, load_spec, resolve
from specbench.spec.params import EXECUTOR_PARAMS
from specbench.spec.reference import RULE_MODELS, render
from specbench.spec.resolve import check_profile
from specbench.spec.rules import RULE_KINDS, Rule

MINIMAL = Path(__file__).parent / "data" / "specs" / "valid" / "minimal.yaml"
SMOKE = "  smoke: {description: small, ranked: false, overrides: {budget: {epochs: 1}}}"


def write_spec(folder: Path, overrides: str) -> str:
    """minimal.yaml with its smoke profile's overrides replaced; its name, relative to `folder` (the cwd)."""
    text = MINIMAL.read_text()
    assert SMOKE in text
    (folder / "my.yaml").write_text(
        text.replace(SMOKE, f"  smoke: {{description: small, ranked: false, overrides: {overrides}}}")
    )
    return "my.yaml"


def one_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The single stderr line of a command that must exit 2 and print nothing on stdout."""
    assert main(argv) == EXIT_UNUSABLE
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


# --- a profile whose own hyperparameters break the spec's rules -------------------------------------------------

BROKEN_PROFILES = [
    (
        "{hyperparameters: {learning_rate: 0.5}}",
        "error: my.yaml:42:91: profiles.smoke.overrides.hyperparameters.learning_rate: profile 'smoke': "
        "learning_rate=0.5 breaks rules.workload.learning_rate (layer 8, workload) at level hardware: expected 0.1 = "
        "0.1 x (global_batch_size 8 / 8); the spec contradicts its own rule: change the value or the rule",
    ),
    (
        "{hyperparameters: {optimizer: adam}}",
        "error: my.yaml:42:87: profiles.smoke.overrides.hyperparameters.optimizer: profile 'smoke': optimizer='adam' "
        "breaks rules.workload.optimizer (layer 8, workload) at level hardware: expected 'sgd'; the spec contradicts "
        "its own rule: change the value or the rule",
    ),
    (
        "{hyperparameters: {global_batch_size: 16}}",
        "error: my.yaml:32:18: hyperparameters.learning_rate: profile 'smoke': learning_rate=0.1 breaks "
        "rules.workload.learning_rate (layer 8, workload) at level hardware: expected 0.2 = 0.1 x (global_batch_size "
        "16 / 8); the spec contradicts its own rule: change the value or the rule",
    ),
]


@pytest.mark.parametrize(("overrides", "message"), BROKEN_PROFILES)
def test_show_refuses_a_profile_that_breaks_its_own_rules(
    overrides: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = write_spec(tmp_path, overrides)
    assert one_error(["show", spec, "--profile", "smoke"], capsys) == message
    assert main(["show", spec]) == 0  # the official profile keeps the rules
    assert main(["show", spec, "--profile", "smoke", "--level", "free"]) == 0  # layer 8 varies at level free


@pytest.mark.parametrize(("overrides", "message"), BROKEN_PROFILES)
def test_execute_gives_the_same_message_before_any_executor_option(
    overrides: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    resolved = resolve(load_spec(write_spec(tmp_path, overrides)), "smoke")
    with pytest.raises(InputError) as caught:
        build_configs(resolved, {}, ["global_batch_size=8"], "cpu")
    assert [f"error: {p.render()}" for p in caught.value.problems] == [message]


def test_a_released_spec_whose_smoke_profile_breaks_its_rules_is_refused_by_show(
    in_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert one_error(["show", "llm-gpt@1.0.0", "--profile", "smoke"], capsys) == (
        "error: specs/released/llm-gpt-1.0.0.yaml:123:26: profiles.smoke.overrides.hyperparameters.sequence_length: "
        "profile 'smoke': sequence_length=128 breaks rules.workload.sequence_length (layer 8, workload) at level "
        "system: expected 2048; the spec contradicts its own rule: change the value or the rule"
    )


@pytest.mark.needs("torch")
def test_execute_refuses_that_released_profile_with_the_same_line(
    in_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "llm-gpt@1.0.0", "--profile", "smoke"]) == EXIT_UNUSABLE
    shown = capsys.readouterr().err.strip()
    out = tmp_path / "acme" / "box"
    assert one_error(["execute", "llm-gpt@1.0.0", "--profile", "smoke", "--out", str(out)], capsys) == shown
    assert not out.exists()


@pytest.mark.parametrize("spec_id", builtin.spec_ids())
def test_every_builtin_profile_keeps_its_rules_at_every_allowed_level(spec_id: str) -> None:
    loaded = load_spec(spec_id)
    for profile in loaded.spec.profiles:
        for level in loaded.spec.allowed_levels:
            check_profile(resolve(loaded, profile, level))


# --- typos under a profile's overrides, refused when the spec loads ----------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            "{hyperparamters: {learning_rate: 0.2}}",
            "error: my.yaml:42:74: profiles.smoke.overrides.hyperparamters: a profile may override only workload, "
            "quality, budget, throughput, hyperparameters, measurement; found 'hyperparamters' (did you mean "
            "'hyperparameters'?)",
        ),
        (
            "{hyperparameters: {learning_rte: 0.2}}",
            "error: my.yaml:42:90: profiles.smoke.overrides.hyperparameters.learning_rte: unknown hyperparameter "
            "'learning_rte' (did you mean 'learning_rate'?): neither hyperparameters nor rules.workload name it; fix "
            "the name, or state a new one under hyperparameters first",
        ),
        (
            "{budget: {epoch: 1}}",
            "error: my.yaml:42:74: profiles.smoke.overrides.budget.epoch: unknown key 'epoch' (did you mean 'epochs'?)",
        ),
        (
            "{workload: {dataset: {train_sampls: 5}}}",
            "error: my.yaml:42:93: profiles.smoke.overrides.workload.dataset.train_sampls: unknown key 'train_sampls' "
            "(did you mean 'train_samples'?)",
        ),
        (
            "{measurement: {runs: {count: 2}}}",
            "error: my.yaml:42:86: profiles.smoke.overrides.measurement.runs.count: olympic aggregation drops the "
            "fastest and slowest run, so it needs count >= 3, found 2",
        ),
        (
            "{quality: null}",
            "error: my.yaml:7:7: kind: with profile 'smoke' applied, a time_to_quality spec needs `quality` (metric, "
            "target, direction, penalty_exponent)",
        ),
    ],
)
def test_a_typo_under_a_profiles_overrides_is_located_there_with_a_suggestion(
    overrides: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert one_error(["show", write_spec(tmp_path, overrides)], capsys) == message  # at the official profile too


def test_a_profile_may_add_a_hyperparameter_unlike_any_known_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    loaded = load_spec(write_spec(tmp_path, "{hyperparameters: {dropout: 0.1}}"))
    assert resolve(loaded, "smoke").spec.hyperparameters["dropout"] == 0.1


# --- names the spec's executor does not read, refused when the spec loads ---------------------------------------

RESNET50 = Path(__file__).parents[1] / "specs" / "resnet50.yaml"
RESNET50_KNOWN = ", ".join(EXECUTOR_PARAMS.get("resnet50").known())


def write_resnet50(folder: Path, old: str, new: str) -> str:
    """specs/resnet50.yaml with `old` replaced by `new` (once), as my.yaml in `folder` (the cwd)."""
    text = RESNET50.read_text().replace("../rules/hpcai500.yaml", "hpcai500")
    assert text.count(old) == 1
    (folder / "my.yaml").write_text(text.replace(old, new))
    return "my.yaml"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "  optimizer: sgd\n  momentum",
            "  optimizer: sgd\n  optimiser: sgd\n  momentum",
            "error: my.yaml:57:14: hyperparameters.optimiser: unknown hyperparameter 'optimiser' (did you mean "
            f"'optimizer'?): the resnet50 executor does not read it; known: {RESNET50_KNOWN}",
        ),
        (
            "    warmup_epochs: {kind: range",
            "    warmup_epoch: {kind: range",
            "error: my.yaml:82:19: rules.workload.warmup_epoch: unknown hyperparameter 'warmup_epoch' (did you mean "
            f"'warmup_epochs'?): the resnet50 executor does not read it; known: {RESNET50_KNOWN}",
        ),
        (
            "        warmup_epochs: 0\n",
            "        warmup_epochs: 0\n        dropout: 0.1\n",
            "error: my.yaml:134:18: profiles.smoke.overrides.hyperparameters.dropout: unknown hyperparameter 'dropout': "
            f"the resnet50 executor does not read it; known: {RESNET50_KNOWN}",
        ),
        (
            "  executor: resnet50",
            "  executor: resnet5",
            "error: my.yaml:32:13: workload.executor: unknown executor 'resnet5' (did you mean 'resnet50'?); known: "
            "extreme-weather, llm-gpt, mlperf-resnet50, resnet50",
        ),
    ],
)
def test_a_name_the_executor_does_not_read_is_refused_by_show_and_execute(
    old: str,
    new: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = write_resnet50(tmp_path, old, new)
    assert one_error(["show", spec], capsys) == message
    assert one_error(["execute", spec, "--profile", "smoke", "--out", "acme/box"], capsys) == message
    assert not (tmp_path / "acme").exists()


def test_a_sweep_axis_the_executor_does_not_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = (RESNET50.parent / "caraml-resnet50.yaml").read_text().replace("../rules/hpcai500.yaml", "hpcai500")
    (tmp_path / "my.yaml").write_text(text.replace("    precision: [bf16", "    precison: [bf16"))
    with pytest.raises(InputError) as caught:
        load_spec("my.yaml")
    (problem,) = caught.value.problems
    assert problem.location.json_path == "throughput.sweep.precison"
    assert problem.message.startswith(
        "unknown sweep parameter 'precison' (did you mean 'precision'?): the resnet50 executor does not read it"
    )


def test_a_spec_without_an_executor_names_what_mlperf_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = (RESNET50.parent / "mlperf-bert.yaml").read_text().replace("../rules/hpcai500.yaml", "hpcai500")
    (tmp_path / "my.yaml").write_text(text.replace("hyperparameters: {}", "hyperparameters: {opt_lamb_beta_1: 0.9}"))
    spec = load_spec("my.yaml").spec
    assert spec.workload.executor is None and spec.hyperparameters == {"opt_lamb_beta_1": 0.9}


# --- --set values typed against the spec's parameters ------------------------------------------------------------

WORKERS = {"num_workers": Option("num_workers", "framework", "data-loading workers", None, 0, 4)}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "global_batch_size=abc",
            "--set global_batch_size=abc: expected an integer (the reference value is 32), found 'abc'; give an "
            "integer, e.g. --set global_batch_size=32",
        ),
        (
            "global_batch_size=32,abc",
            "--set global_batch_size=abc: expected an integer (the reference value is 32), found 'abc'; give an "
            "integer, e.g. --set global_batch_size=32",
        ),
        (
            "global_batch_size=2.5",
            "--set global_batch_size=2.5: expected an integer (the reference value is 32), found '2.5'; give an "
            "integer, e.g. --set global_batch_size=32",
        ),
        (
            "nesterov=yes",
            "--set nesterov=yes: expected true or false (the reference value is false), found 'yes'; give true or "
            "false, e.g. --set nesterov=false",
        ),
        (
            "base_learning_rate=nan",
            "--set base_learning_rate=nan: expected a finite number (the reference value is 0.032), found 'nan'; "
            "give a finite number, e.g. --set base_learning_rate=0.032",
        ),
        (
            "num_workers=x",
            "--set num_workers=x: expected an integer (its default is 0), found 'x'; give an integer, e.g. "
            "--set num_workers=0",
        ),
    ],
)
def test_a_set_value_of_the_wrong_type_is_named_with_its_type(item: str, message: str) -> None:
    resolved = resolve(load_spec("resnet50"), "smoke")
    with pytest.raises(UsageError) as caught:
        build_configs(resolved, WORKERS, [item], "cpu")
    assert str(caught.value) == message


def test_set_values_take_their_parameters_types() -> None:
    resolved = resolve(load_spec("resnet50"), "smoke")
    sets = ["global_batch_size=64", "base_learning_rate=0", "nesterov=false", "num_workers=2"]
    with pytest.raises(UsageError, match=r"base_learning_rate=0\.0 breaks"):  # a number where the spec has one
        build_configs(resolved, WORKERS, sets, "cpu")
    (config,) = build_configs(resolved, WORKERS, [*sets[:1], "base_learning_rate=0.064", *sets[2:]], "cpu")
    assert config.hyperparameters["global_batch_size"] == 64 and config.settings["num_workers"] == 2
    assert config.hyperparameters["nesterov"] is False and math.isclose(
        config.hyperparameters["base_learning_rate"], 0.064
    )
    with pytest.raises(UsageError, match=r"--set optimizer='1' breaks rules\.workload\.optimizer"):  # text stays text
        build_configs(resolved, WORKERS, ["optimizer=1"], "cpu")


@pytest.mark.needs("torch", "torchvision")
def test_execute_names_the_type_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "acme" / "box"
    argv = ["execute", "resnet50", "--profile", "smoke", "--set", "global_batch_size=abc", "--out", str(out)]
    assert one_error(argv, capsys) == (
        "error: --set global_batch_size=abc: expected an integer (the reference value is 32), found 'abc'; give an "
        "integer, e.g. --set global_batch_size=32"
    )
    assert not out.exists()


# --- --set of layer 9 (the problem), under any of its usual names ------------------------------------------------

LAYER_9 = "is layer 9 (the problem: dataset, target quality, epoch budget), fixed by the spec"


@pytest.mark.parametrize(
    ("profile", "item", "message"),
    [
        (
            "smoke",
            "epochs=1",
            f"--set epochs: the epoch budget {LAYER_9} (budget.epochs: 2 at profile smoke) and never set",
        ),
        (
            "official",
            "epochs=1",
            f"--set epochs: the epoch budget {LAYER_9} (budget.epochs: 90 at profile official) and never set; a "
            "shorter run is the smoke profile (--profile smoke), never ranked",
        ),
        (
            "smoke",
            "epoch=1",
            f"--set epoch: the epoch budget {LAYER_9} (budget.epochs: 2 at profile smoke) and never set",
        ),
        (
            "smoke",
            "epoch_budget=1",
            f"--set epoch_budget: the epoch budget {LAYER_9} (budget.epochs: 2 at profile smoke) and never set",
        ),
        (
            "smoke",
            "max_steps=10",
            f"--set max_steps: the step budget {LAYER_9} (which states none) and never set",
        ),
        (
            "smoke",
            "target=0.5",
            f"--set target: the target quality {LAYER_9} (quality.target: 0.8 at profile smoke) and never set",
        ),
        (
            "official",
            "dataset=cifar10",
            f"--set dataset: the dataset {LAYER_9} (workload.dataset.name: 'imagenet-1k' at profile official) and "
            "never set",
        ),
        (
            "smoke",
            "train_samples=10",
            f"--set train_samples: the dataset's train_samples {LAYER_9} (workload.dataset.train_samples: 512 at "
            "profile smoke) and never set",
        ),
        (
            "smoke",
            "warmup_epoch=1",
            "--set warmup_epoch: unknown parameter (did you mean 'warmup_epochs'?); known: base_learning_rate, "
            "global_batch_size, label_smoothing, lr_schedule, model, momentum, nesterov, num_workers, optimizer, "
            "warmup, warmup_epochs, weight_decay, weight_decay_on_bn",
        ),
    ],
)
def test_a_set_of_the_problem_says_it_is_layer_9_and_never_set(profile: str, item: str, message: str) -> None:
    resolved = resolve(load_spec("resnet50"), profile)
    with pytest.raises(UsageError) as caught:
        build_configs(resolved, WORKERS, [item], "cpu")
    assert str(caught.value) == message


# --- roofline --device cuda without a GPU ------------------------------------------------------------------------


@pytest.mark.needs("torch")
def test_roofline_on_cuda_without_a_gpu_is_refused_as_execute_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    message = "error: --device cuda: no CUDA GPU is visible here (torch.cuda.is_available() is False); use --device cpu"
    assert one_error(["roofline", "--device", "cuda", "--out", str(tmp_path / "r")], capsys) == message
    assert not (tmp_path / "r").exists()
    from specbench.run.request import choose_device

    with pytest.raises(UsageError) as caught:
        choose_device("cuda")
    assert f"error: {caught.value}" == message


# --- the rule kinds of docs/spec-reference.md --------------------------------------------------------------------


def test_the_reference_lists_every_rule_kind_with_its_fields_and_an_example() -> None:
    section = render().split("## Rule kinds\n", 1)[1].split("\n## ", 1)[0]
    assert sorted(m.model_fields["kind"].annotation.__args__[0] for m in RULE_MODELS) == RULE_KINDS.names()
    for kind in RULE_KINDS.names():
        body = section.split(f"### {kind}\n", 1)[1].split("\n### ", 1)[0]
        assert f"Example: `{{kind: {kind}" in body
    assert (
        "| `reference_param` | float | required | The value of `param` at which this parameter is `reference`. |"
        in (section)
    )


@pytest.mark.parametrize("model", RULE_MODELS, ids=lambda m: m.__name__)
def test_each_rule_kinds_example_is_a_valid_rule_of_that_kind(model: type) -> None:
    examples = model.model_config["json_schema_extra"]["examples"]
    assert examples
    for example in examples:
        assert isinstance(TypeAdapter(Rule).validate_python(example), model)
