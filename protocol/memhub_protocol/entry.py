"""The scripts' entry points (`memctl`, `memhubd`): Ctrl-C while a command's modules load
exits 130 without a traceback, as it does once the command runs."""

from __future__ import annotations

import importlib
import sys


def run_main(module: str) -> None:
    """Import `module` and exit with the status of its `main()`."""
    try:
        main = importlib.import_module(module).main
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    sys.exit(main())
