"""What comparing evidence across submissions (validator.across) adds to validating them, in one process.

Times, interleaved over several rounds on the same folders (default: every committed submission):

- alone: `validate_submission` of each folder, one after another (validation without the comparison);
- many: `validate_many(folders, jobs=1)`, the same work plus the log digests and the comparison;
- compare: the log digests and `compare_submissions` alone, on reports validated once.

Prints the median of each and the ratios many / alone and compare / alone.

    .venv/bin/python benchmarks/across_cost.py [--rounds 7] [PATH ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from specbench.validator import discover, validate_many, validate_submission
from specbench.validator.across import compare_submissions, fingerprint_logs
from specbench.validator.model import Report

REPO = Path(__file__).resolve().parent.parent


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare_again(reports: list[Report]) -> None:
    """The digests computed anew, then the comparison (honest folders: no finding is added)."""
    for report in reports:
        for bench in report.benchmarks:
            for run in bench.runs:
                run.log_fingerprint = None
        fingerprint_logs(report)
    compare_submissions(reports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(REPO / "submissions")])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    folders = [folder for path in args.paths for folder in discover(path)]
    reports = validate_many(folders, jobs=1)  # loads specs and schemas once, before anything is timed
    runs = sum(len(b.runs) for r in reports for b in r.benchmarks)
    times: dict[str, list[float]] = {"alone": [], "many": [], "compare": []}
    for _ in range(args.rounds):
        times["alone"].append(timed(lambda: [validate_submission(f) for f in folders]))
        times["many"].append(timed(lambda: validate_many(folders, jobs=1)))
        times["compare"].append(timed(lambda: compare_again(reports)))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{len(folders)} submissions, {runs} runs, {args.rounds} rounds (medians)")
    for name, value in median.items():
        print(f"  {name:8} {value * 1000:9.2f} ms")
    print(f"  many / alone    {median['many'] / median['alone']:.4f}")
    print(f"  compare / alone {median['compare'] / median['alone']:.5f}")


if __name__ == "__main__":
    main()
