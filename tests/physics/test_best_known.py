"""The best-known table: it loads, names real specs, variants and devices, matches its sources, and bad files fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.committed import committed_submissions

from specbench.errors import InputError
from specbench.physics import (
    BEST_KNOWN_FILE,
    best_known,
    best_known_energy,
    load_best_known,
    load_devices,
    lookup,
    markdown_energies,
    markdown_rates,
)
from specbench.spec.builtin import spec_ids
from specbench.spec.loader import load_spec
from specbench.spec.yamlio import load_yaml

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
H200 = "NVIDIA H200 SXM 141GB"


def test_shipped_table_names_builtin_specs_their_variants_and_listed_devices() -> None:
    table = load_best_known()
    devices = {row.name for row in load_devices().devices}
    for row in [*table.rates, *table.energies]:
        assert row.device in devices, row.device
        for spec_id in row.specs:
            assert spec_id in spec_ids(), spec_id
            variants = load_spec(spec_id).spec.workload.variants
            assert (row.variant in variants) if variants else row.variant is None, (spec_id, row.variant)
    assert table.margin == pytest.approx(0.10)
    assert table.energy_margin == pytest.approx(0.15)


def test_lookup_by_spec_variant_and_device_row_name() -> None:
    mlperf = best_known("caraml-resnet50", None, H200)
    assert mlperf is not None and mlperf.samples_per_s == pytest.approx(63862.09259592683 / 8, abs=0.01)
    assert best_known("mlperf-resnet50", None, H200) is mlperf
    assert load_best_known().limit(mlperf) == pytest.approx(7982.76 * 1.1)
    llm = best_known("llm-gpt", "800M", H200)
    assert llm is not None and llm.source.path == "benchmarks/results/llm_throughput_h200_layers.json"
    assert best_known("llm-gpt", "13B", H200) is None
    assert best_known("llm-gpt", None, H200) is None
    assert best_known("caraml-resnet50", None, "NVIDIA A100 SXM4 80GB") is None
    assert best_known("caraml-resnet50", None, None) is None


def test_energy_lookup_by_spec_variant_and_device_row_name() -> None:
    resnet = best_known_energy("mlperf-resnet50", None, H200)
    assert resnet is not None and resnet is best_known_energy("caraml-resnet50", None, H200)
    assert resnet.source.path == "submissions/specbench/h200/caraml-resnet50/run_3/result.json"
    assert load_best_known().energy_limit(resnet) == pytest.approx(0.1009727 * 0.85)
    llm = best_known_energy("llm-gpt", "800M", H200)
    assert llm is not None and llm.energy_j_per_sample == pytest.approx(0.008197832)
    assert best_known_energy("llm-gpt", "13B", H200) is None
    assert best_known_energy("caraml-resnet50", None, "NVIDIA H100 SXM5 80GB") is None
    assert best_known_energy("caraml-resnet50", None, None) is None


def test_committed_rows_are_the_committed_results() -> None:
    """A row read from a committed file gives that file's rate (to the rounding of two decimals)."""
    for row in load_best_known().rates:
        path = row.source.path
        if path is None or not path.endswith("result.json"):
            continue
        result = json.loads((REPO / path).read_text())
        rate = result["samples_processed"] / result["duration_s"] / result["devices"]
        assert row.samples_per_s == pytest.approx(rate, abs=0.005), path
        assert row.samples_per_s >= rate - 0.005


def test_benchmark_row_is_the_fastest_row_of_its_file() -> None:
    row = best_known("extreme-weather", "resnet50", H200)
    assert row is not None and row.source.path is not None
    rows = json.loads((REPO / row.source.path).read_text())["rows"]
    assert row.samples_per_s == pytest.approx(max(r["samples_per_s"] for r in rows), abs=0.005)


def _committed_energies() -> dict[tuple[str, str | None, str], dict[str, float]]:
    """Accelerator energy per sample (power.energy_j / samples_processed) of every committed run that measured it,
    by (spec id, variant, device row name), each under its result.json path."""
    found: dict[tuple[str, str | None, str], dict[str, float]] = {}
    for result_path in (path for s in committed_submissions() for path in sorted(s.glob("*/run_*/result.json"))):
        result = json.loads(result_path.read_text())
        power = result.get("power") or {}
        if not power.get("measured") or power.get("scope") != "accelerator":
            continue
        system = load_yaml(result_path.parents[2] / "system.yaml").data
        meta = load_yaml(result_path.parents[1] / "submission.yaml").data
        facts = lookup(system["layers"]["hardware"]["accelerator_model"])
        assert facts is not None, result_path
        variant = meta["hyperparameters"].get("model") if load_spec(meta["spec_id"]).spec.workload.variants else None
        key = (meta["spec_id"], variant, facts.name)
        found.setdefault(key, {})[str(result_path.relative_to(REPO))] = power["energy_j"] / result["samples_processed"]
    return found


