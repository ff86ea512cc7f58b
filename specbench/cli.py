"""The `specbench` command line: a click group whose subcommands live in `specbench.commands`."""

from __future__ import annotations

import importlib
import sys
import traceback

import click

from specbench import __version__
from specbench.errors import EXIT_INTERNAL, EXIT_UNUSABLE, InputError, SpecbenchError

COMMAND_MODULES = (
    "specs",
    "show",
    "schema",
    "execute",
    "validate",
    "sign",
    "score",
    "roofline",
    "import_",
    "export",
    "data",
    "power",
)

EPILOG = """\b
Exit codes: 0 ok or compliant, 1 non-compliant, 2 unusable input or usage, 3 internal error (a bug).
Docs: docs/spec-reference.md (spec format), README.md (quick start)."""


@click.group(epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="specbench")
def cli() -> None:
    """Benchmark AI systems on performance and energy with schema-validated specs.

    Specs (YAML) fix the problem and the rules per layer; executors run them with power
    measurement; the validator judges submissions; scoring ranks them by Valid FLOPS/W.
    """


for _name in COMMAND_MODULES:
    _module = importlib.import_module(f"specbench.commands.{_name}")
    cli.add_command(_module.command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turning specbench errors into one-line messages and exit codes."""
    try:
        result = cli.main(args=argv, prog_name="specbench", standalone_mode=False)
    except InputError as err:
        for problem in err.problems:
            click.echo(f"error: {problem.render()}", err=True)
        return err.exit_code
    except SpecbenchError as err:
        click.echo(f"error: {err}", err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return EXIT_UNUSABLE if err.exit_code == 2 else err.exit_code
    except Exception:
        traceback.print_exc()
        click.echo(
            f"error: internal error in specbench (exit code {EXIT_INTERNAL}): this is a bug, not a verdict on the input",
            err=True,
        )
        return EXIT_INTERNAL
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
