"""memhub's MCP door answers as memdsl 0.5.1's own MCP server does.

One real daemon serves copies of every conformance workspace; for each workspace a
token with every scope and role, granted that one workspace (so memdsl's
`memdsl://` resources apply), makes the calls recorded in `golden/mcp/` by
`regen_mcp_goldens.py`, in the recorded order (proposals change the review queue).
Answers are compared after removing only the additive fields and the deliberate
differences that docs/mcp-clients.md lists; everything else must be identical.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conformance.regen_mcp_goldens import (
    GOLDEN_MCP,
    WORKSPACE_GROUPS,
    load_golden,
    normalize,
)
from tests.integration.conftest import LiveDaemon, start_daemon

pytestmark = pytest.mark.anyio

KEYS = sorted(f"{p.parent.name}/{p.stem}" for p in GOLDEN_MCP.glob("*/*.json"))

# Fields memhub adds and memdsl's clients ignore (docs/mcp-clients.md, "Additive fields").
ADDITIVE_TOP = {"workspace", "hidden_by_access_policy", "source_problems"}
ADDITIVE_DIAGNOSTIC = {"column"}
ADDITIVE_PROPOSAL = {"proposer", "generation", "supersedes", "decided_by"}
ADDITIVE_FILE = {"status"}


# Texts that name memdsl's commands say memhub's instead (docs/mcp-clients.md, "Wording").
DELIBERATE_WORDING = (
    ("`memdsl review approve`", "`memctl review approve`"),
    ("via the memdsl review CLI", "via the memctl review CLI"),
    (
        "`memdsl review list <workspace>` then `memdsl review approve <workspace> ",
        "`memctl -w {workspace} review list` then `memctl -w {workspace} review approve ",
    ),
    ("Run `memdsl lint` on the workspace", "Run `memctl lint` on the workspace"),
)
# memdsl://status describes the server and the caller: memhub's own name, version and
# tools (memdsl's nine first), and the scopes of the calling token.
MEMDSL_TOOLS = [
    "memory_map",
    "memory_query",
    "memory_check",
    "memory_types",
    "memory_explain",
    "memory_list",
    "memory_lint",
    "memory_propose",
    "memory_review_list",
]


def reworded(value: Any, workspace: str) -> Any:
    if isinstance(value, str):
        for theirs, ours in DELIBERATE_WORDING:
            value = value.replace(theirs, ours.format(workspace=workspace))
        return value
    if isinstance(value, list):
        return [reworded(item, workspace) for item in value]
    if isinstance(value, dict):
        return {key: reworded(item, workspace) for key, item in value.items()}
    return value


def sorted_matched_terms(payload: Any) -> Any:
    """memdsl lists CONTEXT matched terms in set order, which varies between runs."""
    pack = payload.get("evidence_pack") if isinstance(payload, dict) else None
    if not isinstance(pack, dict) or not isinstance(pack.get("context"), list):
        return payload
    context = [{**item, "matched_terms": sorted(item["matched_terms"])} for item in pack["context"]]
    return {**payload, "evidence_pack": {**pack, "context": context}}


def server_fields(status: dict) -> dict:
    """memdsl://status with the server's own fields checked and set aside."""
    status = dict(status)
    assert status.pop("server") in ("memdsl", "memhub")
    status.pop("version")
    status.pop("scopes")
    assert status.pop("tools")[: len(MEMDSL_TOOLS)] == MEMDSL_TOOLS
    return status


def strip_additive(payload: Any) -> Any:
    if not isinstance(payload, dict):
        return payload
    out = {k: v for k, v in payload.items() if k not in ADDITIVE_TOP}
    if isinstance(out.get("diagnostics"), list):
        out["diagnostics"] = [
            {k: v for k, v in d.items() if k not in ADDITIVE_DIAGNOSTIC} for d in out["diagnostics"]
        ]
    if isinstance(out.get("files"), list):
        out["files"] = [
            {k: v for k, v in f.items() if k not in ADDITIVE_FILE} for f in out["files"]
        ]
    if isinstance(out.get("proposals"), list):
        out["proposals"] = [
            {k: v for k, v in p.items() if k not in ADDITIVE_PROPOSAL} for p in out["proposals"]
        ]
    return out


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("mcp-conformance")
    workspaces = {}
    for key in KEYS:
        group, name = key.split("/", 1)
        shutil.copytree(WORKSPACE_GROUPS[group] / name, root / "ws" / name)
        workspaces[name] = str(root / "ws" / name)
    with start_daemon(root, workspaces) as live:
        yield live


@asynccontextmanager
async def client_for(daemon: LiveDaemon, name: str, scopes: str = "all") -> AsyncIterator[Client]:
    """A client whose token sees every declaration of one workspace, with `scopes`."""
    label = f"{name}-" + scopes.replace(":", ".").replace(",", "_")
    secret = daemon.tokens.get(label) or daemon.add_token(
        label, scopes, roles=["*"], workspaces=[name]
    )
    headers = {"Authorization": f"Bearer {secret}"}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


