"""The MLLOG reader: real file lines, strict fields, and real MLPerf Training logs read like MLPerf's parser reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specbench.formats.mllog import LogEvent, LogProblem, parse_line, parse_log
from specbench.validator.findings import Findings
from specbench.validator.logcheck import check_log
from specbench.validator.model import RunData

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "mlperf-training"
RUN_LOGS = sorted(p for p in CORPUS.rglob("result_*.txt") if p.parent.name == "resnet") if CORPUS.is_dir() else []


def line(**fields: object) -> str:
    event = {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": "seed", "value": 1, "metadata": {}}
    event.update(fields)
    return ":::MLLOG " + json.dumps(event)


def test_events_keep_their_file_line_among_other_lines() -> None:
    text = "starting\n" + line(key="a") + "\r\nnoise :::MLLOG nope? no\n[1,0]<stdout>:" + line(key="b") + "\n"
    log = parse_log(text)
    assert [(e.line, e.key) for e in log.events] == [(2, "a"), (4, "b")]
    assert [(p.line, p.column) for p in log.problems] == [(3, 16)]
    assert log.lines == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            ":::MLLOG {",
            "expected one JSON object after ':::MLLOG ', found Expecting property name enclosed in double quotes",
        ),
        (":::MLLOG [1]", "expected a JSON object, found list"),
        (line(time_ms=float("nan")), "NaN is not a number JSON allows"),
        (
            line(extra=1),
            "expected only the fields namespace, time_ms, event_type, key, value, metadata; found also extra",
        ),
        (line(time_ms=-1), "expected time_ms to be a non-negative number of milliseconds, found -1"),
        (line(time_ms=True), "expected time_ms to be a non-negative number of milliseconds, found True"),
        (
            line(event_type="POINT"),
            "expected event_type to be one of INTERVAL_START, INTERVAL_END, POINT_IN_TIME, found 'POINT'",
        ),
        (line(key=""), "expected key to be a non-empty string, found ''"),
        (line(metadata="file.py:3"), "expected metadata to be an object, found str"),
        (':::MLLOG {"key": 1, "key": 2}', "duplicate key 'key'"),
        (line(value="X").replace('"X"', "1e400"), "number 1e400 is out of range (not finite)"),
    ],
)
def test_bad_lines_are_problems_with_a_reason(text: str, message: str) -> None:
    outcome = parse_line(text, 7)
    assert isinstance(outcome, LogProblem)
    assert outcome.line == 7 and message in outcome.message


def test_missing_fields_are_named() -> None:
    outcome = parse_line(':::MLLOG {"key": "seed", "value": 1}', 1)
    assert isinstance(outcome, LogProblem)
    assert (
        outcome.message
        == "expected fields namespace, time_ms, event_type, key, value, metadata; missing namespace, time_ms, event_type, metadata"
    )


def test_a_good_line_is_an_event() -> None:
    outcome = parse_line(line(key="eval_accuracy", value=0.5, metadata={"epoch_num": 2}), 3)
    assert outcome == LogEvent(3, "", 1000, "POINT_IN_TIME", "eval_accuracy", 0.5, {"epoch_num": 2})
    assert parse_line("no marker here", 1) is None


def test_a_whole_log_reads_as_its_lines_one_by_one() -> None:
    """The one-pass decoding of a long log gives the events and problems of decoding each line alone."""
    good = [line(key=f"k{i}", value=i * 0.5, metadata={"lineno": i}) for i in range(300)]
    for bad in ("", line(time_ms=-1), line(value="X").replace('"X"', "1e400"), line(value=2**63), line(value=-(2**63))):
        lines = [*good, bad, line(value=10**18), line(value=-(10**18))]
        text = "\n".join(lines) + "\n"
        log = parse_log(text)
        one_by_one = [parse_line(t, n) for n, t in enumerate(lines, start=1)]
        assert log.events == [o for o in one_by_one if isinstance(o, LogEvent)]
        assert log.problems == [o for o in one_by_one if isinstance(o, LogProblem)]
    huge = parse_log("\n".join([*good, line(value=10**19)]))
    assert [p.message for p in huge.problems] == [
        "expected one JSON object after ':::MLLOG ', found an integer of 20 digits is out of range (at most 9223372036854775807)"
    ]


@pytest.mark.skipif(not RUN_LOGS, reason="the shared MLPerf corpus is not here")
@pytest.mark.parametrize("path", RUN_LOGS, ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_real_mlperf_logs_read_like_mlperfs_parser(path: Path) -> None:
    parser = pytest.importorskip("mlperf_logging.compliance_checker.mlp_parser.ruleset_400")
    theirs, failed = parser.parse_file(str(path))
    log = parse_log(path.read_text(encoding="latin-1"))
    assert failed == [] and log.problems == []
    assert [(e.key, e.time_ms) for e in log.events] == [(t.key, t.timestamp) for t in theirs]
    raw = path.read_text(encoding="latin-1").splitlines()
    assert all(":::MLLOG" in raw[e.line - 1] and f'"{e.key}"' in raw[e.line - 1] for e in log.events)


def _check(path: Path) -> tuple[RunData, Findings]:
    findings = Findings()
    reading = check_log(
        parse_log(path.read_text(encoding="latin-1")), "log.txt", findings, None, None, incomplete=False
    )
    return RunData.of_log("run_1", 1, "run_1", reading), findings


@pytest.mark.skipif(not RUN_LOGS, reason="the shared MLPerf corpus is not here")
def test_real_logs_give_located_findings_for_what_differs_from_our_format() -> None:
    habana = CORPUS / "v3.1/Intel-HabanaLabs/results/HLS-Gaudi2-PT/resnet/result_0.txt"
    run, findings = _check(habana)
    assert [(f.code, f.message) for f in findings.items] == [
        ("SB-LOG-002", "expected key 'seed' once, found it missing")
    ]
    assert run.status == "success" and run.duration_s == pytest.approx(984.533)

    tiny = CORPUS / "v4.0/tinycorp/results/tinybox_green/resnet/result_0.txt"
    run, findings = _check(tiny)
    assert run.status == "incomplete" and run.run_stop_ms is None
    assert ("SB-LOG-002", None, "expected key 'run_stop' once, found it missing") in [
        (f.code, f.location.line, f.message) for f in findings.items
    ]
    assert ("SB-LOG-004", 8, "expected init_stop as INTERVAL_END, found POINT_IN_TIME") in [
        (f.code, f.location.line, f.message) for f in findings.items
    ]
