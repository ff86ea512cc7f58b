"""The fuzzer's families of issue 29, and their operators on names, precision, variant and level: unknown and
look-alike names, hidden precision, relabelled variant and level. The scale fabrications (power, batch,
time) are in fuzzscale, wrongly typed fields and shared evidence in fuzzevidence.

Each operator edits every file that states what it changes, as a careful cheater would, and returns its
label (fuzzedit: CONTRADICTS, CONSISTENT or EITHER), or None where it does not apply.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specbench.physics import lookup
from specbench.scoring.fuzzedit import (
    CONSISTENT,
    CONTRADICTS,
    EITHER,
    Target,
    get_path,
    read_events,
    read_json,
    read_yaml,
    relabel_events,
    rename_identity,
    set_path,
    write_events,
    write_json,
    write_yaml,
)
from specbench.scoring.fuzzevidence import (
    op_shared_copy,
    op_shared_power,
    op_shared_run,
    op_typed_field,
)
from specbench.scoring.fuzzscale import (
    op_batch_relabel,
    op_time_compressed,
    op_uniform_power,
    relabel_batch,
    scale_power,
)

# names

UNLISTED_DEVICES = ("NVIDIA B200", "NVIDIA GB200", "NVIDIA B100", "NVIDIA H800", "NVIDIA H20")
"""Plausible NVIDIA parts the device table does not list (one it comes to list, by lookup, is skipped)."""

HOMOGLYPHS = {
    "A": "\u0410", "B": "\u0412", "C": "\u0421", "E": "\u0415", "H": "\u041d", "I": "\u0406", "K": "\u041a",
    "M": "\u041c", "N": "\u039d", "O": "\u041e", "P": "\u0420", "T": "\u0422", "V": "\u0474", "X": "\u0425",
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "o": "\u043e", "p": "\u0440", "s": "\u0455",
    "x": "\u0445", "y": "\u0443", "0": "\u041e", "1": "\u0406", "3": "\u0417",
}  # fmt: skip
"""Latin letters and digits and a Cyrillic or Greek letter drawn the same."""
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad")
CONTROL = ("\x07", "\x1b", "\x7f", "\t", "\x0b")


def lookalike(text: str, rng: random.Random, folder: bool = False) -> str:
    """`text` drawn the same but not equal: a homoglyph, an invisible or control character, or whitespace
    added, doubled or swapped for a no-break space. `folder`: nothing a folder name should not hold."""
    kinds = ["invisible", "trailing", "leading"]
    if any(ch in HOMOGLYPHS for ch in text):
        kinds += ["homoglyph"] * 3
    if " " in text:
        kinds += ["double", "nbsp"]
    if not folder:
        kinds.append("control")
    kind = rng.choice(kinds)
    if kind == "homoglyph":
        at = rng.choice([i for i, ch in enumerate(text) if ch in HOMOGLYPHS])
        return text[:at] + HOMOGLYPHS[text[at]] + text[at + 1 :]
    if kind in ("double", "nbsp"):
        at = rng.choice([i for i, ch in enumerate(text) if ch == " "])
        return text[:at] + ("  " if kind == "double" else "\u00a0") + text[at + 1 :]
    if kind == "trailing":
        return text + rng.choice((" ", "  ", "\u00a0", "\t" if not folder else " "))
    if kind == "leading":
        return rng.choice((" ", "\u00a0", "\u2003")) + text
    at = rng.randrange(1, len(text)) if len(text) > 1 else 1
    return text[:at] + rng.choice(INVISIBLE if kind == "invisible" else CONTROL) + text[at:]


def ranked_only(t: Target) -> str:
    """CONTRADICTS where the benchmark's profile is ranked; EITHER on an unranked (smoke) profile, where a part
    or precision the device table does not know is a warning: nothing is ranked by it."""
    resolved = t.spec_facts()
    return CONTRADICTS if resolved is None or resolved.ranked else EITHER


def set_device_model(t: Target, name: str) -> bool:
    """The accelerator model in system.yaml and in every power.json device that named the old one."""
    data = read_yaml(t.root / "system.yaml")
    hardware = get_path(data, ("layers", "hardware"))
    old = hardware.get("accelerator_model") if isinstance(hardware, dict) else None
    if not isinstance(old, str) or not hardware.get("accelerator_count"):
        return False
    hardware["accelerator_model"] = name
    write_yaml(t.root / "system.yaml", data)
    for path in t.power_jsons:
        trace = read_json(path)
        for meter in trace.get("meters", []):
            for device in meter.get("devices", []):
                if device.get("model") == old:
                    device["model"] = name
        write_json(path, trace)
    return True


def op_unknown_device(t: Target) -> str | None:
    """An unlisted part named in system.yaml and every power.json; half the time with the issue's claim on top
    (batch x k, power / k), which no device bound then limits."""
    names = [n for n in UNLISTED_DEVICES if lookup(n) is None]
    name = t.rng.choice(names) if names else None
    if name is None or not set_device_model(t, name):
        return None
    t.note = name
    factor = relabel_batch(t, t.rng.choice((2, 4, 20))) if t.rng.random() < 0.5 else None
    if factor is not None:
        scale_power(t, 1 / factor)
        t.note += f", batch x{factor:g}, power /{factor:g}"
    return ranked_only(t)


def op_lookalike_device(t: Target) -> str | None:
    model = get_path(read_yaml(t.root / "system.yaml"), ("layers", "hardware", "accelerator_model"))
    new = lookalike(model, t.rng) if isinstance(model, str) else None
    if new is None or not set_device_model(t, new):
        return None
    t.note = f"accelerator_model {new!r}"
    return CONTRADICTS


def _restate(t: Target, key: str, value: Any, result_key: str | None = None) -> None:
    """submission.yaml's `key` and each run's result.json `result_key` set to `value`."""
    meta = read_yaml(t.bench / "submission.yaml")
    meta[key] = value
    write_yaml(t.bench / "submission.yaml", meta)
    for run in t.runs:
        if result_key is not None and (run / "result.json").is_file():
            data = read_json(run / "result.json")
            if isinstance(data, dict) and result_key in data:
                data[result_key] = value
                write_json(run / "result.json", data)


def _set_model(t: Target, model: Any) -> bool:
    """The model hyperparameter in submission.yaml, each run's log and result.json; False where none is stated."""
    meta = read_yaml(t.bench / "submission.yaml")
    if "model" not in (meta.get("hyperparameters") or {}):
        return False
    meta["hyperparameters"]["model"] = model
    write_yaml(t.bench / "submission.yaml", meta)
    for run in t.runs:
        if (run / "log.txt").is_file():
            relabel_events(run, {"model": model})
        if (run / "result.json").is_file():
            data = read_json(run / "result.json")
            if set_path(data, ("hyperparameters", "model"), model):
                write_json(run / "result.json", data)
    return True


