"""The long run of the mutation fuzzer: N mutated copies of every committed submission, in parallel processes.

    python benchmarks/fuzz_validate.py --cases 12000 --jobs 15 --out benchmarks/results/fuzz_validate.json

Prints the totals (mutated submissions, tracebacks, accepted contradictions), the cases of each family,
and for each consistent fabrication the largest move of each ranked metric the board still ranked with the
codes that refused larger ones; writes the full summary with the date, the machine and the command.
Exit code 1 when any case failed.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specbench.scoring.fuzz import FAMILIES, FuzzReport, Originals, fuzz  # noqa: E402

ORIGINALS = Originals()
"""Each worker process validates each source once, whatever the number of its tasks."""


def _chunk(args: tuple[list[str], int, int, int, list[str]]) -> FuzzReport:
    sources, first, count, seed, families = args
    with tempfile.TemporaryDirectory(prefix="specbench-fuzz-") as work:
        paths = [Path(s) for s in sources]
        return fuzz(paths, count, seed, Path(work), first_case=first, families=families, originals=ORIGINALS)


def _print_moves(moves: dict[str, dict[str, dict[str, Any]]]) -> None:
    """One line per consistent fabrication and ranked metric: the largest ranked gain and what refused more."""
    for operator, metrics in moves.items():
        for metric, move in metrics.items():
            gain = move["largest_ranked_gain"]
            shown = f"x{gain:g}" if isinstance(gain, float) else "never ranked"
            limits = ", ".join(f"{code} {n}" for code, n in move["limited_by"].items()) or "none refused"
            print(f"  {operator:16} {metric:20} largest ranked move {shown:12} beyond it: {limits}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="mutated submissions to try (default 2000)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--chunk", type=int, default=100, help="cases per task")
    parser.add_argument("--out", type=Path, help="write the summary JSON here")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only this family (repeatable)")
    args = parser.parse_args()
    sources = [str(p.parent) for p in sorted((ROOT / "submissions").glob("*/*/system.yaml"))]
    families = args.family or []
    tasks = [
        (sources, first, min(args.chunk, args.cases - first), args.seed, families)
        for first in range(0, args.cases, args.chunk)
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
        "jobs": args.jobs,
        "families_asked": families or "all",
        "cases_tried": args.cases,
    }
    for key in (
        "mutated_submissions",
        "tracebacks",
        "accepted_contradictions",
        "ranked_per_watt_without_hardware_meter",
        "accepted_consistent",
        "ranked_consistent",
        "unconfirmed",
    ):
        print(f"{key}: {summary[key]}")
    print("families: " + ", ".join(f"{k} {v}" for k, v in summary["families"].items()))
    if summary["accepted_contradictions_by_operator"]:
        print("accepted contradictions by operator: " + json.dumps(summary["accepted_contradictions_by_operator"]))
    print("consistent fabrications, each ranked metric's largest move the board still ranked (gain in the")
    print("submitter's favour) and the codes that refused the cases that moved it further:")
    _print_moves(summary["accepted_moves"])
    seconds_per_case = elapsed * args.jobs / max(1, args.cases)
    print(
        f"{len(total.outcomes) / elapsed:.1f} mutated submissions/s over {args.jobs} processes "
        f"({seconds_per_case:.3f} s of one process per case tried)"
    )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