async def answer(client: Client, call: dict, root: str) -> dict:
    if "resource" in call:
        result = await client.read_resource(call["resource"])
        return {"text": normalize(result.contents[0].text, root)}
    result = await client.call_tool(call["tool"], call["arguments"])
    text = result.content[0].text
    try:
        payload: Any = json.loads(text)
    except json.JSONDecodeError:
        payload = text
    return {"is_error": bool(result.is_error), "payload": normalize(payload, root)}


def comparable(call: dict, got: dict, workspace: str) -> tuple[Any, Any]:
    """(expected, actual) for one call, the documented differences removed from both."""
    if "resource" in call:
        expected, actual = call["text"], got["text"]
        try:
            expected, actual = json.loads(expected), json.loads(actual)
        except json.JSONDecodeError:
            return expected, actual
        if call["resource"] == "memdsl://status":
            expected, actual = server_fields(expected), server_fields(actual)
        expected = reworded(strip_additive(expected), workspace)
        return expected, strip_additive(actual)
    payload = reworded(sorted_matched_terms(strip_additive(call["payload"])), workspace)
    if call["is_error"]:
        # A tool error's text is the SDK's and the server's own; it must name the scope.
        scope = re.search(r"scope '([^']+)' is required", payload)
        assert got["is_error"] and scope and scope.group(1) in got["payload"], got
        return payload, payload
    expected = {"is_error": call["is_error"], "payload": payload}
    actual = {
        "is_error": got["is_error"],
        "payload": sorted_matched_terms(strip_additive(got["payload"])),
    }
    if call["tool"] == "memory_propose":
        actual["payload"] = without_supersede_hint(payload, actual["payload"])
    return expected, actual


def without_supersede_hint(expected: Any, actual: Any) -> Any:
    """A refused existing id: memhub adds one next action saying how to correct it."""
    codes = [e.get("code") for e in expected.get("errors", [])]
    if "duplicate_declaration_id" not in codes or not isinstance(actual, dict):
        return actual
    actions = list(actual.get("next_actions", []))
    assert len(actions) == 2 and "already exists" in actions[1], actions
    assert "supersedes" in actions[1], actions
    return {**actual, "next_actions": actions[:1]}


def label(call: dict) -> str:
    target = call.get("resource") or call["tool"]
    return f"{target} {json.dumps(call.get('arguments', {}), ensure_ascii=False)[:120]}"


@pytest.mark.parametrize("key", KEYS)
async def test_every_tool_and_resource_answers_as_memdsl(daemon: LiveDaemon, key: str) -> None:
    name = key.split("/", 1)[1]
    root = str(Path(daemon.workspaces[name]).parent)
    golden = load_golden(key)
    mismatches = []
    by_scopes: dict[str, list[dict]] = {}
    for call in golden["calls"]:
        by_scopes.setdefault(call.get("scopes", "all"), []).append(call)
    for scopes, calls in by_scopes.items():
        async with client_for(daemon, name, scopes) as client:
            for call in calls:
                got = await answer(client, call, root)
                expected, actual = comparable(call, got, name)
                if expected != actual:
                    mismatches.append((label(call), expected, actual))
    assert not mismatches, (
        "\n".join(
            f"{where}\n    " + "\n    ".join(differences(e, a)[:4])
            for where, e, a in mismatches[:10]
        )
        + f"\n{len(mismatches)} of {len(golden['calls'])} calls differ"
    )


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, one line per place (for a readable failure)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in list(expected) + [k for k in actual if k not in expected]:
            if key not in actual:
                out.append(f"{path}.{key}: missing (memdsl: {short(expected[key])})")
            elif key not in expected:
                out.append(f"{path}.{key}: extra ({short(actual[key])})")
            else:
                out += differences(expected[key], actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        out = []
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out += differences(e, a, f"{path}[{index}]")
        return out
    if expected != actual:
        return [f"{path}: memdsl {short(expected)} / memhub {short(actual)}"]
    return []


def short(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)[:300]


def test_every_field_the_comparison_ignores_is_documented_as_additive() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp-clients.md").read_text()
    section = docs.split("**Additive fields.**", 1)[1].split("**Wording", 1)[0]
    ignored = ADDITIVE_TOP | ADDITIVE_DIAGNOSTIC | ADDITIVE_PROPOSAL | ADDITIVE_FILE
    assert not [field for field in sorted(ignored) if f"`{field}`" not in section]
    for theirs, ours in DELIBERATE_WORDING:
        # Only texts naming memdsl's command line are reworded, each to memctl's.
        assert "memdsl " in theirs and "memctl " in ours and "memdsl" not in ours
