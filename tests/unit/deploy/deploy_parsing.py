"""Readers for the deployment files, small enough to need no third-party parser:
Dockerfile instructions, .dockerignore matching, systemd unit directives, and the
block-style YAML subset that deploy/docker-compose.yml is written in."""

from __future__ import annotations

import json
import re
from typing import Any


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, rest = (pending + stripped).partition(" ")
        instructions.append((keyword.upper(), " ".join(rest.split())))
        pending = ""
    return instructions


def _ignore_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    index = 0
    pattern = pattern.strip("/")
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out, index = out + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            out, index = out + ".*", index + 2
        elif pattern[index] == "*":
            out, index = out + "[^/]*", index + 1
        elif pattern[index] == "?":
            out, index = out + "[^/]", index + 1
        elif pattern[index] == "[":
            end = pattern.index("]", index)
            out, index = out + pattern[index : end + 1], end + 1
        else:
            out, index = out + re.escape(pattern[index]), index + 1
    return re.compile(out)


def dockerignored(patterns: list[str], path: str) -> bool:
    """Whether the build context leaves out `path` (the last matching pattern decides;
    a pattern matching a directory covers everything below it)."""
    prefixes = ["/".join(path.split("/")[: n + 1]) for n in range(path.count("/") + 1)]
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _ignore_regex(pattern.removeprefix("!"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            ignored = not negated
    return ignored


def dockerignore_patterns(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def unit_directives(text: str) -> dict[str, dict[str, list[str]]]:
    """section -> key -> every value given (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            current = sections.setdefault(stripped.strip("[]"), {})
            continue
        assert current is not None, f"directive outside a section: {line!r}"
        key, _, value = stripped.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


# --------------------------------------------------------------------------- YAML subset


def _scalar(text: str) -> Any:
    if text.startswith(("[", '"')):
        return json.loads(text)
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def _lines(text: str) -> list[tuple[int, str]]:
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            found.append((len(line) - len(line.lstrip(" ")), stripped))
    return found


def _block(lines: list[tuple[int, str]], index: int, indent: int) -> tuple[Any, int]:
    if lines[index][1].startswith("- "):
        items = []
        while index < len(lines) and lines[index][0] == indent and lines[index][1].startswith("- "):
            items.append(_scalar(lines[index][1][2:].strip()))
            index += 1
        return items, index
    mapping: dict[str, Any] = {}
    while index < len(lines) and lines[index][0] == indent:
        key, _, rest = lines[index][1].partition(":")
        rest = rest.strip()
        index += 1
        if rest:
            mapping[key] = _scalar(rest)
        elif index < len(lines) and lines[index][0] > indent:
            mapping[key], index = _block(lines, index, lines[index][0])
        else:
            mapping[key] = None
    return mapping, index


def load_block_yaml(text: str) -> Any:
    """Block mappings, block sequences of scalars, quoted and plain scalars, JSON-style
    flow lists and whole-line comments: the YAML the compose file uses, nothing more."""
    lines = _lines(text)
    value, index = _block(lines, 0, lines[0][0])
    assert index == len(lines), f"unparsed YAML from line {lines[index]!r}"
    return value
