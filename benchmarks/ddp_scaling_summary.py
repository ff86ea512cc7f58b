"""Scaling efficiency and energy per sample of a multi-GPU submission against a one-GPU one, from their folders.

Reads every run's result.json and power.json (nothing is re-measured): throughput per run, the
median over runs, scaling efficiency = median(N GPUs) / (N x median(1 GPU)), energy per sample,
and each window's per-device energies, checking that every measured device appears exactly once
and that the devices' energies add up to the run's energy. Prints a table; writes a JSON.

    python benchmarks/ddp_scaling_summary.py --one submissions/ORG/ONE --many submissions/ORG/MANY --out results.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def runs(folder: Path) -> list[dict[str, Any]]:
    rows = []
    for result_path in sorted(folder.glob("*/run_*/result.json")):
        result = json.loads(result_path.read_text())
        power = json.loads((result_path.parent / "power.json").read_text())
        (window,) = power["windows"]
        devices = [d["device"] for d in window["devices"]]
        if len(devices) != len(set(devices)):
            raise SystemExit(f"{result_path.parent}: a device appears twice in the window: {devices}")
        per_device = {d["device"]: d["energy_j"] for d in window["devices"]}
        total = result["power"]["energy_j"]
        if abs(sum(per_device.values()) - total) > 1e-6 * max(1.0, total):
            raise SystemExit(f"{result_path.parent}: device energies {per_device} do not add up to {total}")
        samples = result["samples_processed"]
        rows.append(
            {
                "run": result["run"],
                "folder": str(result_path.parent),
                "processes": result["devices"],
                "samples_per_s": result["throughput"]["samples_per_s"],
                "samples": samples,
                "duration_s": result["duration_s"],
                "energy_j": total,
                "energy_j_per_device": per_device,
                "j_per_sample": total / samples,
                "mean_power_w": result["power"]["mean_power_w"],
                "sample_unit": result["sample_unit"],
            }
        )
    if not rows:
        raise SystemExit(f"{folder}: no runs with result.json")
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "processes": rows[0]["processes"],
        "runs": len(rows),
        "median_samples_per_s": statistics.median(r["samples_per_s"] for r in rows),
        "median_j_per_sample": statistics.median(r["j_per_sample"] for r in rows),
        "median_mean_power_w": statistics.median(r["mean_power_w"] for r in rows),
        "devices_measured": sorted({d for r in rows for d in r["energy_j_per_device"]}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--one", type=Path, required=True, help="submission folder of the one-GPU runs")
    parser.add_argument("--many", type=Path, required=True, help="submission folder of the multi-GPU runs")
    parser.add_argument("--out", type=Path, help="JSON file for the summary")
    args = parser.parse_args()
    one_rows, many_rows = runs(args.one), runs(args.many)
    one, many = summary(one_rows), summary(many_rows)
    gpus = many["processes"]
    efficiency = many["median_samples_per_s"] / (gpus * one["median_samples_per_s"])
    unit = one_rows[0]["sample_unit"]
    for name, s in (("1 GPU", one), (f"{gpus} GPUs", many)):
        print(
            f"{name:<8} {s['runs']} runs  median {s['median_samples_per_s']:12,.1f} {unit}/s  "
            f"{s['median_j_per_sample']:.5f} J/{unit}  {s['median_mean_power_w']:7.1f} W  devices {s['devices_measured']}"
        )
    print(f"scaling efficiency {efficiency:.4f}")
    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "one_gpu": {**one, "rows": one_rows},
        "many_gpus": {**many, "rows": many_rows},
        "scaling_efficiency": efficiency,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
