"""MLPerf's own compliance checker run in-process, and small MLLOG logs built to compare it with the typed engine."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from mlperf_logging.compliance_checker import mlp_compliance

from specbench.formats.mllog import parse_log
from specbench.formats.mlperf_rules import load_mlperf_rules
from specbench.validator.mlperf_engine import MlperfVerdict, check_mlperf_log

Outcome = Literal["pass", "fail", "stopped"]
Event = dict[str, Any]


@contextmanager
def silenced() -> Iterator[None]:
    """MLPerf's checker logs every message; keep the test output clean, then restore logging."""
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(before)


def real_outcome(path: Path, usage: str, ruleset: str) -> Outcome:
    """MLPerf's checker on one file, as its command line runs it (not werror); 'stopped' when it raises."""
    mlp_compliance.enqueued_configs.clear()  # a checker that raised leaves its queue behind
    checker = mlp_compliance.make_checker(usage, ruleset, True, False)
    try:
        passed = checker.check_file(str(path), f"{usage}_{ruleset}/common.yaml")
    except Exception:  # MLPerf's checker raises on some inputs; its run then fails
        return "stopped"
    return "pass" if passed else "fail"


def engine_outcome(text: str, usage: str, ruleset: str) -> tuple[Outcome, MlperfVerdict]:
    verdict = check_mlperf_log(parse_log(text), load_mlperf_rules(usage, ruleset))
    outcome: Outcome = "stopped" if verdict.stopped else "pass" if verdict.passed else "fail"
    return outcome, verdict


def render(events: list[Event]) -> str:
    return "".join(":::MLLOG " + json.dumps(e) + "\n" for e in events)


def event(key: str, value: Any, time_ms: float, metadata: dict[str, Any] | None = None) -> Event:
    return {
        "namespace": "",
        "time_ms": time_ms,
        "event_type": "POINT_IN_TIME",
        "key": key,
        "value": value,
        "metadata": metadata if metadata is not None else {},
    }


EPOCH = {"epoch_num": 1, "samples_count": 1000, "epoch_count": 1, "first_epoch_num": 0}
"""Metadata that satisfies every ruleset's block, epoch and eval lines."""


def build_log(
    usage: str, benchmark: str, division: str, hyper: dict[str, Any], evals: list[tuple[str, Any, dict[str, Any]]]
) -> list[Event]:
    """A log that MLPerf's common rules accept: identity, init, hyperparameters, one block with evaluations, stop."""
    lines: list[tuple[str, Any, dict[str, Any] | None]] = [
        ("submission_org", "specbench", None),
        ("submission_platform", "test", None),
        ("submission_division", division, None),
        ("submission_status", "onprem", None),
        ("submission_benchmark", benchmark, None),
        ("cache_clear", True, None),
        ("init_start", None, None),
    ]
    if usage == "hpc":
        lines += [("number_of_nodes", 1, None), ("accelerators_per_node", 4, None)]
    lines += [(key, value, None) for key, value in hyper.items()]
    lines += [("init_stop", None, None), ("run_start", None, None)]
    if usage == "hpc":
        lines += [("staging_start", None, None), ("staging_stop", None, None)]
    lines += [("block_start", None, EPOCH), ("epoch_start", None, EPOCH), ("eval_start", None, EPOCH)]
    lines += [(key, value, {**EPOCH, **meta}) for key, value, meta in evals]
    lines += [("eval_stop", None, EPOCH), ("epoch_stop", None, EPOCH), ("block_stop", None, EPOCH)]
    defaults = {"train_samples": 1000, "eval_samples": 100}
    lines += [(key, value, None) for key, value in defaults.items() if key not in hyper]
    lines += [("run_stop", None, {"status": "success"})]
    return [event(key, value, 1000.0 * i, meta) for i, (key, value, meta) in enumerate(lines)]


Mutation = Callable[[list[Event]], None]


def where(events: list[Event], key: str) -> int:
    return next(i for i, e in enumerate(events) if e["key"] == key)


def drop(key: str) -> Mutation:
    def edit(events: list[Event]) -> None:
        events[:] = [e for e in events if e["key"] != key]

    return edit


def set_value(key: str, value: Any) -> Mutation:
    def edit(events: list[Event]) -> None:
        for e in events:
            if e["key"] == key:
                e["value"] = value

    return edit


def repeat(key: str, value: Any) -> Mutation:
    """A second line of `key` right after the first, with `value`."""

    def edit(events: list[Event]) -> None:
        i = where(events, key)
        events.insert(i + 1, {**copy.deepcopy(events[i]), "value": value})

    return edit


def move_before(key: str, other: str) -> Mutation:
    def edit(events: list[Event]) -> None:
        if key == other:
            return
        moved = events.pop(where(events, key))
        events.insert(where(events, other), moved)

    return edit


def set_metadata(key: str, metadata: dict[str, Any]) -> Mutation:
    def edit(events: list[Event]) -> None:
        for e in events:
            if e["key"] == key:
                e["metadata"] = metadata

    return edit


def mutated(events: list[Event], *mutations: Mutation) -> list[Event]:
    out = copy.deepcopy(events)
    for mutation in mutations:
        mutation(out)
    return out
