"""Hostile submissions scored beside an honest one (issue 45): nothing leaks, nothing crashes or hangs, the refusal
names the file, the honest entry is still ranked and drawn, every output escapes what it quotes.

Each case of tests/support/hostile.py is built and scored once (every `validate` and `score` format, in one
process bounded in time and memory), and each test below reads what that run wrote. docs/security.md states
what these tests hold specbench to.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.hostile import (
    CASES,
    CPU,
    FORGED_START,
    GPU,
    ORG,
    SCRIPT,
    Board,
    Case,
    Scored,
    build,
    cli_env,
    score,
    world_size,
)

REFUSED = tuple(case for case in CASES if case.id not in {"system-yaml-cpu-model", "system-yaml-declared-notes",
                "submission-yaml-dataset-name", "result-json-power-reason", "result-json-reason",
                "submitter-minus-formula", "world-size-8-on-2-cores"})  # fmt: skip
"""The cases whose attack is an error: all but free text outside identity strings, a valid name, a consistent scale."""
LISTED = tuple(case for case in CASES if case not in REFUSED)
TEXT_OUTPUTS = ("validate-text", "score-table")
"""Outputs read in a terminal: control characters must come out escaped."""
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What OWASP's CSV injection advice neutralises at the start of a cell."""


@pytest.fixture(scope="session")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Case], Scored]:
    """Each case built and scored on first use, then shared by every test that reads it."""
    done: dict[str, Scored] = {}

    def get(case: Case) -> Scored:
        if case.id not in done:
            done[case.id] = score(build(case, tmp_path_factory.mktemp(case.id)))
        return done[case.id]

    return get


# --- reading the outputs ----------------------------------------------------------------------------------------


def json_output(result: Scored, name: str) -> Any:
    return json.loads(result.outputs[name].stdout)


def hostile_report(result: Scored) -> dict[str, Any]:
    """The hostile copy's report in `validate --format json`."""
    reports = json_output(result, "validate-json")["submissions"]
    mine = [r for r in reports if Path(r["root"]).parts[-2:] == (result.board.case.org, result.board.case.base)]
    assert len(mine) == 1, f"expected one report of the hostile copy, found {[r['root'] for r in reports]}"
    return dict(mine[0])


def score_entries(result: Scored) -> Iterator[dict[str, Any]]:
    for group in json_output(result, "score-json")["groups"]:
        yield from group["entries"]


def visible(path: str) -> str:
    """The part of a path before its first control or format character (what any escaping leaves as it is)."""
    for at, char in enumerate(path):
        if unicodedata.category(char) in ("Cc", "Cf", "Cs"):
            return path[:at]
    return path


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def raw_control(text: str) -> list[str]:
    """Control and bidirectional characters a terminal would act on, and lines forging the validator's verdict."""
    problems = [
        f"raw {unicodedata.name(char, f'U+{ord(char):04X}')} (U+{ord(char):04X})"
        for char in sorted(set(text.replace("\r\n", "\n")))
        if (unicodedata.category(char) == "Cc" and char not in "\n\t") or unicodedata.category(char) == "Cf"
    ]
    problems += [f"a forged line: {line!r}" for line in text.splitlines() if line.strip().startswith(FORGED_START)]
    return problems


def markdown_problems(text: str) -> list[str]:
    problems = raw_control(text)
    problems += [f"raw {piece!r}" for piece in (SCRIPT, "](javascript:") if piece in text]
    widths: set[int] = set()
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            widths.add(len(re.findall(r"(?<!\\)\|", line)))
        elif widths:
            if len(widths) > 1:
                problems.append(f"a table whose rows have {sorted(widths)} cell separators (a raw '|' in a cell)")
            widths = set()
    return problems


def csv_problems(text: str) -> list[str]:
    return [
        f"row {row_number}, cell {cell!r} starts with {cell[0]!r}"
        for row_number, row in enumerate(csv.reader(io.StringIO(text, newline="")), 1)
        for cell in row
        if cell.startswith(FORMULA_START) and not is_number(cell)
    ]


