"""specbench.mlperf.published* against MLPerf's own result summarizer on real rounds, and its averaging rules.

The corpus tests run `python -m mlperf_logging.result_summarizer ORG USAGE RULESET --csv` once per
organisation (on a copy: its RCP checker rewrites scaling.json) and compare every figure it prints with
the one specbench computes from the same files without MLPerf's code. Where the summarizer crashes on
an organisation, each benchmark folder is summarized on its own, to learn which one crashes and to
compare the others. Where the two disagree, the case is listed in KNOWN with its reason.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from specbench.formats.mllog import ParsedLog, parse_log
from specbench.mlperf.published import (
    RUNS_REQUIRED,
    RunWindow,
    olympic_mean,
    published_time_to_train,
    run_time_s,
    run_window,
    runs_rule,
    weak_scaling,
)
from specbench.mlperf.published_energy import (
    PowerEvent,
    node_energy,
    published_energy,
    read_power_events,
    run_energy,
    switch_energy_j,
    unmeasured_interconnect,
    weak_scaling_energy_j,
)
from specbench.mlperf.published_runs import (
    PublishedBenchmark,
    PublishedWeak,
    ResultFile,
    counted_run,
    published_benchmark,
    published_weak,
)

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
ROUNDS = (
    ("mlperf-rounds/training-v4.0", "training", "4.0.0"),
    ("mlperf-rounds/training-v4.1", "training", "4.1.0"),
    ("mlperf-rounds/hpc-v2.0", "hpc", "2.0.0"),
    ("mlperf-v4.0-resnet-round", "training", "4.0.0"),
)
DROP = re.compile(r"^(?P<reason>.+) in (?P<file>\S+/result_[^/\s]*\.txt)$")
KNOWN: dict[str, str] = {}
"""Known disagreements by 'round/org/system/benchmark' and the reason (none so far)."""


def corpus() -> Path:
    """The corpus folder; skipped when it is absent outside CI, a failure in CI."""
    if not CORPUS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the MLPerf corpus is missing at {CORPUS} (CI must provide ../shared/corpus)")
        pytest.skip(f"no MLPerf corpus at {CORPUS}")
    return CORPUS


# ---- synthetic: the averaging rules -------------------------------------------------------------


def _ms(*minutes: float) -> list[float | None]:
    return [m * 60_000 for m in minutes]


def test_runs_required_per_benchmark() -> None:
    assert runs_rule("training", "4.0.0", "resnet").runs_required == 5
    assert runs_rule("training", "4.1.0", "bert").runs_required == 10
    assert runs_rule("training", "5.0.0", "llama31_405b").runs_required == 3
    assert runs_rule("training", "4.0.0", "unet3d") == RUNS_REQUIRED[("training", "4.0.0", "unet3d")]
    assert runs_rule("training", "4.0.0", "unet3d").dropped_each_end == 4
    assert runs_rule("hpc", "2.0.0", "cosmoflow").runs_required == 10
    assert runs_rule("hpc", "3.0.0", "openfold").runs_required == 10


def test_unknown_benchmark_names_the_round_and_a_close_name() -> None:
    from specbench.errors import UsageError

    with pytest.raises(UsageError, match=r"found 'resnt' \(did you mean 'resnet'\?\)"):
        runs_rule("training", "4.0.0", "resnt")
    with pytest.raises(UsageError, match=r"found training 3\.1\.0"):
        runs_rule("training", "3.1.0", "resnet")


def test_five_runs_drop_fastest_and_slowest() -> None:
    result = published_time_to_train(_ms(10, 11, 12, 13, 30), "resnet", "training", "4.0.0", 1.5)
    assert result.used_min == (11, 12, 13)
    assert result.olympic_mean_min == 12
    assert result.published_min == 18
    assert result.published_s == 18 * 60
    assert result.complete


def test_a_failed_run_counts_as_the_slowest() -> None:
    result = published_time_to_train([*_ms(10, 11, 12, 13), None], "resnet", "training", "4.0.0")
    assert result.used_min == (11, 12, 13)
    assert (result.runs_counted, result.runs_failed) == (4, 1)


def test_two_failed_runs_publish_nothing() -> None:
    result = published_time_to_train([*_ms(10, 11, 12), None, None], "resnet", "training", "4.0.0")
    assert result.published_min is None
    assert result.problem is not None and "2 runs dropped" in result.problem


def test_ten_runs_average_eight() -> None:
    result = published_time_to_train(_ms(*range(1, 11)), "bert", "training", "4.1.0")
    assert result.used_min == tuple(range(2, 10))
    assert result.olympic_mean_min == 5.5


def test_forty_unet3d_runs_drop_four_at_each_end_and_tolerate_four_failures() -> None:
    result = published_time_to_train(_ms(*range(1, 41)), "unet3d", "training", "4.0.0")
    assert result.used_min == tuple(range(5, 37))
    four_failed = published_time_to_train([*_ms(*range(1, 37)), None, None, None, None], "unet3d", "training", "4.0.0")
    assert four_failed.used_min == tuple(range(5, 37))
    five_failed = published_time_to_train([*_ms(*range(1, 36)), *[None] * 5], "unet3d", "training", "4.0.0")
    assert five_failed.published_min is None


def test_fewer_runs_than_required_still_publish() -> None:
    """The summarizer never counts the files (the package checker does): 3 resnet runs give the middle one."""
    result = published_time_to_train(_ms(10, 20, 30), "resnet", "training", "4.0.0")
    assert result.published_min == 20
    assert not result.complete
    assert published_time_to_train(_ms(10, 20), "resnet", "training", "4.0.0").published_min is None


def test_olympic_mean_is_the_summarizers_arithmetic() -> None:
    scores = [0.1, 0.7, 0.2, 0.3, 0.9]
    ordered = sorted(scores)
    assert olympic_mean(scores, 0, 1) == (tuple(ordered[1:4]), sum(ordered[1:4]) * 1.0 / 3)


def _log(*events: tuple[str, float, Any, dict[str, Any]]) -> ParsedLog:
    lines = [
        ":::MLLOG "
        + json.dumps(
            {"namespace": "", "time_ms": t, "event_type": "POINT_IN_TIME", "key": k, "value": v, "metadata": m}
        )
        for k, t, v, m in events
    ]
    return parse_log("\n".join(lines) + "\n")


def test_run_time_is_run_start_to_run_stop() -> None:
    log = _log(("run_start", 1000, None, {}), ("run_stop", 61000, None, {"status": "success"}))
    assert run_time_s(log) == 60.0
    assert run_window(log) == RunWindow(1000.0, 61000.0)
    assert run_window(log).time_min == 1.0  # type: ignore[union-attr]
    assert run_time_s(_log(("run_start", 1000, None, {}))) is None


def test_aborted_run_that_met_the_target_counts_but_one_that_never_did_does_not() -> None:
    def run(accuracy: float, status: str) -> ParsedLog:
        return _log(
            ("run_start", 0, None, {}),
            ("eval_accuracy", 5, accuracy, {"epoch_num": 4}),
            ("run_stop", 10, None, {"status": status}),
        )

    assert counted_run(run(0.76, "aborted"), "training", "closed", "resnet").counted
    below = counted_run(run(0.75, "aborted"), "training", "closed", "resnet")
    assert not below.counted and below.reason is not None and "target" in below.reason
    assert counted_run(run(0.75, "success"), "training", "open", "resnet").counted
    assert not counted_run(run(0.76, "success"), "training", "closed", "resnet", compliant=False).counted


def test_weak_scaling_throughput_is_models_per_minute() -> None:
    windows: list[tuple[RunWindow | None, int | None]] = [(RunWindow(0, 60_000 * (i + 10)), 16) for i in range(5)]
    result = weak_scaling([*windows, (None, 16)], "deepcam", "2.0.0")
    assert (result.number_of_models, result.instance_scale) == (5, 16)
    assert result.time_to_train_all_min == 14
    assert result.throughput_models_per_min == 5 / 14
    assert weak_scaling(windows[:4], "deepcam", "2.0.0").time_to_train_all_min is None
    crash = weak_scaling([*windows, (RunWindow(0, 1), 32)], "deepcam", "2.0.0")
    assert crash.crash is not None and "AssertionError" in crash.crash


def _power(*events: tuple[str, float, Any]) -> tuple[PowerEvent, ...]:
    return tuple(PowerEvent(i, t, k, v) for i, (k, t, v) in enumerate(events, 1))


def test_node_energy_is_scaled_to_the_run_time() -> None:
    node = _power(
        ("power_measurement_start", 0, None),
        ("conversion_eff", 0, 0.5),
        ("power_reading", 1000, 100),
        ("power_reading", 2000, 300),
        ("power_measurement_stop", 2000, None),
        ("power_reading", 3000, 999),
    )
    # (100 W x 1 s + 300 W x 1 s) x 0.5, over a 2 s window, scaled to a 4 s run
    assert node_energy(node, 4000).energy_j == 400.0
    assert node_energy(node[:4], 4000).energy_j == 400.0  # no stop: the last reading ends the window
    assert node_energy(node[2:], 4000).crash is not None
    same_time = _power(("power_measurement_start", 5, None), ("power_measurement_stop", 5, None))
    assert "ZeroDivisionError" in (node_energy(same_time, 10).crash or "")


def test_switch_counts_only_its_estimate() -> None:
    estimate = _power(("conversion_eff", 0, 0.5), ("interconnect_power_est", 0, 200))
    assert switch_energy_j(estimate, 4000) == 400.0
    measured = _power(
        ("power_measurement_start", 0, None), ("power_reading", 1000, 50), ("power_measurement_stop", 1000, None)
    )
    assert switch_energy_j(measured, 4000) == 0.0
    gap = unmeasured_interconnect([estimate, measured], 4000)
    assert gap is not None and gap.switches == (1,)
    assert (gap.summarizer_j, gap.measured_j) == (0.0, 200.0)
    assert "counts 0 J" in gap.message(["sw_1.txt"]) and "200 J (16.7% of" in gap.message(["sw_1.txt"], 1000.0)
    assert unmeasured_interconnect([estimate], 4000) is None
    node = _power(("power_measurement_start", 0, None), ("power_reading", 1000, 100))
    assert run_energy([node], [measured], 4000).energy_j == 400.0
    assert run_energy([node], [measured], 4000, integrate_switch_readings=True).energy_j == 600.0
    assert run_energy([], [measured], 4000).crash is not None


def test_energy_follows_the_runs_ordered_by_time() -> None:
    times = [*_ms(3, 1, 2, 5, 4)]
    energies: list[float | None] = [30.0, 10.0, 20.0, 50.0, 40.0]
    result = published_energy(times, energies, "resnet", "training", "4.0.0", 2.0)
    assert result.used_j == (20.0, 30.0, 40.0)
    assert result.energy_j == 60.0
    failed = published_energy([*times[:4], None], [*energies[:4], None], "resnet", "training", "4.0.0")
    assert failed.used_j == (20.0, 30.0, 50.0)
    assert weak_scaling_energy_j([3.0, 1.0, 2.0]) == 2.5


def test_power_events_read_as_mlperf_reads_them() -> None:
    text = (
        'rank0: :::MLLOG {"namespace": "", "time_ms": 5, "event_type": "POINT_IN_TIME", '
        '"key": "power_reading", "value": 7, "metadata": ""}\r\n'
        "noise\n:::MLLOG {broken\n"
    )
    assert read_power_events(text) == (PowerEvent(1, 5.0, "power_reading", 7),)


# ---- the corpus against MLPerf's summarizer -----------------------------------------------------


@dataclass
class Summary:
    """What one summarizer run printed: figures by (system folder, benchmark), dropped files, the crash."""

    returncode: int
    strong: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    weak: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)
    crash: str | None = None
    seconds: float = 0.0


def _number(text: str) -> float | None:
    return float(text) if text not in ("", "nan") else None


def _sections(text: str) -> Iterator[list[dict[str, str]]]:
    """The CSV blocks the summarizer appends to one file, each with its own header row."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("division,"):
            blocks.append([])
        blocks[-1].append(line)
    for block in blocks:
        yield list(csv.DictReader(io.StringIO("\n".join(block))))