def op_lookalike_variant(t: Target) -> str | None:
    """The variant drawn like the real one, alone (it opens a group of its own) or with the model hyperparameter."""
    variant = read_yaml(t.bench / "submission.yaml").get("variant")
    if not isinstance(variant, str):
        return None
    new = lookalike(variant, t.rng)
    _restate(t, "variant", new)
    t.note = f"variant {new!r}"
    if t.rng.random() < 0.5 and _set_model(t, new):
        t.note += " and hyperparameters.model"
    return CONTRADICTS


def op_lookalike_level(t: Target) -> str | None:
    level = read_yaml(t.bench / "submission.yaml").get("level")
    if not isinstance(level, str):
        return None
    new = lookalike(level, t.rng)
    _restate(t, "level", new, "level")
    t.note = f"level {new!r}"
    return CONTRADICTS


def op_lookalike_profile(t: Target) -> str | None:
    profile = read_yaml(t.bench / "submission.yaml").get("profile")
    if not isinstance(profile, str):
        return None
    new = lookalike(profile, t.rng)
    _restate(t, "profile", new, "profile")
    t.note = f"profile {new!r}"
    return CONTRADICTS


def _move(t: Target, root: Path) -> None:
    t.bench, t.run = root / t.bench.name, root / t.bench.name / t.run.name
    t.root = root


def op_lookalike_identity(t: Target) -> str | None:
    """The submitter or the system drawn like the real one, in every file that states it and in its folder."""
    system = read_yaml(t.root / "system.yaml")
    submitter, name = system.get("submitter"), system.get("system")
    if not isinstance(submitter, str) or not isinstance(name, str):
        return None
    if t.rng.random() < 0.5:
        submitter = lookalike(submitter, t.rng, folder=True)
    else:
        name = lookalike(name, t.rng, folder=True)
    _move(t, rename_identity(t.root, submitter, name))
    t.note = f"submitter {submitter!r}, system {name!r}"
    return CONTRADICTS


# precision

PRECISIONS = ("bf16", "fp16", "tf32", "fp32")
UNKNOWN_PRECISIONS = ("bf16x", "fp8", "fp4", "int4", "mixed", "bfloat16 ", "")


def _precision_sites(t: Target) -> tuple[tuple[str, ...], str | None]:
    """Where submission.yaml states the precision (a hyperparameter, or a layer-7 choice) and its value."""
    meta = read_yaml(t.bench / "submission.yaml")
    for path in (("hyperparameters", "precision"), ("layers", "parallelism_precision", "precision")):
        value = get_path(meta, path)
        if isinstance(value, str):
            return path, value
    return (), None


