"""Run a spec's smoke profile once per seed, one after another, and print the final quality of each.

Usage: python benchmarks/smoke_seeds.py SPEC [--seeds 1-20] [--nproc-per-node N] [--set K=V ...]
       [--level L] [--out results.json]

Each seed is one `specbench execute SPEC --profile smoke --seed S --power none` in a fresh folder,
so a seed printed here replays exactly. The summary gives the worst final and best value against
the target: the margin a test with fixed seeds can rely on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def seed_range(text: str) -> list[int]:
    """'1-20' or '3,5,9' as a list of seeds."""
    if "-" in text:
        first, last = (int(part) for part in text.split("-", 1))
        return list(range(first, last + 1))
    return [int(part) for part in text.split(",")]


def one_seed(spec: str, seed: int, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """One smoke run at `seed`; its status, quality curve, time and exit code."""
    out = folder / "seeds" / f"seed-{seed}"
    command = [
        sys.executable, "-m", "specbench.cli", "execute", spec, "--profile", "smoke", "--seed", str(seed),
        "--power", "none", "--runs", "1", "--out", str(out),
    ]  # fmt: skip
    if args.level:
        command += ["--level", args.level]
    if args.nproc_per_node > 1:
        command += ["--nproc-per-node", str(args.nproc_per_node)]
    for item in args.set:
        command += ["--set", item]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if args.nproc_per_node > 1:
        env["OMP_NUM_THREADS"] = "1"  # as the tests run data-parallel jobs
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder)
    wall_s = time.monotonic() - started
    results = sorted(out.glob("*/run_1/result.json"))
    if not results:
        return {"seed": seed, "exit_code": proc.returncode, "wall_s": wall_s, "error": proc.stderr[-2000:]}
    result = json.loads(results[0].read_text())
    quality = result.get("quality") or {}
    return {
        "seed": seed,
        "exit_code": proc.returncode,
        "status": result["status"],
        "reached": quality.get("reached"),
        "final": quality.get("achieved"),
        "best": quality.get("best"),
        "curve": [point["value"] for point in quality.get("curve", [])],
        "epochs": result.get("epochs"),
        "duration_s": result.get("duration_s"),
        "wall_s": wall_s,
    }


def summary(rows: list[dict[str, Any]], target: float | None, direction: str) -> dict[str, Any]:
    finals = [r["final"] for r in rows if r.get("final") is not None]
    worst = (min(finals) if direction == "higher" else max(finals)) if finals else None
    return {
        "seeds": len(rows),
        "reached": sum(bool(r.get("reached")) for r in rows),
        "final_min": min(finals) if finals else None,
        "final_max": max(finals) if finals else None,
        "worst_final": worst,
        "worst_margin": None if worst is None or target is None else abs(worst - target),
        "wall_s_total": sum(r["wall_s"] for r in rows),
    }


def _torch_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return str(torch.__version__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--seeds", type=seed_range, default=seed_range("1-20"))
    parser.add_argument("--nproc-per-node", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--level", default=None)
    parser.add_argument("--out", type=Path, default=None, help="write the rows and the summary as JSON here")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from specbench.spec import load_spec, resolve

    resolved = resolve(load_spec(args.spec), "smoke", args.level)
    quality = resolved.spec.quality
    target = quality.target if quality else None
    direction = quality.direction if quality else "higher"
    rows = []
    with tempfile.TemporaryDirectory(prefix="specbench-seeds-") as tmp:
        for seed in args.seeds:
            row = one_seed(args.spec, seed, args, Path(tmp))
            rows.append(row)
            print(
                f"seed {seed:>3}: exit {row['exit_code']} {row.get('status', 'no result')} final {row.get('final')} "
                f"best {row.get('best')} epochs {row.get('epochs')} ({row['wall_s']:.1f} s)",
                flush=True,
            )
    result = {
        "spec": args.spec,
        "spec_version": resolved.spec.version,
        "level": resolved.level,
        "target": target,
        "direction": direction,
        "nproc_per_node": args.nproc_per_node,
        "sets": args.set,
        "command": " ".join(["python", "benchmarks/smoke_seeds.py", *(argv if argv is not None else sys.argv[1:])]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host_cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": _torch_version(),
        "summary": summary(rows, target, direction),
        "rows": rows,
    }
    print(json.dumps(result["summary"]))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["summary"]["reached"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
