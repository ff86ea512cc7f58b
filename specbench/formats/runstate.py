"""state.json, the one definition: a run's status while it is written and after (docs/submission-format.md).

The run folder writer (specbench/run/runfolder.py) checks each state it writes against this model, and the
validator reads state.json with it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from specbench.spec.models import Strict, first_error


class RunState(Strict):
    """`state.json`; `format_version` may be left out, and fields beyond these are ignored.

    'incomplete' is what a run stopped by a signal writes; 'running' stays when the process was killed outright.
    `specbench execute` into the folder replaces either (docs/execute.md, interrupted and killed runs).
    """

    model_config = ConfigDict(extra="ignore", strict=True)
    format_version: Literal[1] | None = None
    status: Literal["running", "done", "incomplete"]
    pid: int | None = Field(default=None)
    started_at: str | None = None


def check_state(state: dict[str, Any], where: str) -> None:
    """Refuse (ValueError, a writer's bug) a state the validator would not read as one."""
    try:
        RunState.model_validate(state)
    except ValidationError as err:
        at, message = first_error(err)
        raise ValueError(f"{where}: state.json would not conform at {at or 'the top'}: {message}") from err
