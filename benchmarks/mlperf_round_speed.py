"""Importing and validating a whole MLPerf round, side by side with MLPerf's compliance checker.

The 165 ResNet result files of MLPerf Training v4.0 (../shared/corpus/mlperf-v4.0-resnet-round),
checked four ways, each as a fresh process, in one run, the rounds interleaved:

- per-file: `python -m mlperf_logging.compliance_checker --usage training --ruleset 4.0.0 FILE`,
  once per result file (how one checks files by hand);
- looping: one process running `mlp_compliance.main` on every file in turn (what MLPerf's package
  checker does), its log output off;
- import: `specbench import mlperf ROUND --out TMP` (conversion, node power traces, every file
  written and signed, then the full validation and scoring of each submission);
- validate: `specbench validate TMP` of the imported tree.

It prints each side's wall and CPU seconds (the children's user + system time) and the ratios
per-file / import and looping / import (the targets: at least 10x and 4x), and the same for
validate and for import followed by validate.

Each import writes a new folder; all are deleted after the last round. With --reuse-out, one
folder is deleted just before each import, as earlier versions of this script did: on an ext4
file system without a journal (this repository's development machine has one) creating a file
checks, one by one, every inode of its group freed in the last 30 seconds and skips it, so the
previous tree's 900 files and folders, just deleted, slow the import's own 900 creations (by about
0.1 s there).

The specbench children run this checkout's code (the repository root first on PYTHONPATH, the
working folder the repository root). Before timing, this checkout's modules are compiled to
bytecode (`compileall`, into the usual __pycache__ folders), as an installed package is and as
MLPerf's installed checker is: where PYTHONDONTWRITEBYTECODE is set, a checkout run in place
would otherwise compile every module of specbench in each process. --no-compile leaves that out.

Usage, from the repository root: .venv/bin/python benchmarks/mlperf_round_speed.py
    [--round DIR] [--rounds 3] [--per-file-rounds 1] [--jobs N] [--tmp DIR] [--json FILE] [--reuse-out] [--no-compile]
"""

from __future__ import annotations

