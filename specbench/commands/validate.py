"""`specbench validate`: judge submission folders before anything is scored."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from specbench.sshsig import load_allowed_signers
from specbench.validator import discover, exit_code, render_json, render_text, validate_many
from specbench.validator.model import Report
from specbench.validator.validate import available_cpus, classify


def expand(paths: tuple[str, ...]) -> list[str]:
    """Each PATH as given when it is a submission folder, else the ORG/SYSTEM folders found below it."""
    out: list[str] = []
    for path in paths:
        below = [] if classify(Path(path)) is not None else discover(path)
        if below:
            out.extend(str(p) for p in below)
        else:
            out.append(path)
    return out


@click.command(
    name="validate",
    epilog="\b\nFinding codes: docs/rules.md. Folder layout: docs/submission-format.md.\n"
    "Exit codes: 0 compliant, 1 non-compliant (errors, or warnings with --werror), 2 unusable input.",
)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--spec",
    "-S",
    default=None,
    help="A spec file (or built-in id) the submissions may name, besides the built-in specs.",
)
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--werror", "-W", is_flag=True, help="Treat warnings as errors (exit 1 when there are any).")
@click.option(
    "--summary/--full",
    default=False,
    help="Text report: counts by finding code, each with its first finding, then the verdict; or every finding "
    "with its hint  [default: --full]",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Validate in this many processes (submissions, or one submission's power traces)  [default: the CPUs available]",
)
@click.option(
    "--allowed-signers",
    "-a",
    type=click.Path(dir_okay=False),
    default=None,
    help="OpenSSH allowed_signers file (as git's gpg.ssh.allowedSignersFile): each submission's manifest.json "
    "must carry a valid signature (manifest.json.sig, `specbench sign`) by a key it lists.",
)
@click.option(
    "--devices",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A device facts table used instead of specbench/physics/devices.yaml (same format, each row with its "
    "sources; docs/devices.md): a device it lists is bounded and may be ranked.",
)
@click.pass_context
def command(
    ctx: click.Context,
    paths: tuple[str, ...],
    spec: str | None,
    fmt: str,
    werror: bool,
    summary: bool,
    jobs: int | None,
    allowed_signers: str | None,
    devices: Path | None,
) -> None:
    """Check every rule of each submission under PATH: files, hashes, the spec's rules, logs, power traces, runs.

    PATH is an ORG/SYSTEM folder (with system.yaml), one BENCHMARK folder inside it (with
    submission.yaml), or a folder holding such ORG/SYSTEM folders (searched three levels deep).
    Nothing in a submission is written or run. A signed manifest is verified against
    --allowed-signers; without it a signature is reported as not verified (a warning).
    """
    signers = None if allowed_signers is None else load_allowed_signers(allowed_signers)
    reports: list[Report] = validate_many(
        expand(paths), spec, jobs=jobs or available_cpus(), signers=signers, devices=devices
    )
    output = render_json(reports, werror) if fmt == "json" else render_text(reports, werror, summary)
    sys.stdout.write(output)
    ctx.exit(exit_code(reports, werror))
