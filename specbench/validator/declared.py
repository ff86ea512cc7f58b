"""Declared numbers held to their bounds: the sampler's period, power limits, idle power, device counts.

A number a check relies on can also switch it off: a requested period of 1e-320 s makes every trace
clock look slow enough, a power limit of 1e308 W lets any mean power pass, an accelerator count of
1.0 (not an integer) hides the device from the physics checks. So each is typed and bounded here,
by the sampler's own range and by the device table (specbench/physics/devices.yaml), before any
check uses it. Each function returns what breaks a bound; the caller reports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from specbench.physics import DeviceFacts, lookup
from specbench.power.metadata import PowerJson, Sampling
from specbench.power.trace import MAX_INTERVAL_S, MIN_INTERVAL_S
from specbench.spec.models import LayerName
from specbench.spec.system import SystemDescription
from specbench.validator.values import is_int, is_number, show

Path = tuple[str | int, ...]
LIMIT_MARGIN = 0.10
"""A configured power limit may exceed the device table's board limit by this much (a firmware that raises it)."""
WRAPPING_METERS = frozenset({"rapl"})
"""Meters whose energy counter wraps at a known modulus (specbench/power/rapl.py reads `max_energy_range_uj`).
Any other meter's counter does not wrap: a modulus declared for it would switch off the checks of a counter
that goes down (SB-PWR-006, SB-PRV-003)."""


@dataclass(frozen=True)
class Breach:
    """A declared value that breaks its type (SB-STR-007) or its bound (SB-CNS-004), and where it is."""

    code: str
    path: Path
    message: str


def period_breaches(power: PowerJson) -> list[Breach]:
    """requested_period_s of the file and of each node within the sampler's range (it refuses to run outside it)."""
    samplings: list[tuple[Path, Sampling | None]] = [(("sampling",), power.sampling)]
    samplings += [(("nodes", i, "sampling"), node.sampling) for i, node in enumerate(power.nodes or [])]
    out = []
    for path, sampling in samplings:
        period = sampling.requested_period_s if sampling is not None else None
        if period is not None and not MIN_INTERVAL_S <= period <= MAX_INTERVAL_S:
            out.append(
                Breach(
                    "SB-CNS-004",
                    (*path, "requested_period_s"),
                    f"expected requested_period_s between {MIN_INTERVAL_S:g} and {MAX_INTERVAL_S:g} s (the sampler's "
                    f"range), found {period!r} s",
                )
            )
    if power.sampling is None and power.source is None:
        out.append(
            Breach(
                "SB-STR-007",
                ("sampling",),
                "expected sampling with requested_period_s (the sampler writes it; only an imported MLPerf trace, "
                "with its source, has none), found none",
            )
        )
    return out


def limit_breaches(power: PowerJson, system_model: str | None) -> list[Breach]:
    """Each enforced power limit of an accelerator power.json lists within its board limit (+ the margin) where the
    device table knows it (a state of a key no meter lists is never read)."""
    devices = {device.key: device for device, _ in power.devices()}
    out = []
    for state_name in ("state_start", "state_end"):
        for key, state in (getattr(power, state_name) or {}).items():
            device = devices.get(key)
            if device is None or state.power_limit_w is None or device.scope != "accelerator":
                continue
            facts = lookup(device.model) or lookup(system_model)
            problem = _above_board(state.power_limit_w, facts, f"power_limit_w of {key}")
            if problem is not None:
                out.append(Breach("SB-CNS-004", (state_name, key, "power_limit_w"), problem))
    return out


def range_breaches(power: PowerJson) -> list[Breach]:
    """A wrap modulus (`energy_range_j`) only on a device of a meter whose counter wraps."""
    out = []
    for i, meter in enumerate(power.meters):
        for j, entry in enumerate(meter.devices):
            if entry.energy_range_j is not None and entry.meter not in WRAPPING_METERS:
                out.append(
                    Breach(
                        "SB-CNS-004",
                        ("meters", i, "devices", j, "energy_range_j"),
                        f"expected no energy_range_j for {entry.key} (a {entry.meter} counter does not wrap; only "
                        f"{', '.join(sorted(WRAPPING_METERS))} counters do), found {entry.energy_range_j!r} J",
                    )
                )
    return out


def _above_board(value: float, facts: DeviceFacts | None, what: str) -> str | None:
    if facts is None or value <= facts.power_limit_w * (1 + LIMIT_MARGIN):
        return None
    return (
        f"expected {what} at most {facts.power_limit_w * (1 + LIMIT_MARGIN):g} W ({facts.name}'s board limit "
        f"{facts.power_limit_w:g} W + {LIMIT_MARGIN:.0%}, docs/devices.md), found {value!r} W"
    )


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _is_positive(value: Any) -> bool:
    return is_number(value) and value > 0


TYPED_NAMES: tuple[tuple[LayerName, str, Callable[[Any], bool], int | None, str], ...] = (
    ("hardware", "accelerator_count", is_int, 0, "an integer >= 0"),
    ("hardware", "accelerator_model", _is_text, None, "a model name"),
    ("communication", "world_size", is_int, 1, "an integer >= 1"),
    ("operating_system", "hostname", _is_text, None, "a name"),
    ("driver_firmware", "power_limit_w", _is_positive, None, "a number > 0 (W)"),
)
"""system.yaml's layer values that checks read (layer, name, test, minimum, what is expected)."""


def system_breaches(system: SystemDescription) -> list[Breach]:
    """system.yaml's numbers and names that checks read: typed, and the power figures within the device's."""
    out: list[Breach] = []
    nodes = [(("layers",), system.layers), *((("per_node", i), node) for i, node in enumerate(system.per_node or []))]
    for where, layers in nodes:
        for layer, name, check, minimum, expected in TYPED_NAMES:
            out += _typed(layers.get(layer, {}), (*where, layer), name, check, minimum, expected)
    out += _typed(system.declared, ("declared",), "idle_power_w", _is_positive, None, "a number > 0 (W)")
    if not out:
        out += _system_power_breaches(system)
    return out


def _system_power_breaches(system: SystemDescription) -> list[Breach]:
    """The configured power limit and the declared idle power of a well-typed system.yaml against its device."""
    hardware = system.layers.get("hardware", {})
    model = hardware.get("accelerator_model")
    facts = lookup(model) if isinstance(model, str) and hardware.get("accelerator_count") else None
    out = []
    limit = system.layers.get("driver_firmware", {}).get("power_limit_w")
    problem = _above_board(float(limit), facts, "driver_firmware power_limit_w") if is_number(limit) else None
    if problem is not None:
        out.append(Breach("SB-CNS-004", ("layers", "driver_firmware", "power_limit_w"), problem))
    idle = system.declared.get("idle_power_w")
    if is_number(idle) and facts is not None and idle >= facts.power_limit_w:
        out.append(
            Breach(
                "SB-CNS-004",
                ("declared", "idle_power_w"),
                f"expected idle_power_w below {facts.name}'s board limit {facts.power_limit_w:g} W, found {idle!r} W",
            )
        )
    return out


def _typed(
    layer: Mapping[str, Any], path: Path, name: str, check: Callable[[Any], bool], minimum: int | None, expected: str
) -> list[Breach]:
    """A stated value of the right type (and at least `minimum`), or one Breach; an absent or null value passes."""
    value = layer.get(name)
    if value is None or (check(value) and (minimum is None or value >= minimum)):
        return []
    return [Breach("SB-STR-007", (*path, name), f"expected {name} {expected}, found {show(value)}")]
