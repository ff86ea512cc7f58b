"""One JSON row per run of lab/issue32_device.sh from the logs it leaves under $OUT.

    python lab/summarise_runs.py FOLDER [FOLDER...] > summary.json
    python lab/summarise_runs.py --smi NAME.smi.csv     # one line: the monitor's summary of one run

For each NAME.txt with an executor's closing line ("...: success | 20.1 s | 81,345.7 tokens/s | 13915.8 J,
690.9 W mean"): the rate and its unit, energy and mean power as the executor measured them (NVML), and,
where NAME.smi.csv is there, nvidia-smi's samples above 300 W: mean power, mean SM clock and the share of
samples with the software power cap active.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

CLOSING = re.compile(
    r": success \| (?P<seconds>[\d.]+) s \| (?P<rate>[\d,.]+) (?P<unit>[\w/]+) \| (?P<energy>[\d.]+) J, (?P<power>[\d.]+) W mean"
)


def smi(path: Path) -> dict[str, Any] | None:
    rows = [line.split(", ") for line in path.read_text().splitlines() if line.count(", ") == 4]
    busy = [r for r in rows if re.fullmatch(r"[\d.]+", r[1]) and float(r[1]) > 300]
    if not busy:
        return None
    return {
        "busy_samples": len(busy),
        "mean_power_w": round(sum(float(r[1]) for r in busy) / len(busy), 1),
        "mean_sm_clock_mhz": round(sum(float(r[2]) for r in busy) / len(busy)),
        "share_power_capped": round(sum(r[3].strip() == "Active" for r in busy) / len(busy), 3),
    }


def summarise(folder: Path) -> list[dict[str, Any]]:
    rows = []
    for log in sorted(folder.glob("*.txt")):
        match = next((m for m in map(CLOSING.search, log.read_text().splitlines()) if m), None)
        if match is None:
            continue
        row: dict[str, Any] = {
            "run": log.stem,
            "rate": float(match["rate"].replace(",", "")),
            "unit": match["unit"],
            "timed_s": float(match["seconds"]),
            "energy_j": float(match["energy"]),
            "mean_power_w": float(match["power"]),
        }
        monitor = folder / f"{log.stem}.smi.csv"
        if monitor.exists():
            row["nvidia_smi"] = smi(monitor)
        rows.append(row)
    return rows


def main(folders: list[str]) -> int:
    if not folders:
        print(__doc__, file=sys.stderr)
        return 2
    if folders[0] == "--smi":
        for path in folders[1:]:
            row = smi(Path(path)) if Path(path).exists() else None
            print(
                "nvidia-smi: no samples above 300 W"
                if row is None
                else f"nvidia-smi over {row['busy_samples']} busy samples (>300 W): {row['mean_power_w']:.0f} W, "
                f"SM {row['mean_sm_clock_mhz']} MHz, software power cap active in {row['share_power_capped']:.0%}"
            )
        return 0
    print(json.dumps({folder: summarise(Path(folder)) for folder in folders}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