def _set_precision(t: Target, value: Any, where: set[str]) -> None:
    """The precision set (None: removed) in submission.yaml, result.json (hyperparameters or settings), the log."""
    path, _ = _precision_sites(t)
    if "submission" in where:
        meta = read_yaml(t.bench / "submission.yaml")
        holder = get_path(meta, path[:-1])
        if value is None:
            holder.pop(path[-1], None)
        else:
            holder[path[-1]] = value
        write_yaml(t.bench / "submission.yaml", meta)
    for run in t.runs:
        if "result" in where and (run / "result.json").is_file():
            data = read_json(run / "result.json")
            for section in ("hyperparameters", "settings"):
                holder = data.get(section) if isinstance(data, dict) else None
                if isinstance(holder, dict) and "precision" in holder:
                    if value is None:
                        holder.pop("precision")
                    else:
                        holder["precision"] = value
            write_json(run / "result.json", data)
        if "log" in where and (run / "log.txt").is_file():
            events = read_events(run)
            events = [e for e in events if not (e.get("key") == "precision" and value is None)]
            for event in events:
                if event.get("key") == "precision":
                    event["value"] = value
            write_events(run, events)


def op_precision_removed(t: Target) -> str | None:
    """The precision removed from submission.yaml (kept in result.json and the log), or from every file:
    without it the peak check falls back on the device's highest rate."""
    if _precision_sites(t)[1] is None:
        return None
    everywhere = t.rng.random() < 0.5
    _set_precision(t, None, {"submission", "result", "log"} if everywhere else {"submission"})
    t.note = "removed from every file" if everywhere else "removed from submission.yaml"
    return ranked_only(t)


def op_precision_unknown(t: Target) -> str | None:
    if _precision_sites(t)[1] is None:
        return None
    value = t.rng.choice(UNKNOWN_PRECISIONS)
    _set_precision(t, value, {"submission", "result", "log"})
    t.note = f"precision {value!r} everywhere"
    return ranked_only(t)


def op_precision_disagrees(t: Target) -> str | None:
    """A listed precision in one file (submission.yaml, result.json or the log), the real one in the others."""
    current = _precision_sites(t)[1]
    if current is None:
        return None
    where = t.rng.choice(("submission", "result", "log"))
    value = t.rng.choice([p for p in PRECISIONS if p != current])
    _set_precision(t, value, {where})
    t.note = f"precision {value!r} in {where}, {current!r} elsewhere"
    return CONTRADICTS


# variant and level


def op_variant_relabel(t: Target) -> str | None:
    """Another variant of the spec (or one it does not have) named as the variant, as the model
    hyperparameter, or both with the log and result.json; the log's model size still says the real one."""
    current = read_yaml(t.bench / "submission.yaml").get("variant")
    resolved = t.spec_facts()
    variants = list(resolved.spec.workload.variants) if resolved is not None else []
    others = [v for v in variants if v != current] or ["ResNet-152", "13B"]
    new = t.rng.choice(others)
    mode = t.rng.choice(("everywhere", "variant", "model"))
    if mode != "variant" and not _set_model(t, new) and mode == "model":
        return None
    if mode != "model":
        _restate(t, "variant", new)
    t.note = f"{new!r} as {'variant and model' if mode == 'everywhere' else mode}"
    return CONTRADICTS


LEVELS = ("hardware", "system", "free", "cluster")


def op_level_relabel(t: Target) -> str | None:
    """Another level in submission.yaml, result.json and the log's division: a level the spec does not allow, or
    `hardware` with a
    hyperparameter off the spec's reference (and off its sweep and variants), contradicts; a wider level
    (free) is consistent."""
    current = read_yaml(t.bench / "submission.yaml").get("level")
    new = t.rng.choice([level for level in LEVELS if level != current])
    _restate(t, "level", new, "level")
    for run in t.runs:
        if (run / "log.txt").is_file():
            relabel_events(run, {"submission_division": "open" if new == "free" else "closed"})
    t.note = f"level {current!r} -> {new!r}"
    resolved = t.spec_facts()
    if resolved is None or new not in resolved.spec.allowed_levels:
        return CONTRADICTS
    if new == "free" or (new == "system" and current == "hardware"):
        return CONSISTENT
    declared = read_yaml(t.bench / "submission.yaml").get("hyperparameters") or {}
    spec = resolved.spec
    sweep = spec.throughput.sweep if spec.throughput is not None else {}
    variants = list(spec.workload.variants)
    off = [
        k
        for k, v in (spec.hyperparameters or {}).items()
        if declared.get(k) not in [v, *sweep.get(k, []), *(variants if k == "model" else [])]
    ]
    return CONTRADICTS if off else EITHER


FAMILIES: dict[str, tuple[Callable[[Target], str | None], ...]] = {
    "unknown-device": (op_unknown_device,),
    "look-alike": (
        op_lookalike_device,
        op_lookalike_variant,
        op_lookalike_level,
        op_lookalike_profile,
        op_lookalike_identity,
    ),
    "hidden-precision": (op_precision_removed, op_precision_unknown, op_precision_disagrees),
    "uniform-power": (op_uniform_power,),
    "relabelled-batch": (op_batch_relabel, op_time_compressed),
    "relabelled-variant": (op_variant_relabel,),
    "relabelled-level": (op_level_relabel,),
    "typed-fields": (op_typed_field,),
    "shared-evidence": (op_shared_copy, op_shared_run, op_shared_power),
}
"""The families of issue 29, each with its operators."""
