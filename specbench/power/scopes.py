"""Which devices of a trace measure a spec's power scope (`accelerator`, `node`, `wall`).

One table, used by the executor when it writes result.json and by the validator when it
recomputes the energy, so both count the same devices. A spec scope may be met by one of
several device scopes, in order of preference; the first one the trace has is used alone,
since scopes nest and are never added together.
"""

from __future__ import annotations

from collections.abc import Iterable

SPEC_SCOPE_DEVICES: dict[str, tuple[str, ...]] = {
    "accelerator": ("accelerator",),
    "node": ("platform", "module"),
    "wall": ("wall",),
}
"""node: RAPL psys (`platform`), else the Grace superchip modules (`module`: CPU, GPU and memory of
each superchip); wall: a meter at the power outlet (a PDU or power analyser's recorded trace)."""


def device_scopes(spec_scope: str, present: Iterable[str]) -> tuple[str, ...]:
    """The one device scope (as a 1-tuple) that measures `spec_scope` among the scopes `present`, or ()."""
    seen = set(present)
    for scope in SPEC_SCOPE_DEVICES[spec_scope]:
        if scope in seen:
            return (scope,)
    return ()
