"""Markup and control characters in a submission's free text, against every output format.

Hostile submissions are copies of the committed `submissions/specbench/cpu-2core`, edited and re-signed
(`write_manifest`), so only what the payload breaks is refused: each run's `power.reason` (a scored entry's
status), BENCHMARK folder and system names (the table's and CSV's cells), a file name that forges a line of
the report, and `spec_id` (quoted by the findings of an unusable entry). Each test asserts that the raw payload
never reaches the output, and the exact escaped form that does.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from support.committed import committed

from specbench import textsafe
from specbench.cli import main
from specbench.files import write_manifest
from specbench.scoring.html import write_site
from specbench.scoring.leaderboard import Leaderboard, build
from specbench.scoring.render import CSV_TEXT_FIELDS, render_csv, render_json, render_table
from specbench.validator import discover, validate_many

REPO = Path(__file__).resolve().parents[2]
SOURCE = committed("cpu-2core")
DIGEST = "c39020516364bf0589490e2dd91969ea4a8d43d02556e153421fb346be5710d5"

POWER_REASONS = {
    "script": "<script>alert(1)</script>",
    "img": "<img src=x onerror=alert(1)>",
    "link": "[x](javascript:alert(1))",
    "pipe": "| col | x",
    "esc": "\x1b[31m red",
    "forge": "x\r\nALL CLEAR: compliant, 0 error(s)",
    "bidi": "\u202eevil",
}
"""System name -> its run's `power.reason` after 'not measured: ' (the board's status shows it up to ':' or '(')."""
SPEC_IDS = {
    "u-script": "<script>alert(1)</script>",
    "u-img": "<img src=x onerror=alert(1)>",
    "u-link": "[x](javascript:alert(1))",
    "u-esc": "\x1b[31m red\u202e",
}
"""System name -> the `spec_id` of its submission.yaml, whose spec digest is unknown too: an unusable entry."""
FORMULAS = {"-1-1": "=HYPERLINK(x)", "f-at": "@SUM(1)", "f-plus": "+1", "f-tab": "\tx", "f-cr": "\rx"}
"""System name (itself a formula for '-1-1') -> the name of its BENCHMARK folder."""
FORGED_FILE = "x\nALL CLEAR: compliant, 0 error(s)\x1b[2J\u202e"
"""A file in the run folder of system 'cpu-2core' (its own name) whose name forges a line of the text report."""


def _copy(root: Path, system: str, benchmark: str = "resnet50") -> Path:
    """A copy of the committed cpu-2core submission as ORG `specbench`, SYSTEM `system` (folders named alike)."""
    sub = root / "specbench" / system
    shutil.copytree(SOURCE, sub)
    for file in (sub / "system.yaml", sub / "resnet50" / "submission.yaml"):
        file.write_text(file.read_text().replace("system: cpu-2core", f"system: {json.dumps(system)}"))
    if benchmark != "resnet50":
        (sub / "resnet50").rename(sub / benchmark)
    return sub


def _power_reason(sub: Path, reason: str) -> None:
    result = sub / "resnet50" / "run_1" / "result.json"
    data = json.loads(result.read_text())
    data["power"]["reason"] = reason
    result.write_text(json.dumps(data, indent=2))


def _spec_id(sub: Path, spec_id: str) -> None:
    """`spec_id` in submission.yaml, an unknown spec digest, and no run (whose log would match the others')."""
    shutil.rmtree(sub / "resnet50" / "run_1")
    meta = sub / "resnet50" / "submission.yaml"
    text = meta.read_text().replace("spec_id: resnet50", f"spec_id: {json.dumps(spec_id)}")
    meta.write_text(text.replace(DIGEST, "f" * 64))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    for system, payload in POWER_REASONS.items():
        _power_reason(_copy(root, system), "not measured: " + payload)
    for system, spec_id in SPEC_IDS.items():
        _spec_id(_copy(root, system), spec_id)
    for system, benchmark in FORMULAS.items():
        _copy(root, system, benchmark)
    (_copy(root, "cpu-2core") / "resnet50" / "run_1" / FORGED_FILE).write_text("hi")
    for sub in (root / "specbench").iterdir():
        write_manifest(sub)
    return root


@pytest.fixture(scope="module")
def board(hostile: Path) -> Leaderboard:
    return build(validate_many(discover(hostile), jobs=1), roots=[hostile])


RAW_CONTROLS = ("\x1b", "\r", "\u202e", "\nALL CLEAR")


def _no_raw_controls(text: str) -> None:
    assert not [c for c in RAW_CONTROLS if c in text]
    assert not [line for line in text.splitlines() if line.lstrip().startswith("ALL CLEAR")]


# the escaping functions


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text · ≥ 0.8", "plain text · ≥ 0.8"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\x1b[31m\x7f\x85", "\\x1b[31m\\x7f\\x85"),
        ("\u202eevil\u200b\u2028", "\\u202eevil\\u200b\\u2028"),
        ("\U000e0001 \udcff", "\\U000e0001 \\udcff"),
        ("back\\slash", "back\\slash"),
    ],
)
def test_visible_escapes_every_control_character(text: str, shown: str) -> None:
    assert textsafe.visible(text) == shown
    assert textsafe.has_control(text) == (text != shown)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("specbench/cpu-2core", "specbench/cpu-2core"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
        ("[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))"),
        ("| col |", "\\| col \\|"),
        ("a & 'b' \"c\"", "a &amp; &#39;b&#39; &quot;c&quot;"),
        ("`code` *em* _em_ ~del~ \\", "\\`code\\` \\*em\\* \\_em\\_ \\~del\\~ \\\\"),
        ("\x1b[31m\r\nALL CLEAR", "\\\\x1b\\[31m\\\\r\\\\nALL CLEAR"),
        ("# title", "\\# title"),
        ("-1-1", "\\-1-1"),
        ("+1", "\\+1"),
        ("=x", "\\=x"),
        ("1. item", "1\\. item"),
        ("2) item", "2\\) item"),
        ("1.5 s", "1\\.5 s"),
    ],
)
def test_markdown_escapes_markup_and_html(text: str, escaped: str) -> None:
    assert textsafe.markdown(text) == escaped


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("=HYPERLINK(x)", "'=HYPERLINK(x)"),
        ("+1", "'+1"),
        ("-1-1", "'-1-1"),
        ("@SUM(1)", "'@SUM(1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("cpu-2core", "cpu-2core"),
        ("x=1", "x=1"),
        ("'quoted", "'quoted"),
    ],
)
def test_csv_cell_neutralises_a_formula(text: str, cell: str) -> None:
    assert textsafe.csv_cell(text) == cell


