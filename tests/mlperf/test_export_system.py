"""systems/<system>.json built from a specbench submission's system.yaml: what it fills, and the notes it writes."""

from __future__ import annotations

import json
from pathlib import Path

from ruamel.yaml import YAML
from support.committed import committed

from specbench.mlperf.export_system import built_description
from specbench.spec.system import SystemDescription

REPO = Path(__file__).resolve().parents[2]


def h200(**hardware: object) -> SystemDescription:
    """The committed specbench/h200 submission's system.yaml (16 logical CPUs, one H200), hardware keys changed."""
    data = YAML(typ="safe").load(committed("h200", "system.yaml").read_text())
    data["layers"]["hardware"].update(hardware)
    return SystemDescription.model_validate(data)


def test_the_core_count_is_the_cpu_count_over_the_processors_and_noted() -> None:
    notes: list[str] = []
    description = built_description(h200(), "closed", {"host_processors_per_node": "2"}, notes)
    assert description["host_processor_core_count"] == "8" and description["host_processor_vcpu_count"] == "16"
    assert notes[0] == (
        "host_processor_core_count 8: system.yaml's cpu_count 16 (logical CPUs, hardware threads included) over "
        "host_processors_per_node 2; give --field host_processor_core_count=N where a processor has fewer "
        "physical cores"
    )
    assert "host_processor_core_count" not in notes[1]  # the fields written as ""
    json.dumps(description)


def test_a_stated_core_count_or_a_field_wins_and_an_uneven_split_stays_unstated() -> None:
    notes: list[str] = []
    stated = built_description(h200(host_processor_core_count=4), "closed", {"host_processors_per_node": "2"}, notes)
    assert stated["host_processor_core_count"] == "4" and not any("cpu_count 16" in n for n in notes)
    given = {"host_processors_per_node": "1", "host_processor_core_count": "12"}
    assert built_description(h200(), "closed", given, [])["host_processor_core_count"] == "12"
    notes = []
    uneven = built_description(h200(), "closed", {"host_processors_per_node": "3"}, notes)
    assert uneven["host_processor_core_count"] == "" and "host_processor_core_count" in notes[-1]
    assert (
        built_description(h200(cpu_count=None), "closed", {"host_processors_per_node": "1"}, [])[
            "host_processor_core_count"
        ]
        == ""
    )
