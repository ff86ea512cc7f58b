"""specbench.power's lazy names: the table behind __getattr__, the TYPE_CHECKING imports and __all__ agree.

All three are needed: __getattr__ imports a submodule on first use, type checkers read the
TYPE_CHECKING imports, and linters want a literal __all__. This test keeps them one list.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import specbench.power as power


def type_checking_imports() -> dict[str, str]:
    tree = ast.parse(Path(power.__file__).read_text())
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom) and item.module is not None
                names.update({alias.name: item.module for alias in item.names})
    return names


def test_every_lazy_name_is_imported_for_type_checkers_from_where_it_lives() -> None:
    assert type_checking_imports() == power._WHERE
    assert sorted(power.__all__) == sorted(power._WHERE)


def test_every_lazy_name_resolves_to_its_module_object() -> None:
    for name, module in power._WHERE.items():
        assert getattr(power, name) is getattr(importlib.import_module(module), name)
