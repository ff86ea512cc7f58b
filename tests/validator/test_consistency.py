"""Consistency across fields and files: typed power.json, bounded numbers, the variant, fixed layers, one origin.

Each case edits a copy of a committed H200 submission (or a generated one) as a dishonest submitter
would, keeps every other file consistent with the edit and re-signs the manifest, then asserts the
exact findings: the edit is refused, located in the file that carries it, and never a traceback.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutate import edit_json, edit_yaml, resign, run_dir, set_hyperparameter
from support.committed import committed
from validator_bases import Bases

from specbench.validator import validate_submission
from specbench.validator.findings import Finding
from specbench.validator.model import Report

SUBMISSIONS = committed()
OTHER_GPU = "GPU-a742d2ba-d6ad-5a9e-8e8a-092430ee3493"
"""A GPU of another committed system (h200x2), not the one the h200 system measured."""

Edit = Callable[[dict[str, Any]], object]


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / "specbench" / name
    shutil.copytree(SUBMISSIONS / name, target)
    return target


def _validate(root: Path) -> Report:
    resign(root)
    report = validate_submission(root)
    assert report.usable
    return report


def _of(report: Report, code: str) -> list[Finding]:
    return [f for f in report.findings if f.code == code]


def _device(edit: Callable[[dict[str, Any]], object]) -> Edit:
    return lambda data: edit(data["meters"][0]["devices"][0])


def _runs(root: Path, bench: str) -> list[Path]:
    return sorted((root / bench).glob("run_*"))


def _edit_events(run: Path, key: str, value: Any) -> None:
    """Set the value of every logged `key` event of one run's log."""
    lines = []
    for line in (run / "log.txt").read_text().splitlines():
        event = json.loads(line.removeprefix(":::MLLOG "))
        if event["key"] == key:
            event["value"] = value
            line = ":::MLLOG " + json.dumps(event)
        lines.append(line)
    (run / "log.txt").write_text("\n".join(lines) + "\n")


