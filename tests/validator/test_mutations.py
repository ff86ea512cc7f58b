"""Property: the validator never raises on a mutated submission and never accepts a mutation that breaks a rule.

Each mutation below breaks at least one rule by construction (every line the generator writes
is needed, every number flipped is one the validator checks), so the only right answer is
"non-compliant". Most are re-signed (manifest rewritten) so that the deeper checks, not the
hashes, must catch them; tampering is also tried without re-signing.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutate import read_events, read_rows, resign, run_dir, window_rows, write_events, write_rows
from validator_bases import Bases

from specbench.validator import Limits, validate_submission

LIMITS = Limits(log_bytes=64 * 1024, csv_bytes=512 * 1024, json_bytes=64 * 1024, yaml_bytes=16 * 1024)
"""Small bounds, so a 'huge file' stays small on disk; the generated files fit well inside them."""
FILES = (
    "system.yaml",
    "manifest.json",
    "resnet50/submission.yaml",
    "resnet50/run_1/log.txt",
    "resnet50/run_1/result.json",
    "resnet50/run_1/state.json",
    "resnet50/run_1/power.csv",
    "resnet50/run_1/power.json",
)
FLIPPABLE = (
    "seed",
    "global_batch_size",
    "train_samples",
    "eval_samples",
    "eval_accuracy",
    "momentum",
    "base_learning_rate",
)

Mutation = tuple[str, Callable[[Path], None], bool]


def _pick(items: list[Any], fraction: float) -> int:
    return min(int(fraction * len(items)), len(items) - 1)


def delete_line(fraction: float) -> Mutation:
    def apply(root: Path) -> None:
        events = read_events(root)
        events.pop(_pick(events, fraction))
        write_events(root, events)

    return "delete a log line", apply, True


def duplicate_line(fraction: float) -> Mutation:
    def apply(root: Path) -> None:
        events = read_events(root)
        i = _pick(events, fraction)
        events.insert(i + 1, json.loads(json.dumps(events[i])))
        write_events(root, events)

    return "duplicate a log line", apply, True


def truncate_log(fraction: float) -> Mutation:
    def apply(root: Path) -> None:
        events = read_events(root)
        write_events(root, events[: _pick(events[:-1], fraction)])

    return "truncate the log", apply, True


def flip_number(fraction: float, factor: float) -> Mutation:
    def apply(root: Path) -> None:
        events = read_events(root)
        targets = [(e, "value") for e in events if e["key"] in FLIPPABLE]
        targets += [(e, "epoch_num") for e in events if "epoch_num" in e["metadata"]]
        targets += [(e, "time_ms") for e in events if e["key"] in ("run_start", "run_stop")]
        event, field = targets[_pick(targets, fraction)]
        holder = event["metadata"] if field == "epoch_num" else event
        old = holder[field]
        if field == "time_ms":
            holder[field] = old + (1 if factor > 1 else -1) * 5000
        elif isinstance(old, int):
            holder[field] = old + max(1, round(abs(factor) * 3))
        else:
            holder[field] = old * factor
        write_events(root, events)

    return "flip a checked number", apply, True


def non_finite(where: str, fraction: float, token: str) -> Mutation:
    def apply(root: Path) -> None:
        path = root / where
        text = path.read_text()
        spots = [i for i, ch in enumerate(text) if ch.isdigit() and (i == 0 or not text[i - 1].isalnum())]
        at = spots[_pick(spots, fraction)]
        end = at
        while end < len(text) and (text[end].isdigit() or text[end] in ".e-+"):
            end += 1
        path.write_text(text[:at] + (token if where.endswith((".json", ".txt")) else token.lower()) + text[end:])

    return f"NaN or infinity in {where}", apply, True


def reorder(fraction: float, run_stop_first: bool) -> Mutation:
    def apply(root: Path) -> None:
        events = read_events(root)
        if run_stop_first:
            stop = events.pop()
            events.insert(_pick(events, fraction), stop)
        else:
            events.append(events.pop(_pick(events[:-1], fraction)))
        write_events(root, events)

    return "reorder log events", apply, True


def tamper(fraction: float, byte: int) -> Mutation:
    def apply(root: Path) -> None:
        path = root / FILES[1 + _pick(list(FILES[1:]), fraction)] if fraction < 0.9 else root / "manifest.json"
        if path.name == "manifest.json":
            data = json.loads(path.read_text())
            entry = next(iter(data["files"].values()))
            entry["sha256"] = ("f" if entry["sha256"][0] != "f" else "0") + entry["sha256"][1:]
            path.write_text(json.dumps(data))
            return
        raw = bytearray(path.read_bytes())
        i = _pick(list(raw), (fraction * 7) % 1)
        raw[i] = (raw[i] + 1 + byte % 255) % 256
        path.write_bytes(bytes(raw))

    return "tamper with a file", apply, False


def swap_devices(fraction: float) -> Mutation:
    def apply(root: Path) -> None:
        rows = read_rows(root)
        start, stop = window_rows(rows)
        i = start + 2 * _pick(list(range(start, stop + 1, 2)), fraction)
        rows[i][3], rows[i + 1][3] = rows[i + 1][3], rows[i][3]
        write_rows(root, rows)

    return "swap the devices of a sweep", apply, True


def truncate_trace(fraction: float) -> Mutation:
    def apply(root: Path) -> None:
        path = run_dir(root) / "power.csv"
        rows = read_rows(root)
        start, stop = window_rows(rows)
        keep = start + _pick(list(range(start, stop - 2 * 15)), fraction)
        text = path.read_text()
        cut = sum(len(",".join(r)) + 1 for r in rows[:keep]) + int(fraction * 40)
        path.write_text(text[:cut])

    return "truncate the power trace", apply, True


def huge(where: str) -> Mutation:
    def apply(root: Path) -> None:
        path = root / where
        with path.open("a") as handle:
            handle.write("\n" + "x" * (LIMITS.for_name(where) + 1))

    return f"grow {where} past its bound", apply, where != "manifest.json"


def garbage(where: str, data: bytes) -> Mutation:
    return f"replace {where} with bytes", lambda root: (root / where).write_bytes(data), where != "manifest.json"


mutations = st.one_of(
    st.builds(delete_line, st.floats(0, 1)),
    st.builds(duplicate_line, st.floats(0, 1)),
    st.builds(truncate_log, st.floats(0, 1)),
    st.builds(flip_number, st.floats(0, 1), st.sampled_from([0.5, 0.97, 1.03, 2.0, -1.0])),
    st.builds(
        non_finite,
        st.sampled_from(FILES[3:5] + FILES[6:7]),
        st.floats(0, 1),
        st.sampled_from(["NaN", "Infinity", "1e999"]),
    ),
    st.builds(reorder, st.floats(0, 1), st.booleans()),
    st.builds(tamper, st.floats(0, 1), st.integers(0, 255)),
    st.builds(swap_devices, st.floats(0, 1)),
    st.builds(truncate_trace, st.floats(0, 1)),
    st.builds(huge, st.sampled_from(FILES)),
    st.builds(garbage, st.sampled_from(FILES), st.binary(max_size=64)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations)
def test_mutations_are_never_accepted_and_never_crash(bases: Bases, mutation: Mutation) -> None:
    name, apply, sign = mutation
    with tempfile.TemporaryDirectory() as folder:
        root = bases.copy(Path(folder))
        apply(root)
        if sign:
            resign(root)
        report = validate_submission(root, limits=LIMITS)
        assert report.usable
        assert not report.compliant(), f"{name} was accepted"
        assert all(f.message and f.hint for f in report.findings)
        json.dumps(report.to_dict(), allow_nan=False)


def test_the_unmutated_base_is_compliant_under_the_small_bounds(bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)
    assert validate_submission(root, limits=LIMITS).findings == []
    assert math.isfinite(sum((root / f).stat().st_size for f in FILES))
    shutil.rmtree(root)
