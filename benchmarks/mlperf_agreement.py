"""Agreement of `specbench validate` with MLPerf's compliance checker, log by log, over whole MLPerf rounds.

For every result log of a tree of rounds (default ../shared/corpus/mlperf-rounds: training v4.0,
training v4.1, HPC v2.0), both sides judge the log:

- MLPerf: `python -m mlperf_logging.compliance_checker --usage U --ruleset R FILE`, the module's own
  command line run once per file (in one child process that runs the module as `-m` does, per file,
  to save 1,000 interpreter starts); a log passes when the checker exits 0.
- specbench: `specbench import mlperf ROUND --out TMP` then `specbench validate TMP --format json`;
  a log passes when its run's status is success and no error finding lies in its run folder.

It prints, per round and benchmark, how many logs each side passes, how many verdicts agree, and
each disagreement with its reason: the specbench error codes (and whether each is a documented
stricter rule, STRICTER below), or MLPerf's failing check. Logs specbench does not judge (no spec
answers the benchmark; the result logs under a weak-scaling folder's pruned_results/, which MLPerf's
summarizer does not read either) are counted apart with the reason. Each model instance's log of an
MLPerf HPC weak-scaling folder is judged like a strong-scaling run's.

Usage, from the repository root: .venv/bin/python benchmarks/mlperf_agreement.py
    [--tree DIR] [--round NAME ...] [--json FILE] [--tmp DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TREE = REPO.parent / "shared" / "corpus" / "mlperf-rounds"
ROUND_NAME = re.compile(r"(?:^|[-_])(training|hpc)?[-_]?v(\d+)\.(\d+)")
STRICTER = {
    "SB-MLP-013": "the dataset sizes of layer 9 must be the benchmark's (MLPerf's checker asks only for a value)",
    "SB-LOG-009": "a log that reached its target but has no run_stop",
    "SB-PRV-002": "two result logs of one benchmark with run_start at the same millisecond (one run submitted twice, "
    "or runs run at once); MLPerf's checker reads one log at a time",
    "SB-DUP-001": "the same log events from run_start on in two submissions (one run submitted twice); MLPerf's "
    "checker reads one log at a time",
    "SB-DUP-004": "a run_start at the same millisecond as a run of another submission (one run submitted twice, or "
    "an HPC weak-scaling instance started with one so submitted); MLPerf's checker reads one log at a time",
}
"""specbench error codes that are stricter than MLPerf's checker on purpose (docs/mlperf-import.md)."""

CHECKER_LOOP = r"""
import contextlib, io, json, logging, runpy, sys
logging.disable(logging.CRITICAL)
usage, ruleset = sys.argv[1], sys.argv[2]
verdicts = {}
for path in sys.stdin.read().split("\n"):
    if not path:
        continue
    sys.argv = ["compliance_checker", "--usage", usage, "--ruleset", ruleset, path]
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            runpy.run_module("mlperf_logging.compliance_checker", run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except Exception as err:  # the checker's own crash is its verdict on the file
            code = 2
            out.write(f"checker crashed: {type(err).__name__}: {err}")
    lines = [l for l in out.getvalue().splitlines() if "FAILED" in l or "fail" in l.lower() or "crash" in l]
    verdicts[path] = {"exit": code, "why": lines[:3]}
print(json.dumps(verdicts))
"""


def round_facts(folder: Path) -> tuple[str, str] | None:
    """(usage, ruleset) of a round folder named like training-v4.0, hpc-v2.0 or mlperf-v4.0-resnet-round."""
    match = ROUND_NAME.search(folder.name)
    if match is None:
        return None
    return match.group(1) or "training", f"{match.group(2)}.{match.group(3)}.0"


def result_logs(round_dir: Path) -> list[Path]:
    """Every result log of a round: <org>/results/<system>/.../result_*.txt, power logs left out."""
    return sorted(
        p for p in round_dir.glob("*/results/**/result_*.txt") if "power" not in p.relative_to(round_dir).parts
    )


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def mlperf_verdicts(logs: list[Path], usage: str, ruleset: str, tmp: Path) -> tuple[dict[str, Any], float]:
    """MLPerf's checker on each log; it runs in `tmp`, where it writes its compliance_checker.log."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHECKER_LOOP, usage, ruleset],
        input="\n".join(str(p.resolve()) for p in logs),
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=tmp,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), time.perf_counter() - start


def specbench_verdicts(round_dir: Path, out: Path) -> tuple[dict[str, Any], list[str], float]:
    """Per source log (absolute path): status, error codes in its run folder; the import's skipped lines."""
    cli = [sys.executable, "-m", "specbench.cli"]
    start = time.perf_counter()
    imported = subprocess.run(
        [*cli, "import", "mlperf", str(round_dir), "--out", str(out), "--format", "json"],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=REPO,
    )
    if imported.returncode not in (0, 1):
        raise SystemExit(
            f"specbench import mlperf {round_dir} failed ({imported.returncode}): {imported.stderr[-3000:]}"
        )
    validated = subprocess.run(
        [*cli, "validate", str(out), "--format", "json"], capture_output=True, text=True, env=child_env(), cwd=REPO
    )
    seconds = time.perf_counter() - start
    if validated.returncode not in (0, 1):
        raise SystemExit(f"specbench validate {out} failed ({validated.returncode}): {validated.stderr[-3000:]}")
    skipped = json.loads(imported.stdout)["skipped"]
    reports = json.loads(validated.stdout)["submissions"]
    verdicts: dict[str, Any] = {}
    for report in reports:
        root = Path(report["root"])
        record = json.loads((root / "import.json").read_text())
        org_dir = round_dir / record["source"]["path"]
        errors: dict[str, list[str]] = defaultdict(list)
        for finding in report["findings"]:
            parts = str(finding.get("file") or "").split("/")
            if finding["severity"] == "error" and len(parts) >= 2 and parts[1].startswith("run_"):
                errors[f"{parts[0]}/{parts[1]}"].append(finding["code"])
        for bench in report["benchmarks"]:
            runs = record["benchmarks"].get(bench["benchmark"], {}).get("runs", {})
            for run in bench["runs"]:
                source = runs.get(run["run"], {}).get("result_file", {}).get("path")
                if source is None:
                    continue
                codes = sorted(set(errors.get(f"{bench['benchmark']}/{run['run']}", [])))
                verdicts[str((org_dir / source).resolve())] = {
                    "status": run["status"],
                    "reason": run["reason"],
                    "errors": codes,
                    "passes": run["status"] == "success" and not codes,
                }
    return verdicts, skipped, seconds


