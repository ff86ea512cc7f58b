"""RAPL and Grace Hopper hwmon meters on fake sysfs trees: discovery, wraparound, permissions, scopes."""

from __future__ import annotations

from pathlib import Path

import pytest
from power_fakes import FakeClock, ScriptedMeter

from specbench.power import HwmonMeter, MeterUnavailable, PowerSampler, RaplMeter
from specbench.power.base import Device


def write_zone(root: Path, name: str, label: str, energy_uj: int, range_uj: int | None = 262_143_328_850) -> Path:
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(label + "\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    if range_uj is not None:
        (zone / "max_energy_range_uj").write_text(f"{range_uj}\n")
    return zone


@pytest.fixture
def powercap(tmp_path: Path) -> Path:
    root = tmp_path / "powercap"
    (root / "intel-rapl").mkdir(parents=True)
    write_zone(root, "intel-rapl:0", "package-0", 1_000_000)
    write_zone(root, "intel-rapl:0:0", "core", 500_000)
    write_zone(root, "intel-rapl:0:1", "dram", 2_000_000, range_uj=65_712_999_613)
    write_zone(root, "intel-rapl:1", "package-1", 3_000_000)
    write_zone(root, "intel-rapl-mmio:0", "package-0", 1_000_000)
    return root


def test_rapl_measures_packages_and_dram_but_not_the_parts_a_package_includes(powercap: Path) -> None:
    meter = RaplMeter(powercap)

    assert [(d.key, d.scope, d.energy_range_j) for d in meter.devices] == [
        ("rapl:package-0", "cpu_package", pytest.approx(262_143.328850)),
        ("rapl:package-0/dram", "dram", pytest.approx(65_712.999613)),
        ("rapl:package-1", "cpu_package", pytest.approx(262_143.328850)),
    ]
    assert [r.energy_j for r in meter.read()] == [1.0, 2.0, 3.0]
    assert all(r.power_instant_w is None and r.power_average_w is None for r in meter.read())


def test_a_rapl_wraparound_is_corrected_through_the_sampler(powercap: Path, clock: FakeClock) -> None:
    energy_file = powercap / "intel-rapl:0" / "energy_uj"
    sampler = PowerSampler([RaplMeter(powercap)], 0.1, clock=clock)
    energy_file.write_text("262143000000\n")
    sampler.window_start()
    clock.advance(1.0)
    energy_file.write_text("100000000\n")
    sampler.sample_now()
    clock.advance(1.0)
    energy_file.write_text("300000000\n")
    energy = sampler.window_stop().device("rapl:package-0")

    assert energy.method == "counter"
    assert energy.energy_j == pytest.approx(262_143.328850 - 262_143.0 + 300.0)
    assert [e.kind for e in energy.counter_events] == ["wrap"]


def test_rapl_permission_denied_names_the_fix(powercap: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_read_text = Path.read_text

    def denied(self: Path, *args: object, **kwargs: object) -> str:
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", denied)
    with pytest.raises(MeterUnavailable) as caught:
        RaplMeter(powercap)
    message = str(caught.value)
    assert message.startswith(f"cannot read {powercap}/intel-rapl:0/energy_uj: permission denied")
    assert "sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj" in message
    assert "--meters nvml" in message


def test_rapl_without_powercap_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(MeterUnavailable, match="exposes no powercap RAPL zones"):
        RaplMeter(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MeterUnavailable, match="no RAPL package, dram or psys zones"):
        RaplMeter(tmp_path / "empty")


def write_sensor(root: Path, chip: str, label: str, microwatts: int) -> None:
    folder = root / chip
    folder.mkdir(parents=True)
    (folder / "power1_oem_info").write_text(label + "\n")
    (folder / "power1_average").write_text(f"{microwatts}\n")
    (folder / "power1_average_interval").write_text("50\n")


@pytest.fixture
def hwmon(tmp_path: Path) -> Path:
    root = tmp_path / "hwmon"
    write_sensor(root, "hwmon1", "Module Power Socket 0", 900_000_000)
    write_sensor(root, "hwmon2", "Grace Power Socket 0", 150_000_000)
    write_sensor(root, "hwmon3", "CPU Power Socket 0", 100_000_000)
    write_sensor(root, "hwmon4", "SysIO Power Socket 0", 50_000_000)
    (root / "hwmon0").mkdir()
    (root / "hwmon0" / "temp1_input").write_text("40000\n")
    return root


def test_grace_hopper_sensors_are_scoped_by_their_label(hwmon: Path) -> None:
    meter = HwmonMeter(hwmon)

    assert [(d.key, d.scope) for d in meter.devices] == [
        ("hwmon:module-power-socket-0", "module"),
        ("hwmon:grace-power-socket-0", "cpu"),
        ("hwmon:cpu-power-socket-0", "cpu"),
        ("hwmon:sysio-power-socket-0", "sysio"),
    ]
    assert [r.power_average_w for r in meter.read()] == [900.0, 150.0, 100.0, 50.0]
    assert meter.devices[0].notes == (
        "averaging interval 50 ms",
        "module power includes the GPU, CPU and memory of the superchip",
    )


def test_module_power_is_never_added_to_the_gpu_it_includes(hwmon: Path, clock: FakeClock) -> None:
    gpu = ScriptedMeter(clock, power_w=lambda t: 600.0, energy_j=lambda t: 600.0 * t)
    module = HwmonMeter(hwmon)
    sampler = PowerSampler([gpu, module], 0.1, clock=clock)
    sampler.window_start()
    clock.advance(10.0)
    window = sampler.window_stop()

    assert window.energy_j("accelerator") == pytest.approx(6000.0)
    assert window.energy_j("module") == pytest.approx(9000.0)
    assert window.device("hwmon:module-power-socket-0").method == "integrated"
    assert window.device("hwmon:module-power-socket-0").note == "no energy counter"
    assert set(window.totals_by_scope()) == {"accelerator", "module", "cpu", "sysio"}


def test_hwmon_without_labelled_power_sensors_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "hwmon0").mkdir()
    with pytest.raises(MeterUnavailable, match="no hwmon power sensors labelled by powerN_oem_info"):
        HwmonMeter(tmp_path)


def test_an_unknown_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="scope 'board' is not one of"):
        Device(key="x", meter="t", scope="board")
