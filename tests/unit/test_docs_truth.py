"""The user documents name everything the code serves: a mechanical check that cannot drift.

Every route of the route table (method, path, scope and query parameters) is a row of
docs/api.md; every MCP tool the server registers is named in docs/mcp-clients.md; every
memctl command, subcommand and option is in docs/memctl.md; every configuration key is in
docs/configuration.md. The lists come from the code itself (the route table, the MCP
server built offline, memctl's parser, the config checkers), so a new route, tool,
command or key fails here until it is documented. This test must not start a daemon or
touch the network.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import anyio
import pytest

from memctl.cli import build_parser
from memhub_protocol.routes import ROUTES
from memhubd.mcp.server import build_mcp_server
from memhubd.runtime import config
from memhubd.runtime.hub import Hub

DOCS = Path(__file__).resolve().parents[2] / "docs"
PLACEHOLDER = re.compile(r"\{[^}]*\}")
# memctl's options that every command shares; documented once under "Connecting".
GLOBAL_OPTIONS = {"-h", "--help", "--url", "--token", "-w", "--workspace", "--json", "--timeout"}


def read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def code_spans(text: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", text))


def api_rows() -> list[tuple[set[str], str, str]]:
    """(methods, path with `{}` placeholders, scope cell) of each row of api.md's tables."""
    rows = []
    for line in read("api.md").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[1].startswith("`/"):
            continue
        methods = {method.strip() for method in cells[0].split(",")}
        rows.append((methods, PLACEHOLDER.sub("{}", cells[1].strip("`")), cells[2]))
    return rows


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
def test_every_route_is_a_row_of_api_md_with_its_scope(route):
    path = PLACEHOLDER.sub("{}", route.path)
    rows = [row for row in api_rows() if route.method in row[0] and row[1] == path]
    assert rows, f"docs/api.md has no row for {route.method} {route.path} ({route.name})"
    scope = route.scope or "–"
    assert any(scope in cell for _methods, _path, cell in rows), (
        f"docs/api.md: {route.method} {route.path} does not say its scope {scope!r}"
    )


@pytest.mark.parametrize("route", [r for r in ROUTES if r.params], ids=lambda route: route.name)
def test_every_query_parameter_is_named_in_its_route_row(route):
    path = PLACEHOLDER.sub("{}", route.path)
    text = " ".join(
        line
        for line in read("api.md").splitlines()
        if line.startswith("|")
        and route.method in line.split("|")[1]
        and f"`{path}`" in PLACEHOLDER.sub("{}", line)
    )
    missing = [param.name for param in route.params if param.name not in text]
    assert not missing, f"docs/api.md: {route.method} {route.path} does not name {missing}"


def test_api_md_lists_no_route_the_table_lacks():
    served = {(route.method, PLACEHOLDER.sub("{}", route.path)) for route in ROUTES}
    for methods, path, _scope in api_rows():
        for method in methods:
            assert (method, path) in served | {("POST", "/mcp")}, (
                f"docs/api.md documents {method} {path}, which the route table does not serve"
            )


def served_tools() -> dict[str, list[str]]:
    """Each tool the MCP server registers, with its argument names."""
    server = build_mcp_server(Hub())

    async def listing() -> dict[str, list[str]]:
        return {
            tool.name: list((tool.input_schema or {}).get("properties", {}))
            for tool in await server.list_tools()
        }

    return anyio.run(listing)


def test_every_mcp_tool_is_named_in_mcp_clients_md():
    tools = list(served_tools())
    assert "memory_query" in tools and len(tools) > 9
    documented = code_spans(read("mcp-clients.md"))
    missing = [name for name in tools if name not in documented]
    assert not missing, f"docs/mcp-clients.md does not name these MCP tools: {missing}"


def test_every_mcp_tool_argument_is_in_its_row_of_mcp_clients_md():
    rows: dict[str, str] = {}  # the first row of each tool: the tool table's
    for line in read("mcp-clients.md").splitlines():
        if match := re.match(r"\s*\| `(memory_\w+)` \|", line):
            rows.setdefault(match.group(1), line)
    missing = [
        f"{tool}.{argument}"
        for tool, arguments in served_tools().items()
        for argument in arguments
        if argument not in ("workspace", "wing") and f"`{argument}`" not in rows.get(tool, "")
    ]
    assert not missing, f"docs/mcp-clients.md's tool table does not name: {missing}"


