"""`specbench show`: print a spec resolved at a profile and level."""

from __future__ import annotations

import io
import json
import sys

import click
from ruamel.yaml import YAML

from specbench.spec.loader import load_spec
from specbench.spec.resolve import check_profile, resolve
from specbench.spec.rules import LEVELS


def render(data: dict[str, object], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[attr-defined,assignment]
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


@click.command(name="show")
@click.argument("spec")
@click.option("--profile", "-p", default="official", show_default=True, help="Profile to apply (official, smoke, ...).")
@click.option(
    "--level", "-l", type=click.Choice(LEVELS), default=None, help="Benchmarking level [default: the spec's first]."
)
@click.option("--format", "-f", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
def command(spec: str, profile: str, level: str | None, fmt: str) -> None:
    """Print SPEC (a file or a built-in id) resolved at a profile and level.

    The output adds a `resolved` block: the profile, the level, whether results are
    ranked, the spec's sha256, and the rule that binds each parameter of each layer.
    A profile whose own hyperparameters break the spec's rules is refused, as `execute` refuses it.
    """
    resolved = resolve(load_spec(spec), profile, level)  # type: ignore[arg-type]
    check_profile(resolved)
    sys.stdout.write(render(resolved.as_dict(), fmt))
