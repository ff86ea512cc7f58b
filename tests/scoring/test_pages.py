"""Entry pages as a reader meets them: nothing stated reads 'not stated', booleans yes/no, parameters to four
significant digits (the exact value on hover), runs in natural order, headings in words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specbench.scoring.html import write_site
from specbench.scoring.leaderboard import build
from specbench.scoring.pages import natural, run_names, value_text
from specbench.validator import discover, validate_many


@pytest.fixture(scope="module")
def site(everything: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    board = build(validate_many(discover(everything), jobs=1), roots=[everything])
    out = tmp_path_factory.mktemp("site")
    assert write_site(board, out).not_rendered == ()
    return out


def _row(page: str, name: str) -> str:
    """The value cell of a parameter in the page's layers table."""
    match = re.search(rf"<td>{re.escape(name)}</td><td class=\"value\"([^>]*)>([^<]*)</td>", page)
    assert match is not None, name
    return match.group(1) + ">" + match.group(2)


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "not stated"), (True, "yes"), (False, "no"), (3.0517578125e-05, "3.052e-5"), (700.0, "700"),
     (32, "32"), ("sgd", "sgd"), ([0.9, 0.999], "0.9, 0.999"), ({"a": None}, "a: not stated"), ([], "none")],
)  # fmt: skip
def test_values_read_as_words_and_short_numbers(value: object, text: str) -> None:
    assert value_text(value) == text


def test_runs_in_natural_order() -> None:
    assert run_names(["run_1", "run_3", "run_2", "run_10"]) == "run_1, run_2, run_3, run_10"
    assert run_names([]) == "none"
    assert sorted(["b", "a10", "a9"], key=natural) == ["a9", "a10", "b"]


def test_entry_pages_print_no_python_values(site: Path) -> None:
    for page in sorted((site / "pages").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r">(None|True|False)<", text), page.name
        assert not re.search(r">[^<]*\d\.\d{6,}e-\d\d<", text), page.name
        assert not re.search(r"time_to_quality|top1_accuracy|mean_iou|eval_loss", text), page.name


def test_an_entry_page_as_published(site: Path) -> None:
    llm = (site / "pages" / "specbench--h200-llm--llm-gpt.html").read_text(encoding="utf-8")
    assert "Runs used: run_1, run_2, run_3" in llm  # the aggregate lists them by the metric: run_1, run_3, run_2
    assert [name for name in re.findall(r"<tr><td>(run_\d+)</td>", llm)] == ["run_1", "run_2", "run_3"]
    assert _row(llm, "rocm_version") == ">not stated"
    assert _row(llm, "fused_optimizer") == ">yes" and _row(llm, "activation_checkpointing") == ">no"
    assert _row(llm, "power_limit_w") == ">700" and _row(llm, "adam_eps") == ">1e-8"
    assert "No findings: compliant." in llm
    cpu = (site / "pages" / "specbench--cpu-2core--resnet50.html").read_text(encoding="utf-8")
    assert _row(cpu, "weight_decay") == ' title="3.0517578125e-05">3.052e-5'  # exact on hover
    assert "· time to quality ·" in cpu and "top-1 accuracy (target ≥ 0.8)" in cpu


def test_the_index_titles_in_words(site: Path) -> None:
    index = (site / "index.html").read_text(encoding="utf-8")
    titles = re.findall(r"<h2 id=\"[^\"]+\">([^<]+)</h2>", index)
    assert titles and all("time_to_quality" not in t for t in titles)
    assert any("· time to quality ·" in t for t in titles)