def _by_benchmark(rows: list[dict[str, str]], metrics: tuple[str, ...]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        system = row["details_url"].rsplit("/", 1)[-1].removesuffix(".json")
        for column, value in row.items():
            benchmark, _, metric = column.partition(":")
            if metric in metrics:
                out.setdefault((system, benchmark), {})[metric] = value
    return out


def _summarize(org: Path, usage: str, ruleset: str, work: Path) -> Summary:
    """One run of MLPerf's summarizer on a copy of `org` (its RCP checker writes scaling.json)."""
    import time

    shutil.copytree(org, work / org.name)
    out = work / "out.csv"
    began = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mlperf_logging.result_summarizer", org.name, usage, ruleset, "--csv", str(out)],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    summary = Summary(proc.returncode, seconds=time.perf_counter() - began)
    for line in proc.stdout.splitlines():
        if match := DROP.match(line):
            summary.dropped[match["file"].split("/", 1)[1]] = match["reason"]
    if proc.returncode:
        summary.crash = proc.stderr.strip().splitlines()[-1]
        return summary
    detailed = work / "out_detailed.csv"
    for rows in _sections(detailed.read_text()) if detailed.exists() else ():
        summary.strong.update(_by_benchmark(rows, ("time_to_train", "Energy", "rcp_scaling_factor")))
    if usage == "hpc":
        for rows in list(_sections(out.read_text()))[1:]:
            summary.weak.update(_by_benchmark(rows, ("number_of_models", "instance_scale", "time_to_train_all")))
    return summary


def _benchmark_folders(org: Path, usage: str) -> Iterator[tuple[str, str, str, Path]]:
    """(system folder, scaling, benchmark, folder) of every benchmark folder, as the summarizer walks them."""
    for system in sorted(p for p in (org / "results").iterdir() if p.is_dir()):
        for scaling in ("strong", "weak") if usage == "hpc" else ("strong",):
            parent = system / scaling if usage == "hpc" else system
            if parent.is_dir():
                for folder in sorted(p for p in parent.iterdir() if p.is_dir()):
                    yield system.name, scaling, folder.name, folder


def _isolated(org: Path, usage: str, ruleset: str, work: Path) -> dict[tuple[str, str], Summary]:
    """The summarizer on each benchmark folder alone (an organisation it crashes on)."""
    out = {}
    for system, scaling, benchmark, folder in _benchmark_folders(org, usage):
        copy = work / f"{system}-{scaling}-{benchmark}" / "src" / org.name
        copy.mkdir(parents=True)
        shutil.copytree(org / "systems", copy / "systems")
        target = copy / folder.relative_to(org)
        shutil.copytree(folder, target)
        out[(system, benchmark)] = _summarize(copy, usage, ruleset, copy.parents[1])
    return out


@dataclass
class OrgResult:
    round: str
    usage: str
    ruleset: str
    org: Path
    whole: Summary
    isolated: dict[tuple[str, str], Summary]


@pytest.fixture(scope="module")
def summaries(tmp_path_factory: pytest.TempPathFactory) -> list[OrgResult]:
    """MLPerf's summarizer once per organisation of the four rounds (two at a time; a few minutes)."""
    pytest.importorskip("mlperf_logging")
    root = corpus()
    jobs = [
        (name, usage, ruleset, org)
        for name, usage, ruleset in ROUNDS
        for org in sorted((root / name).iterdir())
        if (org / "systems").is_dir() and (org / "results").is_dir()
    ]

    def run(job: tuple[str, str, str, Path]) -> OrgResult:
        name, usage, ruleset, org = job
        work = tmp_path_factory.mktemp(org.name)
        whole = _summarize(org, usage, ruleset, work)
        isolated = _isolated(org, usage, ruleset, tmp_path_factory.mktemp("alone")) if whole.crash else {}
        return OrgResult(name, usage, ruleset, org, whole, isolated)

    tmp_path_factory.getbasetemp()  # made once here: two threads making it at once race (mktemp then refuses)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(run, jobs))


def _events(path: Path) -> tuple[PowerEvent, ...]:
    return read_power_events(path.read_text(encoding="latin-1"))


def result_files(folder: Path) -> list[ResultFile]:
    """The result files of a benchmark folder with their power logs, read by specbench."""
    files = []
    for path in sorted(folder.glob("result_*.txt")):
        power = folder / "power" / path.name.split(".")[0]
        files.append(
            ResultFile(
                name=path.name,
                log=parse_log(path.read_text(encoding="utf-8", errors="replace")),
                nodes=tuple(_events(p) for p in sorted(power.glob("node_*.txt"))),
                switches=tuple(_events(p) for p in sorted(power.glob("sw_*.txt"))),
            )
        )
    return files


def ours(
    result: OrgResult, system: str, scaling: str, benchmark: str, folder: Path
) -> PublishedBenchmark | PublishedWeak:
    """specbench's figures for one benchmark folder, from the files alone."""
    division = json.loads((result.org / "systems" / f"{system}.json").read_text())["division"]
    files = result_files(folder)
    has_power = (folder / "power").is_dir()
    if scaling == "weak":
        return published_weak(files, benchmark, result.ruleset, division, has_power)
    scaling_file = folder / "scaling.json"
    factor = json.loads(scaling_file.read_text())["scaling_factor"] if scaling_file.is_file() else 1.0
    return published_benchmark(files, benchmark, result.usage, result.ruleset, division, factor, has_power)


@dataclass
class Tally:
    """Figures compared with the summarizer's, and each disagreement by its label."""

    compared: int = 0
    equal: int = 0
    different: dict[str, str] = field(default_factory=dict)

    def check(self, label: str, theirs: object, mine: object, rel: float = 0.0) -> None:
        self.compared += 1
        same = theirs == mine
        if rel and isinstance(theirs, float) and isinstance(mine, float):
            same = math.isclose(theirs, mine, rel_tol=rel)
        if same:
            self.equal += 1
        else:
            self.different[label] = f"summarizer {theirs!r}, specbench {mine!r}"


def _crash_kind(text: str | None) -> str | None:
    """The exception's name in a traceback's last line or in a crash note of specbench.mlperf.published*."""
    found = re.search(r"\b([A-Z][A-Za-z]*Error)\b", text or "")
    return found.group(1) if found else None


def _compare(tally: Tally, label: str, summary: Summary, key: tuple[str, str], mine: Any) -> None:
    if summary.crash:
        tally.check(f"{label} crash", _crash_kind(summary.crash), _crash_kind(mine.crash))
        return
    if isinstance(mine, PublishedWeak):
        theirs = summary.weak[key]
        scaling = mine.scaling if mine.scaling and mine.scaling.time_to_train_all_min is not None else None
        tally.check(f"{label} TTTa", _number(theirs["time_to_train_all"]), scaling and scaling.time_to_train_all_min)
        tally.check(f"{label} M", _number(theirs["number_of_models"]), scaling and float(scaling.number_of_models))
        scale = scaling.instance_scale if scaling else None
        tally.check(f"{label} S", _number(theirs["instance_scale"]), float(scale) if scale is not None else None)
        return
    theirs = summary.strong[key]
    time = mine.time
    tally.check(f"{label} time", _number(theirs["time_to_train"]), time.published_min if time else None)
    tally.check(f"{label} factor", _number(theirs["rcp_scaling_factor"]), time.scaling_factor if time else None)
    energy = mine.energy.energy_j if mine.energy else None
    if energy is not None or theirs["Energy"]:
        tally.check(f"{label} energy", _number(theirs["Energy"]), energy, rel=1e-12)


def _walk(summaries: list[OrgResult]) -> Iterator[tuple[OrgResult, str, Path, Any, Summary]]:
    """(organisation, label, folder, specbench's figures, the summarizer run that covers it) per benchmark folder."""
    for result in summaries:
        for system, scaling, benchmark, folder in _benchmark_folders(result.org, result.usage):
            label = f"{result.round}/{result.org.name}/{system}/{benchmark}"
            mine = ours(result, system, scaling, benchmark, folder)
            yield result, label, folder, mine, result.isolated.get((system, benchmark), result.whole)


@pytest.mark.slow
def test_every_figure_equals_the_summarizers(summaries: list[OrgResult]) -> None:
    """Time to train, scaling factor, energy and the weak-scaling tuple, exactly (energy to 1e-12 relative)."""
    figures, verdicts = Tally(), Tally()
    for result, label, folder, mine, summary in _walk(summaries):
        _compare(figures, label, summary, (label.split("/")[-2], label.split("/")[-1]), mine)
        rel = folder.relative_to(result.org).as_posix()
        for file, run in zip(sorted(folder.glob("result_*.txt")), mine.runs, strict=True):
            dropped = f"{rel}/{file.name}" in summary.dropped
            verdicts.check(f"{label}/{file.name} dropped", dropped, not run.counted)
    print(
        f"figures compared {figures.compared}, equal {figures.equal}; "
        f"run verdicts compared {verdicts.compared}, equal {verdicts.equal}"
    )
    unexplained = {k: v for k, v in {**figures.different, **verdicts.different}.items() if k not in KNOWN}
    assert not unexplained, "\n".join(f"{k}: {v}" for k, v in unexplained.items())
    assert figures.compared >= 180 and verdicts.compared >= 1100


@pytest.mark.slow
def test_the_summarizer_crashes_where_specbench_says_it_does(summaries: list[OrgResult]) -> None:
    """An organisation the summarizer crashes on has a benchmark folder that specbench says crashes it, and
    no other organisation has one; the crashes seen are the ZeroDivisionErrors of SMC's node logs."""
    crashing = {r.org.name: _crash_kind(r.whole.crash) for r in summaries if r.whole.crash}
    predicted: dict[str, set[str | None]] = {}
    for result, _, _, mine, _ in _walk(summaries):
        if mine.crash:
            predicted.setdefault(result.org.name, set()).add(_crash_kind(mine.crash))
    assert {org: {kind} for org, kind in crashing.items()} == predicted
    assert crashing == {"smc-ac-power": "ZeroDivisionError", "smc-dc-power": "ZeroDivisionError"}
    isolated = {
        f"{r.org.name}/{system}/{benchmark}": _crash_kind(s.crash)
        for r in summaries
        for (system, benchmark), s in r.isolated.items()
    }
    assert isolated == {
        **{
            f"smc-ac-power/1xSMC-H100-SXM-80GB/{b}": "ZeroDivisionError"
            for b in ("bert", "dlrm_dcnv2", "llama2_70b_lora", "unet3d")
        },
        **dict.fromkeys(("smc-ac-power/1xSMC-H100-SXM-80GB/resnet", "smc-ac-power/1xSMC-H100-SXM-80GB/ssd"), None),
        "smc-dc-power/1xSMC-H100-SXM-80GB/resnet": None,
        "smc-dc-power/8xSMC-H100-SXM-80GB/resnet": "ZeroDivisionError",
    }


DELL_SYSTEM = "8xXE9680x8H100-SXM-80GB-POWER"


@pytest.mark.slow
def test_switch_readings_the_summarizer_counts_as_zero(summaries: list[OrgResult]) -> None:
    """Dell's sw_0.txt measured the switch; the summarizer's energy leaves it out, SB-MLP-020 gives both figures."""
    result = next(r for r in summaries if r.round.endswith("training-v4.1") and r.org.name == "Dell")
    folder = result.org / "results" / DELL_SYSTEM / "llama2_70b_lora"
    mine = ours(result, DELL_SYSTEM, "strong", "llama2_70b_lora", folder)
    assert isinstance(mine, PublishedBenchmark) and mine.time is not None
    assert mine.energy is not None and mine.energy.energy_j is not None
    theirs = _number(result.whole.strong[(DELL_SYSTEM, "llama2_70b_lora")]["Energy"])
    assert theirs is not None and math.isclose(mine.energy.energy_j, theirs, rel_tol=1e-12)
    times, with_switch = [], []
    for file, run in zip(result_files(folder), mine.runs, strict=True):
        assert run.window is not None
        gap = unmeasured_interconnect(file.switches, run.window.time_ms)
        assert gap is not None and gap.switches == (0,) and gap.summarizer_j == 0.0
        assert gap.measured_j is not None and 160_000 < gap.measured_j < 230_000
        times.append(run.window.time_ms)
        with_switch.append(run_energy(file.nodes, file.switches, run.window.time_ms, True).energy_j)
    corrected = published_energy(times, with_switch, "llama2_70b_lora", "training", "4.1.0", mine.time.scaling_factor)
    assert corrected.energy_j is not None
    assert 1.010 < corrected.energy_j / theirs < 1.015  # the switch is 1.2% of the energy


def test_no_mlperf_code_is_imported() -> None:
    code = (
        "import sys, specbench.mlperf.published_runs; "
        "print(sorted(m for m in sys.modules if m.startswith(('mlperf_logging', 'pandas', 'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