def html_problems(text: str) -> list[str]:
    problems = [f"raw {SCRIPT!r}"] if SCRIPT in text else []
    problems += [
        f"a javascript: link: {m.group(0)!r}"
        for m in re.finditer(r"(?:href|src)\s*=\s*[\"']?\s*javascript:", text, re.I)
    ]
    return problems


# --- the tests --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_canary_appears_in_no_output(case: Case, scored: Callable[[Case], Scored]) -> None:
    """No byte of a file outside the submission (nor of the process's environment) in any output or written file."""
    result = scored(case)
    leaked = [
        f"{name}: ...{data[max(0, data.find(mark) - 300) : data.find(mark) + 100].decode(errors='replace')}..."
        for name, data in result.everything().items()
        for mark in (m.encode() for m in result.board.marks)
        if mark in data
    ]
    assert not leaked, "a byte from outside the submission leaked into " + "; ".join(leaked)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_command_ends_without_a_crash_or_a_hang(case: Case, scored: Callable[[Case], Scored]) -> None:
    """Exit 3 is for specbench's own bugs, never a submission's content; no command outlives its time."""
    result = scored(case)
    assert result.problem is None, f"the scoring process did not finish: {result.problem}"
    for name, output in result.outputs.items():
        assert output.rc is not None, f"{name} still ran after its time limit; it wrote: {output.err[-2000:]}"
        assert output.rc != 3 and "Traceback" not in output.err + output.out, (
            f"{name}: exit {output.rc}\n{output.err[-3000:]}"
        )
    assert result.outputs.keys() == {"validate-text", "validate-json", "score-table", "score-markdown", "score-csv",
                                     "score-json", "score-html"}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED, ids=str)
def test_the_hostile_entry_is_refused_naming_the_offending_file(case: Case, scored: Callable[[Case], Scored]) -> None:
    result = scored(case)
    offending = result.board.offending
    assert result.outputs["validate-json"].rc in (1, 2) and result.outputs["validate-text"].rc in (1, 2)
    report = hostile_report(result)
    assert not report["compliant"]
    named = [f for f in report["findings"] if f["severity"] == "error" and f["file"] in offending]
    assert named, f"no error names any of {offending}; the errors: " + "; ".join(
        f"{f['code']} {f['file']}: {f['message']}" for f in report["findings"] if f["severity"] == "error"
    )
    text = result.outputs["validate-text"].out
    assert any(visible(path) in text for path in offending), f"the text report names none of {offending}:\n{text}"
    hostile = [e for e in score_entries(result) if (e["submitter"], e["system"]) == (case.org, case.base)]
    assert all(not e["compliant"] and e["rank"] is None for e in hostile), hostile


