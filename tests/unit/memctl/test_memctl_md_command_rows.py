"""docs/memctl.md's command table gives each command's own options in that command's
row: an option documented only in another command's row (or in another page) is not
found by someone reading the row of the command they run."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from memctl.cli import build_parser

MEMCTL_MD = Path(__file__).resolve().parents[3] / "docs" / "memctl.md"
# Shared by every command and documented once, under "Connecting".
GLOBAL_OPTIONS = {"-h", "--help", "--url", "--token", "-w", "--workspace", "--json", "--timeout"}


def commands() -> dict[str, list[tuple[str, ...]]]:
    """Each command path (`cowork drain`) and its own options, each as its spellings."""
    found: dict[str, list[tuple[str, ...]]] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = [
                        tuple(other.option_strings)
                        for other in sub._actions
                        if other.option_strings and not set(other.option_strings) & GLOBAL_OPTIONS
                    ]
                    walk(sub, f"{prefix}{name} ")

    walk(build_parser(), "")
    return found


def rows_of(command: str, table: list[str]) -> str:
    return " ".join(row for row in table if re.match(rf"\| `{re.escape(command)}[ `]", row))


def test_every_option_is_in_its_commands_row():
    table = [line for line in MEMCTL_MD.read_text("utf-8").splitlines() if line.startswith("| `")]
    found = commands()
    assert ("--max-bytes",) in found["cowork drain"]
    missing = []
    for command, options in found.items():
        row = rows_of(command, table)
        words = set(re.findall(r"(?<![\w-])(-{1,2}[a-z][\w-]*)", row))
        missing += [
            f"{command} {spellings[-1]}" for spellings in options if not words & set(spellings)
        ]
    assert not missing, f"docs/memctl.md: these options are not in their command's row: {missing}"


def test_the_mcp_row_says_what_each_option_of_mcp_does():
    table = [line for line in MEMCTL_MD.read_text("utf-8").splitlines() if line.startswith("| `")]
    row = rows_of("mcp", table)
    assert "takes only the connection options" not in row
    for option in ("--url", "--token", "-w", "--json", "--timeout"):
        assert f"`{option}`" in row, f"docs/memctl.md's mcp row does not say what {option} does"
