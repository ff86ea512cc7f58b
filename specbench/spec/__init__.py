"""Spec and submission formats: pydantic models, rule kinds and safe loading. Imports no torch."""

from __future__ import annotations

from specbench.spec.loader import LoadedSpec, apply_profile, load_ruleset, load_spec, spec_digest
from specbench.spec.models import LAYER_NAMES, RuleSet, Spec
from specbench.spec.resolve import ResolvedSpec, effective_rules, resolve
from specbench.spec.rules import LEVELS, Verdict, evaluate
from specbench.spec.system import SubmissionMeta, SystemDescription

__all__ = [
    "LAYER_NAMES",
    "LEVELS",
    "LoadedSpec",
    "ResolvedSpec",
    "RuleSet",
    "Spec",
    "SubmissionMeta",
    "SystemDescription",
    "Verdict",
    "apply_profile",
    "effective_rules",
    "evaluate",
    "load_ruleset",
    "load_spec",
    "resolve",
    "spec_digest",
]