# every output


def test_validate_report_shows_a_forged_line_escaped(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(hostile / "specbench" / "cpu-2core")]) == 1
    out = capsys.readouterr().out
    _no_raw_controls(out)
    shown = "resnet50/run_1/x\\nALL CLEAR: compliant, 0 error(s)\\x1b[2J\\u202e"
    assert out.splitlines()[:6] == [
        f"{hostile / 'specbench' / 'cpu-2core'}: non-compliant: 1 error(s), 0 warning(s)",
        "",
        "errors (1)",
        f"  {shown}",
        "    SB-STR-012 control character in a file or folder name: expected a name of printable characters, found "
        "'x\\nALL CLEAR: compliant, 0 error(s)\\x1b[2J\\u202e' with U+000A at position 1",
        "      hint: rename it without control, bidirectional or zero-width characters; a submission holds only the "
        "files of docs/submission-format.md",
    ]


def test_validate_report_escapes_a_quoted_spec_id(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(hostile / "specbench" / "u-esc")]) == 1
    out = capsys.readouterr().out
    _no_raw_controls(out)
    assert "named '\\x1b[31m red\\u202e' or \\x1b[31m red\\u202e--KEY=VALUE,... (a sweep point)" in out


def test_validate_json_report_keeps_the_exact_name(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(hostile / "specbench" / "cpu-2core"), "--format", "json"]) == 1
    out = capsys.readouterr().out
    _no_raw_controls(out)
    (finding,) = json.loads(out)["submissions"][0]["findings"]
    assert (finding["code"], finding["severity"]) == ("SB-STR-012", "error")
    assert finding["file"] == f"resnet50/run_1/{FORGED_FILE}"


def test_a_control_character_in_a_file_name_is_an_error_not_a_warning(board: Leaderboard) -> None:
    named = next(e for g in board.groups for e in g.entries if e.system == "cpu-2core")
    codes = {(f["code"], f["severity"], f["file"]) for f in named.findings}
    assert ("SB-STR-012", "error", f"resnet50/run_1/{FORGED_FILE}") in codes
    assert not [c for c in codes if c[0] == "SB-STR-009"]
    tab = next(e for g in board.groups for e in g.entries if e.system == "f-tab")
    assert ("SB-STR-012", "error", "\tx") in {(f["code"], f["severity"], f["file"]) for f in tab.findings}