import argparse
import compileall
import itertools
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROUND = REPO.parent / "shared" / "corpus" / "mlperf-v4.0-resnet-round"
TARGETS = {"per-file": 10.0, "looping": 4.0}
CHECKER = [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", "4.0.0"]
LOOP = """
import logging, sys
logging.disable(logging.CRITICAL)
from mlperf_logging.compliance_checker import mlp_compliance
failed = 0
for path in sys.argv[1:]:
    checker = mlp_compliance.make_checker("training", "4.0.0", True, False)
    valid, *_ = mlp_compliance.main(path, "training_4.0.0/common.yaml", checker)
    failed += not valid
print(failed)
"""


def child_env() -> dict[str, str]:
    """The environment of every child: this checkout first on PYTHONPATH, so specbench is its code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def timed(commands: list[list[str]]) -> tuple[float, float]:
    """(wall s, CPU s of the child processes) of running the commands one after the other."""
    env = child_env()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command[:4])} ... failed ({done.returncode}): {done.stderr[-2000:]}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--round", type=Path, default=ROUND)
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of the looping, import and validate sides.")
    parser.add_argument("--per-file-rounds", type=int, default=1, help="Rounds of the per-file side (165 processes).")
    parser.add_argument("--jobs", type=int, default=None, help="--jobs of specbench [default: its own, the CPUs].")
    parser.add_argument("--tmp", type=Path, default=None, help="Where the imported tree is written [default: $TMPDIR].")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results as JSON.")
    parser.add_argument(
        "--reuse-out",
        action="store_true",
        help="Import into one folder, deleted just before each import (the trees are kept till the end otherwise).",
    )
    parser.add_argument(
        "--no-compile", action="store_true", help="Do not compile this checkout's modules to bytecode first."
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.per_file_rounds < 1:
        parser.error("--rounds and --per-file-rounds must be at least 1")
    files = sorted(str(p) for p in args.round.rglob("result_*.txt"))
    if not files:
        raise SystemExit(f"no result_*.txt under {args.round}")
    check_checkout()
    if not args.no_compile:
        compileall.compile_dir(REPO / "specbench", quiet=1)
    python, specbench = sys.executable, [sys.executable, "-m", "specbench.cli"]
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    out = Path(tempfile.mkdtemp(prefix="mlperf-round-", dir=args.tmp))
    trees = itertools.count()
    imported = out / "imported"

    def importing() -> list[list[str]]:
        nonlocal imported
        if args.reuse_out:
            shutil.rmtree(imported, ignore_errors=True)
        else:
            imported = out / f"imported-{next(trees)}"
        return [[*specbench, "import", "mlperf", str(args.round), "--out", str(imported), *jobs]]

    sides = {
        "per-file": lambda: [[*CHECKER, f, "--log_output", str(out / "checker.log")] for f in files],
        "looping": lambda: [[python, "-c", LOOP, *files]],
        "import": importing,
        "validate": lambda: [[*specbench, "validate", str(imported), *jobs]],
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    timed(importing())  # warm the file cache and leave a tree for the first validate
    for r in range(max(args.rounds, args.per_file_rounds)):
        for name, commands in sides.items():
            wanted = args.per_file_rounds if name == "per-file" else args.rounds
            if r < wanted and not (name == "validate" and not imported.is_dir()):
                times[name].append(timed(commands()))
    shutil.rmtree(out, ignore_errors=True)
    report(args, files, times)


def check_checkout() -> None:
    """Stop unless the children import specbench from this checkout."""
    probe = [sys.executable, "-c", "import specbench; print(specbench.__file__)"]
    found = subprocess.run(probe, capture_output=True, text=True, cwd=REPO, env=child_env()).stdout.strip()
    if Path(found).resolve() != (REPO / "specbench" / "__init__.py").resolve():
        raise SystemExit(f"the children would import specbench from {found or '?'}, not from {REPO}")


def report(args: argparse.Namespace, files: list[str], times: dict[str, list[tuple[float, float]]]) -> None:
    wall = {name: statistics.median(w for w, _ in values) for name, values in times.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in times.items()}
    wall["import+validate"] = wall["import"] + wall["validate"]
    cpu["import+validate"] = cpu["import"] + cpu["validate"]
    size = sum(os.path.getsize(f) for f in files)
    print(f"round: {args.round} ({len(files)} result files, {size / 1e6:.1f} MB)")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
        f"Python {platform.python_version()}; specbench --jobs {args.jobs or 'default'}; "
        f"rounds {args.rounds} (per-file {args.per_file_rounds}), medians; specbench from {REPO}"
        f"{' (not compiled first)' if args.no_compile else ''}{'; one --out deleted before each import' if args.reuse_out else ''}"
    )
    for name in ("per-file", "looping", "import", "validate", "import+validate"):
        print(f"  {name:16s} wall {wall[name]:7.2f} s  cpu {cpu[name]:7.2f} s  {len(files) / wall[name]:6.1f} files/s")
    ratios = {}
    for ours in ("import", "validate", "import+validate"):
        for theirs, target in TARGETS.items():
            ratio = wall[theirs] / wall[ours]
            ratios[f"{theirs}/{ours}"] = ratio
            verdict = "meets" if ratio >= target else "misses"
            print(
                f"  {theirs} / {ours}: {ratio:5.1f}x wall, {cpu[theirs] / cpu[ours]:5.1f}x cpu ({verdict} {target:g}x)"
            )
    if args.json is not None:
        data = {
            "files": len(files),
            "compiled_first": not args.no_compile,
            "reuse_out": args.reuse_out,
            "load": os.getloadavg()[0],
            "wall_s": wall,
            "cpu_s": cpu,
            "ratios_wall": ratios,
            "runs": times,
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    main()
