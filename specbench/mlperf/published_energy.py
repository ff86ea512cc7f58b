"""MLPerf's published energy, as MLPerf's result summarizer computes it from node and switch power logs.

Per run (RS:693-766 of mlperf-logging 4.1.68's result_summarizer.py): each node log's readings are
summed as power x the time since the previous reading (or since power_measurement_start) up to
power_measurement_stop, scaled by conversion_eff and by run time / measurement window; each switch log
counts only its `interconnect_power_est` x run time. The benchmark's energy is the olympic mean of the
runs ordered by run time, x scaling.json's factor (RS:406-427). A switch log that holds power_reading
lines and no estimate counts 0 J, which MLPerf's power rules do not allow: `unmeasured_interconnect`
gives both figures (finding SB-MLP-020).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specbench.formats.mllog import TOKEN
from specbench.mlperf.published import runs_rule

SB_MLP_020 = "SB-MLP-020"
"""Proposed finding code (warning): a switch log measured power but MLPerf's summarizer counts it as 0 J."""


@dataclass(frozen=True)
class PowerEvent:
    """One MLLOG event of a power log: its line in the file, time, key and raw value."""

    line: int
    time_ms: float
    key: str
    value: Any


def read_power_events(text: str) -> tuple[PowerEvent, ...]:
    """The events of a power log as MLPerf's parser reads them (mlp_parser: any metadata, even '').

    The JSON after a line's last ':::MLLOG '; a line that does not read is left out, as the summarizer
    ignores parse errors of power logs (RS:702). Lines end at \\n, \\r\\n or \\r, as in MLPerf's open().
    """
    events = []
    for number, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        at = line.rfind(TOKEN)
        if at < 0:
            continue
        try:
            data = json.loads(line[at + len(TOKEN) :].strip())
            events.append(PowerEvent(number, float(data["time_ms"]), data["key"], data["value"]))
        except (ValueError, TypeError, KeyError):
            continue
    return tuple(events)


@dataclass(frozen=True)
class NodeEnergy:
    """One power log integrated as the summarizer integrates node logs (RS:710-751)."""

    energy_j: float | None
    readings_used: int
    window_ms: float | None
    """power_measurement_stop - power_measurement_start (stop: the last reading where none is logged)."""
    crash: str | None = None


def node_energy(events: Sequence[PowerEvent], run_time_ms: float) -> NodeEnergy:
    """conversion_eff x sum(power x dt) x run time / window / 1000, in J (RS:710-751); `crash` where it raises."""
    prev = last = start = stop = 0.0
    total: Any = 0
    efficiency: Any = 1.0
    started = stopped = False
    used = 0
    try:
        for event in sorted(events, key=lambda e: e.time_ms):
            if event.key == "power_measurement_start":
                start = prev = event.time_ms
                started = True
            if event.key == "power_reading" and not stopped and started:
                total += event.value * (event.time_ms - prev)
                prev, last, used = event.time_ms, max(last, event.time_ms), used + 1
            if event.key == "power_measurement_stop":
                stop, stopped = event.time_ms, True
            if event.key == "conversion_eff":
                efficiency = event.value
        if not started:
            return NodeEnergy(None, 0, None, crash="ValueError (RS:741): Power start timestamp not found")
        window = (stop if stopped else last) - start
        return NodeEnergy(efficiency * total * run_time_ms / window / 1000, used, window)
    except (TypeError, ZeroDivisionError) as err:
        return NodeEnergy(None, used, None, crash=f"{type(err).__name__} (RS:730-749): {err}")


def switch_energy_j(events: Sequence[PowerEvent], run_time_ms: float) -> float:
    """conversion_eff x interconnect_power_est x run time / 1000, in J (RS:754-766): 0 without an estimate."""
    estimate: Any = 0
    efficiency: Any = 1.0
    for event in events:
        if event.key == "conversion_eff":
            efficiency = event.value
        if event.key == "interconnect_power_est":
            estimate = event.value
            break
    return float(efficiency * estimate * run_time_ms / 1000)


def measured_switch(events: Sequence[PowerEvent]) -> bool:
    """A switch log with power_reading lines and no interconnect_power_est: measured, yet counted as 0 J."""
    keys = {event.key for event in events}
    return "power_reading" in keys and "interconnect_power_est" not in keys


@dataclass(frozen=True)
class RunEnergy:
    """One run's energy: every node log plus every switch log, in the order given (RS:693-708)."""

    energy_j: float | None
    nodes_j: tuple[float, ...]
    switches_j: tuple[float, ...]
    crash: str | None = None


