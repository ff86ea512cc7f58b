"""The long run of the mutation fuzzer: N mutated copies of every committed submission, in parallel processes.

    python benchmarks/fuzz_validate.py --cases 12000 --jobs 16 --out benchmarks/results/fuzz_validate.json

Prints the totals (mutated submissions, tracebacks, accepted contradictions) and writes the full
summary with the date, the machine and the command. Exit code 1 when any case failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specbench.scoring.fuzz import FuzzReport, fuzz  # noqa: E402


def _chunk(args: tuple[list[str], int, int, int]) -> FuzzReport:
    sources, first, count, seed = args
    with tempfile.TemporaryDirectory(prefix="specbench-fuzz-") as work:
        return fuzz([Path(s) for s in sources], count, seed, Path(work), first_case=first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="mutated submissions to try (default 2000)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--chunk", type=int, default=100, help="cases per task")
    parser.add_argument("--out", type=Path, help="write the summary JSON here")
    args = parser.parse_args()
    sources = [str(p.parent) for p in sorted((ROOT / "submissions").glob("*/*/system.yaml"))]
    tasks = [
        (sources, first, min(args.chunk, args.cases - first), args.seed) for first in range(0, args.cases, args.chunk)
    ]
    start = time.perf_counter()
    total = FuzzReport()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for done, part in enumerate(pool.map(_chunk, tasks), start=1):
            total.outcomes.extend(part.outcomes)
            print(f"\r{done}/{len(tasks)} tasks, {len(total.outcomes)} mutated submissions", end="", file=sys.stderr)
    print(file=sys.stderr)
    elapsed = time.perf_counter() - start
    summary = total.summary()
    summary["operators"] = dict(Counter(o.operator for o in total.outcomes))
    summary["variants"] = dict(Counter(o.variant for o in total.outcomes))
    summary["environment"] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "command": " ".join(["python", *sys.argv]),
        "sources": [os.path.relpath(s, ROOT) for s in sources],
        "seconds": round(elapsed, 1),
        "cases_tried": args.cases,
    }
    for key in (
        "mutated_submissions",
        "tracebacks",
        "accepted_contradictions",
        "ranked_per_watt_without_hardware_meter",
        "accepted_consistent",
    ):
        print(f"{key}: {summary[key]}")
    print(f"{len(total.outcomes) / elapsed:.1f} mutated submissions/s over {args.jobs} processes")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
