"""Hostile submissions: a committed honest submission copied, one attack applied, its manifest re-signed.

Each case of issue 45's classes (traversal, links, special files, sizes, malformed power files, markup and
control characters in free text, a re-run scale beyond the host) is a `Case`: which honest submission it
starts from and one function that edits the copy. `build` lays out a board of the hostile copy beside an
honest one, with canary files outside the board that the attack points at; every edit is followed by
`write_manifest`, so the copy's hashes agree with its files and only the attack itself can be refused.

The canary (`CANARY-` and random hex) is in every file outside the submission that an attack names, and in
the environment of the specbench process (`CANARY_ENV`), so that `/proc/self/environ` would show it: it
must never appear in anything specbench writes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from specbench.files import write_manifest
from specbench.formats.mllog import MLLOG_LINES
from specbench.validator.files import DEFAULT_LIMITS
from support.committed import ORG, committed

REPO = Path(__file__).resolve().parents[2]
CPU = "cpu-2core"
"""resnet50 smoke on two CPU cores: one run, no power trace (result.json's power.reason says why)."""
GPU = "h200"
"""caraml-resnet50 on one H200: three runs, each with power.csv and power.json."""
BENCHMARK = {CPU: "resnet50", GPU: "caraml-resnet50"}
HONEST_BESIDE = {CPU: GPU, GPU: CPU}
"""The honest submission scored beside each hostile copy: the other of the two."""
CANARY_ENV = "SPECBENCH_HOSTILE_CANARY"
MIB = 1024 * 1024

FORGED_LINE = "ALL CLEAR: compliant, 0 error(s)"
FORGED_START = "ALL CLEAR"
SCRIPT = "<script>alert`1`</script>"
LINK = "[x](javascript:alert`1`)"
PAYLOAD = f"={SCRIPT}|\x1b[2J\x1b[31m\rx\n{FORGED_START}\u202e: compliant, 0 error(s)\n{LINK} -1-1 @x"
"""Markup and control characters for a free-text field: a spreadsheet formula first (a CSV cell starts with it),
HTML, a table pipe, terminal escapes, CR, a line forging the validator's verdict with a right-to-left override,
then a Markdown javascript: link. What comes before the first ':' or '(' is what a table's brief status keeps of
a reason (at most 60 characters), so everything but the link is there."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where an attack edits: the hostile copy, its benchmark and first run, and the canary files outside it."""

    submission: Path
    benchmark: Path
    run: Path
    outside: Path
    canary: str

    def rel(self, path: Path) -> str:
        """A path as findings name it: relative to the submission folder, POSIX."""
        return path.relative_to(self.submission).as_posix()

    @property
    def canary_csv(self) -> Path:
        """A power.csv outside the board whose every device is the canary (a file a link or a path may name)."""
        return self.outside / "canary.csv"


Attack = Callable[[Target], tuple[str, ...]]
"""Edits the copy; returns the paths (relative to the submission) any of which a refusal may name; () when the
edit need not be refused (markup in a free-text field), only shown escaped."""


@dataclass(frozen=True, kw_only=True)
class Case:
    id: str
    kind: str
    base: str
    attack: Attack
    org: str = ORG
    """The folder (and submitter) name of the hostile copy's organisation."""
    resign: bool = True
    """Whether `build` writes the manifest after the attack (an attack on the manifest writes its own)."""

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True, kw_only=True)
class Board:
    """A built board: `root` holds the hostile copy and an honest submission."""

    case: Case
    where: Path
    root: Path
    hostile: Path
    honest: Path
    offending: tuple[str, ...]
    canary: str
    marks: tuple[str, ...]
    """What must appear in no output: the canary, and the start of the canary file's sha256 (a digest of a file
    outside the submission is a byte of it read)."""
    env: dict[str, str] = field(repr=False)

    @property
    def hostile_benchmark(self) -> str:
        return BENCHMARK[self.case.base]

    @property
    def honest_benchmark(self) -> str:
        return BENCHMARK[self.honest.name]


# --- building ---------------------------------------------------------------------------------------------------