def _lower_counter(run: Path) -> None:
    """One energy counter reading in the middle of the trace lowered by 1 kJ."""
    lines = (run / "power.csv").read_text().splitlines()
    cells = lines[len(lines) // 2].split(",")
    cells[6] = repr(float(cells[6]) - 1000.0)
    lines[len(lines) // 2] = ",".join(cells)
    (run / "power.csv").write_text("\n".join(lines) + "\n")


# power.json typed strictly: the inputs that crashed validate are located schema findings


CRASHES = {
    "key as a list": ("key", ["nvml:0"]),
    "uuid as a mapping": ("uuid", {"a": 1}),
    "meter as a list": ("meter", ["nvml"]),
    "energy_range_j as text": ("energy_range_j", "abc"),
}


@pytest.mark.parametrize(("field", "value"), CRASHES.values(), ids=CRASHES.keys())
def test_an_untyped_device_field_is_a_located_schema_finding(tmp_path: Path, field: str, value: Any) -> None:
    root = _copy(tmp_path, "h200")
    run = root / "caraml-resnet50" / "run_1"
    edit_json(run / "power.json", _device(lambda d: d.__setitem__(field, value)))
    if field == "energy_range_j":
        _lower_counter(run)
    report = _validate(root)
    assert report.codes() == {"SB-STR-007"}, [f.message for f in report.findings]
    (finding,) = report.findings
    assert finding.location.file == "caraml-resnet50/run_1/power.json"
    assert finding.location.json_path == f"meters[0].devices[0].{field}"
    assert finding.location.line is not None
    assert "found" in finding.message
    assert report.exit_code() == 1


WRONG = {
    ("format_version",): ["1", True, 1e308],
    ("host",): [[], {"a": 1}, 1, ""],
    ("meters",): [[], {}, "nvml"],
    ("meters", 0, "kind"): [["nvml"], 1, ""],
    ("meters", 0, "info"): [[], "nvml", {"driver": 1}],
    ("meters", 0, "devices"): [{}, "nvml:0", [1]],
    ("meters", 0, "devices", 0, "scope"): ["gpu", 1, None],
    ("meters", 0, "devices", 0, "index"): [-1, True, 1.5, "0"],
    ("meters", 0, "devices", 0, "members"): ["nvml:1", [1], {"a": 1}],
    ("sampling",): [[], "0.1", None],
    ("sampling", "requested_period_s"): [0, -1, "0.1", 1e-320, 1e308],
    ("sampling", "gaps"): [{}, [1], "none"],
    ("state_start",): [[], "700"],
    ("state_start", "nvml:0", "power_limit_w"): [0, -1, "700", 1e308],
    ("windows", 0, "devices", 0, "samples"): [-1, 1.5, "3"],
}


def _put(data: Any, path: tuple[str | int, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


@pytest.mark.parametrize("path", WRONG, ids=lambda p: ".".join(map(str, p)))
def test_a_wrong_value_in_power_json_is_refused_never_a_crash(smoke: Path, path: tuple[str | int, ...]) -> None:
    """Each field given a value of another type, or out of its range: an error in power.json, never a traceback."""
    original = (run_dir(smoke) / "power.json").read_text()
    for value in WRONG[path]:
        (run_dir(smoke) / "power.json").write_text(original)
        edit_json(run_dir(smoke) / "power.json", lambda d, wrong=value: _put(d, path, wrong))
        report = _validate(smoke)
        errors = {f.location.file for f in report.findings if f.severity == "error"}
        assert "resnet50/run_1/power.json" in errors, (value, [f"{f.code} {f.message}" for f in report.findings])


# numbers bounded by the sampler's range and the device table


def test_a_vanishing_sampling_period_is_out_of_bounds(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200")
    edit_json(
        root / "caraml-resnet50" / "run_1" / "power.json", lambda d: d["sampling"].update(requested_period_s=1e-320)
    )
    report = _validate(root)
    assert report.codes() == {"SB-CNS-004"}
    (finding,) = report.findings
    assert finding.location.json_path == "sampling.requested_period_s"
    assert "expected requested_period_s between 0.01 and 60 s" in finding.message and "1e-320" in finding.message


def test_a_power_limit_beyond_the_board_is_out_of_bounds(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200")
    edit_json(
        root / "caraml-resnet50" / "run_1" / "power.json",
        lambda d: d["state_start"]["nvml:0"].update(power_limit_w=1e308),
    )
    report = _validate(root)
    assert report.codes() == {"SB-CNS-004"}
    (finding,) = report.findings
    assert finding.location.json_path == "state_start.nvml:0.power_limit_w"
    assert "at most 770 W" in finding.message and "NVIDIA H200" in finding.message


def test_a_wrap_modulus_on_a_counter_that_never_wraps_is_refused(tmp_path: Path) -> None:
    """A modulus would turn the lowered readings of an NVML counter into wraps instead of SB-PWR-006."""
    root = _copy(tmp_path, "h200")
    run = root / "caraml-resnet50" / "run_1"
    edit_json(run / "power.json", _device(lambda d: d.__setitem__("energy_range_j", 1e16)))
    report = _validate(root)
    assert report.codes() == {"SB-CNS-004"}
    (finding,) = report.findings
    assert finding.location.json_path == "meters[0].devices[0].energy_range_j"
    assert finding.message.startswith("expected no energy_range_j for nvml:0 (a nvml counter does not wrap")


def test_a_wrapping_counter_reads_below_its_modulus(smoke: Path) -> None:
    wrapping = {"meter": "rapl", "energy_range_j": 1000.0}
    edit_json(run_dir(smoke) / "power.json", lambda d: d["meters"][0]["devices"][0].update(wrapping))
    report = _validate(smoke)
    assert report.codes() == {"SB-CNS-004"}
    (finding,) = report.findings
    assert finding.location.file == "resnet50/run_1/power.csv" and finding.location.line is not None
    assert finding.message.startswith("expected the energy counter of nvml:0 in [0, 1000.0) J")


def test_system_yaml_power_figures_are_bounded_by_the_device(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200")

    def edit(data: dict[str, Any]) -> None:
        data["layers"]["driver_firmware"]["power_limit_w"] = 1e308
        data["declared"]["idle_power_w"] = 900.0

    edit_yaml(root / "system.yaml", edit)
    report = _validate(root)
    assert report.codes() == {"SB-CNS-004", "SB-PWR-009"}  # the trace's mean power is below the declared idle too
    paths = sorted(f.location.json_path for f in _of(report, "SB-CNS-004"))
    assert paths == ["declared.idle_power_w", "layers.driver_firmware.power_limit_w"]
    assert {f.location.file for f in _of(report, "SB-CNS-004")} == {"system.yaml"}


def test_an_accelerator_count_that_is_no_integer_is_refused(tmp_path: Path) -> None:
    """1.0 instead of 1 would take the device out of every physics bound."""
    root = _copy(tmp_path, "h200")
    edit_yaml(root / "system.yaml", lambda d: d["layers"]["hardware"].__setitem__("accelerator_count", 1.0))
    report = _validate(root)
    typed = _of(report, "SB-STR-007")
    assert [f.location.json_path for f in typed] == ["layers.hardware.accelerator_count"]
    assert typed[0].message == "expected accelerator_count an integer >= 0, found 1.0"
    assert report.exit_code() == 1


def test_a_hostname_that_is_no_name_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200")
    edit_yaml(root / "system.yaml", lambda d: d["layers"]["operating_system"].__setitem__("hostname", ["vm"]))
    report = _validate(root)
    assert [(f.code, f.location.json_path) for f in report.findings] == [
        ("SB-STR-007", "layers.operating_system.hostname")
    ]


# the variant is what the hyperparameters train


def test_a_variant_label_other_than_the_model_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200-llm")
    meta = root / "llm-gpt" / "submission.yaml"
    meta.write_text(meta.read_text().replace("variant: 800M", "variant: 13B"))
    report = _validate(root)
    assert report.codes() == {"SB-CNS-001"}
    (finding,) = report.findings
    assert finding.location.file == "llm-gpt/submission.yaml" and finding.location.json_path == "variant"
    assert finding.message == "expected variant '800M' (the variant hyperparameters.model trains), found \"13B\""


def test_a_model_other_than_the_variant_label_is_refused(tmp_path: Path) -> None:
    """hyperparameters.model 13B everywhere (result.json, logs) while the runs trained 800M: x13 FLOPs per sample."""
    root = _copy(tmp_path, "h200-llm")
    meta = root / "llm-gpt" / "submission.yaml"
    meta.write_text(meta.read_text().replace("  model: 800M", "  model: 13B"))
    for run in _runs(root, "llm-gpt"):
        edit_json(run / "result.json", lambda d: d["hyperparameters"].__setitem__("model", "13B"))
        _edit_events(run, "model", "13B")
    report = _validate(root)
    variant = _of(report, "SB-CNS-001")
    assert [f.location.file for f in variant] == [
        "llm-gpt/run_1/log.txt",
        "llm-gpt/run_2/log.txt",
        "llm-gpt/run_3/log.txt",
        "llm-gpt/submission.yaml",
    ]
    assert variant[0].message == (
        "expected model_parameters 12853386240 (variant 13B, which hyperparameters.model names), "
        "found 912857088 (variant 800M's)"
    )
    assert variant[-1].message == "expected variant '13B' (the variant hyperparameters.model trains), found \"800M\""
    assert not report.compliant()


def test_a_shape_hyperparameter_must_be_the_variants(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200-llm")
    edit_yaml(root / "llm-gpt" / "submission.yaml", lambda d: d["hyperparameters"].__setitem__("hidden", 5120))
    report = _validate(root)
    variant = _of(report, "SB-CNS-001")
    assert [f.message for f in variant] == ["expected hidden 2048 (the shape of variant 800M), found 5120"]
    assert variant[0].location.json_path == "hyperparameters.hidden"


def test_a_variant_on_a_spec_without_variants_is_refused(smoke: Path) -> None:
    edit_yaml(smoke / "resnet50" / "submission.yaml", lambda d: d.__setitem__("variant", "13B"))
    report = _validate(smoke)
    assert report.codes() == {"SB-CNS-001"}
    assert report.findings[0].message == 'expected no variant (spec resnet50 has no model variants), found "13B"'


# every layer the level fixes follows the reference


def _relabel(root: Path, bench: str, level: str) -> None:
    meta = root / bench / "submission.yaml"
    meta.write_text(meta.read_text().replace("level: system", f"level: {level}"))
    for run in _runs(root, bench):
        edit_json(run / "result.json", lambda d: d.__setitem__("level", level))


def test_a_system_run_relabelled_hardware_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200-llm")
    _relabel(root, "llm-gpt", "hardware")
    report = _validate(root)
    assert report.codes() == {"SB-CNS-002"}
    assert sorted(f.message for f in report.findings) == [
        'expected attention "sdpa" (layer parallelism_precision at the hardware level follows the reference of '
        'llm-gpt), found "cudnn"',
        "expected micro_batch_size 8 (layer workload at the hardware level follows the reference of llm-gpt), found 16",
    ]
    assert {f.location.json_path for f in report.findings} == {
        "hyperparameters.attention",
        "hyperparameters.micro_batch_size",
    }


def test_a_value_a_rule_accepts_still_follows_the_reference_at_the_hardware_level(bases: Bases, tmp_path: Path) -> None:
    """warmup_epochs has a range rule (0 to 10); at the hardware level it is the reference's (0 at smoke) all the same."""
    root = bases.copy(tmp_path, level="hardware")
    set_hyperparameter(root, "warmup_epochs", 4)
    report = _validate(root)
    assert report.codes() == {"SB-CNS-002"}
    assert report.findings[0].message == (
        "expected warmup_epochs 0 (layer workload at the hardware level follows the reference of resnet50), found 4"
    )


def test_a_reference_value_no_rule_governs_holds_at_the_system_level(tmp_path: Path) -> None:
    """caraml-resnet50 states momentum 0.875 and no rule for it: the system level's scaling rules do not free it."""
    root = _copy(tmp_path, "h200")
    meta = root / "caraml-resnet50" / "submission.yaml"
    meta.write_text(meta.read_text().replace("momentum: 0.875", "momentum: 0.9"))
    for run in _runs(root, "caraml-resnet50"):
        edit_json(run / "result.json", lambda d: d["hyperparameters"].__setitem__("momentum", 0.9))
        _edit_events(run, "momentum", 0.9)
    report = _validate(root)
    assert report.codes() == {"SB-CNS-002"}
    assert report.findings[0].message == (
        "expected momentum 0.875 (layer workload at the system level follows the reference of caraml-resnet50), "
        "found 0.9"
    )


# all runs of one benchmark from the devices and host system.yaml and run 1 name


def test_a_run_spliced_from_another_gpu_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200")
    edit_json(root / "caraml-resnet50" / "run_2" / "power.json", _device(lambda d: d.__setitem__("uuid", OTHER_GPU)))
    report = _validate(root)
    assert report.codes() == {"SB-CNS-003"}
    (finding,) = report.findings
    assert finding.location.file == "caraml-resnet50/run_2/power.json"
    assert finding.message == (
        "expected the devices of run_1 (GPU-6751bb6b-3534-6152-4e78-da33e83c3898 on vm), found in run_2 "
        f"{OTHER_GPU} on vm in place of GPU-6751bb6b-3534-6152-4e78-da33e83c3898 on vm"
    )


def test_a_run_spliced_from_another_host_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200")
    edit_json(root / "caraml-resnet50" / "run_3" / "power.json", lambda d: d.__setitem__("host", "other-node"))
    report = _validate(root)
    assert report.codes() == {"SB-CNS-003"}
    messages = sorted(f.message for f in report.findings)
    assert messages[0].startswith("expected the devices of run_1 (GPU-6751bb6b-3534-6152-4e78-da33e83c3898 on vm), ")
    assert "found in run_3 GPU-6751bb6b-3534-6152-4e78-da33e83c3898 on other-node" in messages[0]
    assert messages[1] == (
        "expected the trace taken on vm (system.yaml operating_system.hostname), found host other-node"
    )


def test_the_committed_submissions_stay_compliant() -> None:
    for name in ("h200", "h200-llm", "h200x2", "h200x2-llm"):
        report = validate_submission(SUBMISSIONS / name)
        assert report.findings == [], [f"{f.code} {f.message}" for f in report.findings]
