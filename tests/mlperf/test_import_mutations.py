"""Imported MLPerf logs and power logs, mutated at random: validation and import may reject, never crash."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlperf_support import TOKEN, Imported

from specbench.files import write_manifest
from specbench.formats.mlperf_import import SourceFile
from specbench.mlperf.power import check_markers, parse_power_log
from specbench.validator import validate_submission

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
KEYS = st.sampled_from(
    ["run_start", "run_stop", "init_start", "init_stop", "eval_accuracy", "block_start", "block_stop", "epoch_start",
     "seed", "submission_division", "global_batch_size", "opt_name", "lars_epsilon", "cache_clear", "power_reading"]
)  # fmt: skip


@st.composite
def edits(draw: st.DrawFn) -> list[tuple[str, int, Any]]:
    kinds = st.sampled_from(["drop", "value", "metadata", "key", "time", "garble", "duplicate"])
    return draw(st.lists(st.tuples(kinds, st.integers(0, 10_000), JSON_VALUES | KEYS), min_size=1, max_size=6))


def mutate(lines: list[str], changes: list[tuple[str, int, Any]]) -> list[str]:
    for kind, where, value in changes:
        marked = [i for i, line in enumerate(lines) if TOKEN in line]
        if not marked:
            break
        i = marked[where % len(marked)]
        try:
            event = json.loads(lines[i].split(TOKEN, 1)[1])
        except ValueError:
            continue  # garbled by an earlier change
        if kind == "drop":
            del lines[i]
            continue
        if kind == "duplicate":
            lines.insert(i, lines[i])
            continue
        if kind == "garble":
            lines[i] = lines[i][: max(len(TOKEN), len(lines[i]) * (where % 7) // 7)]
            continue
        field = {"value": "value", "metadata": "metadata", "key": "key", "time": "time_ms"}[kind]
        event[field] = value
        lines[i] = TOKEN + json.dumps(event)
    return lines


@pytest.fixture(scope="module")
def outputs(imported: Imported) -> dict[str, Path]:
    """The imported submissions by system name (small values, so that hypothesis reports stay short)."""
    return {s.imported.output.name: s.imported.output for s in imported.outcome.systems}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=edits(), run=st.integers(1, 5), which=st.sampled_from(["tinybox_green", "1xSMC-H100-SXM-80GB"]))
def test_mutated_imported_logs_never_crash_validation(
    outputs: dict[str, Path], tmp_path_factory: Any, changes: list[tuple[str, int, Any]], run: int, which: str
) -> None:
    source = outputs[which]
    root = tmp_path_factory.mktemp("mutated") / source.parent.name / source.name
    shutil.copytree(source, root)
    target = (
        root / "mlperf-resnet50" / f"run_{run}" / ("log.txt" if run % 2 or which == "tinybox_green" else "power.csv")
    )
    if target.name == "log.txt":
        target.write_text("\n".join(mutate(target.read_text().splitlines(), changes)) + "\n")
    else:
        rows = target.read_text().splitlines()
        for _, where, value in changes:
            rows[1 + where % (len(rows) - 1)] = str(value)
        target.write_text("\n".join(rows) + "\n")
    write_manifest(root)
    report = validate_submission(root)
    assert report.usable and report.benchmarks and len(report.benchmarks[0].runs) == 5
    if target.name == "log.txt" and target.read_bytes() != (source / target.relative_to(root)).read_bytes():
        assert "SB-MLP-004" in report.codes()  # no longer the MLPerf log that import.json names


@settings(max_examples=40, deadline=None)
@given(changes=edits())
def test_mutated_power_logs_never_crash_the_power_reader(changes: list[tuple[str, int, Any]]) -> None:
    lines = [
        TOKEN + json.dumps({"namespace": "", "time_ms": t, "event_type": "POINT_IN_TIME", "key": key, "value": v, "metadata": ""})
        for t, key, v in [(0, "power_measurement_start", None), *((1000 * k, "power_reading", 6000 + k) for k in range(5)),
                          (5000, "power_measurement_stop", None)]
    ]  # fmt: skip
    text = "\n".join(mutate(lines, changes))
    log = parse_power_log(text, SourceFile(path="power/r/node_0.txt", sha256="0" * 64, bytes=len(text)))
    check_markers(log)
    assert all(r.power_w >= 0 for r in log.readings)
    assert all(p.code in ("SB-MLP-005", "SB-MLP-006") for p in log.problems)


def test_the_mutation_helper_changes_what_it_says(tmp_path: Path) -> None:
    lines = [TOKEN + json.dumps({"key": "a", "value": 1, "time_ms": 0, "metadata": {}}), "plain"]
    assert mutate(list(lines), [("value", 0, 7)]) == [
        TOKEN + json.dumps({"key": "a", "value": 7, "time_ms": 0, "metadata": {}}),
        "plain",
    ]
    assert mutate(list(lines), [("drop", 3, None)]) == ["plain"]
