"""Interoperability with MLPerf Training: import published results as specbench submissions.

    from specbench.mlperf import import_results
    outcome = import_results("training_results_v4.0", "imported")   # ImportOutcome

The results tree is only read. Each system becomes an ORG/SYSTEM submission folder answering the
`mlperf-resnet50` spec, validated by the validator (MLPerf logs are judged by MLPerf's log rules)
and scored like any other submission. docs/mlperf-import.md describes the mapping.
"""

from __future__ import annotations

from specbench.mlperf.importer import ImportOutcome, SystemOutcome, import_results

__all__ = ["ImportOutcome", "SystemOutcome", "import_results"]
