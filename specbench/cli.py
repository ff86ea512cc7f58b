"""The `specbench` command line: a click group whose subcommands live in `specbench.commands`."""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from specbench import __version__
from specbench.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_UNUSABLE, InputError, SpecbenchError

COMMAND_MODULES = {
    "specs": "specs",
    "show": "show",
    "schema": "schema",
    "execute": "execute",
    "validate": "validate",
    "sign": "sign",
    "score": "score",
    "reproduce": "reproduce",
    "roofline": "roofline",
    "import": "import_",
    "export": "export",
    "data": "data",
    "power": "power",
}
"""Each subcommand's name and its module in `specbench.commands` (whose `command` it is)."""

EPILOG = """\b
Exit codes: 0 ok or compliant, 1 non-compliant, 2 unusable input or usage, 3 internal error (a bug),
4 a run crashed (execute), 130 interrupted.
Docs: docs/spec-reference.md (spec format), README.md (quick start)."""


class _Commands(click.Group):
    """The subcommands, each module imported when its command is asked for (a command needs only its own)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            module = importlib.import_module(f"specbench.commands.{COMMAND_MODULES[cmd_name]}")
            self.add_command(module.command, cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as err:  # suggest among every command, not only those loaded
            raise click.exceptions.NoSuchCommand(err.command_name, possibilities=COMMAND_MODULES, ctx=ctx) from None


@click.group(cls=_Commands, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="specbench")
def cli() -> None:
    """Benchmark AI systems on performance and energy with schema-validated specs.

    Specs (YAML) fix the problem and the rules per layer; executors run them with power
    measurement; the validator judges submissions; scoring ranks them by Valid FLOPS/W.
    """


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turning specbench errors into one-line messages and exit codes.

    Run as the program (`argv` None: the arguments are the process's own), the objects left when
    the command is done are frozen out of the cyclic garbage collector, whose last passes over them
    as the interpreter exits cost an import of a whole MLPerf round about 50 ms; they are still
    freed. Called with `argv` (in tests, in-process), it leaves the collector alone.

    Before CUDA starts, the GPU's hardware work queues are raised from CUDA's default 8 to its most, 32
    (unless the environment sets them): with 8, the streams of the image loader and of nvjpeg's hardware
    decoder share queues with the training's, and their small kernels wait behind whole training graphs
    (docs/data-path.md). The run's launches (power tool, ranks) inherit it.
    """
    os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")
    try:
        return _run(argv)
    finally:
        if argv is None:
            gc.freeze()


def _run(argv: list[str] | None) -> int:
    """The one mapping of errors to exit codes: a specbench error carries its own, anything else is a bug."""
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
        click.echo(f"aborted: interrupted (Ctrl-C) {_during(argv)}, before it finished", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as err:
        err.show()
        return EXIT_UNUSABLE if err.exit_code == 2 else err.exit_code
    except Exception:
        import traceback  # here: only an internal error needs it

        traceback.print_exc()
        click.echo(
            f"error: internal error in specbench (exit code {EXIT_INTERNAL}): this is a bug, not a verdict on the input",
            err=True,
        )
        return EXIT_INTERNAL
    return result if isinstance(result, int) else 0


def _during(argv: list[str] | None) -> str:
    """'during specbench COMMAND' for the command the arguments name, else 'during specbench'."""
    args = sys.argv[1:] if argv is None else argv
    name = next((arg for arg in args if arg in COMMAND_MODULES), None)
    return f"during specbench {name}" if name else "during specbench"


if __name__ == "__main__":
    sys.exit(main())
