"""The parameters a submission declares against those its spec's executor reads (SB-EQV-006).

A typo (`optimiser: sgd` beside `optimizer: sgd`) is logged and recorded like any other value, and
the run went on without it: the executor never read it. submission.yaml's hyperparameters (which the
log must carry, SB-EQV-004) and its settings of layers 6 and 7 are held to the executor's declared
names (specbench/spec/params.py). A spec without an executor, and a submission imported from MLPerf
results, declare what MLPerf logs, which no specbench executor reads: they are not checked.
"""

from __future__ import annotations

from typing import cast

from specbench.registry import did_you_mean
from specbench.spec.models import LayerName
from specbench.spec.params import EXECUTOR_PARAMS
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.system import SubmissionMeta
from specbench.validator.documents import Loaded
from specbench.validator.equivalence import SETTINGS_LAYERS, meta_layers
from specbench.validator.findings import Findings
from specbench.validator.values import show


def check_params(
    findings: Findings, meta: SubmissionMeta, meta_file: Loaded, spec: ResolvedSpec, imported: bool
) -> None:
    """Each declared hyperparameter and each setting of layers 6 and 7 is a name the executor reads (a setting may
    also be one the spec's rules name for its layer)."""
    executor = spec.spec.workload.executor
    if executor is None or imported or executor not in EXECUTOR_PARAMS:
        return
    declared = EXECUTOR_PARAMS.get(executor)
    known = declared.known()
    for name, value in meta.hyperparameters.items():
        if not declared.knows(name):
            findings.add(
                "SB-EQV-006",
                meta_file.file,
                f"expected hyperparameters the {executor} executor reads{did_you_mean(name, known)}, found "
                f"{name}: {show(value)}, which it does not read (the runs went without it)",
                **meta_file.locate("hyperparameters", name),
            )
    layers = meta_layers(meta)
    for layer in SETTINGS_LAYERS:
        ruled = spec.spec.rules.get(cast(LayerName, layer), {})
        settings = layers.get(layer)
        for name, value in settings.items() if isinstance(settings, dict) else ():
            if not declared.knows(name) and name not in ruled:
                findings.add(
                    "SB-EQV-006",
                    meta_file.file,
                    f"expected layer {layer} settings the {executor} executor has{did_you_mean(name, known)}, "
                    f"found {name}: {show(value)}, which it does not have",
                    **meta_file.locate("layers", layer, name),
                )
