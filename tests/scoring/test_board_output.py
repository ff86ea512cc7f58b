"""The leaderboard as maintainers publish it: columns by spec kind, units, notation, width, paths, reasons."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specbench import __version__
from specbench.cli import main
from specbench.scoring.leaderboard import Group, Leaderboard, build
from specbench.scoring.render import TERMINAL_WIDTH, index_table, layout, render_table, wrap
from specbench.scoring.status import brief_power
from specbench.validator import discover, validate_many

NO_METER = "not measured: no meter (NVML: no GPU; AMD SMI: no module; RAPL: no zones; hwmon: no sensors)"


@pytest.fixture(scope="module")
def board(everything: Path) -> Leaderboard:
    return build(validate_many(discover(everything), jobs=1), roots=[everything])


def _group(board: Leaderboard, spec_id: str, profile: str = "official"):  # type: ignore[no-untyped-def]
    return next(g for g in board.groups if g.key.spec_id == spec_id and g.key.profile == profile)


def test_terminal_table_fits_120_columns_in_one_notation(board: Leaderboard) -> None:
    text = render_table(board)
    widths = [len(line) for line in text.splitlines()]
    assert max(widths) <= TERMINAL_WIDTH, text
    assert not re.search(r"\d[eE][+-]\d", text)  # no exponent
    assert not re.search(r"\d,\d{3}", text)  # no thousands separator
    llm = index_table(_group(board, "llm-gpt"), terminal=True)
    assert llm.headers[3:7] == ["rate\nktoken/s", "/device\nTFLOP/s", "MFU\n%", "energy\nmJ/token"]
    assert [row[3].text for row in llm.rows] == ["151.5", "147.7", "81.97", "80.60", "79.97"]


def test_columns_follow_the_spec_kind(board: Leaderboard) -> None:
    throughput = index_table(_group(board, "llm-gpt")).headers
    assert not any("penalty" in h or "Valid" in h for h in throughput)
    assert "throughput (ktoken/s)" in throughput and "energy (mJ/token)" in throughput
    time_to_quality = index_table(_group(board, "resnet50")).headers
    assert "penalty factor" in time_to_quality and "Valid FLOPS (PFLOP/s)" in time_to_quality
    assert "top-1 accuracy (target ≥ 0.763)" in time_to_quality and "energy to solution (kJ)" in time_to_quality


def test_a_throughput_spec_shows_the_loss_its_log_reached(board: Leaderboard) -> None:
    group = _group(board, "llm-gpt", "smoke")
    (entry,) = group.entries
    assert entry.value("achieved") == pytest.approx(1.6089017663415022)  # the log's last (and best) eval_loss
    table = index_table(group)
    column = table.headers.index("eval loss (nats; target ≤ 2)")
    assert table.rows[0][column].text == "1.609"


def test_cpu_results_read_well(board: Leaderboard) -> None:
    """A CPU's rates get the prefix that suits them, not 0.02178 TFLOP/s."""
    table = index_table(_group(board, "resnet50", "smoke"))
    cpu = next(r for r in table.rows if r[2].text == "specbench/cpu-2core")
    assert cpu[table.headers.index("Valid FLOPS (GFLOP/s)")].text == "21.78"
    llm = index_table(_group(board, "llm-gpt", "smoke"))
    assert llm.rows[0][llm.headers.index("per device (GFLOP/s)")].text == "5.251"


def test_reasons_are_brief_in_the_table_and_whole_on_the_page(board: Leaderboard) -> None:
    (entry,) = _group(board, "llm-gpt", "smoke").entries
    assert entry.status_lines() == ["not ranked: smoke profile", NO_METER]
    assert entry.power_reasons[0].startswith("not measured: no power meter is available here: nvml: NVML did not")
    assert entry.run_power_reason("run_1") == entry.power_reasons[0]
    text = render_table(Leaderboard([Group(entry.key, [entry])], []))
    assert "local/llm-smoke: profile 'smoke' is never ranked; not measured: no meter (NVML: no GPU;" in text


@pytest.mark.parametrize(
    ("reason", "brief"),
    [
        ("not measured: --power none", "not measured: --power none"),
        ("not measured: this rank does not own the node's devices", "not measured: another process owns the devices"),
        (
            "not measured: no power meter is available here: rapl: cannot read /sys/x: permission denied. Since "
            "Linux 5.10 ...; hwmon: cannot read /sys/y: permission denied; run as a user in the group",
            "not measured: no meter (RAPL: no permission; hwmon: no permission)",
        ),
        (
            "not measured: no power meter is available here: nvml: CUDA_VISIBLE_DEVICES hides every GPU from this "
            "process",
            "not measured: no meter (NVML: GPUs hidden)",
        ),
    ],
)
def test_brief_power_reasons(reason: str, brief: str) -> None:
    assert brief_power(reason) == brief


def test_paths_are_relative_to_the_scored_root(
    everything: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # wherever score runs, the folder shown is under the root scored
    assert main(["score", str(everything), "--format", "json", "--jobs", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    folders = {e["folder"] for g in data["groups"] for e in g["entries"]}
    assert f"{everything.name}/specbench/h200" in folders and f"{everything.name}/local/llm-smoke" in folders
    assert data["specbench_version"] == __version__ and data["generated_at"].endswith("+00:00")
    entry = data["groups"][0]["entries"][0]
    assert {"path", "aggregate", "rank", "rank_per_w", "unranked", "notes", "status", "power_reasons"} <= set(entry)


def test_markdown_says_when_and_by_which_version(everything: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(everything), "--format", "markdown", "--jobs", "1"]) == 0
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert re.fullmatch(rf"_generated \d{{4}}-\d\d-\d\d \d\d:\d\d UTC by specbench {re.escape(__version__)}_", last)


def test_headings_in_words_and_ids_in_json(
    board: Leaderboard, everything: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Titles and headers say 'time to quality' and 'top-1 accuracy'; JSON keeps the spec's ids."""
    for fmt in ("simple", "github"):
        text = render_table(board, fmt)
        assert "· time to quality ·" in text and "top-1 accuracy" in text and "mean IoU" in text, fmt
        assert not re.search(r"time_to_quality|top1_accuracy|mean_iou|eval_loss", text), fmt
    assert main(["score", str(everything), "--format", "json", "--jobs", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("· time_to_quality ·" in g["title"] for g in data["groups"])
    assert {g["key"]["kind"] for g in data["groups"]} == {"throughput", "time_to_quality"}


def test_terminal_table_wraps_names_between_words() -> None:
    """A long system name breaks after '/' or '-' or at a space, never inside a word; a word wider than the
    column widens it."""
    names = ["specbench/h200x2-llm-one-gpu-gbs32", "acme/a system name", "org/unbreakablesystemname"]
    rows = [[str(i), name, "9" * 40] for i, name in enumerate(names, 1)]
    text = layout(["rank", "system", "value"], rows, [True, False, True], width=62)
    rule, *lines = text.splitlines()[1:]
    start, width = rule.index(" ") + 2, len(rule.split()[1])
    assert width == len("unbreakablesystemname")  # 14 would fit 62 columns, but split the word
    assert [line[start : start + width].strip() for line in lines] == [
        "specbench/h200x2-llm-", "one-gpu-gbs32", "acme/a system name", "org/", "unbreakablesystemname"
    ]  # fmt: skip
    assert wrap("specbench/h200x2-llm-one-gpu-gbs32", 12) == ["specbench/", "h200x2-llm-", "one-gpu-", "gbs32"]
    assert wrap("a verylongword b", 5) == ["a", "verylongword", "b"]
