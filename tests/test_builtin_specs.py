"""The built-in specs load, resolve at every profile and level, and show through the CLI."""

from __future__ import annotations

import json

import pytest

from specbench.cli import main
from specbench.spec import builtin, load_spec, resolve
from specbench.spec.resolve import problem_params

SPEC_IDS = [
    "caraml-resnet50",
    "extreme-weather",
    "llm-gpt",
    "mlperf-bert",
    "mlperf-dlrm-dcnv2",
    "mlperf-flux1",
    "mlperf-gnn",
    "mlperf-gpt3",
    "mlperf-hpc-cosmoflow",
    "mlperf-hpc-deepcam",
    "mlperf-hpc-oc20",
    "mlperf-hpc-openfold",
    "mlperf-llama2-70b-lora",
    "mlperf-llama31-405b",
    "mlperf-llama31-8b",
    "mlperf-resnet50",
    "mlperf-retinanet",
    "mlperf-rgat",
    "mlperf-ssd",
    "mlperf-stable-diffusion",
    "mlperf-unet3d",
    "resnet50",
]


def test_builtin_ids() -> None:
    assert builtin.spec_ids() == SPEC_IDS


@pytest.mark.parametrize("spec_id", SPEC_IDS)
def test_every_profile_and_level_resolves(spec_id: str) -> None:
    loaded = load_spec(spec_id)
    assert loaded.spec.based_on == ["hpcai500@2.0"]
    for profile in loaded.spec.profiles:
        for level in loaded.spec.allowed_levels:
            resolved = resolve(loaded, profile, level)
            assert resolved.ranked == (profile != "smoke")
            assert set(resolved.rules["problem"]) == set(problem_params(resolved.spec))


@pytest.mark.parametrize("spec_id", SPEC_IDS)
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_show_every_builtin(spec_id: str, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    profile = "smoke" if "smoke" in load_spec(spec_id).spec.profiles else "official"
    assert main(["show", spec_id, "--profile", profile, "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert f"id: {spec_id}" in out if fmt == "yaml" else json.loads(out)["id"] == spec_id


def test_resnet50_facts() -> None:
    spec = load_spec("resnet50").spec
    assert spec.workload.dataset.train_samples == 1281167
    assert spec.workload.dataset.eval_samples == 50000
    assert spec.quality is not None and spec.quality.target == 0.763 and spec.quality.penalty_exponent == 5
    assert spec.budget.epochs == 90
    assert spec.hyperparameters["momentum"] == 0.875
    assert spec.hyperparameters["weight_decay"] == 3.0517578125e-05


def test_smoke_profile_overrides_problem_and_is_not_ranked() -> None:
    loaded = load_spec("resnet50")
    smoke = resolve(loaded, "smoke")
    official = resolve(loaded, "official")
    assert smoke.spec.workload.dataset.synthetic and not official.spec.workload.dataset.synthetic
    assert smoke.digest == official.digest
    assert not smoke.ranked


def test_llm_variants_flops_match_formula() -> None:
    from specbench.accounting.flops import GptShape, gpt_train_flops_per_token

    spec = resolve(load_spec("llm-gpt"), "smoke").spec
    for variant in spec.workload.variants.values():
        p = variant.params
        shape = GptShape(
            int(p["hidden"]), int(p["layers"]), int(p["heads"]), int(p["sequence_length"]), int(p["vocab"])
        )
        assert variant.flops_per_sample == gpt_train_flops_per_token(shape)


def test_specs_command_lists_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["specs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["id", "version", "kind", "metric", "target"]
    table, footer = lines[: lines.index("")], lines[lines.index("") + 1 :]
    assert [line.split()[0] for line in table[2:]] == SPEC_IDS
    assert footer[0].startswith("5 of 22 specs run here") and footer[1].startswith("The other 17 are MLPerf")
    assert ">= 0.763" in next(line for line in lines if line.startswith("resnet50 "))


def test_unknown_profile_and_level(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "resnet50", "--profile", "smok"]) == 2
    assert "unknown profile 'smok' (did you mean 'smoke'?)" in capsys.readouterr().err
    assert main(["show", "mlperf-resnet50", "--level", "hardware"]) == 2
    assert "level 'hardware' is not allowed by spec 'mlperf-resnet50'" in capsys.readouterr().err


def test_released_versions_are_frozen_copies_with_their_own_identity() -> None:
    """Each file under specs/released is ID-VERSION.yaml, an older version than the current spec of that id."""
    for path in builtin.released_paths():
        loaded = load_spec(path)
        spec = loaded.spec
        assert path.stem == f"{spec.id}-{spec.version}"
        assert spec.id in SPEC_IDS
        current = load_spec(spec.id).spec
        as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
        assert as_tuple(spec.version) < as_tuple(current.version)
        assert load_spec(f"{spec.id}@{spec.version}").spec.version == spec.version


def test_unknown_released_version_is_a_usage_error() -> None:
    from specbench.errors import UsageError

    with pytest.raises(UsageError, match=r"no released version '0\.0\.1'"):
        builtin.find_spec("resnet50@0.0.1")
    with pytest.raises(UsageError, match="no built-in spec 'resnet5'"):
        builtin.find_spec("resnet5@1.0.0")
