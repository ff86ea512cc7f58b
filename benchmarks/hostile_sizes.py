"""Time and peak memory of `specbench validate` and `specbench score` on hostile sizes, against honest submissions.

Each case is a copy of a committed honest submission with one file grown, re-signed with
`specbench.files.write_manifest`, under a temporary folder:

- log_lines: cpu-2core with --log-lines lines `:::MLLOG {}` appended to run_1/log.txt;
- power_rows: h200 with --power-rows valid rows after run_stop appended to run_1/power.csv;
- csv_cell: h200 with one row of run_1/power.csv holding a cell of --cell-chars characters;
- sparse_csv: h200 with run_1/power.csv extended to --sparse-gib GiB of zeros (a sparse file).

Every command runs in a fresh process; its wall time and peak RSS (ru_maxrss of that child, from
os.wait4) are measured, and the honest submission the case was copied from is measured the same way
in the same call. Printed: each case's time and memory, and their ratios to the honest one.

Usage, from the repository root: .venv/bin/python benchmarks/hostile_sizes.py [--log-lines 5000000]
[--power-rows 2300000] [--cell-chars 200000] [--sparse-gib 2] [--cases log_lines,power_rows]
[--json benchmarks/results/hostile_sizes.json] [--keep DIR]
Target (issue 45): under 300 MB peak RSS for a 60 MB log, time linear in the bytes read.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from specbench.files import write_manifest  # noqa: E402

ORG = "specbench"
SUBMISSIONS = REPO / "submissions" / ORG
TARGET_LOG_RSS_MB = 300.0


@dataclass(frozen=True)
class Case:
    name: str
    system: str
    grow: Callable[[Path, argparse.Namespace], None]
    size: Callable[[argparse.Namespace], str]


def grow_log(system: Path, args: argparse.Namespace) -> None:
    """Append --log-lines lines `:::MLLOG {}` to the first run's log, in blocks."""
    block = ":::MLLOG {}\n" * 100_000
    full, rest = divmod(args.log_lines, 100_000)
    with (system / "resnet50" / "run_1" / "log.txt").open("a", encoding="utf-8") as out:
        for _ in range(full):
            out.write(block)
        out.write(":::MLLOG {}\n" * rest)


def _csv(system: Path) -> Path:
    return system / "caraml-resnet50" / "run_1" / "power.csv"


def grow_power(system: Path, args: argparse.Namespace) -> None:
    """Append --power-rows valid rows after the trace's last one (after run_stop), 0.1 s apart."""
    path = _csv(system)
    last = path.read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1].split(",")
    sweep, mono, wall, device = int(last[0]), float(last[1]), float(last[2]), last[3]
    energy = float(last[6])
    with path.open("a", encoding="utf-8") as out:
        for start in range(0, args.power_rows, 100_000):
            rows = []
            for k in range(start + 1, min(start + 100_000, args.power_rows) + 1):
                t = 0.1 * k
                rows.append(
                    f"{sweep + k},{mono + t:.6f},{wall + t:.6f},{device},124.968,124.42,{energy + 12.05 * k:.3f},0.003891054999996868,\n"
                )
            out.write("".join(rows))


