"""The power folders of one MLPerf benchmark (`power/result_*/node_N.txt`, `sw_N.txt`), read and checked.

MLPerf's own rules come first: a power folder per result and none without its result, one node
log per node of the system, readable logs with readings (SB-MLP-005, errors: the energy of the
run cannot be taken otherwise). Where specbench is stricter than MLPerf's power checker, the
finding is a warning that names the rule: node logs numbered other than node_0 ... node_(N-1)
(SB-MLP-010) and two node logs with the same bytes (SB-MLP-011).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specbench.formats.mlperf_import import ImportFinding
from specbench.mlperf.power import PowerLog, check_markers, device_key, parse_power_log
from specbench.mlperf.source import NODE, OrgFolder, SourceError, natural_key, read_bytes, source_file


@dataclass
class RunPower:
    """The power folder of one result: node logs by device key, interconnect estimates, other files."""

    folder: str
    nodes: dict[str, PowerLog]
    switches: list[PowerLog]
    ignored: list[str]


def read_power_folders(
    org: OrgFolder, power: Path | None, nodes_wanted: int, findings: list[ImportFinding]
) -> dict[str, RunPower]:
    """Every power/result_* folder by name, with MLPerf's naming and completeness rules checked."""
    if power is None:
        return {}
    out: dict[str, RunPower] = {}
    folders = (p for p in power.iterdir() if p.is_dir() and not p.is_symlink())
    for folder in sorted(folders, key=lambda p: natural_key(p.name)):
        out[folder.name] = _read_folder(org, folder, nodes_wanted, findings)
    return out


def _read_folder(org: OrgFolder, folder: Path, nodes_wanted: int, findings: list[ImportFinding]) -> RunPower:
    rel = folder.relative_to(org.path).as_posix()
    found: dict[str, list[tuple[int, Path]]] = {"node": [], "sw": []}
    others: list[str] = []
    for path in sorted(folder.iterdir(), key=lambda p: natural_key(p.name)):
        match = NODE.match(path.name)
        if match and path.is_file() and not path.is_symlink():
            found[match.group(1)].append((int(match.group(2)), path))
        else:
            others.append(path.name)
    for kind, files in found.items():
        _check_numbering(rel, kind, files, others, findings)
    if len(found["node"]) != nodes_wanted:
        findings.append(
            ImportFinding(
                code="SB-MLP-005",
                file=rel,
                message=f"expected one node log per node ({nodes_wanted}, number_of_nodes of the system), "
                f"found {len(found['node'])}",
            )
        )
    nodes = {}
    for _, path in sorted(found["node"]):
        log = read_power_log(org, path, findings)
        if log is not None:
            check_markers(log)
            if not log.readings:
                log.problem("SB-MLP-005", "expected power_reading events, found none")
            findings.extend(log.problems)
            nodes[device_key(path.name)] = log
    _check_identical(rel, nodes, findings)
    switches = [log for _, path in sorted(found["sw"]) if (log := read_power_log(org, path, findings)) is not None]
    for switch in switches:
        findings.extend(switch.problems)
    ignored = [f"power/{folder.name}/{name}: not a node_N.txt or sw_N.txt power log" for name in others]
    return RunPower(rel, nodes, switches, ignored)


def _check_numbering(
    rel: str, kind: str, files: list[tuple[int, Path]], others: list[str], findings: list[ImportFinding]
) -> None:
    """node_0 ... node_(N-1) (likewise sw_N), as MLPerf's power checker expects them (a warning otherwise)."""
    indices = sorted(index for index, _ in files)
    if indices == list(range(len(files))):
        return
    names = ", ".join(p.name for _, p in files)
    wanted = f"{kind}_0.txt" + (f" to {kind}_{len(files) - 1}.txt" if len(files) > 1 else "")
    lookalikes = [name for name in others if name.startswith(kind)]
    accepted = (
        f"; MLPerf's power checker counts {', '.join(lookalikes)} as {kind} logs too and so accepts this folder"
        if lookalikes
        else ""
    )
    findings.append(
        ImportFinding(
            code="SB-MLP-010",
            file=rel,
            message=f"expected {wanted} (MLPerf's power checker numbers them from 0), found {names}{accepted}",
        )
    )


def _check_identical(rel: str, nodes: dict[str, PowerLog], findings: list[ImportFinding]) -> None:
    """Two node logs of one run with the same bytes: one node's readings are likely a copy of another's."""
    first: dict[str, str] = {}
    for log in nodes.values():
        name = log.file.path.rsplit("/", 1)[-1]
        if log.file.sha256 in first:
            findings.append(
                ImportFinding(
                    code="SB-MLP-011",
                    file=f"{rel}/{name}",
                    message=f"expected a node log of its own, found the bytes of {first[log.file.sha256]} "
                    f"(sha256 {log.file.sha256[:12]}...): two nodes cannot read the same power at the same "
                    "milliseconds (MLPerf's rule 'Measure All Nodes', which MLPerf's tools do not check); "
                    "both count in the energy",
                )
            )
        else:
            first[log.file.sha256] = name


def read_power_log(org: OrgFolder, path: Path, findings: list[ImportFinding]) -> PowerLog | None:
    try:
        data = read_bytes(path)
    except SourceError as err:
        rel = path.relative_to(org.path).as_posix()
        findings.append(
            ImportFinding(code="SB-MLP-005", file=rel, message=f"expected a readable power log, found: {err}")
        )
        return None
    return parse_power_log(data.decode("utf-8", errors="replace"), source_file(org, path, data))