def memctl_commands() -> dict[str, list[str]]:
    """Each command path (`recall ingest`) and its own options."""
    found: dict[str, list[str]] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    options = [
                        option
                        for other in sub._actions
                        for option in other.option_strings
                        if option not in GLOBAL_OPTIONS
                    ]
                    found[f"{prefix}{name}"] = options
                    walk(sub, f"{prefix}{name} ")

    walk(build_parser(), "")
    return found


def test_every_memctl_command_and_option_is_in_memctl_md():
    commands = memctl_commands()
    assert "recall ingest" in commands and "completion" in commands
    text = read("memctl.md")
    spans = code_spans(text)
    missing = [
        command
        for command in commands
        if not any(span == command or span.startswith(command + " ") for span in spans)
    ]
    assert not missing, f"docs/memctl.md does not show these commands: {missing}"
    words = set(re.findall(r"(?<![\w-])(-{1,2}[a-z][\w-]*)", text))
    unlisted = sorted(
        f"{command} {option}"
        for command, options in commands.items()
        for option in options
        if option not in words
    )
    assert not unlisted, f"docs/memctl.md does not mention these options: {unlisted}"


def config_keys() -> list[str]:
    keys = list(config._TOP)
    for table, checks in config._TABLES.items():
        keys += [f"[{table}] {key}" for key in checks]
    return keys + ["[workspaces]", "[recall] watch"]  # watch: a workspace table's recall key


def test_every_config_key_is_in_configuration_md():
    text = read("configuration.md")
    sections = {"": text}
    for match in re.finditer(r"^### `\[([\w.]+)\]`$", text, re.MULTILINE):
        rest = text[match.end() :]
        following = re.search(r"^##", rest, re.MULTILINE)
        sections[match.group(1)] = rest[: following.start() if following else len(rest)]
    missing = []
    for key in config_keys():
        table, _, name = key.rpartition(" ")
        if not table and name.startswith("["):
            table, name = name, ""
        section = sections.get(table.strip("[]"), "") if table else text
        if name and f"`{name}`" not in section and f"{name} =" not in section:
            missing.append(key)
        if not name and table.strip("[]") not in sections:
            missing.append(key)
    assert not missing, f"docs/configuration.md does not describe these keys: {missing}"


def test_the_memory_bounds_in_operations_md_are_the_codes() -> None:
    from memhubd.index import workspace
    from memhubd.query import engine
    from memhubd.service import access, encoding

    mib = 1024 * 1024
    section = read("operations.md").split("## Memory", 1)[1].split("\n## ", 1)[0]
    rows = {
        cells[0]: (cells[1], cells[2])
        for line in section.splitlines()
        if line.startswith("| ")
        and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 3
    }
    assert rows["posting bitmaps"] == (f"{workspace.CACHE_BYTES // mib} MiB", "index")
    assert rows["MUST layers"] == (f"{engine.MUST_LAYER_BYTES // mib} MiB", "index")
    assert rows["the rules under one scope or subject"] == (
        f"{engine.CONSTRAINT_SLOTS_BYTES // mib} MiB",
        "index",
    )
    assert rows["declarations encoded as JSON and as text lines"] == (
        f"{encoding.PIECE_BYTES // mib} MiB and twice the declarations, per form",
        "workspace",
    )
    assert rows["MUST sections joined once, as JSON and as text"] == (
        f"{encoding.SECTION_BYTES // mib} MiB",
        "snapshot",
    )
    from memhubd.recall.embed import static_model
    from memhubd.recall.store import bm25

    assert rows["recall: the embedder's token ids of words and other segments"] == (
        f"{static_model.SEGMENT_CACHE_BYTES // mib} MiB"
        f" (at most {static_model.SEGMENT_CACHE:,} segments)",
        "embedder",
    )
    assert rows["recall: the tokens of query terms"] == (
        f"{bm25._TOKEN_CACHE_BYTES // mib} MiB (at most {bm25._TOKEN_CACHE:,} terms)",
        "workspace",
    )
    from memhubd.recall.store import sqlite as recall_sqlite

    for least, share in (
        (recall_sqlite.MIN_COMPACT, recall_sqlite.COMPACT_SHARE),
        (bm25.MIN_REBUILD, bm25.REBUILD_SHARE),
    ):
        assert (least, share) == (10_000, 0.25)
    assert rows[
        "recall: deleted and replaced drawers' rows in the vector cache and the BM25 index"
    ] == ("10,000 rows or a quarter of the rows held, whichever is more", "workspace")
    from memhubd import compiled
    from memhubd.check import patterns
    from memhubd.lint import declaration_checks

    for cached in (patterns.regex_error, patterns._bounded, declaration_checks.regex_error):
        assert cached.cache_info().maxsize == 4096  # type: ignore[attr-defined]
    assert rows["guard patterns, compiled"][0].startswith(
        f"4,096 patterns of at most {compiled.CACHED_PATTERN_CHARS:,} characters"
    )
    default = config.Limits().response_cache_bytes // mib
    assert rows["answers to queries"] == (f"`response_cache_bytes` ({default} MiB)", "daemon")
    assert f"at most {access.MAX_CUTS_PER_SNAPSHOT} a snapshot" in " ".join(section.split())