def big_cell(system: Path, args: argparse.Namespace) -> None:
    """Give the last row of the trace a read_latency_s cell of --cell-chars digits."""
    path = _csv(system)
    lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    cells = lines[-1].split(",")
    cells[7] = "0." + "3" * max(0, args.cell_chars - 2)
    lines[-1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def sparse_csv(system: Path, args: argparse.Namespace) -> None:
    """Extend the trace to --sparse-gib GiB with a hole (zeros that take no disk)."""
    os.truncate(_csv(system), int(args.sparse_gib * 1024**3))


CASES = (
    Case("log_lines", "cpu-2core", grow_log, lambda a: f"{a.log_lines} lines ':::MLLOG {{}}' in log.txt"),
    Case("power_rows", "h200", grow_power, lambda a: f"{a.power_rows} rows after run_stop in power.csv"),
    Case("csv_cell", "h200", big_cell, lambda a: f"one power.csv cell of {a.cell_chars} characters"),
    Case("sparse_csv", "h200", sparse_csv, lambda a: f"power.csv of {a.sparse_gib:g} GiB, sparse"),
)


def copy_system(system: str, under: Path) -> Path:
    """A copy of one committed submission as under/ORG/SYSTEM; returns the system folder."""
    target = under / ORG / system
    shutil.copytree(SUBMISSIONS / system, target)
    return target


def measure(command: list[str], out: Path) -> dict[str, object]:
    """Run one specbench command in a fresh process: exit code, wall s, peak RSS MB, stdout bytes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    with out.open("wb") as stdout:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE, cwd=REPO, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    stderr = child.stderr.read().decode("utf-8", "replace") if child.stderr else ""
    if child.stderr:
        child.stderr.close()
    child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit_code": child.returncode,
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "stdout_bytes": out.stat().st_size,
        "traceback": "Traceback" in stderr,
    }


def codes_of(path: Path) -> list[str]:
    """The finding codes of a `validate --format json` output, in order, without repeats."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    codes = [f["code"] for sub in report.get("submissions", []) for f in sub.get("findings", [])]
    return list(dict.fromkeys(codes))


def run_commands(root: Path, label: str, work: Path, score_format: str) -> dict[str, dict[str, object]]:
    python = sys.executable
    commands = {
        "validate": [python, "-m", "specbench", "validate", str(root), "--format", "json"],
        "score": [python, "-m", "specbench", "score", str(root), "--format", score_format],
    }
    results = {}
    for name, command in commands.items():
        out = work / f"{label}.{name}.out"
        results[name] = measure(command, out)
        if name == "validate":
            results[name]["codes"] = codes_of(out)
        out.unlink()
    return results


def ratio(case: dict[str, object], honest: dict[str, object], key: str) -> float:
    return round(float(case[key]) / max(float(honest[key]), 1e-9), 2)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--log-lines", type=int, default=5_000_000)
    parser.add_argument("--power-rows", type=int, default=2_300_000)
    parser.add_argument("--cell-chars", type=int, default=200_000)
    parser.add_argument("--sparse-gib", type=float, default=2.0)
    parser.add_argument("--cases", default=",".join(c.name for c in CASES), help="Comma-separated case names.")
    parser.add_argument("--score-format", default="json", help="The --format of `specbench score`.")
    parser.add_argument("--keep", type=Path, default=None, help="Write the cases here and keep them.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results as JSON.")
    args = parser.parse_args()
    chosen = [c for c in CASES if c.name in args.cases.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="hostile-sizes-"))
    work.mkdir(parents=True, exist_ok=True)

    honest: dict[str, dict[str, dict[str, object]]] = {}
    results: dict[str, dict[str, object]] = {}
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {datetime.date.today().isoformat()}"
    )
    for case in chosen:
        if case.system not in honest:
            root = work / f"honest-{case.system}"
            copy_system(case.system, root)
            honest[case.system] = run_commands(root, f"honest-{case.system}", work, args.score_format)
        root = work / case.name
        system = copy_system(case.system, root)
        started = time.perf_counter()
        case.grow(system, args)
        write_manifest(system)
        built_s = time.perf_counter() - started
        grown = sum(p.stat().st_size for p in system.rglob("*") if p.is_file())
        measured = run_commands(root, case.name, work, args.score_format)
        base = honest[case.system]
        results[case.name] = {
            "honest": case.system,
            "size": case.size(args),
            "bytes": grown,
            "built_s": round(built_s, 1),
            **{
                name: {
                    **measured[name],
                    "honest": base[name],
                    "time_ratio": ratio(measured[name], base[name], "wall_s"),
                    "rss_ratio": ratio(measured[name], base[name], "peak_rss_mb"),
                }
                for name in measured
            },
        }
        print(f"{case.name}: {case.size(args)} ({grown / 1e6:.1f} MB apparent), against honest {case.system}")
        for name, got in measured.items():
            entry = results[case.name][name]
            codes = f", codes {','.join(got['codes'])}" if got.get("codes") else ""  # type: ignore[arg-type]
            print(
                f"  {name:>8}: exit {got['exit_code']}, {got['wall_s']:.2f} s, {got['peak_rss_mb']:.0f} MB"
                f" (honest {base[name]['wall_s']:.2f} s, {base[name]['peak_rss_mb']:.0f} MB):"
                f" time x{entry['time_ratio']}, memory x{entry['rss_ratio']}"  # type: ignore[index]
                f"{', TRACEBACK' if got['traceback'] else ''}{codes}"
            )
        shutil.rmtree(root)
    if "log_lines" in results:
        rss = results["log_lines"]["validate"]["peak_rss_mb"]  # type: ignore[index]
        verdict = "meets" if rss < TARGET_LOG_RSS_MB else "misses"
        print(f"target under {TARGET_LOG_RSS_MB:g} MB for the log case, validate: {verdict} ({rss:.0f} MB)")
    if args.json:
        command = " ".join(["benchmarks/hostile_sizes.py", *sys.argv[1:]])
        record = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": platform.node(),
            "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "command": command,
            "cases": results,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n")
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
