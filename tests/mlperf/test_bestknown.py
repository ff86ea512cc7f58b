"""The generated best-known rates: the script reproduces every generated row of best_known.yaml from the corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specbench.mlperf.bestknown import (
    BEGIN,
    CORPUS,
    END,
    HELD_BACK,
    Derived,
    derive,
    generated_block,
    significant,
    split_table,
    write,
)
from specbench.physics import BEST_KNOWN_FILE, best_known, load_best_known
from specbench.spec.yamlio import parse_yaml


@pytest.fixture(scope="module")
def derived() -> Derived:
    """The corpus rounds imported once and their fastest runs; skipped without the corpus, a failure in CI."""
    if not (CORPUS / "mlperf-rounds").is_dir() or not (CORPUS / "mlperf-v4.0-resnet-round").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the MLPerf corpus is missing at {CORPUS} (CI must provide ../shared/corpus)")
        pytest.skip(f"no MLPerf corpus at {CORPUS}")
    return derive(CORPUS, jobs=1)


def test_every_generated_row_is_what_the_script_derives_from_the_corpus(derived: Derived) -> None:
    _, section, _ = split_table(BEST_KNOWN_FILE.read_text())
    assert section == generated_block(derived.rows), "run `python -m specbench.mlperf.bestknown --write`"
    assert len(derived.rows) == 19


def test_each_row_is_its_fastest_run_rounded_up_and_names_that_log(derived: Derived) -> None:
    for rate in derived.rows:
        row = best_known(rate.spec_id, None, rate.device)
        assert row is not None and row.source.read_at is not None and row.source.url is not None
        assert rate.samples_per_s <= row.samples_per_s == pytest.approx(rate.samples_per_s, rel=1e-5)
        assert (CORPUS / row.source.read_at.removeprefix("../shared/corpus/")).is_file()
        assert row.source.url.endswith(rate.log) and rate.round.commit in row.source.url
        assert set(row.specs) == set(rate.specs)


def test_a_hand_row_the_script_keeps_is_at_least_the_fastest_run(derived: Derived) -> None:
    assert derived.kept, "the corpus has ResNet-50 runs on devices with a hand row"
    for rate, hand in derived.kept:
        assert hand >= rate.samples_per_s, rate.log


def test_held_back_and_unlisted_devices_get_no_row(derived: Derived) -> None:
    assert {spec for rate in derived.held for spec in rate.specs} == set(HELD_BACK)
    for rate in derived.held:
        assert best_known(rate.spec_id, None, rate.device) is None
    assert "TPU-v5p" in derived.unknown["mlperf-gpt3"]
    assert "NVIDIA Blackwell GPU (B200-SXM-180GB)" in derived.unknown["mlperf-dlrm-dcnv2"]


def test_rows_round_up_to_six_significant_digits() -> None:
    assert significant(1721901.6) == 1721902
    assert significant(14918.64) == 14918.7
    assert significant(0.22786812) == 0.227869
    assert significant(100.0) == 100.0
    assert significant(13.1022) == 13.1022


def test_write_replaces_only_the_generated_section(tmp_path: Path) -> None:
    """A table without markers gets its section before `energies:`; writing again changes nothing; hand rows stay."""
    before, section, after = split_table(BEST_KNOWN_FILE.read_text())
    bare = tmp_path / "best_known.yaml"
    bare.write_text(before.rstrip("\n") + "\n\n" + after.lstrip("\n"))
    assert BEGIN not in bare.read_text()
    nothing = Derived([], [], [], {}, {})
    write(nothing, bare)
    once = bare.read_text()
    assert split_table(once)[1] == generated_block([]) and END in once
    assert once.index(END) < once.index("\nenergies:")
    write(nothing, bare)
    assert bare.read_text() == once
    hand = load_best_known(bare)
    assert len(hand.rates) == len(load_best_known().rates) - section.count("  - specs:")
    assert parse_yaml(once).data["rates"][0]["device"] == hand.rates[0].device