def test_the_recall_ingest_bounds_in_api_md_are_the_codes() -> None:
    from memhub_protocol.recall import MAX_CITATION, MAX_FILES_PER_REQUEST

    # The errors table's row of 422 bounds, and the ingest route's row
    rows = [line for line in read("api.md").splitlines() if line.startswith("| ")]
    bounds = next(row for row in rows if "over its fixed bound" in row and "| 422 |" in row)
    ingest = next(row for row in rows if "/recall/ingest`" in row)
    assert f"more than {MAX_FILES_PER_REQUEST:,} for a recall ingest's `files`" in bounds
    assert f"at most {MAX_FILES_PER_REQUEST:,} files a request" in ingest
    assert f"file `name` or `source` over {MAX_CITATION} characters" in bounds


def daemon_config_blocks() -> list[tuple[str, int, str]]:
    """(file, line, text) of each TOML block of the documents about the daemon's config."""
    blocks = []
    for name in ("configuration.md", "recall.md", "operations.md"):
        text = read(name)
        for found in re.finditer(r"```toml\n(.*?)```", text, re.S):
            blocks.append((name, text[: found.start()].count("\n") + 1, found.group(1)))
    return blocks


@pytest.mark.parametrize("block", daemon_config_blocks(), ids=lambda b: f"{b[0]}:{b[1]}")
def test_every_documented_daemon_config_block_loads(block, tmp_path: Path) -> None:
    name, line, text = block
    path = tmp_path / "memhubd.toml"
    path.write_text(text, encoding="utf-8")
    try:
        config.load_config(str(path), {"state_dir": str(tmp_path / "state")})
    except config.ConfigError as error:
        # A group an example names need not exist on the machine running the tests.
        assert "names no group on this system" in str(error), f"docs/{name}:{line}: {error}"


OFFLINE = ("lint", "types", "query", "map", "explain", "check", "eval compliance", "completion")


def test_every_offline_memhubd_command_and_option_is_in_operations_md():
    from memhubd.cli import build_parser as memhubd_parser

    found: dict[str, list[str]] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = [
                        option
                        for other in sub._actions
                        for option in other.option_strings
                        if option not in ("-h", "--help")
                    ]
                    walk(sub, f"{prefix}{name} ")

    walk(memhubd_parser(), "")
    text = read("operations.md")
    section = text[text.index("## Offline commands") :]
    section = section[: section.index("\n## ", 1)]
    words = set(re.findall(r"(?<![\w-])(-{1,2}[a-z][\w-]*)", section))
    missing = [c for c in OFFLINE if f"`memhubd {c}" not in section]
    unlisted = [f"{c} {o}" for c in OFFLINE for o in found[c] if o not in words]
    assert not missing and not unlisted, (missing, unlisted)
