"""Importing and judging whole MLPerf rounds of every benchmark, side by side with MLPerf's compliance checker.

For each round of a tree (default ../shared/corpus/mlperf-rounds: training v4.0, training v4.1, HPC
v2.0), one process each, in interleaved rounds:

- checker: one process running MLPerf's compliance checker (`mlp_compliance.main`, as its package
  checker runs it) on every result log of the round, with the round's usage and ruleset;
- import: `specbench import mlperf ROUND --out TMP --jobs 1` (conversion, power traces, MLPerf's
  published figures, every file written and signed, then the validation and scoring of each submission).

Both sides run from bytecode, as installed packages do: MLPerf's checker is compiled in site-packages, and this
checkout's modules are compiled first (`compileall`, as benchmarks/mlperf_round_speed.py does), so a checkout run
with PYTHONDONTWRITEBYTECODE does not compile every module of specbench in each process; --no-compile leaves
that out.

It prints wall and CPU seconds (medians) and checker / import per round and for the three together
(the issue's goal: at least 4x). The import judges every benchmark a spec answers; logs it does not
judge (MLPerf HPC weak scaling) are counted on the checker's side only, which the output says.

Usage, from the repository root: .venv/bin/python benchmarks/mlperf_rounds_speed.py
    [--tree DIR] [--rounds 3] [--json FILE] [--tmp DIR] [--no-compile]
"""

from __future__ import annotations

import argparse
import compileall
import json
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mlperf_agreement import TREE, result_logs, round_facts
from mlperf_round_speed import REPO, check_checkout, timed

LOOP = """
import logging, sys
logging.disable(logging.CRITICAL)
from mlperf_logging.compliance_checker import mlp_compliance
usage, ruleset = sys.argv[1], sys.argv[2]
failed = 0
for path in sys.argv[3:]:
    checker = mlp_compliance.make_checker(usage, ruleset, True, False)
    valid, *_ = mlp_compliance.main(path, f"{usage}_{ruleset}/common.yaml", checker)
    failed += not valid
print(failed)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tree", type=Path, default=TREE)
    parser.add_argument("--rounds", type=int, default=3, help="Interleaved rounds of each side (medians).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the result as JSON.")
    parser.add_argument("--tmp", type=Path, default=None, help="Where the imported trees go [default: $TMPDIR].")
    parser.add_argument(
        "--no-compile", action="store_true", help="Do not compile this checkout's modules to bytecode first."
    )
    args = parser.parse_args()
    rounds = [d for d in sorted(args.tree.iterdir()) if d.is_dir() and round_facts(d) is not None]
    if not rounds:
        raise SystemExit(f"no round folders under {args.tree}")
    check_checkout()
    if not args.no_compile:
        compileall.compile_dir(REPO / "specbench", quiet=1)
    out = Path(tempfile.mkdtemp(prefix="mlperf-rounds-speed-", dir=args.tmp))
    specbench = [sys.executable, "-m", "specbench.cli"]
    result: dict[str, object] = {
        "tree": str(args.tree),
        "machine": platform.platform(),
        "compiled_first": not args.no_compile,
        "rounds": {},
    }
    totals = {"checker": [0.0] * args.rounds, "import": [0.0] * args.rounds}
    try:
        for round_dir in rounds:
            facts = round_facts(round_dir)
            assert facts is not None
            usage, ruleset = facts
            logs = result_logs(round_dir)
            times: dict[str, list[tuple[float, float]]] = {"checker": [], "import": []}
            for r in range(args.rounds):
                target = out / f"{round_dir.name}-{r}"
                times["checker"].append(timed([[sys.executable, "-c", LOOP, usage, ruleset, *map(str, logs)]]))
                times["import"].append(
                    timed([[*specbench, "import", "mlperf", str(round_dir), "--out", str(target), "--jobs", "1"]])
                )
                for side in totals:
                    totals[side][r] += times[side][-1][0]
            wall = {side: statistics.median(w for w, _ in v) for side, v in times.items()}
            cpu = {side: statistics.median(c for _, c in v) for side, v in times.items()}
            ratio = wall["checker"] / wall["import"]
            print(
                f"{round_dir.name} ({usage} {ruleset}, {len(logs)} logs): checker {wall['checker']:.2f} s "
                f"(CPU {cpu['checker']:.2f}), import {wall['import']:.2f} s (CPU {cpu['import']:.2f}): {ratio:.1f}x"
            )
            result["rounds"][round_dir.name] = {  # type: ignore[index]
                "usage": usage,
                "ruleset": ruleset,
                "logs": len(logs),
                "wall_s": wall,
                "cpu_s": cpu,
                "checker_over_import": round(ratio, 2),
            }
    finally:
        shutil.rmtree(out, ignore_errors=True)
    whole = statistics.median(totals["checker"]) / statistics.median(totals["import"])
    print(f"all rounds: checker / import {whole:.1f}x (goal: at least 4x)")
    result["all_rounds_checker_over_import"] = round(whole, 2)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