def test_terminal_table_shows_control_characters_escaped(board: Leaderboard, hostile: Path) -> None:
    text = render_table(board)
    _no_raw_controls(text)
    flat = " ".join(text.split())  # the notes wrap
    for shown in ("not measured: \\x1b[31m red", "not measured: x\\r\\nALL CLEAR", "not measured: \\u202eevil"):
        assert shown in flat
    assert "  \\tx  " in text and "  \\rx  " in text  # BENCHMARK folders in the table
    assert f"- {hostile.name}/specbench/u-esc/resnet50: SB-IDN-001 expected spec_id as plain text" in text
    assert "or \\x1b[31m red\\u202e--KEY=VALUE,... (a sweep point)" in flat


def test_markdown_escapes_every_quoted_string(board: Leaderboard) -> None:
    text = render_table(board, "github")
    _no_raw_controls(text)
    for raw in ("<script", "<img", "[x](", "| col |"):
        assert raw not in text
    for escaped in (
        "not measured: &lt;script&gt;alert",
        "not measured: &lt;img src=x onerror=alert",
        "not measured: \\[x\\]",
        "not measured: \\| col \\| x",
        "not measured: \\\\x1b\\[31m red",
        "not measured: x\\\\r\\\\nALL CLEAR",
        "not measured: \\\\u202eevil",
        "named &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39; or &lt;script&gt;alert(1)&lt;/script&gt;--KEY=VALUE",
        "named &#39;&lt;img src=x onerror=alert(1)&gt;&#39; or &lt;img src=x onerror=alert(1)&gt;--KEY=VALUE",
        "named &#39;\\[x\\](javascript:alert(1))&#39; or \\[x\\](javascript:alert(1))--KEY=VALUE",
        "or \\\\x1b\\[31m red\\\\u202e--KEY=VALUE",
        "| \\=HYPERLINK(x) ",
        "| @SUM(1) ",
        "| specbench/-1-1 ",
        "| \\+1 ",
        "| \\\\tx ",
    ):
        assert escaped in text, escaped
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert {line.count(" | ") for line in rows} == {len(rows[0].split(" | ")) - 1}  # no cell broke its row


def test_csv_neutralises_formulas_and_keeps_numbers(board: Leaderboard) -> None:
    rows = list(csv.DictReader(io.StringIO(render_csv(board))))
    by_system = {row["system"]: row for row in rows}
    assert by_system["'-1-1"]["benchmark"] == "'=HYPERLINK(x)"
    assert [by_system[s]["benchmark"] for s in ("f-at", "f-plus", "f-tab", "f-cr")] == [
        "'@SUM(1)",
        "'+1",
        "'\tx",
        "'\rx",
    ]
    for row in rows:
        assert not [k for k in CSV_TEXT_FIELDS if row[k].startswith(textsafe.CSV_FORMULA_START)]
        assert float(row["time_s"]) == pytest.approx(116.519) and row["rank"] == ""


def test_json_keeps_the_exact_text(board: Leaderboard) -> None:
    text = render_json(board)
    _no_raw_controls(text)  # json.dumps writes them as \u escapes
    data = json.loads(text)
    reasons = {e["system"]: e["power_reasons"] for g in data["groups"] for e in g["entries"]}
    for system, payload in POWER_REASONS.items():
        assert reasons[system] == ["not measured: " + payload]
    assert {e["benchmark"] for g in data["groups"] for e in g["entries"]} >= set(FORMULAS.values())
    messages = " ".join(f["message"] for u in data["unusable"] for f in u["findings"])
    for spec_id in SPEC_IDS.values():
        assert f"or {spec_id}--KEY=VALUE,... (a sweep point)" in messages


def test_html_index_and_pages_escape_every_payload(board: Leaderboard, tmp_path: Path) -> None:
    site = write_site(board, tmp_path / "site")
    assert site.not_rendered == ()
    index = site.index.read_text()
    pages = {p.name: p.read_text() for p in (tmp_path / "site" / "pages").iterdir()}
    for text in (index, *pages.values()):
        for raw in ("<script>alert", "<img src=x"):
            assert raw not in text
    assert "or &lt;script&gt;alert(1)&lt;/script&gt;--KEY=VALUE" in index  # an unusable entry's finding
    assert "or &lt;img src=x onerror=alert(1)&gt;--KEY=VALUE" in index
    assert 'never ranked; not measured: &lt;script&gt;alert(1)&lt;/script&gt;"><span' in index  # the title in full
    assert 'not measured: &lt;img src=x onerror=alert(1)&gt;"><span' in index
    assert "not measured: &lt;script&gt;alert" in pages["specbench--script--resnet50.html"]
    assert "not measured: &lt;img src=x onerror=alert" in pages["specbench--img--resnet50.html"]