def benchmark_of(round_dir: Path, log: Path) -> str:
    parts = log.relative_to(round_dir).parts  # org/results/system/[strong|weak/]benchmark/result_N.txt
    return "/".join(parts[3:-1])


def compare(round_dir: Path, logs: list[Path], mlperf: dict[str, Any], ours: dict[str, Any], skipped: list[str]):
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    disagreements = []
    for log in logs:
        bench = benchmark_of(round_dir, log)
        theirs = mlperf[str(log.resolve())]
        mine = ours.get(str(log.resolve()))
        row = rows[bench]
        row["logs"] += 1
        row["mlperf_pass"] += theirs["exit"] == 0
        if mine is None:
            row["not_judged"] += 1
            continue
        row["specbench_pass"] += mine["passes"]
        if mine["passes"] == (theirs["exit"] == 0):
            row["agree"] += 1
            continue
        if not mine["passes"] and mine["errors"] and all(code in STRICTER for code in mine["errors"]):
            kind = "stricter on purpose"
        else:
            kind = "unexplained"
        row[kind] += 1
        disagreements.append(
            {
                "log": str(log.relative_to(round_dir)),
                "mlperf": "pass" if theirs["exit"] == 0 else f"fail: {'; '.join(theirs['why'])}",
                "specbench": "pass" if mine["passes"] else f"{mine['status']}: {mine['reason']} {mine['errors']}",
                "kind": kind,
            }
        )
    return rows, disagreements


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tree", type=Path, default=TREE, help="A folder of rounds (training-v4.0, hpc-v2.0, ...).")
    parser.add_argument("--round", action="append", default=None, help="Only these round folders of the tree.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the result as JSON.")
    parser.add_argument("--tmp", type=Path, default=None, help="Where the imported trees go [default: $TMPDIR].")
    args = parser.parse_args()
    rounds = [d for d in sorted(args.tree.iterdir()) if d.is_dir() and round_facts(d) is not None]
    if args.round:
        rounds = [d for d in rounds if d.name in args.round]
    if not rounds:
        raise SystemExit(f"no round folders (training-vN.M, hpc-vN.M) under {args.tree}")
    result: dict[str, Any] = {"tree": str(args.tree), "rounds": {}}
    with tempfile.TemporaryDirectory(prefix="mlperf-agreement-", dir=args.tmp) as tmp:
        for round_dir in rounds:
            facts = round_facts(round_dir)
            assert facts is not None
            usage, ruleset = facts
            logs = result_logs(round_dir)
            print(f"{round_dir.name}: {len(logs)} result logs, MLPerf {usage} {ruleset} ...", file=sys.stderr)
            mlperf, mlperf_s = mlperf_verdicts(logs, usage, ruleset, Path(tmp))
            ours, skipped, ours_s = specbench_verdicts(round_dir, Path(tmp) / round_dir.name)
            rows, disagreements = compare(round_dir, logs, mlperf, ours, skipped)
            result["rounds"][round_dir.name] = {
                "usage": usage,
                "ruleset": ruleset,
                "logs": len(logs),
                "mlperf_checker_s": round(mlperf_s, 2),
                "specbench_import_validate_s": round(ours_s, 2),
                "benchmarks": {b: dict(c) for b, c in sorted(rows.items())},
                "disagreements": disagreements,
                "not_judged": [s for s in skipped],
            }
    print_result(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


def print_result(result: dict[str, Any]) -> None:
    for name, data in result["rounds"].items():
        print(
            f"\n{name} (MLPerf {data['usage']} {data['ruleset']}): {data['logs']} logs; MLPerf's checker "
            f"{data['mlperf_checker_s']} s, specbench import + validate {data['specbench_import_validate_s']} s"
        )
        print(
            f"{'benchmark':<28} {'logs':>5} {'MLPerf ok':>9} {'specbench ok':>12} {'agree':>6} {'stricter':>8} "
            f"{'unexplained':>11} {'not judged':>10}"
        )
        for bench, c in data["benchmarks"].items():
            print(
                f"{bench:<28} {c.get('logs', 0):>5} {c.get('mlperf_pass', 0):>9} {c.get('specbench_pass', 0):>12} "
                f"{c.get('agree', 0):>6} {c.get('stricter on purpose', 0):>8} {c.get('unexplained', 0):>11} "
                f"{c.get('not_judged', 0):>10}"
            )
        for d in data["disagreements"]:
            print(f"  {d['kind']}: {d['log']}\n    MLPerf: {d['mlperf']}\n    specbench: {d['specbench']}")


if __name__ == "__main__":
    main()
