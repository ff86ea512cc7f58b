"""Interoperability with MLPerf Training: published results in, specbench submissions out, and back.

    from specbench.mlperf import import_results
    outcome = import_results("training_results_v4.0", "imported")   # ImportOutcome
    from specbench.mlperf.export import export_submission
    export_submission("imported/tinycorp/tinybox_green", "mlperf/tinycorp")  # MLPerf's layout

The results tree is only read. Each system becomes an ORG/SYSTEM submission folder answering the
`mlperf-resnet50` spec, validated by the validator (MLPerf logs are judged by MLPerf's log rules,
specbench's stricter rules are warnings under MLPerf codes) and scored like any other submission,
with MLPerf's published time to train. docs/mlperf-import.md describes the mapping,
docs/mlperf-export.md the way back.
"""

from __future__ import annotations

from specbench.mlperf.importer import ImportOutcome, SystemOutcome, import_results

__all__ = ["ImportOutcome", "SystemOutcome", "import_results"]
