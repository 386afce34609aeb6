"""`memhubd serve` and `memhubd run-examples`: configuration in, a running daemon out.

Argument handling and the human-facing banner only; the server lives in server.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import anyio

from memhubd.runtime.config import ConfigError, config_from_args
from memhubd.runtime.state import StateFileError


def _serve(args: argparse.Namespace, extra_workspaces: dict[str, str] | None = None) -> int:
    from memhubd.runtime.logging import configure_logging
    from memhubd.server import print_banner, run_daemon

    try:
        if extra_workspaces and not getattr(args, "workspaces", None):
            args.workspaces = list(extra_workspaces.items())
        config = config_from_args(args)
    except ConfigError as error:
        print(f"memhubd: {error}", file=sys.stderr)
        return 2
    configure_logging(config.log_format, config.log_level)
    announce = extra_workspaces is not None or sys.stderr.isatty()

    def on_ready(info: object) -> None:
        if announce:
            print_banner(info)  # type: ignore[arg-type]

    try:
        return anyio.run(lambda: run_daemon(config, on_ready=on_ready))
    except (ConfigError, StateFileError) as error:
        print(f"memhubd: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"memhubd: cannot listen: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def cmd_serve(args: argparse.Namespace) -> int:
    return _serve(args)


def example_workspaces() -> dict[str, str]:
    """The bundled example workspaces (the repository's `examples/` folder)."""
    configured = os.environ.get("MEMHUB_EXAMPLES", "").strip()
    candidates = [Path(configured)] if configured else []
    candidates += [Path(__file__).resolve().parents[2] / "examples", Path.cwd() / "examples"]
    for root in candidates:
        if root.is_dir():
            return {
                child.name: str(child)
                for child in sorted(root.iterdir())
                if child.is_dir() and not child.name.startswith(".")
            }
    return {}


def cmd_run_examples(args: argparse.Namespace) -> int:
    workspaces = example_workspaces()
    if not workspaces:
        print("memhubd: the examples/ folder was not found (set MEMHUB_EXAMPLES)", file=sys.stderr)
        return 2
    return _serve(args, workspaces)