def build(case: Case, where: Path) -> Board:
    """Lay out `where/board` (the hostile copy and an honest one) and `where/outside` (the canary files)."""
    canary = f"CANARY-{secrets.token_hex(12)}"
    root, outside = where / "board", where / "outside"
    honest = root / ORG / HONEST_BESIDE[case.base]
    shutil.copytree(committed(honest.name), honest)
    hostile = root / case.org / case.base
    shutil.copytree(committed(case.base), hostile)
    outside.mkdir()
    target = Target(
        submission=hostile, benchmark=hostile / BENCHMARK[case.base], run=hostile / BENCHMARK[case.base] / "run_1",
        outside=outside, canary=canary,
    )  # fmt: skip
    write_canary_csv(target.canary_csv, canary)
    offending = case.attack(target)
    if case.resign:
        write_manifest(hostile)
    digest = hashlib.sha256(target.canary_csv.read_bytes()).hexdigest()
    return Board(
        case=case, where=where, root=root, hostile=hostile, honest=honest, offending=offending, canary=canary,
        marks=(canary, digest[:16]), env={CANARY_ENV: canary},
    )  # fmt: skip


def write_canary_csv(path: Path, canary: str) -> None:
    """A well-formed power trace, its device named by the canary: whoever draws it publishes the canary."""
    rows = ["sweep,t_mono_s,t_wall_s,device,power_instant_w,power_average_w,energy_counter_j,read_latency_s,mark"]
    rows += [f"{i},{100 + i / 10},{1.8e9 + i / 10},{canary},100.0,100.0,{5000 + 10 * i},0.001," for i in range(200)]
    path.write_text("\n".join(rows) + "\n")


def leaky_copy(source: Path, destination: Path, canary: str) -> Path:
    """A copy of a benchmark or run folder of the GPU submission with every device key replaced by the canary."""
    shutil.copytree(source, destination)
    for path in destination.rglob("*"):
        if path.is_file():
            path.write_text(path.read_text().replace("nvml:0", canary))
    return destination


def edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    """Rewrite a JSON file with `change` applied to its parsed content (the return value, when not None)."""
    data = json.loads(path.read_text())
    changed = change(data)
    path.write_text(json.dumps(data if changed is None else changed, indent=2))


