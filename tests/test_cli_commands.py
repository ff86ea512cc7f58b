"""The CLI's subcommands, whose modules load only when their command is asked for."""

from __future__ import annotations

import importlib
import subprocess
import sys

from specbench.cli import COMMAND_MODULES, cli, main


def test_each_command_module_holds_the_command_of_its_name() -> None:
    for name, module in COMMAND_MODULES.items():
        assert importlib.import_module(f"specbench.commands.{module}").command.name == name


def test_help_lists_every_command(capsys) -> None:
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    for name in COMMAND_MODULES:
        assert f"\n  {name} " in listed
    assert cli.list_commands(None) == sorted(COMMAND_MODULES)  # type: ignore[arg-type]


def test_a_command_loads_only_its_own_module() -> None:
    probe = (
        "import sys\n"
        "from specbench.cli import main\n"
        "main(['import', 'mlperf', '--help'])\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('specbench.commands.'))\n"
        "print(loaded, 'tabulate' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['specbench.commands.import_'] False False"


def test_an_unknown_command_is_matched_against_every_command(capsys) -> None:
    assert main(["valdate"]) == 2
    assert "Did you mean 'validate'?" in capsys.readouterr().err


def test_the_cli_raises_cudas_hardware_queues_unless_the_environment_sets_them(monkeypatch) -> None:
    """32 queues, so that the image loader's and nvjpeg's streams do not share the training's
    (docs/data-path.md); a value the user set stays."""
    import os

    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    assert main(["--help"]) == 0
    assert os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] == "32"
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4")
    assert main(["--help"]) == 0
    assert os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] == "4"