@pytest.mark.parametrize("case", LISTED, ids=str)
def test_a_hostile_entry_that_is_not_refused_is_listed(case: Case, scored: Callable[[Case], Scored]) -> None:
    """Free text outside identity strings, a valid name and a consistent scale are no error: the entry is listed."""
    result = scored(case)
    assert [(e["submitter"], e["system"]) for e in score_entries(result) if e["system"] == case.base] == [
        (case.org, case.base)
    ]
    assert f"{case.org}--{case.base}--" in " ".join(result.html), sorted(result.html)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_honest_entry_is_still_scored_and_rendered(case: Case, scored: Callable[[Case], Scored]) -> None:
    result = scored(case)
    board: Board = result.board
    honest, name = board.honest.name, f"{ORG}/{board.honest.name}"
    assert [
        r["compliant"] for r in json_output(result, "validate-json")["submissions"] if r["root"].endswith(name)
    ] == [True]
    for output in ("score-table", "score-markdown", "score-csv", "score-json", "score-html"):
        assert result.outputs[output].rc == 0, (
            f"{output}: exit {result.outputs[output].rc}\n{result.outputs[output].err[-2000:]}"
        )
    entries = [e for e in score_entries(result) if (e["submitter"], e["system"]) == (ORG, honest)]
    assert [e["compliant"] for e in entries] == [True]
    assert [e["rank"] for e in entries] == [1 if honest == GPU else None]  # the CPU one is a smoke run: never ranked
    assert name in result.outputs["score-table"].out
    assert name in result.outputs["score-markdown"].out
    rows = list(csv.DictReader(io.StringIO(result.outputs["score-csv"].out, newline="")))
    assert [(r["submitter"], r["system"]) for r in rows].count((ORG, honest)) == 1
    page = f"pages/{ORG}--{honest}--{board.honest_benchmark}.html"
    assert page in result.html, sorted(result.html)
    text = result.html[page].decode()
    assert "not rendered" not in text
    assert page in result.html["index.html"].decode()
    if honest == GPU:
        assert "<svg" in text  # its power trace, drawn


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_output_escapes_what_it_quotes(case: Case, scored: Callable[[Case], Scored]) -> None:
    """Terminal and text report: no raw control character, no forged line; Markdown: no raw HTML, link or pipe;
    CSV: no cell a spreadsheet evaluates; HTML and SVG: no script; JSON: well-formed."""
    result = scored(case)
    problems: dict[str, list[str]] = {}
    for name, output in result.outputs.items():
        problems[f"{name} stderr"] = raw_control(output.err)
        if name in TEXT_OUTPUTS:
            problems[name] = raw_control(output.out)
    problems["score-markdown"] = markdown_problems(result.outputs["score-markdown"].out)
    problems["score-csv"] = csv_problems(result.outputs["score-csv"].out)
    for name in ("validate-json", "score-json"):
        json_output(result, name)
    for rel, data in result.html.items():
        problems[f"html/{rel}"] = html_problems(data.decode("utf-8", "backslashreplace"))
    found = {name: found for name, found in problems.items() if found}
    assert not found, "\n".join(f"{name}: {'; '.join(found)}" for name, found in found.items())


# --- reproduce: a re-run's scale --------------------------------------------------------------------------------

LAUNCHED = ("specbench.run.launch", "torch.distributed", "torchrun", " execute ")
"""What a process that a re-run starts has in its command line: the launcher, torchrun, a worker."""


def session_commands(session: int) -> list[str]:
    """The command lines of the processes of a session but its leader."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == session:
            continue
        try:
            if os.getsid(int(entry.name)) != session:
                continue
            found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, ProcessLookupError):
            continue
    return found


def test_reproduce_refuses_a_scale_beyond_the_host_before_starting_anything(tmp_path: Path) -> None:
    """A CPU smoke submission claiming 8 processes on this 2-core host: refused (exit 2) before any process starts.

    The command runs in its own session, watched every 50 ms: a launcher or worker seen in it is killed at
    once (with the whole session) and fails the test.
    """
    processes = max(8, 2 * (os.cpu_count() or 1))
    case = Case(id="reproduce-scale", kind="scale", base=CPU, attack=world_size(processes))
    board = build(case, tmp_path)
    command = [
        sys.executable,
        "-m",
        "specbench.cli",
        "reproduce",
        str(board.hostile),
        "--out",
        "rerun",
        "--power",
        "none",
    ]
    launched: list[str] = []
    with subprocess.Popen(
        command, cwd=tmp_path, env=cli_env(board.env), start_new_session=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and not launched:
            launched = [c for c in session_commands(proc.pid) if any(mark in f" {c} " for mark in LAUNCHED)]
            time.sleep(0.05)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _out, err = proc.communicate()
    assert not launched, f"reproduce started {launched}"
    assert proc.returncode == 2, f"exit {proc.returncode}\n{err[-3000:]}"
    assert "Traceback" not in err
    assert str(processes) in err, err
    assert not list((tmp_path / "rerun").glob("**/run_*")), "a run folder was made"
