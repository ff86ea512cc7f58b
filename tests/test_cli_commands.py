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


def test_execute_options_give_workers_the_same_arguments(tmp_path, monkeypatch) -> None:
    """to_argv: the run's own options, paths absolute, launch options left out; parsed again, the same options."""
    from pathlib import Path

    from specbench.commands.execute import command as execute
    from specbench.run.options import ExecuteOptions

    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yaml").write_text("id: x\n")
    argv = ["my.yaml", "-p", "smoke", "-l", "system", "--runs", "2", "-o", "acme/box", "-s", "a=1", "-s", "b=2,3"]
    argv += ["--data", "data", "--synthetic", "-d", "cpu", "-m", "none", "-i", "50", "--seed", "7"]
    argv += ["--nproc-per-node", "2", "--rdzv-id", "job"]
    options = ExecuteOptions.from_params(execute.make_context("execute", argv).params)
    assert options.torchrun.nproc_per_node == 2 and options.torchrun.several and options.slurm is None
    assert options.to_argv() == [
        str(tmp_path / "my.yaml"), "--profile", "smoke", "--out", str(tmp_path / "acme" / "box"), "--device", "cpu",
        "--power", "none", "--interval-ms", "50.0", "--level", "system", "--runs", "2", "--seed", "7",
        "--set", "a=1", "--set", "b=2,3", "--data", str(tmp_path / "data"), "--synthetic",
    ]  # fmt: skip
    again = ExecuteOptions.from_params(execute.make_context("execute", options.to_argv()).params)
    assert again.to_argv() == options.to_argv() and again.torchrun.nproc_per_node == 1
    default = ExecuteOptions.from_params(execute.make_context("execute", ["resnet50"]).params)
    assert default.to_argv() == [
        "resnet50", "--profile", "official", "--out", str(tmp_path / default.out), "--device", "auto",
        "--power", "auto", "--interval-ms", "100.0",
    ]  # fmt: skip
    assert default.out == Path("submissions") / "local" / default.out.name


def test_execute_launches_torchrun_with_the_workers_arguments(tmp_path, monkeypatch, capsys) -> None:
    import specbench.commands.execute as execute_module

    launched: list[list[str]] = []
    monkeypatch.setattr(execute_module.subprocess, "call", lambda command: launched.append(command) or 5)
    out = tmp_path / "acme" / "box"
    assert main(["execute", "resnet50", "-p", "smoke", "--nproc-per-node", "2", "-o", str(out), "--seed", "5"]) == 5
    (command,) = launched
    assert command == [
        sys.executable, "-m", "specbench.run.launch", "--nproc-per-node=2", "--nnodes=1", "--standalone",
        "-m", "specbench.cli", "execute", "resnet50", "--profile", "smoke", "--out", str(out), "--device", "auto",
        "--power", "auto", "--interval-ms", "100.0", "--seed", "5",
    ]  # fmt: skip
    assert capsys.readouterr().err == "launching: " + " ".join(command) + "\n"


def _leaf_commands():
    import click

    for name, module in COMMAND_MODULES.items():
        command = importlib.import_module(f"specbench.commands.{module}").command
        subcommands = command.commands.items() if isinstance(command, click.Group) else [("", command)]
        for sub, leaf in subcommands:
            yield f"{name} {sub}".strip(), leaf


def test_an_option_has_the_same_short_form_in_every_command() -> None:
    """A long option that several commands share has one short option everywhere; none clashes within a command."""
    import click

    shorts: dict[str, dict[str, list[str]]] = {}
    for name, command in _leaf_commands():
        given = [opt for param in command.params if isinstance(param, click.Option) for opt in param.opts]
        assert len(given) == len(set(given)), name
        for param in command.params:
            if isinstance(param, click.Option):
                for long in (opt for opt in param.opts if opt.startswith("--")):
                    shorts.setdefault(long, {})[name] = sorted(opt for opt in param.opts if not opt.startswith("--"))
    expected = {"--out": ["-o"], "--format": ["-f"], "--profile": ["-p"], "--level": ["-l"], "--spec": ["-S"]}
    expected |= {"--set": ["-s"], "--jobs": ["-j"], "--werror": ["-W"], "--allowed-signers": ["-a"]}
    expected |= {"--device": ["-d"], "--power": ["-m"], "--interval-ms": ["-i"], "--seed": []}
    expected |= {"--runs": [], "--data": [], "--devices": [], "--summary": []}
    shared = {long: by for long, by in shorts.items() if len(by) > 1}
    assert set(shared) <= set(expected), set(shared) - set(expected)
    for long, by in shorts.items():
        if long in expected:
            assert by == dict.fromkeys(by, expected[long]), long


def test_errors_map_to_exit_codes_in_one_place(monkeypatch, capsys) -> None:
    """A specbench error exits with its own code and one line; anything else is a bug: exit 3 with the traceback."""
    import specbench.commands.specs as specs
    from specbench.errors import EXIT_INTERNAL, EXIT_RUN_FAILED
    from specbench.run.request import RunCrashed

    def crash() -> None:
        raise RunCrashed("run 1 did not complete: out of device memory")

    monkeypatch.setattr(specs, "spec_rows", crash)
    assert main(["specs"]) == EXIT_RUN_FAILED == 4
    assert capsys.readouterr().err == "error: run 1 did not complete: out of device memory\n"

    def bug() -> None:
        raise KeyError("oops")

    monkeypatch.setattr(specs, "spec_rows", bug)
    assert main(["specs"]) == EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("this is a bug, not a verdict on the input\n")


def test_host_facts_are_read_once_and_name_the_default_folder() -> None:
    import socket

    from specbench.host import Host, host
    from specbench.run.options import default_out

    assert host() is host() and host().hostname == socket.gethostname()
    assert default_out().parts[:2] == ("submissions", "local") and default_out().name == host().safe_name
    odd = Host("a b/c", "Linux", "6", None, "", 1, None, "3.11")
    assert odd.safe_name == "a-b-c" and odd.cpu_name is None
    assert Host("", "Linux", "6", "", "x86_64", 1, None, "3.11").safe_name == "localhost"


def test_specs_says_which_specs_run_here_and_how(capsys) -> None:
    """The `runs` column: the executor (and smoke profile) of each spec specbench runs, `import` for the others."""
    assert main(["specs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3] == ""
    header, rows = lines[0].split(), {line.split()[0]: line for line in lines[2:-3]}
    assert header[:7] == ["id", "version", "kind", "metric", "target", "runs", "title"]
    runs = {spec: next(word for word in ("import", "+ smoke") if word in line) for spec, line in rows.items()}
    runnable = {"caraml-resnet50", "extreme-weather", "llm-gpt", "mlperf-resnet50", "resnet50"}
    assert {spec for spec, word in runs.items() if word == "+ smoke"} == runnable
    assert " mlperf-resnet50 + smoke " in rows["mlperf-resnet50"] and " import " in rows["mlperf-bert"]
    assert lines[-2:] == [
        "5 of 22 specs run here (runs: the executor), 5 of them with a smoke profile (the same code at a small scale, "
        "on a CPU, never ranked): specbench execute SPEC --profile smoke (docs/execute.md).",
        "The other 17 are MLPerf benchmarks whose published results are imported (runs: import): specbench import "
        "mlperf RESULTS_ROOT --out DIR.",
    ]
