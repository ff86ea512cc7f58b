"""`python -m specbench ARGS`: the `specbench` command, where its script is not on PATH."""

from __future__ import annotations

from specbench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
