"""A spec's power scope is met by one device scope of the trace, the same for the executor and the validator."""

from __future__ import annotations

import pytest

from specbench.power.energy import DeviceEnergy
from specbench.power.sampler import Window
from specbench.power.scopes import device_scopes
from specbench.run.result import power_result


def window(*devices: tuple[str, str, float]) -> Window:
    energies = tuple(
        DeviceEnergy(key, scope, 10.0, joules, "integrated", None, joules, None, 100) for key, scope, joules in devices
    )
    return Window(0.0, 10.0, 0.0, 10.0, energies)


@pytest.mark.parametrize(
    ("spec_scope", "present", "expected"),
    [
        ("accelerator", ["accelerator", "platform"], ("accelerator",)),
        ("node", ["cpu_package", "platform"], ("platform",)),  # RAPL psys
        ("node", ["accelerator", "module", "cpu"], ("module",)),  # Grace superchips
        ("node", ["platform", "module"], ("platform",)),  # never both: scopes nest
        ("node", ["accelerator", "cpu_package"], ()),
        ("wall", ["wall", "platform"], ("wall",)),
        ("wall", ["platform"], ()),
    ],
)
def test_each_spec_scope_has_its_device_scopes_in_order_of_preference(
    spec_scope: str, present: list[str], expected: tuple[str, ...]
) -> None:
    assert device_scopes(spec_scope, present) == expected


def test_node_scope_is_measured_by_grace_modules_and_wall_by_an_outlet_meter() -> None:
    gh = window(
        ("hwmon:module-0", "module", 4000.0), ("hwmon:module-1", "module", 5000.0), ("nvml:0", "accelerator", 3000.0)
    )
    node = power_result(gh, [], "node", None)
    assert node.measured and node.energy_j == 9000.0 and node.devices == ["hwmon:module-0", "hwmon:module-1"]
    outlet = power_result(window(("pdu:outlet-3", "wall", 12000.0)), [], "wall", None)
    assert outlet.measured and outlet.energy_j == 12000.0 and outlet.mean_power_w == 1200.0
    none = power_result(window(("nvml:0", "accelerator", 3000.0)), [], "wall", None)
    assert (
        not none.measured and none.reason == "not measured: no meter here measures scope 'wall' (seen: ['accelerator'])"
    )
