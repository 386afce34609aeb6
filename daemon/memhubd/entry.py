"""The `memhubd` script's entry point. Ctrl-C while the command's modules load exits
130 without a traceback, as it does once the command runs; this module imports
nothing else before it is ready to catch it."""

from __future__ import annotations

import sys


def run() -> None:
    try:
        from memhubd.cli import main
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    sys.exit(main())
