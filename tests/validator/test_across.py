"""Evidence compared across submissions (validator.across, SB-DUP-*), and ties in the ranking.

The copies here are what a forger submits: renamed, names edited inside, manifest re-signed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from make_submission import make_submission
from mutate import edit_log, edit_yaml, read_rows, resign, write_rows
from support.committed import committed, committed_submissions

from specbench.cli import main
from specbench.formats.mllog import parse_log
from specbench.scoring.leaderboard import build
from specbench.validator import discover, validate_many, validate_submission
from specbench.validator.across import log_fingerprint
from specbench.validator.model import Report

COMMITTED = committed()
DUP = {"SB-DUP-001", "SB-DUP-002", "SB-DUP-003", "SB-DUP-004"}


def renamed_copy(root: Path, into: Path, org: str, system: str) -> Path:
    """A copy of ORG/SYSTEM as into/org/system, with system.yaml, submission.yaml and the logs naming it, re-signed."""
    target = into / org / system
    shutil.copytree(root, target)
    edit_yaml(target / "system.yaml", lambda d: d.update(system=system, submitter=org))
    names = {"submission_org": org, "submission_platform": system}
    for meta in sorted(target.glob("*/submission.yaml")):
        edit_yaml(meta, lambda d: d.update(system=system, submitter=org))
        for run in sorted(meta.parent.glob("run_*")):
            edit_log(target, lambda events: _rename(events, names), int(run.name[4:]), meta.parent.name)
    resign(target)
    return target


def _rename(events: list[dict[str, Any]], names: dict[str, str]) -> None:
    for event in events:
        if event["key"] in names:
            event["value"] = names[event["key"]]


def dup_findings(report: Report) -> list[tuple[str, str | None, str]]:
    return [(f.code, f.location.file, f.message) for f in report.findings if f.code in DUP]


def test_a_renamed_copy_is_an_error_on_both_and_neither_is_ranked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = tmp_path / "specbench" / "h200"
    shutil.copytree(COMMITTED / "h200", original)
    shutil.copytree(COMMITTED / "h200x2-one-gpu", tmp_path / "specbench" / "h200x2-one-gpu")  # honest, same spec
    copy = renamed_copy(original, tmp_path, "acme", "h200-b")
    assert validate_submission(copy).findings == []  # alone, the copy passes every check
    serial = validate_many(discover(tmp_path), jobs=1)
    parallel = validate_many(discover(tmp_path), jobs=3)  # workers drop the parsed logs: digests come back
    assert [r.to_dict() for r in serial] == [r.to_dict() for r in parallel]
    by_name = {Path(r.root).name: r for r in serial}
    assert dup_findings(by_name["h200x2-one-gpu"]) == []
    for mine, theirs in (("h200", "h200-b"), ("h200-b", "h200")):
        report, other = by_name[mine], by_name[theirs]
        assert report.codes() == DUP
        for _, file, message in dup_findings(report):
            assert file is not None and file.startswith("caraml-resnet50/run_")
            assert other.root in message, message
        logs = [(f, m) for c, f, m in dup_findings(report) if c == "SB-DUP-001"]
        assert [f for f, _ in logs] == [f"caraml-resnet50/run_{n}/log.txt" for n in (1, 2, 3)]
        assert f"{other.root}/caraml-resnet50/run_1/log.txt" in logs[0][1]
    assert main(["score", str(tmp_path), "--format", "json", "--jobs", "1"]) == 0
    board = json.loads(capsys.readouterr().out)
    ranks = {e["system"]: (e["rank"], e["rank_per_w"]) for g in board["groups"] for e in g["entries"]}
    assert ranks == {"h200": (None, None), "h200-b": (None, None), "h200x2-one-gpu": (1, 1)}


def test_the_same_folder_twice_is_one_submission(tmp_path: Path) -> None:
    root = tmp_path / "specbench" / "h200"
    shutil.copytree(COMMITTED / "h200", root)
    reports = validate_many([root, root / "caraml-resnet50", root])
    assert [r.findings for r in reports] == [[], [], []]


def test_score_lists_a_folder_named_twice_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "specbench" / "h200"
    shutil.copytree(COMMITTED / "h200", root)
    (tmp_path / "link").symlink_to(root)
    assert main(["score", str(root), str(root), str(tmp_path / "link"), "--format", "json", "-j", "1"]) == 0
    entries = [e for g in json.loads(capsys.readouterr().out)["groups"] for e in g["entries"]]
    assert [(e["system"], e["rank"]) for e in entries] == [("h200", 1)]


def test_the_log_digest_ignores_what_a_renamer_edits_and_nothing_of_the_run() -> None:
    run = COMMITTED / "h200" / "caraml-resnet50"
    events = [
        json.loads(line.removeprefix(":::MLLOG ")) for line in (run / "run_1" / "log.txt").read_text().splitlines()
    ]

    def digest(edit: Callable[[dict[str, Any]], object] = lambda e: None, reverse: bool = False) -> str | None:
        edited = json.loads(json.dumps(events))
        for event in edited:
            edit(event)
        lines = [":::MLLOG " + json.dumps(e) for e in (reversed(edited) if reverse else edited)]
        return log_fingerprint(parse_log("\n".join(lines) + "\n"))

    def renamed(event: dict[str, Any]) -> None:
        names = {"submission_org": "acme", "submission_platform": "h200-b", "seed": 7}
        event["value"] = names.get(event["key"], event["value"])
        event["time_ms"] += 86_400_000
        event["metadata"].update(file="x.py", lineno=1)

    def shifted(key: str, ms: int) -> Callable[[dict[str, Any]], None]:
        return lambda event: event.__setitem__("time_ms", event["time_ms"] + (ms if event["key"] == key else 0))

    base = digest()
    assert base is not None
    assert digest(renamed, reverse=True) == base
    assert digest(shifted("block_stop", 1)) != base
    assert digest(lambda e: e["metadata"].update(samples_count=1) if e["key"] == "block_start" else None) != base
    assert log_fingerprint(parse_log((run / "run_2" / "log.txt").read_text())) not in (None, base)


def test_one_power_series_copied_into_another_submission(tmp_path: Path) -> None:
    first = make_submission(tmp_path)
    second = make_submission(tmp_path, system="box2")
    source, target = read_rows(first), read_rows(second)
    assert len(source) == len(target)
    device, power = source[0].index("device"), source[0].index("power_instant_w")
    for row, copied in zip(target[1:], source[1:], strict=True):
        if row[device] == "nvml:0":
            row[power] = copied[power]
    write_rows(second, target)
    resign(second)
    one, two = validate_many([first, second])
    assert one.codes() == {"SB-DUP-002"}
    assert "SB-DUP-002" in two.codes() and not two.codes() & (DUP - {"SB-DUP-002"})
    for report, other in ((one, two), (two, one)):
        ((_, file, message),) = dup_findings(report)
        assert file == "resnet50/run_1/power.csv"
        assert f"nvml:0 equal to the power readings of nvml:0 in {other.root}/resnet50/run_1/power.csv" in message


def test_one_gpu_in_two_submissions_at_once(tmp_path: Path) -> None:
    """Same GPU UUIDs: over the same wall time an error on both; half an hour later no finding."""
    first = make_submission(tmp_path)
    overlapping = make_submission(tmp_path, system="box2", stagger=0, clock_shift_s=5.0, reach_epoch=4)
    later = make_submission(tmp_path, system="box3", stagger=0, clock_shift_s=1800.0, reach_epoch=5)
    one, two, three = validate_many([first, overlapping, later])
    assert (one.codes(), two.codes(), three.codes()) == ({"SB-DUP-003"}, {"SB-DUP-003"}, set())
    for report, other in ((one, two), (two, one)):
        found = dup_findings(report)
        assert [file for _, file, _ in found] == ["resnet50/run_1/power.json"] * 2
        assert [message.split(" to measure one run at a time, ")[0] for _, _, message in found] == [
            f"expected device GPU-0000000{i}-aaaa-bbbb-cccc-00000000000{i}" for i in (0, 1)
        ]
        assert all(f"{other.root}/resnet50/run_1/power.json too, for " in message for _, _, message in found)


def test_honest_committed_submissions_share_no_evidence() -> None:
    """Two-GPU runs and one-GPU subsets of the same machines, at different times: nothing in common."""
    reports = validate_many(committed_submissions(), jobs=1)
    assert len(reports) >= 10
    assert [dup_findings(r) for r in reports] == [[] for _ in reports]


def test_equal_scores_get_equal_ranks_whatever_the_input_order(tmp_path: Path) -> None:
    """Competition ranks (1, 1, 3); tied rows by submitter and system. Validated one by one, so that the copy's
    tie is not refused as SB-DUP-*: this is the ranking alone."""
    fast = make_submission(tmp_path, spec="caraml-resnet50", profile="official", system="fast", throughput_s=10.0)
    slow = make_submission(tmp_path, spec="caraml-resnet50", profile="official", system="slow", throughput_s=20.0)
    twin = renamed_copy(fast, tmp_path, "aaa", "zz-fast")
    reports = [validate_submission(p) for p in (fast, slow, twin)]
    orders = [reports, reports[::-1], [reports[1], reports[2], reports[0]]]
    tables = []
    for order in orders:
        (group,) = build(order).groups
        tables.append([(e.submitter, e.system, e.rank, e.rank_per_w) for e in group.entries])
    assert tables[0] == [("aaa", "zz-fast", 1, 1), ("acme", "fast", 1, 1), ("acme", "slow", 3, 3)]
    assert tables[1] == tables[0] and tables[2] == tables[0]