def test_committed_energy_rows_are_the_lowest_committed_run() -> None:
    """An energy row read from a committed result.json is the lowest energy per sample of the committed runs of
    its workload and device (rounded down to 7 significant digits), and that file gives it."""
    committed = _committed_energies()
    checked = 0
    for row in load_best_known().energies:
        path = row.source.path
        if path is None or not path.endswith("result.json"):
            continue
        runs = {
            run: value
            for spec in row.specs
            for run, value in committed.get((spec, row.variant, row.device), {}).items()
        }
        lowest = min(runs.values())
        assert runs[path] == lowest, (path, min(runs, key=runs.__getitem__))
        assert row.energy_j_per_sample == pytest.approx(lowest, rel=1e-6)
        assert row.energy_j_per_sample <= lowest
        checked += 1
    assert checked == 2


def test_no_committed_run_spends_less_than_its_energy_row() -> None:
    """Every committed run with measured accelerator energy has an energy row, at or below its energy per sample."""
    for (spec, variant, device), runs in _committed_energies().items():
        row = best_known_energy(spec, variant, device)
        assert row is not None, (spec, variant, device)
        for path, value in runs.items():
            assert row.energy_j_per_sample <= value, path


@pytest.mark.parametrize(
    ("spec", "variant", "section", "key"),
    [("extreme-weather", "resnet50", "rows", "j_per_sample"), ("llm-gpt", "800M", "specbench", "j_per_token")],
)
def test_benchmark_energy_row_is_the_lowest_of_its_file(spec: str, variant: str, section: str, key: str) -> None:
    row = best_known_energy(spec, variant, H200)
    assert row is not None and row.source.path is not None
    data = json.loads((REPO / row.source.path).read_text())
    entries = [run for entry in data[section] for run in entry.get("runs", [entry])]
    lowest = min(entry[key] for entry in entries if entry.get(key) is not None)
    assert row.energy_j_per_sample == pytest.approx(lowest, rel=1e-6)
    assert row.energy_j_per_sample <= lowest


def _mllog(path: Path) -> list[dict[str, object]]:
    return [json.loads(line.split(":::MLLOG", 1)[1]) for line in path.read_text().splitlines() if ":::MLLOG" in line]


def _fastest_per_accelerator(path: Path, accelerators: int) -> float:
    """The rule best_known.yaml states: tracked_stats, else the fastest epoch, else the fastest block."""
    events = _mllog(path)
    tracked = [e["value"]["throughput"] for e in events if e["key"] == "tracked_stats"]  # type: ignore[index]
    if tracked:
        return max(tracked) / accelerators  # type: ignore[arg-type]
    train = next(e["value"] for e in events if e["key"] == "train_samples")
    starts: dict[object, tuple[int, int]] = {}
    rates = []
    for event in events:
        meta = event.get("metadata") or {}
        assert isinstance(meta, dict)
        key, when = event["key"], event["time_ms"]
        assert isinstance(when, int) and isinstance(train, int)
        if key in ("epoch_start", "block_start"):
            starts[(key[:5], meta.get("epoch_num", meta.get("first_epoch_num")))] = (when, meta.get("epoch_count", 1))
        elif key in ("epoch_stop", "block_stop"):
            begun = starts.get((key[:5], meta.get("epoch_num", meta.get("first_epoch_num"))))
            if begun is not None and when > begun[0]:
                rates.append((key[:5], begun[1] * train * 1000 / (when - begun[0])))
    epochs = [rate for kind, rate in rates if kind == "epoch"]
    return max(epochs or [rate for _, rate in rates]) / accelerators