def edit_yaml(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite a YAML file with `change` applied to its mapping; strings with control characters come out escaped."""
    yaml = YAML(typ="safe", pure=True)
    data = yaml.load(path.read_text())
    change(data)
    out = io.StringIO()
    yaml.dump(data, out)
    path.write_text(out.getvalue())


def power_json(t: Target) -> Path:
    return t.run / "power.json"


def set_csv(value: Any) -> Attack:
    """power.json's "csv" set to `value` (a callable gets the target)."""

    def attack(t: Target) -> tuple[str, ...]:
        name = value(t) if callable(value) else value
        edit_json(power_json(t), lambda data: data.__setitem__("csv", name))
        return (t.rel(power_json(t)),)

    return attack


# --- traversal and links ----------------------------------------------------------------------------------------


def other_submissions_trace(t: Target) -> str:
    """`../../../../../beside/...`: the trace of another submission copied beside the board, relative to the run."""
    beside = t.submission.parent.parent.parent / "beside"
    other = leaky_copy(committed(GPU, BENCHMARK[GPU]), beside / ORG / "h200-other" / BENCHMARK[GPU], t.canary)
    return os.path.relpath(other / "run_1" / "power.csv", t.run)


def power_csv_link(t: Target) -> tuple[str, ...]:
    link = t.run / "power.csv"
    link.unlink()
    link.symlink_to(t.canary_csv)
    return (t.rel(link),)


def benchmark_folder_link(t: Target) -> tuple[str, ...]:
    leaky = leaky_copy(t.benchmark, t.outside / t.benchmark.name, t.canary)
    shutil.rmtree(t.benchmark)
    t.benchmark.symlink_to(leaky, target_is_directory=True)
    return (t.rel(t.benchmark),)


def run_folder_link(t: Target) -> tuple[str, ...]:
    leaky = leaky_copy(t.run, t.outside / "run_1", t.canary)
    shutil.rmtree(t.run)
    t.run.symlink_to(leaky, target_is_directory=True)
    return (t.rel(t.run),)


def manifest_lists_outside_files(t: Target) -> tuple[str, ...]:
    """manifest.json lists, besides the copy's files, the canary file (by `..` and absolute path) and
    /proc/self/environ, each with the canary file's true digest: checking them would read outside the folder."""
    manifest = write_manifest(t.submission)
    digest = {"sha256": hashlib.sha256(t.canary_csv.read_bytes()).hexdigest(), "bytes": t.canary_csv.stat().st_size}
    outside = {os.path.relpath(t.canary_csv, t.submission): digest, str(t.canary_csv): digest,
               "/proc/self/environ": digest}  # fmt: skip
    edit_json(manifest, lambda data: data["files"].update(outside))
    return (t.rel(manifest),)


# --- special files ----------------------------------------------------------------------------------------------


def csv_names_a_fifo(t: Target) -> tuple[str, ...]:
    fifo = t.run / "trace.fifo"
    os.mkfifo(fifo)
    return (*set_csv(fifo.name)(t), t.rel(fifo))


def power_csv_is_a_fifo(t: Target) -> tuple[str, ...]:
    fifo = t.run / "power.csv"
    fifo.unlink()
    os.mkfifo(fifo)
    return (t.rel(fifo),)


# --- sizes ------------------------------------------------------------------------------------------------------


def csv_long_cell(t: Target) -> tuple[str, ...]:
    """One cell of 200,000 characters (the csv module's field limit is 131,072), well under the file's bound."""
    trace = t.run / "power.csv"
    lines = trace.read_text().splitlines()
    lines[2] = lines[2].rstrip(",") + "," + "x" * 200_000
    trace.write_text("\n".join(lines) + "\n")
    return (t.rel(trace),)


def csv_sparse_over_bound(t: Target) -> tuple[str, ...]:
    """power.csv extended past its bound by a hole (NUL bytes that cost no disk)."""
    trace = t.run / "power.csv"
    os.truncate(trace, DEFAULT_LIMITS.csv_bytes + MIB)
    return (t.rel(trace),)


def log_over_bound(t: Target) -> tuple[str, ...]:
    """log.txt: the run's log, then `:::MLLOG {}` lines to just past the log's size bound."""
    log = t.run / "log.txt"
    line = b":::MLLOG {}\n"
    missing = DEFAULT_LIMITS.log_bytes + 64 * 1024 - log.stat().st_size
    chunk = line * (MIB // len(line))
    with log.open("ab") as handle:
        for _ in range(missing // len(chunk) + 1):
            handle.write(chunk)
    return (t.rel(log),)


def log_over_line_count(t: Target) -> tuple[str, ...]:
    """log.txt: the run's log, then 1,000 `:::MLLOG {}` lines more than a log may hold (about 1.2 MB)."""
    log = t.run / "log.txt"
    with log.open("ab") as handle:
        handle.write(b":::MLLOG {}\n" * (MLLOG_LINES + 1000))
    return (t.rel(log),)


def yaml_over_bound(t: Target) -> tuple[str, ...]:
    system = t.submission / "system.yaml"
    with system.open("a") as handle:
        handle.write("# padding\n" * (DEFAULT_LIMITS.yaml_bytes // 10 + 100))
    return (t.rel(system),)


def json_over_bound(t: Target) -> tuple[str, ...]:
    result = t.run / "result.json"
    with result.open("a") as handle:
        handle.write(" " * (DEFAULT_LIMITS.json_bytes + 1024))
    return (t.rel(result),)


def json_deep_nesting(t: Target) -> tuple[str, ...]:
    """result.json of 100,000 nested arrays (the JSON decoder recurses once per level)."""
    result = t.run / "result.json"
    result.write_text("[" * 100_000 + "]" * 100_000)
    return (t.rel(result),)


def json_huge_integer(t: Target) -> tuple[str, ...]:
    """result.json's devices written with 5,000 digits (Python refuses to convert more than 4,300)."""
    result = t.run / "result.json"
    result.write_text(result.read_text().replace('"devices": 1', '"devices": ' + "9" * 5000))
    return (t.rel(result),)


def yaml_alias_bomb(t: Target) -> tuple[str, ...]:
    """system.yaml with nine levels of aliases of ten each: 10**10 values once expanded, 1 kB on disk."""
    system = t.submission / "system.yaml"
    lines = ["bomb:", "  l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    text = system.read_text().replace("declared: {}", "declared:\n  notes: *l9")
    system.write_text("\n".join(lines) + "\n" + text)
    return (t.rel(system),)


# --- malformed power files --------------------------------------------------------------------------------------


def power_json_edit(change: Callable[[dict[str, Any]], Any]) -> Attack:
    def attack(t: Target) -> tuple[str, ...]:
        edit_json(power_json(t), change)
        return (t.rel(power_json(t)),)

    return attack


def first_device(data: dict[str, Any]) -> dict[str, Any]:
    device: dict[str, Any] = data["meters"][0]["devices"][0]
    return device


def power_csv_text_in_number(t: Target) -> tuple[str, ...]:
    trace = t.run / "power.csv"
    lines = trace.read_text().splitlines()
    cells = lines[3].split(",")
    cells[4] = "watts"
    lines[3] = ",".join(cells)
    trace.write_text("\n".join(lines) + "\n")
    return (t.rel(trace),)


def power_csv_not_finite(t: Target) -> tuple[str, ...]:
    trace = t.run / "power.csv"
    lines = trace.read_text().splitlines()
    for at in range(3, 40):
        cells = lines[at].split(",")
        cells[4:6] = ["nan", "inf"]
        lines[at] = ",".join(cells)
    trace.write_text("\n".join(lines) + "\n")
    return (t.rel(trace),)


# --- markup and control characters ------------------------------------------------------------------------------


def yaml_field(name: str, *keys: str, refused: bool = True) -> Attack:
    """`name` (system.yaml or submission.yaml, under the submission or its benchmark) with `keys` set to PAYLOAD."""

    def attack(t: Target) -> tuple[str, ...]:
        path = t.submission / name if name == "system.yaml" else t.benchmark / name

        def change(data: dict[str, Any]) -> None:
            node = data
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            node[keys[-1]] = PAYLOAD

        edit_yaml(path, change)
        return (t.rel(path),) if refused else ()

    return attack


def result_field(*keys: str) -> Attack:
    """result.json of the first run with `keys` set to PAYLOAD: the executor's text, shown but not judged."""

    def attack(t: Target) -> tuple[str, ...]:
        def change(data: dict[str, Any]) -> None:
            node = data
            for key in keys[:-1]:
                node = node[key]
            node[keys[-1]] = PAYLOAD

        edit_json(t.run / "result.json", change)
        return ()

    return attack


def file_named(name: str) -> Attack:
    """A data file of that name in the benchmark folder."""

    def attack(t: Target) -> tuple[str, ...]:
        path = t.benchmark / name
        path.write_text("notes\n")
        return (t.rel(path),)

    return attack


def file_named_in_bytes(name: bytes) -> Attack:
    """A data file in the first run's folder whose name is `name`, bytes that need not be UTF-8."""

    def attack(t: Target) -> tuple[str, ...]:
        path = os.fsencode(t.run) + b"/" + name
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"notes\n")
        os.close(fd)
        return (t.rel(Path(os.fsdecode(path))),)

    return attack


def submitter_renamed(t: Target) -> tuple[str, ...]:
    """The organisation (folder, system.yaml, submission.yaml and the log) renamed to the case's org, `-1-1`:
    a valid name that a spreadsheet reads as a formula."""
    org = t.submission.parent.name

    def change(data: dict[str, Any]) -> None:
        data["submitter"] = org

    edit_yaml(t.submission / "system.yaml", change)
    edit_yaml(t.benchmark / "submission.yaml", change)
    for log in t.benchmark.glob("run_*/log.txt"):
        text = log.read_text().replace('"submission_org", "value": "specbench"', f'"submission_org", "value": "{org}"')
        log.write_text(text)
    return ()


# --- re-run scale -----------------------------------------------------------------------------------------------


def world_size(processes: int) -> Attack:
    """system.yaml claims a job of `processes` processes on the same 2-core CPU host, and each run's result.json
    as many devices: a consistent claim, compliant, that a re-run must not obey beyond the host."""

    def attack(t: Target) -> tuple[str, ...]:
        def change(data: dict[str, Any]) -> None:
            data["layers"]["communication"]["world_size"] = processes

        edit_yaml(t.submission / "system.yaml", change)
        for result in t.benchmark.glob("run_*/result.json"):
            edit_json(result, lambda data: data.__setitem__("devices", processes))
        return ()

    return attack


# --- the cases --------------------------------------------------------------------------------------------------


def _delete_key(data: dict[str, Any]) -> None:
    del first_device(data)["key"]


CASES: tuple[Case, ...] = (
    Case(id="csv-absolute-path", kind="traversal", base=GPU, attack=set_csv(lambda t: str(t.canary_csv))),
    Case(id="csv-proc-self-environ", kind="traversal", base=GPU, attack=set_csv("/proc/self/environ")),
    Case(id="csv-dotdot-other-submission", kind="traversal", base=GPU, attack=set_csv(other_submissions_trace)),
    Case(
        id="manifest-lists-outside-files",
        kind="traversal",
        base=GPU,
        resign=False,
        attack=manifest_lists_outside_files,
    ),
    Case(id="power-csv-symlink", kind="links", base=GPU, attack=power_csv_link),
    Case(id="benchmark-folder-symlink", kind="links", base=GPU, attack=benchmark_folder_link),
    Case(id="run-folder-symlink", kind="links", base=GPU, attack=run_folder_link),
    Case(id="csv-names-a-fifo", kind="special", base=GPU, attack=csv_names_a_fifo),
    Case(id="power-csv-is-a-fifo", kind="special", base=GPU, attack=power_csv_is_a_fifo),
    Case(id="csv-dev-zero", kind="special", base=GPU, attack=set_csv("/dev/zero")),
    Case(id="csv-200k-cell", kind="sizes", base=GPU, attack=csv_long_cell),
    Case(id="csv-sparse-over-bound", kind="sizes", base=GPU, attack=csv_sparse_over_bound),
    Case(id="log-over-size-bound", kind="sizes", base=CPU, attack=log_over_bound),
    Case(id="log-mllog-lines-over-count-bound", kind="sizes", base=CPU, attack=log_over_line_count),
    Case(id="yaml-over-bound", kind="sizes", base=CPU, attack=yaml_over_bound),
    Case(id="json-over-bound", kind="sizes", base=CPU, attack=json_over_bound),
    Case(id="json-deep-nesting", kind="sizes", base=GPU, attack=json_deep_nesting),
    Case(id="json-huge-integer", kind="sizes", base=GPU, attack=json_huge_integer),
    Case(id="yaml-alias-bomb", kind="sizes", base=CPU, attack=yaml_alias_bomb),
    Case(
        id="device-members-int",
        kind="malformed",
        base=GPU,
        attack=power_json_edit(lambda d: first_device(d).__setitem__("members", 5)),
    ),
    Case(id="meter-int", kind="malformed", base=GPU, attack=power_json_edit(lambda d: d["meters"].__setitem__(0, 5))),
    Case(id="device-without-key", kind="malformed", base=GPU, attack=power_json_edit(_delete_key)),
    Case(
        id="device-key-int",
        kind="malformed",
        base=GPU,
        attack=power_json_edit(lambda d: first_device(d).__setitem__("key", 0)),
    ),
    Case(
        id="meters-string",
        kind="malformed",
        base=GPU,
        attack=power_json_edit(lambda d: d.__setitem__("meters", "nvml")),
    ),
    Case(
        id="devices-mapping",
        kind="malformed",
        base=GPU,
        attack=power_json_edit(lambda d: d["meters"][0].__setitem__("devices", {"key": "nvml:0"})),
    ),
    Case(id="csv-int", kind="malformed", base=GPU, attack=set_csv(5)),
    Case(id="power-json-list", kind="malformed", base=GPU, attack=power_json_edit(lambda d: [d])),
    Case(id="power-csv-text-in-number", kind="malformed", base=GPU, attack=power_csv_text_in_number),
    Case(id="power-csv-not-finite", kind="malformed", base=GPU, attack=power_csv_not_finite),
    Case(id="system-yaml-system", kind="markup", base=CPU, attack=yaml_field("system.yaml", "system")),
    Case(id="system-yaml-submitter", kind="markup", base=CPU, attack=yaml_field("system.yaml", "submitter")),
    Case(
        id="system-yaml-accelerator-model",
        kind="markup",
        base=GPU,
        attack=yaml_field("system.yaml", "layers", "hardware", "accelerator_model"),
    ),
    Case(
        id="system-yaml-cpu-model",
        kind="markup",
        base=CPU,
        attack=yaml_field("system.yaml", "layers", "hardware", "cpu_model", refused=False),
    ),
    Case(
        id="system-yaml-declared-notes",
        kind="markup",
        base=CPU,
        attack=yaml_field("system.yaml", "declared", "notes", refused=False),
    ),
    Case(id="submission-yaml-spec-id", kind="markup", base=CPU, attack=yaml_field("submission.yaml", "spec_id")),
    Case(
        id="submission-yaml-hyperparameter",
        kind="markup",
        base=CPU,
        attack=yaml_field("submission.yaml", "hyperparameters", "optimizer"),
    ),
    Case(
        id="submission-yaml-dataset-name",
        kind="markup",
        base=CPU,
        attack=yaml_field("submission.yaml", "dataset", "name", refused=False),
    ),
    Case(id="result-json-power-reason", kind="markup", base=CPU, attack=result_field("power", "reason")),
    Case(id="result-json-reason", kind="markup", base=CPU, attack=result_field("reason")),
    Case(id="file-name-newline", kind="markup", base=CPU, attack=file_named(f"notes\n{FORGED_LINE}\n.txt")),
    Case(id="file-name-escape", kind="markup", base=CPU, attack=file_named("notes\x1b[2J\x1b[31mred.txt")),
    Case(id="file-name-rlo", kind="markup", base=CPU, attack=file_named("notes\u202etxt.exe")),
    Case(id="file-name-not-utf8", kind="markup", base=GPU, attack=file_named_in_bytes(b"notes-\xff\xfe.txt")),
    Case(id="submitter-minus-formula", kind="markup", base=CPU, org="-1-1", attack=submitter_renamed),
    Case(id="world-size-8-on-2-cores", kind="scale", base=CPU, attack=world_size(8)),
)


# --- scoring a board --------------------------------------------------------------------------------------------

CLIRUN = Path(__file__).resolve().parent / "clirun.py"
COMMAND_TIMEOUT_S = 20.0
MEMORY_BYTES = 3 * 1024 * MIB
"""The address space of the process that scores a board: ten times what an honest board takes."""
HTML_FOLDER = "html"
COMMANDS: dict[str, list[str]] = {
    "validate-text": ["validate", "board", "--jobs", "1"],
    "validate-json": ["validate", "board", "--format", "json", "--jobs", "1"],
    "score-table": ["score", "board", "--jobs", "1"],
    "score-markdown": ["score", "board", "--format", "markdown", "--jobs", "1"],
    "score-csv": ["score", "board", "--format", "csv", "--jobs", "1"],
    "score-json": ["score", "board", "--format", "json", "--jobs", "1"],
    "score-html": ["score", "board", "--format", "html", "--out", HTML_FOLDER, "--jobs", "1"],
}
"""Every output of `validate` and `score`, run from the board's parent so that messages name `board/...`."""


@dataclass(frozen=True, kw_only=True)
class Output:
    """One command's exit status (None: it outran its time), standard output and error."""

    rc: int | None
    stdout: bytes
    stderr: bytes

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "backslashreplace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "backslashreplace")


@dataclass(frozen=True, kw_only=True)
class Scored:
    """A board and what every command made of it: outputs by command, the files score --format html wrote."""

    board: Board
    outputs: dict[str, Output]
    html: dict[str, bytes]
    problem: str | None = None
    """Why the scoring process itself did not finish (killed after its time, or died), None when it did."""

    def everything(self) -> dict[str, bytes]:
        """Every byte specbench wrote: each command's stdout and stderr, and each file of the html folder."""
        named = {f"{name} {stream}": data for name, out in self.outputs.items() for stream, data in
                 (("stdout", out.stdout), ("stderr", out.stderr))}  # fmt: skip
        return named | {f"{HTML_FOLDER}/{rel}": data for rel, data in self.html.items()}


def cli_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of a specbench process: this checkout's code, one thread, and `extra` (the canary)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **extra}
    env.pop("SPECBENCH_POWER_OWNER", None)
    return env


def score(board: Board, commands: dict[str, list[str]] = COMMANDS) -> Scored:
    """Run every command on the board in one process bounded in time and memory (tests/support/clirun.py)."""
    results = board.where / "results"
    results.mkdir()
    plan = results / "plan.json"
    plan.write_text(json.dumps({
        "folder": str(results), "timeout_s": COMMAND_TIMEOUT_S, "memory_bytes": MEMORY_BYTES, "commands": commands,
    }))  # fmt: skip
    limit = COMMAND_TIMEOUT_S * len(commands) + 60
    with subprocess.Popen(
        [sys.executable, str(CLIRUN), str(plan)], cwd=board.where, env=cli_env(board.env), start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    ) as proc:  # fmt: skip
        try:
            own, _ = proc.communicate(timeout=limit)
            problem = (
                None if proc.returncode == 0 else f"exit {proc.returncode}: {own.decode(errors='replace')[-3000:]}"
            )
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            problem = f"still ran after {limit} s"
    statuses = json.loads((results / "results.json").read_text()) if (results / "results.json").exists() else {}
    outputs = {
        name: Output(
            rc=statuses[name]["rc"],
            stdout=(results / f"{name}.out").read_bytes(),
            stderr=(results / f"{name}.err").read_bytes(),
        )
        for name in commands
        if name in statuses
    }
    html = board.where / HTML_FOLDER
    written = {p.relative_to(html).as_posix(): p.read_bytes() for p in sorted(html.rglob("*")) if p.is_file()}
    return Scored(board=board, outputs=outputs, html=written, problem=problem)
