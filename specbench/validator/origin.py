"""Where each run's trace was taken: all runs of one benchmark come from one host and one set of devices.

A run spliced in from another machine (another GPU, another host) can be made consistent with its
own log and result.json, but its trace still names the devices it measured: power.json lists each
device's UUID (else PCI bus id, else key) and the host of its meter. Every run of a benchmark must
list the same devices on the same hosts as its first run with a trace, and those hosts must be the
ones system.yaml names (`operating_system.hostname`, and each node's in `per_node`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specbench.power.metadata import PowerJson
from specbench.spec.system import SystemDescription
from specbench.validator.findings import Findings
from specbench.validator.model import RunData


@dataclass(frozen=True)
class TraceOrigin:
    """The hosts and devices one run's power.json names: (host, identity) per device, in sorted order."""

    devices: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, power: PowerJson) -> TraceOrigin:
        return cls(tuple(sorted((host or "", device.identity) for device, host in power.devices())))

    @property
    def hosts(self) -> list[str]:
        return sorted({host for host, _ in self.devices if host})

    def describe(self, devices: Sequence[tuple[str, str]] | None = None) -> str:
        listed = self.devices if devices is None else devices
        return ", ".join(f"{identity} on {host or 'an unnamed host'}" for host, identity in listed) or "none"


def system_hostnames(system: SystemDescription | None) -> frozenset[str]:
    """The host names system.yaml records: node 0's, and each node's of a job of several nodes."""
    if system is None:
        return frozenset()
    layers = [system.layers, *(system.per_node or [])]
    names = [layer.get("operating_system", {}).get("hostname") for layer in layers]
    return frozenset(name for name in names if isinstance(name, str) and name)


def check_origins(
    findings: Findings, runs: Sequence[RunData], origins: Sequence[TraceOrigin | None], hostnames: frozenset[str]
) -> None:
    """Each run's devices and hosts against its benchmark's first traced run, and every host against system.yaml."""
    first: dict[str, tuple[RunData, TraceOrigin]] = {}
    for run, origin in zip(runs, origins, strict=True):
        if origin is None:
            continue
        where = f"{run.folder}/power.json"
        strangers = [host for host in origin.hosts if hostnames and host not in hostnames]
        if strangers:
            findings.add(
                "SB-CNS-003",
                where,
                f"expected the trace taken on {', '.join(sorted(hostnames))} (system.yaml operating_system.hostname), "
                f"found host {', '.join(strangers)}",
                json_path="host",
            )
        benchmark = run.folder.split("/", 1)[0]
        if benchmark not in first:
            first[benchmark] = (run, origin)
            continue
        reference_run, reference = first[benchmark]
        if origin.devices != reference.devices:
            missing = [d for d in reference.devices if d not in origin.devices]
            extra = [d for d in origin.devices if d not in reference.devices]
            findings.add(
                "SB-CNS-003",
                where,
                f"expected the devices of {reference_run.name} ({reference.describe()}), found in {run.name} "
                f"{reference.describe(extra) if extra else 'no other device'} in place of "
                f"{reference.describe(missing) if missing else 'none of them'}",
                json_path="meters",
            )