CORPUS_ROWS = [
    ("NVIDIA H100 SXM5 80GB", "mlperf-v4.0-resnet-round/Fujitsu/systems/GX2560M7_H100_SXM_80GBx4.json"),
    ("NVIDIA H100 PCIe 80GB", "mlperf-v4.0-resnet-round/Quanta_Cloud_Technology/systems/D54U-3U.json"),
    ("NVIDIA L40S", "mlperf-v4.0-resnet-round/Dell/systems/R760xax4L40S.json"),
    ("Intel Gaudi 2 (HL-225)", "mlperf-training/v3.1/Intel-HabanaLabs/systems/HLS-Gaudi2-PT.json"),
    ("NVIDIA GeForce RTX 4090", "mlperf-v4.0-resnet-round/tinycorp/systems/tinybox_green.json"),
    ("AMD Radeon RX 7900 XTX", "mlperf-v4.0-resnet-round/tinycorp/systems/tinybox_red.json"),
]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the MLPerf corpus (../shared/corpus) is not here")
@pytest.mark.parametrize(("device", "system"), CORPUS_ROWS, ids=[d for d, _ in CORPUS_ROWS])
def test_mlperf_rows_follow_from_the_corpus_logs(device: str, system: str) -> None:
    row = best_known("resnet50", None, device)
    assert row is not None and row.source.read_at is not None
    facts = json.loads((CORPUS / system).read_text())
    accelerators = int(facts["number_of_nodes"]) * int(facts["accelerators_per_node"])
    log = CORPUS / row.source.read_at.removeprefix("../shared/corpus/")
    assert row.samples_per_s == pytest.approx(_fastest_per_accelerator(log, accelerators), abs=0.005)


ROWS = """
  - specs: [resnet50]
    device: Part
    samples_per_s: 100
    source: {title: t, url: "https://example.org/r", gives: g}
"""
ENERGIES = """
energies:
  - specs: [resnet50]
    device: Part
    energy_j_per_sample: 0.5
    source: {title: t, path: p.json, gives: g}
"""
HEAD = "format_version: 1\nmargin: 0.1\nenergy_margin: 0.2\nrates:"


def _problems(tmp_path: Path, text: str) -> str:
    path = tmp_path / "best_known.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_best_known(path)
    return str(caught.value)


def test_a_valid_custom_table_is_used(tmp_path: Path) -> None:
    path = tmp_path / "best_known.yaml"
    path.write_text(HEAD.replace("margin: 0.1", "margin: 0.2") + ROWS + ENERGIES)
    row = best_known("resnet50", None, "Part", path)
    assert row is not None and load_best_known(path).limit(row) == pytest.approx(120.0)
    energy = best_known_energy("resnet50", None, "Part", path)
    assert energy is not None and load_best_known(path).energy_limit(energy) == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (HEAD.replace("version: 1", "version: 2") + ROWS + ENERGIES, "format_version"),
        (HEAD.replace("margin: 0.1", "margin: 1.5") + ROWS + ENERGIES, "margin"),
        (HEAD.replace("energy_margin: 0.2", "energy_margin: 1") + ROWS + ENERGIES, "energy_margin"),
        (HEAD.replace("energy_margin: 0.2\n", "") + ROWS + ENERGIES, "energy_margin"),
        (HEAD + ROWS + ROWS + ENERGIES, "one rate row per spec, variant and device"),
        (HEAD + ROWS + ENERGIES + ENERGIES.removeprefix("\nenergies:"), "one energy row per spec, variant and device"),
        (HEAD + ROWS.replace("100", "-1") + ENERGIES, "samples_per_s"),
        (HEAD + ROWS + ENERGIES.replace("0.5", "0"), "energy_j_per_sample"),
        (HEAD + ROWS, "energies"),
        (HEAD + ROWS.replace('url: "https://example.org/r", ', "") + ENERGIES, "neither"),
        (HEAD + ROWS + ENERGIES.replace("path: p.json, ", ""), "neither"),
        (HEAD + ROWS.replace("https://", "http://") + ENERGIES, "url"),
        (HEAD + ROWS.replace("device: Part", "device: Part\n    tdp: 1") + ENERGIES, "tdp"),
        (HEAD + ROWS + ENERGIES.replace("device: Part", "device: Part\n    samples_per_s: 1"), "samples_per_s"),
    ],
)
def test_a_malformed_table_is_refused_with_a_located_message(tmp_path: Path, text: str, expected: str) -> None:
    message = _problems(tmp_path, text)
    assert expected in message and "best_known.yaml" in message


def test_a_missing_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the best-known table"):
        load_best_known(tmp_path / "missing.yaml")
    assert BEST_KNOWN_FILE.is_file()


def test_docs_page_matches_the_table() -> None:
    page = (REPO / "docs" / "devices.md").read_text()
    start = page.index("\n", page.index("<!-- best-known-table:")) + 1
    assert page[start : page.index("<!-- /best-known-table -->")] == markdown_rates(load_best_known())
    start = page.index("\n", page.index("<!-- best-known-energy-table:")) + 1
    assert page[start : page.index("<!-- /best-known-energy-table -->")] == markdown_energies(load_best_known())
