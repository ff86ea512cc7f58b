"""How fast MLPerf result logs are parsed and checked, against mlperf_logging's compliance checker on the same files.

Both sides take every result_*.txt of the corpus (../shared/corpus/mlperf-training) and, in one
process, interleaved over several rounds:

- specbench: `specbench.mlperf.check.check_log` on each file: the validator's MLLOG parser and its
  checks in MLPerf's dialect (MLPerf's common, closed-division and ResNet rules, the LARS/SGD
  hyperparameter rules of the spec, target, evaluation schedule), with the round's ruleset;
- mlperf_logging: `mlp_compliance.main(file, "training_<ruleset>/common.yaml", checker)` on each file,
  which follows the same chain (common, closed_common, closed_resnet, closed_resnet_lars) as the
  package checker runs it (its log output switched off);
- import: `import_results` of the whole corpus (conversion, power traces, files written, manifest,
  full validation and scoring of each submission), for scale.

Usage, from the repository root: .venv/bin/python benchmarks/import_speed.py [--rounds 7] [--json FILE]
Target (issue 9): specbench at least 10x the files per second of mlperf_logging's checker.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from specbench.formats.mllog import parse_log
from specbench.mlperf import import_results
from specbench.mlperf.check import check_log
from specbench.mlperf.source import ROUND

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "mlperf-training"
TARGET_RATIO = 10.0


def ruleset_of(path: Path) -> str:
    for part in path.parts:
        match = ROUND.match(part)
        if match:
            return f"{match.group(1)}.{match.group(2)}.0"
    return "4.0.0"


def ours(files: list[tuple[Path, str]]) -> int:
    parse_log.cache_clear()  # every round parses every log anew (the importer keeps the last few parsed)
    failed = 0
    for path, ruleset in files:
        run, _ = check_log(path.read_bytes().decode("utf-8", errors="replace"), ruleset=ruleset)
        failed += run.status != "success"
    return failed


def theirs(files: list[tuple[Path, str]]) -> int:
    from mlperf_logging.compliance_checker import mlp_compliance

    failed = 0
    for path, ruleset in files:
        checker = mlp_compliance.make_checker("training", ruleset, True, False)
        valid, *_ = mlp_compliance.main(str(path), f"training_{ruleset}/common.yaml", checker)
        failed += not valid
    return failed


def whole_import(root: Path) -> int:
    out = Path(tempfile.mkdtemp(prefix="import-speed-"))
    try:
        return len(import_results(root, out).systems)
    finally:
        shutil.rmtree(out)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None, help="Also write the results as JSON.")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)

    files = [(p, ruleset_of(p.relative_to(args.corpus))) for p in sorted(args.corpus.rglob("result_*.txt"))]
    if not files:
        raise SystemExit(f"no result_*.txt under {args.corpus}")
    size = sum(p.stat().st_size for p, _ in files)
    lines = sum(p.read_bytes().count(b"\n") for p, _ in files)
    first_s, _ = timed(lambda: ours(files))
    theirs(files[:1])
    gc.collect()
    gc.freeze()  # the modules both sides loaded are not rescanned by every collection, for either side
    jobs: dict[str, Callable[[], object]] = {
        "specbench": lambda: ours(files),
        "mlperf_logging": lambda: theirs(files),
        "import": lambda: whole_import(args.corpus),
    }
    times: dict[str, list[float]] = {name: [] for name in jobs}
    outcomes: dict[str, object] = {}
    for r in range(args.rounds):
        order = list(jobs)[r % len(jobs) :] + list(jobs)[: r % len(jobs)]
        for name in order:
            elapsed, outcomes[name] = timed(jobs[name])
            times[name].append(elapsed)
    median = {name: statistics.median(values) for name, values in times.items()}
    rate = {name: len(files) / median[name] for name in jobs}
    ratio = rate["specbench"] / rate["mlperf_logging"]
    best_ratio = min(times["mlperf_logging"]) / min(times["specbench"])

    print(f"corpus: {args.corpus} ({len(files)} result files, {lines} lines, {size / 1e6:.2f} MB)")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"first specbench pass (loads the spec): {first_s:.3f} s")
    print(
        f"runs failing: specbench {outcomes['specbench']}, mlperf_logging {outcomes['mlperf_logging']} (of {len(files)})"
    )
    for name, values in times.items():
        spread = f"min {min(values):.4f}, max {max(values):.4f}"
        print(
            f"{name:>14}: median {median[name]:.4f} s over {args.rounds} rounds ({spread}), {rate[name]:,.1f} files/s"
        )
    verdict = "meets" if ratio >= TARGET_RATIO else "misses"
    print(
        f"specbench / mlperf_logging = {ratio:.1f}x files/s (medians; {best_ratio:.1f}x of the fastest rounds); "
        f"target >= {TARGET_RATIO:g}x: {verdict}"
    )
    if args.json:
        data = {
            "files": len(files),
            "lines": lines,
            "bytes": size,
            "rounds": args.rounds,
            "times_s": times,
            "median_s": median,
            "files_per_s": rate,
            "ratio": ratio,
            "ratio_fastest_rounds": best_ratio,
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
