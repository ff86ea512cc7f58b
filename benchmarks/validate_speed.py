"""How long `validate_submission` takes on a full-size submission, against baselines in the same process.

Generates resnet50 at the official profile: 5 runs, each about 10 minutes with 8 GPUs sampled at
10 Hz (48,000 power rows a run), with the test suite's generator (tests/validator/make_submission.py).
Then times, in one process and interleaved over several rounds:

- validate: `validate_submission(root)` in this process (the first call also loads the spec; reported apart);
- validate_jobs: `validate_submission(root, jobs=CPUs)`, the runs' traces read in parallel processes;
- hash: reading and hashing every file (what any manifest check must do at least);
- read_trace: `specbench.power.read_trace` of the five traces (the power package's reader).

The generator writes the same text for instant and average power (the reader then converts it
once); --average-differs rewrites the average column to other numbers, as NVML's two readings are.

Usage, from the repository root: .venv/bin/python benchmarks/validate_speed.py [--rounds 5] [--keep DIR]
[--average-differs]
Target (issue 5): validation under 1 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "validator"))

from make_submission import make_submission, write_manifest  # noqa: E402

from specbench.power import read_trace  # noqa: E402
from specbench.validator import validate_submission  # noqa: E402

TARGET_S = 1.0


def hash_all(root: Path) -> int:
    total = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hashlib.sha256(data).hexdigest()
        total += len(data)
    return total


def read_traces(root: Path) -> int:
    return sum(len(read_trace(folder).samples) for folder in sorted(root.glob("*/run_*")))


def differ_average(root: Path) -> None:
    """Give power_average_w numbers of its own in every row (0.1 % below the instant power) and re-sign."""
    for path in sorted(root.glob("*/run_*/power.csv")):
        header, *lines = path.read_text().splitlines()
        rows = [line.split(",") for line in lines]
        for cells in rows:
            if cells[5]:
                cells[5] = repr(float(cells[4]) * 0.999)
        path.write_text("\n".join([header, *(",".join(cells) for cells in rows)]) + "\n")
    write_manifest(root)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--hz", type=float, default=10.0)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--keep", type=Path, default=None, help="Write the submission here and keep it.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results as JSON.")
    parser.add_argument(
        "--average-differs", action="store_true", help="Average power other than instant power in every row."
    )
    args = parser.parse_args()

    out = args.keep or Path(tempfile.mkdtemp(prefix="validate-speed-"))
    reach = 40
    started = time.perf_counter()
    root = make_submission(
        out,
        profile="official",
        runs=args.runs,
        devices=args.devices,
        power_hz=args.hz,
        reach_epoch=reach,
        epoch_s=args.minutes * 60 / reach,
    )
    if args.average_differs:
        differ_average(root)
    generated_s = time.perf_counter() - started
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    rows = sum(max(0, (p / "power.csv").read_text().count("\n") - 1) for p in root.glob("*/run_*"))

    first_s = timed(lambda: validate_submission(root))
    report = validate_submission(root)
    if report.findings:
        raise SystemExit(f"the generated submission is not compliant: {[f.code for f in report.findings]}")
    cpus = os.cpu_count() or 1
    jobs: dict[str, Callable[[], object]] = {
        "validate": lambda: validate_submission(root),
        "validate_jobs": lambda: validate_submission(root, jobs=cpus),
        "hash": lambda: hash_all(root),
        "read_trace": lambda: read_traces(root),
    }
    times: dict[str, list[float]] = {name: [] for name in jobs}
    for r in range(args.rounds):
        order = list(jobs)[r % len(jobs) :] + list(jobs)[: r % len(jobs)]
        for name in order:
            times[name].append(timed(jobs[name]))
    median = {name: statistics.median(values) for name, values in times.items()}

    average = "average power differs from instant" if args.average_differs else "average power = instant"
    print(
        f"submission: {root} ({size / 1e6:.1f} MB, {args.runs} runs, {rows} power rows, {average}, "
        f"generated in {generated_s:.1f} s)"
    )
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"first validate_submission (loads the spec): {first_s:.3f} s")
    for name, values in times.items():
        spread = f"min {min(values):.3f}, max {max(values):.3f}"
        ratio = f", {median['validate'] / median[name]:.2f}x of validate" if name != "validate" else ""
        print(f"{name:>13}: median {median[name]:.3f} s over {args.rounds} rounds ({spread}){ratio}")
    print(
        f"validate / hash = {median['validate'] / median['hash']:.1f}; "
        f"validate / read_trace = {median['validate'] / median['read_trace']:.2f}; "
        f"validate_jobs / validate = {median['validate_jobs'] / median['validate']:.2f} with {cpus} processes"
    )
    for name in ("validate", "validate_jobs"):
        verdict = "meets" if median[name] < TARGET_S else "misses"
        print(f"target under {TARGET_S:g} s, {name}: {verdict} ({median[name]:.3f} s)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "average_differs": args.average_differs,
                    "bytes": size,
                    "first_s": first_s,
                    "times_s": times,
                    "median_s": median,
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                },
                indent=2,
            )
            + "\n"
        )
    if args.keep is None:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
