"""Record what memdsl 0.5.1's own MCP server answers, as goldens for memhub's MCP door.

Run it with a Python that has memdsl 0.5.1 and the MCP SDK 1.x (memdsl's server
needs ``mcp<2``), from anywhere:

    python3 -m venv /tmp/memdsl-mcp
    /tmp/memdsl-mcp/bin/pip install memdsl==0.5.1 'mcp<2'
    /tmp/memdsl-mcp/bin/python tests/conformance/regen_mcp_goldens.py

It starts ``memdsl-mcp`` over stdio once per workspace, on a fresh COPY of the
workspace (proposals write a review queue into it), and calls every tool and reads
every resource through the SDK's client. Nothing under test imports memdsl or the
SDK 1.x: the test imports only the plain helpers at the top of this file (call
list, normalisation), so both sides are shaped the same way.

Goldens go to ``golden/mcp/<group>/<name>.json``: ``{"calls": [...]}`` where each
call is ``{"tool"|"resource", "arguments", "is_error", "payload"|"text"}``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GOLDEN_MCP = HERE / "golden" / "mcp"
CASES = HERE / "cases"
WORKSPACE_GROUPS = {"examples": REPO / "examples", "workspaces": HERE / "workspaces"}

# The `client` memdsl records on a proposal (MEMDSL_MCP_CLIENT); memhub records "mcp".
CLIENT_NAME = "mcp"

# Query and check cases per workspace kept in the goldens: the EvidencePacks themselves
# are compared case by case by test_query_conformance/test_check_conformance already.
# Up to this many plain cases and as many with filters, limits or exceptions.
CASES_PER_WORKSPACE = 3

PROPOSAL_ID = re.compile(r"p-\d{8}-\d{6}-[0-9a-f]{6}")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")

# Proposals made on the copy of each of these workspaces: (label, source).
PROPOSALS = {
    "examples/team-coding": [
        (
            "valid",
            "fact style.tabs_in_makefiles {\n"
            "  subject: Service.Tidewater\n"
            '  claim: "Makefiles in tidewater-api indent recipes with tabs."\n'
            '  evidence { source: "review thread" quote: "tabs, please" }\n'
            "}",
        ),
        ("missing_evidence", 'fact style.no_evidence { claim: "Nobody said so." }'),
        ("parse_error", 'fact style.broken { claim: "unterminated }'),
        ("empty", "   "),
        (
            "two_declarations",
            'fact a.one { claim: "one" evidence { quote: "one" } }\n'
            'fact a.two { claim: "two" evidence { quote: "two" } }',
        ),
        ("unknown_type", 'nonsense_type x.y { claim: "?" evidence { quote: "?" } }'),
        (
            "unresolved_subject",
            'fact x.unresolved { subject: Nobody.Here claim: "who?" evidence { quote: "who?" } }',
        ),
        (
            "duplicate_id",
            "decision queue.redis_streams {\n"
            "  subject: Service.Tidewater\n"
            '  decision: "Use Redis Streams for the shipment event queue."\n'
            "}",
        ),
        (
            "duplicate_id_with_evidence",
            "teamcode.project_rule git.no_force_push_main {\n"
            '  claim: "Never force-push main."\n'
            '  evidence { source: "chat" quote: "never force-push main" }\n'
            "}",
        ),
    ],
    "workspaces/retrieval": [
        ("valid", 'fact bakery.new_fact { claim: "The oven runs hot." evidence { quote: "hot" } }'),
        ("missing_evidence", 'fact bakery.unsourced { claim: "Bread is good." }'),
    ],
}


def workspace_keys() -> list[str]:
    keys = []
    for group, base in WORKSPACE_GROUPS.items():
        for child in sorted(base.iterdir()):
            if child.is_dir() and not child.name.startswith("."):
                keys.append(f"{group}/{child.name}")
    return keys


def _cases(name: str, key: str, extra_keys: tuple[str, ...]) -> list[dict]:
    all_cases = json.loads((CASES / name).read_text(encoding="utf-8"))
    mine = [case for case in all_cases if case["workspace"] == key]
    plain = [case for case in mine if not any(k in case for k in extra_keys)]
    filtered = [case for case in mine if any(k in case for k in extra_keys)]
    chosen = {id(case) for case in plain[:CASES_PER_WORKSPACE] + filtered[:CASES_PER_WORKSPACE]}
    return [case for case in mine if id(case) in chosen]


def query_arguments(case: dict) -> dict:
    return {k: case[k] for k in ("query", "kinds", "types", "subject", "limit") if k in case}


def check_arguments(case: dict) -> dict:
    keys = ("task", "candidate", "subject", "scope", "exceptions")
    return {k: case[k] for k in keys if k in case}


def read_calls(key: str, ids: list[str], types: list[str], subjects: list[str]) -> list[dict]:
    """The read-only tool calls and resource reads for one workspace.

    `ids`, `types` and `subjects` come from the workspace's own `memory_list`, so
    the same calls can be made against memhub from the recorded golden.
    """
    calls: list[dict] = [
        {"tool": "memory_map", "arguments": {}},
        {"tool": "memory_types", "arguments": {}},
        {"tool": "memory_lint", "arguments": {}},
        {"tool": "memory_list", "arguments": {}},
        {"tool": "memory_list", "arguments": {"include_inactive": True}},
        {"tool": "memory_list", "arguments": {"limit": 1}},
        {"tool": "memory_list", "arguments": {"limit": 0}},
    ]
    for memory_type in types[:2]:
        calls.append({"tool": "memory_list", "arguments": {"memory_type": memory_type}})
    if types:
        calls.append({"tool": "memory_list", "arguments": {"kind": types[-1]}})
    for subject in subjects[:1]:
        calls.append({"tool": "memory_list", "arguments": {"subject": subject}})
    for case in _cases("query_cases.json", key, ("types", "kinds", "subject", "limit")):
        calls.append({"tool": "memory_query", "arguments": query_arguments(case)})
    calls += [
        {"tool": "memory_query", "arguments": {"query": "   "}},
        {"tool": "memory_query", "arguments": {"query": "zzqx unknownword"}},
        {"tool": "memory_query", "arguments": {"query": "the", "limit": 500}},
    ]
    for case in _cases("check_cases.json", key, ("subject", "scope", "exceptions")):
        calls.append({"tool": "memory_check", "arguments": check_arguments(case)})
    calls += [
        {"tool": "memory_check", "arguments": {"task": "", "candidate": "x"}},
        {"tool": "memory_check", "arguments": {"task": "deploy", "candidate": "make deploy"}},
    ]
    for decl_id in ids[:3]:
        calls.append({"tool": "memory_explain", "arguments": {"id": decl_id}})
    if ids:
        calls.append({"tool": "memory_explain", "arguments": {"id": ids[0].split(":", 1)[-1]}})
    calls += [
        {"tool": "memory_explain", "arguments": {"id": "no.such.declaration"}},
        {"tool": "memory_explain", "arguments": {"id": "  "}},
        {"tool": "memory_review_list", "arguments": {}},
        {"tool": "memory_review_list", "arguments": {"status": "all", "limit": 500}},
        {"tool": "memory_review_list", "arguments": {"status": "someday"}},
        {"resource": "memdsl://status"},
        {"resource": "memdsl://map"},
        {"resource": "memdsl://types"},
        {"resource": "memdsl://files"},
        {"resource": "memdsl://file/0"},
        {"resource": "memdsl://file/999"},
    ]
    return calls


def file_calls(files: list[dict], work: Path) -> list[dict]:
    """Sources read by name: the first file, and every file with CR line ends.

    Not a non-ASCII name: the client percent-encodes it and memdsl 0.5.1 looks the
    encoded text up as it is (not_found), where memhub decodes it (docs/mcp-clients.md).
    """
    calls = []
    for index, item in enumerate(files):
        path = work / item["path"]
        if not path.name.isascii():
            continue
        if index == 0 or b"\r" in path.read_bytes():
            calls.append({"resource": f"memdsl://file/{path.name}"})
    return calls


# A server started with only this scope: refusals of the other scopes are tool errors.
NARROW_SCOPES = "read:summary"
NARROW_WORKSPACE = "examples/team-coding"


def narrow_calls() -> list[dict]:
    source = 'fact x.y { claim: "z" evidence { quote: "z" } }'
    return [
        {"tool": "memory_map", "arguments": {}, "scopes": NARROW_SCOPES},
        {"tool": "memory_query", "arguments": {"query": "deploy"}, "scopes": NARROW_SCOPES},
        {"tool": "memory_explain", "arguments": {"id": "x"}, "scopes": NARROW_SCOPES},
        {"tool": "memory_propose", "arguments": {"source": source}, "scopes": NARROW_SCOPES},
    ]


def write_calls(key: str) -> list[dict]:
    """Proposals on the copy, then the review queue they leave behind."""
    calls: list[dict] = []
    for label, source in PROPOSALS.get(key, []):
        arguments = {"source": source, "reason": f"conformance: {label}"}
        calls.append({"tool": "memory_propose", "arguments": arguments, "label": label})
    if calls:
        calls += [
            {"tool": "memory_review_list", "arguments": {}},
            {"tool": "memory_review_list", "arguments": {"status": "approved"}},
            {"tool": "memory_review_list", "arguments": {"status": "all", "limit": 1}},
            {"resource": "memdsl://status"},
        ]
    return calls


def normalize(value: Any, root: str) -> Any:
    """Machine-independent: `<root>/` cut from paths, proposal ids and times replaced."""
    prefix = root.rstrip("/") + "/"
    if isinstance(value, str):
        text = value.replace(prefix, "")
        text = PROPOSAL_ID.sub("<proposal-id>", text)
        return TIMESTAMP.sub("<time>", text)
    if isinstance(value, list):
        return [normalize(item, root) for item in value]
    if isinstance(value, dict):
        return {key: normalize(item, root) for key, item in value.items()}
    return value


def golden_path(key: str) -> Path:
    return GOLDEN_MCP / f"{key}.json"


def load_golden(key: str) -> dict:
    return json.loads(golden_path(key).read_text(encoding="utf-8"))


# ---- recording (needs memdsl and mcp<2) -------------------------------------------------


async def _answer(session: Any, call: dict) -> dict:
    if "resource" in call:
        result = await session.read_resource(call["resource"])
        return {"text": result.contents[0].text}
    result = await session.call_tool(call["tool"], call["arguments"])
    text = result.content[0].text
    try:
        payload: Any = json.loads(text)
    except json.JSONDecodeError:
        payload = text
    return {"is_error": bool(result.isError), "payload": payload}


def _server(name: str, work: Path, scopes: str = "") -> Any:
    from mcp import StdioServerParameters

    args = ["-m", "memdsl.mcp_server", "--workspace", name]
    if scopes:
        args += ["--scopes", scopes]
    return StdioServerParameters(
        command=sys.executable,
        args=args,
        cwd=str(work),
        env={"MEMDSL_MCP_CLIENT": CLIENT_NAME, "PATH": "/usr/bin:/bin"},
    )


async def record(key: str, work: Path) -> dict:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    group, name = key.split("/", 1)
    copy = work / name
    shutil.copytree(WORKSPACE_GROUPS[group] / name, copy)
    recorded = []
    server = _server(name, work)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listing = (await session.call_tool("memory_list", {"include_inactive": True})).content
        items = json.loads(listing[0].text).get("items", [])
        ids = [item["id"] for item in items]
        types = sorted({item["type"] for item in items})
        subjects = sorted({item["subject"] for item in items if item.get("subject")})
        files = json.loads((await session.read_resource("memdsl://files")).contents[0].text)
        calls = read_calls(key, ids, types, subjects) + file_calls(files["files"], work)
        for call in calls + write_calls(key):
            answer = await _answer(session, call)
            recorded.append({**call, **normalize(answer, str(work))})
    if key == NARROW_WORKSPACE:
        server = _server(name, work, NARROW_SCOPES)
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for call in narrow_calls():
                answer = await _answer(session, call)
                recorded.append({**call, **normalize(answer, str(work))})
    return {"workspace": key, "calls": recorded}


def main() -> int:
    import anyio

    keys = sys.argv[1:] or workspace_keys()
    for key in keys:
        with tempfile.TemporaryDirectory(prefix="memdsl-mcp-") as work:
            golden = anyio.run(record, key, Path(work).resolve())
        path = golden_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ",\n".join(json.dumps(call, ensure_ascii=False) for call in golden["calls"])
        path.write_text(
            '{"workspace": ' + json.dumps(key) + ', "calls": [\n' + lines + "\n]}\n",
            encoding="utf-8",
        )
        print(f"{key}: {len(golden['calls'])} calls -> {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
