"""Energy of one device from its readings: counter steps, wraps, resets, and the counter checks."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specbench.power import Device, PowerValues
from specbench.power.energy import EnergyAccumulator

GPU = Device(key="gpu", meter="test", scope="accelerator", energy_counter="counter")

steps = st.lists(
    st.tuples(st.floats(0.001, 2.0), st.floats(0.0, 1000.0)),
    min_size=1,
    max_size=60,
)


def feed(device: Device, start_w: float, segments: list[tuple[float, float]], modulus: float | None = None):
    """Piecewise-linear power with an exact counter; returns the accumulator and the true energy."""
    accumulator = EnergyAccumulator(device)
    t, power, energy = 0.0, start_w, 0.0
    accumulator.add(t, PowerValues(power, None, energy if modulus is None else energy % modulus))
    for dt, next_power in segments:
        energy += 0.5 * (power + next_power) * dt
        t, power = t + dt, next_power
        accumulator.add(t, PowerValues(power, None, energy if modulus is None else energy % modulus))
    return accumulator, energy, t


@given(start_w=st.floats(0.0, 1000.0), segments=steps)
def test_counter_and_trapezoid_agree_on_piecewise_linear_power(start_w, segments) -> None:
    accumulator, true_j, duration_s = feed(GPU, start_w, segments)
    energy = accumulator.result(duration_s)

    assert energy.method == "counter"
    assert energy.energy_j == pytest.approx(true_j, rel=1e-9, abs=1e-9)
    assert energy.integrated_energy_j == pytest.approx(true_j, rel=1e-9, abs=1e-9)
    assert energy.counter_events == ()


@given(start_w=st.floats(0.0, 1000.0), segments=steps)
def test_wrapping_counter_gives_the_same_energy_as_a_wide_one(start_w, segments) -> None:
    wrapping = Device(key="pkg", meter="test", scope="cpu_package", energy_counter="c", energy_range_j=2500.0)
    accumulator, true_j, duration_s = feed(wrapping, start_w, segments, modulus=2500.0)
    energy = accumulator.result(duration_s)

    assert energy.method == "counter"
    assert energy.energy_j == pytest.approx(true_j, rel=1e-9, abs=1e-6)
    assert all(event.kind == "wrap" for event in energy.counter_events)
    assert len(energy.counter_events) >= math.floor(true_j / 2500.0) - 1


def constant_power(device: Device, power_w: float, counter_rate_w: float, seconds: int = 10) -> EnergyAccumulator:
    accumulator = EnergyAccumulator(device)
    for t in range(seconds + 1):
        accumulator.add(float(t), PowerValues(power_w, None, 1e6 + counter_rate_w * t))
    return accumulator


AMD = Device(key="amd", meter="test", scope="accelerator", energy_counter="c", verify_counter=True)


def test_a_verified_counter_that_agrees_with_power_is_used() -> None:
    energy = constant_power(AMD, 300.0, 310.0).result(10.0)
    assert (energy.method, energy.energy_j, energy.note) == ("counter", pytest.approx(3100.0), None)
    assert energy.cross_check_ratio == pytest.approx(310.0 / 300.0)


def test_a_stuck_verified_counter_falls_back_to_the_integral() -> None:
    energy = constant_power(AMD, 300.0, 0.0).result(10.0)
    assert (energy.method, energy.energy_j) == ("integrated", pytest.approx(3000.0))
    assert energy.note == "energy counter did not advance while the power integral gave 3000.0 J (stuck counter)"


def test_an_implausible_verified_counter_falls_back_to_the_integral() -> None:
    energy = constant_power(AMD, 300.0, 300.0 * 15.3).result(10.0)
    assert (energy.method, energy.energy_j) == ("integrated", pytest.approx(3000.0))
    assert energy.note is not None and "ratio 15.30, plausible 0.5-2.0" in energy.note


def test_an_unverified_counter_is_used_even_when_it_disagrees() -> None:
    energy = constant_power(GPU, 300.0, 330.0).result(10.0)
    assert (energy.method, energy.energy_j) == ("counter", pytest.approx(3300.0))
    assert energy.cross_check_ratio == pytest.approx(1.1)


def test_a_counter_the_meter_distrusted_is_not_used() -> None:
    distrusted = Device(key="amd", meter="t", scope="accelerator", energy_counter="c", counter_problem="stuck at start")
    energy = constant_power(distrusted, 300.0, 300.0).result(10.0)
    assert (energy.method, energy.note) == ("integrated", "stuck at start")


def test_no_counter_means_the_integral_with_a_note() -> None:
    accumulator = EnergyAccumulator(Device(key="gh", meter="t", scope="module"))
    for t, watts in [(0.0, 100.0), (1.0, 300.0), (2.0, 300.0)]:
        accumulator.add(t, PowerValues(None, watts, None))
    energy = accumulator.result(2.0)
    assert (energy.method, energy.energy_j, energy.note) == ("integrated", pytest.approx(500.0), "no energy counter")


def test_one_reading_is_not_a_measurement() -> None:
    accumulator = EnergyAccumulator(GPU)
    accumulator.add(0.0, PowerValues(100.0, None, 5.0))
    energy = accumulator.result(0.0)
    assert (energy.energy_j, energy.method) == (None, "not_measured")
    assert energy.note == "1 reading(s) in the window; at least 2 are needed"