def run_energy(
    nodes: Sequence[Sequence[PowerEvent]],
    switches: Sequence[Sequence[PowerEvent]],
    run_time_ms: float,
    integrate_switch_readings: bool = False,
) -> RunEnergy:
    """A run's energy in J as the summarizer sums it; with `integrate_switch_readings`, measured switch logs
    are integrated like node logs instead of counting 0 J (MLPerf's power rules, not its summarizer)."""
    if not nodes:
        return RunEnergy(None, (), (), crash="AssertionError (RS:699): no node_*.txt in the run's power folder")
    node_j: list[float] = []
    for events in nodes:
        energy = node_energy(events, run_time_ms)
        if energy.energy_j is None:
            return RunEnergy(None, tuple(node_j), (), crash=energy.crash)
        node_j.append(energy.energy_j)
    switch_j: list[float] = []
    for events in switches:
        if integrate_switch_readings and measured_switch(events):
            integrated = node_energy(events, run_time_ms)
            if integrated.energy_j is None:
                return RunEnergy(None, tuple(node_j), tuple(switch_j), crash=integrated.crash)
            switch_j.append(integrated.energy_j)
        else:
            switch_j.append(switch_energy_j(events, run_time_ms))
    total: float = 0
    for part in (*node_j, *switch_j):
        total += part
    return RunEnergy(total, tuple(node_j), tuple(switch_j))


@dataclass(frozen=True)
class PublishedEnergy:
    """A benchmark's published energy: the olympic mean of the runs ordered by run time, x the scaling factor."""

    used_j: tuple[float, ...]
    """The runs' energies the mean takes, in the order of their run times (fastest first)."""
    olympic_mean_j: float | None
    scaling_factor: float
    energy_j: float | None
    """The summarizer's figure (its `Energy` column); None when it publishes none."""
    problem: str | None = None


def published_energy(
    run_times_ms: Sequence[float | None],
    run_energies_j: Sequence[float | None],
    benchmark: str,
    usage: str,
    ruleset: str,
    scaling_factor: float = 1.0,
) -> PublishedEnergy:
    """The published energy from each result file's run time (None: dropped) and energy (RS:406-427).

    The energies are ordered by their runs' times and cut as the time to train is (RS:421-423), so the
    runs averaged are the same; the scaling factor of the time multiplies the energy too (RS:427).
    """
    rule = runs_rule(usage, ruleset, benchmark)
    counted = [(t, e) for t, e in zip(run_times_ms, run_energies_j, strict=True) if t is not None]
    failed = len(run_times_ms) - len(counted)
    if failed > rule.dropped_each_end:
        return PublishedEnergy((), None, scaling_factor, None, f"{failed} runs dropped (RS:420)")
    if any(e is None for _, e in counted):
        return PublishedEnergy((), None, scaling_factor, None, "a counted run has no energy")
    ordered = [e for _, e in sorted(counted, key=lambda pair: pair[0]) if e is not None]
    used = tuple(e for e in ordered[rule.dropped_each_end : len(ordered) - (rule.dropped_each_end - failed)])
    if not used:
        return PublishedEnergy((), None, scaling_factor, None, "no run left after the olympic cut (RS:224)")
    mean = sum(used) * 1.0 / len(used)
    return PublishedEnergy(used, mean, scaling_factor, mean * scaling_factor)


def weak_scaling_energy_j(energies_j: Sequence[float]) -> float | None:
    """HPC weak scaling: the mean of the models' energies without the lowest (RS:478-493, no scaling factor).

    The summarizer writes it into all three columns of its power table (number_of_models too).
    """
    ordered = sorted(energies_j)[1:]
    return sum(ordered) * 1.0 / len(ordered) if ordered else None


@dataclass(frozen=True)
class UnmeasuredInterconnect:
    """Switch logs that measured power, which the summarizer counts as 0 J (SB-MLP-020), and their energy."""

    switches: tuple[int, ...]
    """Indexes (in the order given) of the switch logs concerned."""
    summarizer_j: float
    measured_j: float | None
    """Their readings integrated as node readings are (RS:710-751); None where that cannot be done."""
    reason: str | None = None

    def message(self, files: Sequence[str], run_j: float | None = None) -> str:
        """The finding's text: expected, found, and the energy left out."""
        share = (
            f" ({self.measured_j / (run_j + self.measured_j):.1%} of the run's energy with it)"
            if run_j and self.measured_j is not None and math.isfinite(run_j)
            else ""
        )
        found = f"{self.measured_j:,.0f} J" if self.measured_j is not None else f"not integrable: {self.reason}"
        return (
            f"expected the interconnect's energy (MLPerf's power rules: measured or estimated) to count, found "
            f"{', '.join(files)} with power_reading lines and no interconnect_power_est: MLPerf's result summarizer "
            f"counts {self.summarizer_j:g} J, its readings integrated as node readings give {found}{share}"
        )


def unmeasured_interconnect(
    switches: Sequence[Sequence[PowerEvent]], run_time_ms: float
) -> UnmeasuredInterconnect | None:
    """Both figures for a run's measured switch logs (SB-MLP-020); None when every switch log gives an estimate."""
    concerned = tuple(i for i, events in enumerate(switches) if measured_switch(events))
    if not concerned:
        return None
    summarizer_j = sum(switch_energy_j(switches[i], run_time_ms) for i in concerned)
    measured_j = 0.0
    for i in concerned:
        energy = node_energy(switches[i], run_time_ms)
        if energy.energy_j is None:
            return UnmeasuredInterconnect(concerned, summarizer_j, None, energy.crash)
        measured_j += energy.energy_j
    return UnmeasuredInterconnect(concerned, summarizer_j, measured_j)
