"""MLPerf system descriptions mapped onto the nine layers: each real description, field by field."""

from __future__ import annotations

import json

from mlperf_support import corpus

from specbench.mlperf.system import safe_name, split_framework, system_yaml
from specbench.spec.system import SystemDescription


def describe(path: str) -> dict:  # type: ignore[type-arg]
    return json.loads((corpus() / path).read_text())


def test_gaudi2_description() -> None:
    data = system_yaml(
        describe("v3.1/Intel-HabanaLabs/systems/HLS-Gaudi2-PT.json"), "Intel-HabanaLabs", "HLS-Gaudi2-PT", "t"
    )
    SystemDescription.model_validate(data)
    layers = data["layers"]
    assert layers["hardware"]["accelerator_model"] == "Intel Gaudi2"
    assert layers["hardware"]["accelerator_count"] == 8 and layers["hardware"]["nodes"] == 1 == data["nodes"]
    assert layers["hardware"]["cpu_model"] == "Intel(R) Xeon(R) Platinum 8380"
    assert (
        layers["hardware"]["host_processor_core_count"] == 40
        and layers["hardware"]["accelerator_memory_capacity"] == "96 GB"
    )
    assert layers["hardware"]["accelerator_interconnect"] == "24x 100Gb/s Ethernet"
    assert layers["operating_system"] == {"os_name": "Ubuntu 20.04"}
    assert layers["accelerator_libraries"] == {"other_software_stack": "synapseAI 1.13.99"}
    assert layers["framework"] == {
        "framework": "PyTorch",
        "framework_version": "2.0.1a0",
        "framework_description": "PyTorch 2.0.1a0",
    }
    assert "parallelism_precision" not in layers  # MLPerf descriptions before v6.1 state no precision
    assert data["declared"] == {
        "mlperf_submitter": "Intel-HabanaLabs",
        "mlperf_system_name": "HLS-Gaudi2-PT",
        "mlperf_division": "closed",
        "mlperf_status": "Available on premise",
    }
    assert "hw_notes" not in data["declared"]  # empty strings are not stated


def test_smc_description_splits_the_software_stack_by_layer() -> None:
    data = system_yaml(describe("v4.0/smc-dc-power/systems/1xSMC-H100-SXM-80GB.json"), "smc-dc-power", "x", "t")
    layers = data["layers"]
    assert layers["operating_system"] == {"os_name": "Ubuntu 22.04.4 LTS", "kernel": "Linux 5.15.0-92-generic"}
    assert layers["driver_firmware"] == {
        "driver_version": "550.54.15",
        "cuda_driver_version": "550.54.15",
        "nvidia_kernel_driver": "550.54.15",
    }
    assert layers["accelerator_libraries"]["nccl_version"] == "2.21.5"
    assert "kernel_version" not in layers["accelerator_libraries"]
    assert data["declared"]["mlperf_submitter"] == "Sustainable Metal Cloud"
    assert data["declared"]["mlperf_system_name"] == "SMC-H100-DC-Power"
    assert "host_processor_vcpu_count" not in layers["hardware"]


def test_tinycorp_description() -> None:
    data = system_yaml(describe("v4.0/tinycorp/systems/tinybox_green.json"), "tinycorp", "tinybox_green", "t")
    layers = data["layers"]
    assert (
        layers["hardware"]["accelerator_count"] == 6
        and layers["hardware"]["accelerator_model"] == "NVIDIA GeForce RTX 4090"
    )
    assert layers["framework"]["framework"] == "tinygrad"
    assert layers["framework"]["framework_version"] == "commit b399d98e414bbfdff4825bf5307a56b1a98c6a90"
    assert layers["accelerator_libraries"] == {"python": "3.10.12", "CUDA": "12.4"}
    assert data["declared"]["mlperf_system_name"] == "tinybox green"


def test_names_and_frameworks() -> None:
    assert safe_name("tinybox green") == "tinybox-green"
    assert safe_name("Sustainable Metal Cloud/H100") == "Sustainable-Metal-Cloud-H100"
    assert safe_name("") == "unnamed" and len(safe_name("x" * 100)) == 64
    assert split_framework("PyTorch NVIDIA Release 24.04") == ("PyTorch", "NVIDIA Release 24.04")
    assert split_framework("JAX") == ("JAX", None)
