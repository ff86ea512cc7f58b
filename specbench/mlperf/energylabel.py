"""How an imported benchmark's energy was measured (import.json `energy`), and MLPerf's interconnect rule.

MLPerf's power rules (training_policies power_measurement.adoc) ask for every node measured, the
interconnect measured or estimated, and the readings' sampling; its package checker and summarizer
check none of it. The label states, per benchmark, what specbench's energy figure covers (the nodes:
switch logs are kept apart, never added), what MLPerf's published figure covers, the share of nodes
measured, the lowest sampling rate inside a timed run, the meter, and any conversion efficiency logged.
A multi-node system whose power folder holds no switch log is SB-MLP-021 (a warning: stricter than
MLPerf's tools).
"""

from __future__ import annotations

from collections.abc import Sequence

from specbench.formats.mlperf_import import EnergyLabel, ImportedPower, ImportFinding

METER = "the submitter's node power meter, as MLPerf's node_N.txt power logs record it"


def energy_label(
    runs: Sequence[tuple[ImportedPower | None, float | None]], nodes: int, switch_measured: bool, folder: str
) -> tuple[EnergyLabel | None, list[ImportFinding]]:
    """The label of a benchmark's energy from its runs' power records and durations (s), and SB-MLP-021 findings;
    None without power logs. `switch_measured`: a switch log holds readings (SB-MLP-020) rather than estimates."""
    powered = [(power, duration) for power, duration in runs if power is not None]
    if not powered:
        return None, []
    measured = min(len(power.nodes) for power, _ in powered)
    rates = [
        c.readings_in_window / duration
        for power, duration in powered
        if duration
        for c in power.coverage
        if c.readings_in_window
    ]
    estimated = all(i.interconnect_power_est_w is not None for power, _ in powered for i in power.interconnect)
    switches = any(power.interconnect for power, _ in powered)
    if not switches:
        interconnect = "none"
    elif switch_measured:
        interconnect = "measured; MLPerf's summarizer counts it as 0 J (SB-MLP-020)"
    else:
        interconnect = "estimated (interconnect_power_est)" if estimated else "partly estimated"
    findings = []
    if nodes > 1:
        for power, _ in powered:
            if not power.interconnect:
                findings.append(
                    ImportFinding(
                        code="SB-MLP-021",
                        file=f"{folder}/power/{power.folder}",
                        message=f"expected the interconnect of this {nodes}-node system measured or estimated (an "
                        "sw_N.txt log; MLPerf's power rules), found none: its energy is the nodes' alone (stricter "
                        "than MLPerf: its package checker and summarizer do not check this)",
                    )
                )
    effs = sorted({e for power, _ in powered for e in power.conversion_eff.values()})
    label = EnergyLabel(
        boundary="node",
        published_boundary="node" if not switches else "node + interconnect",
        interconnect=interconnect,
        nodes_measured=measured,
        nodes=nodes,
        min_sampling_hz=min(rates) if rates else None,
        meter=METER,
        conversion_eff=effs,
    )
    return label, findings
