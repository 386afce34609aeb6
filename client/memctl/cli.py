"""memctl entry point: argument parsing only; talking to the daemon lives in its own module."""

from __future__ import annotations

import argparse
import sys

from memctl import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memctl",
        description="Client for the memhub daemon (memhubd). "
        "Offline commands on a directory are available as `memhubd lint|types|...`.",
    )
    parser.add_argument("--version", action="version", version=f"memctl {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
