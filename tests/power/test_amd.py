"""The AMD SMI meter against an autospec'd amdsmi: readings, the start-up counter check, MI250 packages."""

from __future__ import annotations

import sys

import pytest
from power_fakes import AmdSmiClkType, FakeAmdGpu, FakeClock, make_amdsmi

from specbench.power import AmdSmiMeter, MeterUnavailable, PowerError, PowerSampler, PowerValues
from specbench.power.amd import load_amdsmi


def open_meter(gpus: list[FakeAmdGpu], clock: FakeClock, environ: dict[str, str] | None = None):
    amdsmi = make_amdsmi(gpus, clock)
    meter = AmdSmiMeter(amdsmi=amdsmi, environ=environ or {}, sleep=clock.advance, monotonic=clock.monotonic)
    return meter, amdsmi


def test_energy_is_accumulator_times_resolution_and_power_is_socket_power(clock: FakeClock) -> None:
    gpu = FakeAmdGpu(uuid="u0", bdf="0000:0c:00.0")
    meter, amdsmi = open_meter([gpu], clock)

    reading = meter.read()[0]
    assert reading.power_instant_w == 300.0
    assert reading.power_average_w == 295.0
    assert reading.energy_j == pytest.approx((1_000_000 + 300.0 / 15.3e-6 * 0.5) * 15.3 / 1e6)
    device = meter.devices[0]
    assert (device.key, device.uuid, device.pci_bus_id, device.verify_counter) == (
        "amdsmi:0",
        "u0",
        "0000:0c:00.0",
        True,
    )
    assert device.counter_problem is None
    assert meter.states()[0].power_limit_w == 750.0
    assert meter.states()[0].sm_clock_mhz == 2100.0
    amdsmi.amdsmi_get_clock_info.assert_any_call(gpu, AmdSmiClkType.MEM)
    assert meter.info() == {"library": "amdsmi 25.3.0", "driver_version": "6.10.5"}


def test_the_older_power_key_of_the_energy_count_is_read(clock: FakeClock) -> None:
    meter, _ = open_meter([FakeAmdGpu(uuid="u0", bdf="b0", energy_key="power")], clock)
    assert meter.read()[0].energy_j is not None
    assert meter.devices[0].counter_problem is None


def test_a_stuck_counter_at_start_makes_energy_integrated(clock: FakeClock) -> None:
    meter, _ = open_meter([FakeAmdGpu(uuid="u0", bdf="b0", ticks_per_s=0.0)], clock)
    problem = meter.devices[0].counter_problem
    assert problem == "energy counter did not advance in 0.50 s while power read 300.0 W (stuck counter)"

    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.window_start()
    clock.advance(2.0)
    energy = sampler.window_stop().device("amdsmi:0")
    assert (energy.method, energy.energy_j, energy.note) == ("integrated", pytest.approx(600.0), problem)


def test_a_mis_scaled_counter_at_start_is_distrusted(clock: FakeClock) -> None:
    meter, _ = open_meter([FakeAmdGpu(uuid="u0", bdf="b0", ticks_per_s=300.0 / 15.3e-6 * 15.3)], clock)
    assert "plausible 0.5-2.0" in (meter.devices[0].counter_problem or "")


def test_power_na_is_not_measured_and_the_average_is_kept(clock: FakeClock) -> None:
    meter, _ = open_meter([FakeAmdGpu(uuid="u0", bdf="b0", socket_w="N/A")], clock)
    assert meter.read()[0].power_instant_w is None
    assert meter.read()[0].power_average_w == 295.0
    assert meter.devices[0].power_source == "amdsmi_get_power_info(average_socket_power)"


def test_mi250_dies_are_one_device_per_package(clock: FakeClock) -> None:
    dies = [
        FakeAmdGpu(
            uuid=f"u{i}",
            bdf=f"0000:{i:02x}:00.0",
            model="AMD Instinct MI250X",
            socket_w="N/A",
            average_w=w,
            ticks_per_s=w / 15.3e-6,
        )
        for i, w in enumerate([500.0, 0.0, 480.0, 0.0])
    ]
    meter, _ = open_meter(dies, clock)

    assert [(d.key, d.members) for d in meter.devices] == [
        ("amdsmi:0", ("0000:00:00.0", "0000:01:00.0")),
        ("amdsmi:2", ("0000:02:00.0", "0000:03:00.0")),
    ]
    assert [r.power_average_w for r in meter.read()] == [500.0, 480.0]
    assert "die 0 reports both dies" in meter.devices[0].notes[0]


def test_visible_devices_select_a_package_once(clock: FakeClock) -> None:
    dies = [
        FakeAmdGpu(uuid=f"u{i}", bdf=f"b{i}", model="AMD Instinct MI250X", socket_w="N/A", average_w=w)
        for i, w in enumerate([500.0, 0.0])
    ]
    dies[0].ticks_per_s = 500.0 / 15.3e-6
    meter, _ = open_meter(dies, clock, {"ROCR_VISIBLE_DEVICES": "1,0"})
    assert [d.key for d in meter.devices] == ["amdsmi:0"]


def test_an_unknown_visible_device_is_named(clock: FakeClock) -> None:
    with pytest.raises(PowerError, match="HIP_VISIBLE_DEVICES='GPU-zz': 'GPU-zz' names no single GPU"):
        open_meter([FakeAmdGpu(uuid="u0", bdf="b0")], clock, {"HIP_VISIBLE_DEVICES": "GPU-zz"})


def test_amdsmi_that_does_not_start_makes_the_meter_unavailable(clock: FakeClock) -> None:
    amdsmi = make_amdsmi([], clock)
    amdsmi.amdsmi_init.side_effect = amdsmi.AmdSmiException("AMDSMI_STATUS_DRIVER_NOT_LOADED")
    with pytest.raises(MeterUnavailable, match="AMD SMI did not start"):
        AmdSmiMeter(amdsmi=amdsmi, environ={})


def test_no_gpu_shuts_amdsmi_down(clock: FakeClock) -> None:
    amdsmi = make_amdsmi([], clock)
    with pytest.raises(MeterUnavailable, match="AMD SMI sees no GPU"):
        AmdSmiMeter(amdsmi=amdsmi, environ={})
    amdsmi.amdsmi_shut_down.assert_called_once_with()


def test_reading_follows_the_fake_counter(clock: FakeClock) -> None:
    meter, _ = open_meter([FakeAmdGpu(uuid="u0", bdf="b0")], clock)
    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.window_start()
    clock.advance(4.0)
    energy = sampler.window_stop().device("amdsmi:0")
    assert energy.method == "counter"
    assert energy.energy_j == pytest.approx(1200.0, rel=1e-6)
    assert energy.cross_check_ratio == pytest.approx(1.0, rel=1e-6)
    assert meter.read()[0] != PowerValues()


def test_a_missing_amdsmi_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    with pytest.raises(MeterUnavailable, match=r"pip install 'specbench\[amd\]'"):
        load_amdsmi()
