"""Why an entry is not ranked or its power not measured: one brief line for the tables, the detail for its page.

A run says why it measured nothing in result.json (`power.reason`, e.g. "not measured: no power meter is
available here: nvml: ...; rapl: ..."). That text is a reason, not a number: the board shows it, shortened
to a phrase per meter ("no meter (NVML: no GPU; RAPL: no permission)"), and the run's page shows it whole.
"""

from __future__ import annotations

import re
from pathlib import Path

from specbench.validator.model import BenchmarkData, RunData

NOT_MEASURED = "not measured: "
NO_METER = "no power meter is available here: "
METER_NAMES = {
    "nvml": "NVML",
    "amdsmi": "AMD SMI",
    "rapl": "RAPL",
    "hwmon": "hwmon",
    "null": "null",
    "replay": "replay",
}
SHORT = (
    ("permission denied", "no permission"),
    ("no NVIDIA driver", "no GPU"),
    ("no amdgpu driver", "no GPU"),
    ("sees no GPU", "no GPU"),
    ("hides every GPU", "GPUs hidden"),
    ("module", "no module"),
    ("powercap", "no zones"),
    ("no RAPL", "no zones"),
    ("hwmon", "no sensors"),
)
"""A phrase for a meter's reason, by the first of these words it contains (power/*.py raise them)."""
MEASURED_BY_OTHERS = ("this rank does not own", "not the power owner")
MAX_BRIEF = 60


def _meter_phrase(reason: str) -> str:
    for words, phrase in SHORT:
        if words in reason:
            return phrase
    head = re.split(r"[:(]", reason, maxsplit=1)[0].strip()
    return head if len(head) <= MAX_BRIEF else head[: MAX_BRIEF - 1] + "…"


def brief_power(reason: str) -> str:
    """The run's reason in a few words: 'not measured: no meter (NVML: no GPU; RAPL: no permission)'."""
    text = reason.removeprefix(NOT_MEASURED).strip()
    if text.startswith(NO_METER):
        parts = re.split(r"; (?=[a-z_]+: )", text.removeprefix(NO_METER))
        meters = []
        for part in parts:
            name, _, why = part.partition(": ")
            meters.append(f"{METER_NAMES.get(name, name)}: {_meter_phrase(why)}")
        return NOT_MEASURED + "no meter (" + "; ".join(meters) + ")"
    if any(words in text for words in MEASURED_BY_OTHERS):
        return NOT_MEASURED + "another process owns the devices"
    return NOT_MEASURED + _meter_phrase(text)


def run_power_reason(root: str, run: RunData) -> str | None:
    """Why this run has no energy (its own words, or what its folder lacks); None when it has one."""
    if run.accounts is not None and run.accounts.energy_j is not None:
        return None
    power = run.result.power if run.result is not None else None
    if power is not None and not power.measured and power.reason:
        return power.reason if power.reason.startswith(NOT_MEASURED) else NOT_MEASURED + power.reason
    folder = Path(root) / run.folder
    if not (folder / "power.json").is_file():
        return NOT_MEASURED + "no power trace in the run's folder"
    return NOT_MEASURED + "the trace gives no energy over the timed window (see the findings)"


def entry_power_reasons(root: str, bench: BenchmarkData | None) -> tuple[list[str], list[str]]:
    """The distinct brief and full reasons why the entry's completed runs have no energy."""
    briefs: list[str] = []
    details: list[str] = []
    for run in bench.runs if bench is not None else []:
        if run.status != "success":
            continue
        reason = run_power_reason(root, run)
        if reason is None:
            continue
        if reason not in details:
            details.append(reason)
        if brief_power(reason) not in briefs:
            briefs.append(brief_power(reason))
    return briefs, details


def brief_noncompliant(code: str, more: int) -> str:
    return f"not ranked: non-compliant ({code}" + (f" +{more} more)" if more else ")")


def brief_profile(profile: str) -> str:
    return f"not ranked: {profile} profile"
