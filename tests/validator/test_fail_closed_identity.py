"""Bounds fail closed and names are plain text: each attack of issue 29 (part 1) on a committed submission.

Every case edits a copy of a real submission as a dishonest submitter would (consistent across
files, manifest re-signed) and must be refused and left unranked by the scorer. A maintainer's
device table (`--devices FILE`) makes an unlisted part known again, in worker processes too, and a
malformed table stops the command with exit 2 before anything is judged.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutate import edit_json, edit_yaml, resign
from support.committed import committed

from specbench.cli import main
from specbench.errors import EXIT_UNUSABLE
from specbench.physics import DEVICES_FILE, load_devices
from specbench.scoring.leaderboard import build
from specbench.validator import validate_many, validate_submission
from specbench.validator.bounds import UNCONFIRMED_CODES
from specbench.validator.documents import Loaded
from specbench.validator.findings import Findings
from specbench.validator.identity import refusal
from specbench.validator.model import BenchmarkData
from specbench.validator.physics import DevicePhysics, check_devices

SUBMISSIONS = committed()
OWN_CODES = ("SB-PHY-", "SB-IDN-")

B200_ROW = """
  - name: NVIDIA HGX B200 180GB
    vendor: NVIDIA
    aliases: [NVIDIA B200]
    peak_tflops: {fp64: 40, fp32: 80, tf32: 1100, bf16: 2250, fp16: 2250, fp8: 4500, int8: 4500}
    memory_bandwidth_gb_s: 8000
    power_limit_w: 1000
    idle_floor_w: 70
    idle_floor_basis: rule
    idle_floor_from: >-
      7 % of the 1000 W limit
    sources:
      - title: Glenn K. Lockwood, NVIDIA B200 (HGX variant configured at 1,000 W)
        url: https://glennklockwood.com/garden/processors/B200
        gives: >-
          FP64 40, FP32 80, TF32 1100, FP16/BF16 2250, FP8/INT8 4500 dense matrix TFLOPS;
          8 TB/s; 1000 W maximum
"""


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / "specbench" / name
    shutil.copytree(SUBMISSIONS / name, target)
    return target


def _model(name: str) -> Callable[[Path], None]:
    """system.yaml's accelerator_model and every power.json device model set to `name`."""

    def edit(root: Path) -> None:
        edit_yaml(root / "system.yaml", lambda d: d["layers"]["hardware"].__setitem__("accelerator_model", name))
        for trace in root.glob("*/run_*/power.json"):
            edit_json(trace, lambda d: [dev.__setitem__("model", name) for m in d["meters"] for dev in m["devices"]])

    return edit


def _layer_precision(value: str | None) -> Callable[[Path], None]:
    """caraml-resnet50's submission.yaml precision (layer 7) set to `value`, or removed."""

    def edit(data: dict[str, Any]) -> None:
        layer = data["layers"]["parallelism_precision"]
        layer.pop("precision") if value is None else layer.__setitem__("precision", value)

    return lambda root: edit_yaml(root / "caraml-resnet50" / "submission.yaml", edit)


