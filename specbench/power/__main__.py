"""`python -m specbench.power -- CMD`: the `specbench power` command without the rest of the CLI."""

from __future__ import annotations

from specbench.commands.power import main

if __name__ == "__main__":
    raise SystemExit(main())
