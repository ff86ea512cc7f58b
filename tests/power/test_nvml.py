"""The NVML meter against an autospec'd pynvml: sources, fallbacks, device mapping, MIG, errors."""

from __future__ import annotations

import sys

import pytest
from power_fakes import FakeGpu, make_nvml

from specbench.power import MeterUnavailable, NvmlMeter, PowerError, PowerValues
from specbench.power.nvml import load_pynvml

pynvml = pytest.importorskip("pynvml")

H200 = "GPU-6b1c1b8a-0000-4000-8000-000000000000"
H100 = "GPU-9f00aa11-0000-4000-8000-000000000001"


def test_power_comes_from_the_instant_and_average_fields_and_energy_from_the_counter() -> None:
    gpu = FakeGpu(uuid=H200)
    nvml = make_nvml([gpu])
    meter = NvmlMeter(nvml=nvml, environ={})

    assert meter.read() == [PowerValues(power_instant_w=250.0, power_average_w=240.0, energy_j=5000.0)]
    device = meter.devices[0]
    assert (device.key, device.scope, device.model, device.uuid, device.pci_bus_id) == (
        "nvml:0",
        "accelerator",
        "NVIDIA H200",
        H200,
        "00000000:19:00.0",
    )
    assert device.power_source == "nvmlDeviceGetFieldValues(POWER_INSTANT, POWER_AVERAGE)"
    assert device.energy_counter == "nvmlDeviceGetTotalEnergyConsumption"
    assert gpu.field_calls[-1] == [pynvml.NVML_FI_DEV_POWER_INSTANT, pynvml.NVML_FI_DEV_POWER_AVERAGE]
    nvml.nvmlDeviceGetPowerUsage.assert_not_called()


def test_states_and_versions_are_recorded() -> None:
    meter = NvmlMeter(nvml=make_nvml([FakeGpu(uuid=H200)]), environ={})
    state = meter.states()[0]
    assert (state.power_limit_w, state.sm_clock_mhz, state.memory_clock_mhz) == (700.0, 1980.0, 3201.0)
    info = meter.info()
    assert info["driver_version"] == "580.159.04"
    assert info["nvml_version"] == "13.580.159.04"
    assert info["library"].startswith("nvidia-ml-py ")


def test_on_ampere_and_newer_power_usage_is_an_average_and_used_only_without_fields() -> None:
    gpu = FakeGpu(uuid=H200, fields_supported=False, arch=pynvml.NVML_DEVICE_ARCH_AMPERE)
    meter = NvmlMeter(nvml=make_nvml([gpu]), environ={})

    assert meter.read() == [PowerValues(power_instant_w=None, power_average_w=240.0, energy_j=5000.0)]
    assert meter.devices[0].power_source == "nvmlDeviceGetPowerUsage (as average power)"
    assert "1 s moving average" in meter.devices[0].notes[0]


def test_before_ampere_power_usage_counts_as_instant_and_energy_is_integrated() -> None:
    gpu = FakeGpu(uuid=H200, fields_supported=False, energy_supported=False, arch=pynvml.NVML_DEVICE_ARCH_PASCAL)
    meter = NvmlMeter(nvml=make_nvml([gpu]), environ={})

    assert meter.read() == [PowerValues(power_instant_w=240.0, power_average_w=None, energy_j=None)]
    assert meter.devices[0].energy_counter is None


def test_cuda_visible_devices_uuids_map_to_nvml_devices() -> None:
    gpus = [FakeGpu(uuid=H200), FakeGpu(uuid=H100, name="NVIDIA H100", bus_id="00000000:3B:00.0")]
    meter = NvmlMeter(nvml=make_nvml(gpus), environ={"CUDA_VISIBLE_DEVICES": "GPU-9f00aa11"})

    assert [(d.key, d.uuid) for d in meter.devices] == [("nvml:1", H100)]


def test_explicit_gpus_accept_torch_style_uuids_and_indices() -> None:
    gpus = [FakeGpu(uuid=H200), FakeGpu(uuid=H100)]
    meter = NvmlMeter(["9f00aa11-0000-4000-8000-000000000001", "0", "1"], nvml=make_nvml(gpus), environ={})
    assert [d.key for d in meter.devices] == ["nvml:1", "nvml:0"]


def test_indices_on_a_mixed_node_need_pci_bus_order() -> None:
    gpus = [FakeGpu(uuid=H200), FakeGpu(uuid=H100, name="NVIDIA H100")]
    nvml = make_nvml(gpus)
    with pytest.raises(PowerError, match=r"mixes models .*Set CUDA_DEVICE_ORDER=PCI_BUS_ID"):
        NvmlMeter(nvml=nvml, environ={"CUDA_VISIBLE_DEVICES": "1"})
    nvml.nvmlShutdown.assert_called_once_with()
    meter = NvmlMeter(nvml=make_nvml(gpus), environ={"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [d.uuid for d in meter.devices] == [H100]


def test_an_empty_cuda_visible_devices_hides_every_gpu() -> None:
    with pytest.raises(MeterUnavailable, match="CUDA_VISIBLE_DEVICES='' hides every GPU"):
        NvmlMeter(nvml=make_nvml([FakeGpu(uuid=H200)]), environ={"CUDA_VISIBLE_DEVICES": ""})


def test_an_unknown_gpu_is_named_with_the_uuids_that_exist() -> None:
    with pytest.raises(PowerError, match=f"'GPU-deadbeef' matches no GPU; UUIDs here: {H200}"):
        NvmlMeter(nvml=make_nvml([FakeGpu(uuid=H200)]), environ={"CUDA_VISIBLE_DEVICES": "GPU-deadbeef"})
    with pytest.raises(PowerError, match="GPU index 3 does not exist; NVML sees 1 GPU"):
        NvmlMeter(nvml=make_nvml([FakeGpu(uuid=H200)]), environ={"CUDA_VISIBLE_DEVICES": "3"})


def test_a_mig_slice_is_refused() -> None:
    with pytest.raises(PowerError, match="NVML cannot measure the power or energy of a MIG slice"):
        NvmlMeter(nvml=make_nvml([FakeGpu(uuid=H200)]), environ={"CUDA_VISIBLE_DEVICES": "MIG-1f2e3d4c-aaaa"})


def test_a_gpu_in_mig_mode_is_refused() -> None:
    nvml = make_nvml([FakeGpu(uuid=H200, mig_enabled=True)])
    with pytest.raises(PowerError, match=f"GPU 0 \\({H200}\\) is in MIG mode"):
        NvmlMeter(nvml=nvml, environ={})
    nvml.nvmlShutdown.assert_called_once_with()


def test_nvml_that_does_not_start_makes_the_meter_unavailable() -> None:
    with pytest.raises(MeterUnavailable, match="NVML did not start"):
        NvmlMeter(nvml=make_nvml([], init_error=True), environ={})


def test_close_shuts_nvml_down_once() -> None:
    nvml = make_nvml([FakeGpu(uuid=H200)])
    meter = NvmlMeter(nvml=nvml, environ={})
    meter.close()
    meter.close()
    nvml.nvmlShutdown.assert_called_once_with()


def test_a_missing_pynvml_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(MeterUnavailable, match=r"pip install 'specbench\[run\]'"):
        load_pynvml()