def _settings_precision(value: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        for result in root.glob("caraml-resnet50/run_*/result.json"):
            edit_json(result, lambda d: d["settings"].__setitem__("precision", value))

    return edit


def _both(*edits: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        for one in edits:
            one(root)

    return edit


def _llm_precision_removed(root: Path) -> None:
    """llm-gpt declares precision as a hyperparameter: removed from submission.yaml and every result.json."""
    edit_yaml(root / "llm-gpt" / "submission.yaml", lambda d: d["hyperparameters"].pop("precision"))
    for result in root.glob("llm-gpt/run_*/result.json"):
        edit_json(result, lambda d: d["hyperparameters"].pop("precision"))


def _variant(value: str) -> Callable[[Path], None]:
    return lambda root: edit_yaml(root / "llm-gpt" / "submission.yaml", lambda d: d.__setitem__("variant", value))


ATTACKS: list[tuple[str, str, Callable[[Path], None], set[str]]] = [
    ("unlisted B200, power.json consistent", "h200", _model("NVIDIA B200"), {"SB-PHY-004", "SB-PHY-005"}),
    ("Cyrillic look-alike of H200", "h200", _model("NVIDIA \u041d200"), {"SB-IDN-004", "SB-PHY-004", "SB-PHY-005"}),
    ("precision removed from submission.yaml", "h200", _layer_precision(None), {"SB-PHY-006"}),
    ("precision bf16x", "h200", _both(_layer_precision("bf16x"), _settings_precision("bf16x")), {"SB-PHY-006"}),
    ("precision fp8 declared, bf16 in result.json", "h200", _layer_precision("fp8"), {"SB-PHY-008"}),
    ("result.json says fp16, submission.yaml bf16", "h200", _settings_precision("fp16"), {"SB-PHY-008"}),
    ("llm precision hyperparameter removed", "h200-llm", _llm_precision_removed, {"SB-PHY-006"}),
    ("trailing space in variant", "h200-llm", _variant("800M "), {"SB-IDN-002"}),
]


@pytest.mark.parametrize(("name", "system", "attack", "codes"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_is_refused_and_not_ranked(
    name: str, system: str, attack: Callable[[Path], None], codes: set[str], tmp_path: Path
) -> None:
    root = _copy(tmp_path, system)
    attack(root)
    resign(root)
    report = validate_submission(root)
    assert codes <= report.codes(), [f"{f.code} {f.location} {f.message}" for f in report.findings]
    assert not report.compliant()
    assert all(f.severity == "error" for f in report.findings if f.code in codes)
    (entry,) = [e for group in build([report]).groups for e in group.entries]
    assert entry.rank is None and entry.rank_per_w is None and not entry.compliant


def test_look_alike_variant_opens_a_table_without_a_ranked_entry(tmp_path: Path) -> None:
    honest = validate_submission(_copy(tmp_path / "a", "h200-llm"))
    root = _copy(tmp_path / "b", "h200-llm")
    _variant("800M ")(root)
    resign(root)
    board = build([honest, validate_submission(root)])
    variants = {group.key.variant: [e.rank for e in group.entries] for group in board.groups}
    assert variants == {"800M": [1], "800M ": [None]}


@pytest.mark.parametrize(
    ("value", "code", "said"),
    [
        ("NVIDIA \u041d200", "SB-IDN-004", "U+041D CYRILLIC CAPITAL LETTER EN at position 7 among LATIN letters"),
        ("\u041d200", "SB-IDN-004", "U+041D CYRILLIC CAPITAL LETTER EN at position 0 next to ASCII digits"),
        ("800\u041c", "SB-IDN-004", "U+041C CYRILLIC CAPITAL LETTER EM at position 3 next to ASCII digits"),
        ("\u0391\u0412", "SB-IDN-004", "U+0412 CYRILLIC CAPITAL LETTER VE at position 1 among GREEK letters"),
        ("\u0410\u0421\u041c\u0415", "SB-IDN-004", "only CYRILLIC letters drawn like Latin ones (U+0410"),
        ("\u039a\u039f\u03a1\u0395", "SB-IDN-004", "only GREEK letters drawn like Latin ones (U+039A"),
        ("800M ", "SB-IDN-002", "trailing whitespace"),
        (" 800M", "SB-IDN-002", "leading whitespace"),
        ("NVIDIA  H200", "SB-IDN-002", "repeated spaces at position 6"),
        ("NVIDIA\u2003H200", "SB-IDN-002", "U+2003 EM SPACE at position 6"),
        ("NVIDIA\tH200", "SB-IDN-001", "U+0009 at position 6"),
        ("800\u200bM", "SB-IDN-001", "U+200B ZERO WIDTH SPACE at position 3"),
        ("official\u202e", "SB-IDN-001", "U+202E RIGHT-TO-LEFT OVERRIDE at position 8"),
        (
            "\uff2eVIDIA H200",
            "SB-IDN-003",
            "U+FF2E FULLWIDTH LATIN CAPITAL LETTER N at position 0, which NFKC makes 'N'",
        ),
        ("\u00b5-net", "SB-IDN-003", "U+00B5 MICRO SIGN at position 0"),
        ("cafe\u0301", "SB-IDN-003", "U+0301 COMBINING ACUTE ACCENT at position 4, which NFKC composes"),
    ],
)
def test_refusal_names_the_character(value: str, code: str, said: str) -> None:
    refused = refusal(value)
    assert refused is not None and refused.code == code
    assert said in refused.found


@pytest.mark.parametrize(
    "value",
    [
        "NVIDIA H200",
        "800M",
        "resnet18-lite",
        "\u042f\u043d\u0434\u0435\u043a\u0441",
        "\u041c\u043e\u0441\u043a\u0432\u0430",
        "caf\u00e9",
    ],
)
def test_plain_names_pass(value: str) -> None:
    assert refusal(value) is None


def test_every_name_of_the_device_table_is_plain_text() -> None:
    """The rule refuses no name a driver reports for a listed part."""
    names = [name for row in load_devices().devices for name in (row.name, row.vendor, *row.aliases)]
    assert [(name, refusal(name)) for name in names if refusal(name) is not None] == []


def _b200_table(tmp_path: Path) -> Path:
    table = tmp_path / "devices-b200.yaml"
    table.write_text(DEVICES_FILE.read_text() + B200_ROW)
    return table


def test_devices_table_makes_the_b200_known_and_bounded(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200")
    _model("NVIDIA B200")(root)
    resign(root)
    report = validate_submission(root, devices=_b200_table(tmp_path))
    assert not [f for f in report.findings if f.code.startswith(OWN_CODES)], report.findings
    assert {f.code for f in report.errors} <= UNCONFIRMED_CODES  # what `specbench reproduce` settles, if anything
    accounts = report.benchmarks[0].runs[0].accounts
    assert accounts is not None and accounts.mfu is not None  # bounded and measured against the B200's bf16 peak
    assert accounts.mfu == pytest.approx(accounts.flops_per_s / 2250e12)


def test_devices_table_reaches_worker_processes(tmp_path: Path) -> None:
    roots = [_copy(tmp_path, name) for name in ("h200", "h200-llm", "h200x2")]
    for root in roots:
        _model("NVIDIA B200")(root)
        resign(root)
    without = validate_many(roots, jobs=2)
    assert ["SB-PHY-004" in r.codes() for r in without] == [True, True, True]
    table = _b200_table(tmp_path)
    known = validate_many(roots, jobs=2, devices=table)  # the 2nd and 3rd are judged in worker processes
    assert [sorted(c for c in r.codes() if c.startswith(OWN_CODES)) for r in known] == [[], [], []]


def test_malformed_devices_table_is_unusable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "devices.yaml"
    table.write_text(DEVICES_FILE.read_text() + B200_ROW.split("    sources:")[0])  # the new row has no sources
    root = _copy(tmp_path, "h200")
    for command in (["validate", str(root)], ["score", str(root)]):
        assert main([*command, "--devices", str(table)]) == EXIT_UNUSABLE
        out, err = capsys.readouterr()
        assert out == ""  # nothing judged, nothing half-printed
        assert err.startswith(f"error: {table}:") and "sources" in err, err


def test_no_accelerator_on_a_ranked_profile_is_an_error() -> None:
    """A CPU run (accelerator_count 0) has no peak: unbounded, so an error where it would be ranked."""
    loaded = _system_file()
    cpu = DevicePhysics(None, "cpu", 0)
    ranked = Findings()
    check_devices(ranked, cpu, [BenchmarkData("resnet50")], loaded)  # a spec that did not resolve counts as ranked
    assert [(f.code, f.message) for f in ranked.items] == [
        (
            "SB-PHY-004",
            "expected an accelerator model that the device table (specbench/physics/devices.yaml) lists, found no "
            "accelerator (accelerator_count 0), which has no peak to bound its rate; resnet50 is on a ranked profile",
        )
    ]
    unranked = Findings()
    check_devices(unranked, cpu, [], loaded)
    assert unranked.items == []


def _system_file() -> Loaded:
    text = (SUBMISSIONS / "cpu-2core" / "system.yaml").read_text()
    return Loaded(data=None, file="system.yaml", text=text, is_yaml=True)
