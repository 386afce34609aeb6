"""The MCP fast path answers a `tools/call` with the bytes the SDK would have sent.

Two real daemons serve copies of the MCP conformance workspaces, one with
`mcp.fast_path` on (the default) and one with it off (every request through the SDK).
Every call recorded in the MCP goldens is made by the SDK client against the first,
its exact HTTP request recorded and replayed against the second; then the same call
is POSTed on the handshake-era wire to both. Status, content type and body must be
byte-identical. Refusals (auth, Origin, size, bad input) are compared the same way.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conformance.regen_mcp_goldens import GOLDEN_MCP, WORKSPACE_GROUPS, load_golden
from tests.integration.conftest import LiveDaemon, start_daemon

pytestmark = pytest.mark.anyio

KEYS = sorted(f"{p.parent.name}/{p.stem}" for p in GOLDEN_MCP.glob("*/*.json"))
LEGACY = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
# A proposal id is its creation time to the second and a random suffix, and answers
# carry creation times: the two daemons' calls may fall in different seconds.
PROPOSAL_ID = re.compile(rb"p-\d{8}-\d{6}-[0-9a-f]{6}")
TIMESTAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveDaemon, LiveDaemon]]:
    """(fast path on, fast path off) over identical copies of every golden workspace."""
    root = tmp_path_factory.mktemp("mcp-fast")
    daemons = []
    with _serving(root / "fast", True) as fast, _serving(root / "sdk", False) as sdk:
        daemons = [fast, sdk]
        yield daemons[0], daemons[1]


def _serving(root: Any, fast_path: bool) -> Any:
    workspaces = {}
    for key in KEYS:
        group, name = key.split("/", 1)
        shutil.copytree(WORKSPACE_GROUPS[group] / name, root / "ws" / name)
        workspaces[name] = str(root / "ws" / name)
    return start_daemon(root, workspaces, **{"mcp.fast_path": fast_path})


def token(daemon: LiveDaemon, workspace: str, scopes: str) -> str:
    label = f"{workspace}-" + scopes.replace(":", ".").replace(",", "_")
    return daemon.tokens.get(label) or daemon.add_token(
        label, scopes, roles=["*"], workspaces=[workspace]
    )


def wire(response: httpx.Response | httpx2.Response) -> tuple[int, str, bytes]:
    return response.status_code, response.headers.get("content-type", ""), response.content


class Recorder:
    """The SDK client's HTTP exchanges: each request as sent, each answer as received."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[httpx2.Request, tuple[int, str, bytes]]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        await response.aread()
        if b'"tools/call"' in response.request.content or b'"resources/read"' in (
            response.request.content
        ):
            self.exchanges.append((response.request, wire(response)))


async def sdk_call(client: Client, call: dict) -> None:
    if "resource" in call:
        await client.read_resource(call["resource"])
    else:
        await client.call_tool(call["tool"], call["arguments"])


def legacy_body(call: dict, request_id: int) -> dict:
    if "resource" in call:
        method, params = "resources/read", {"uri": call["resource"]}
    else:
        method, params = "tools/call", {"name": call["tool"], "arguments": call["arguments"]}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def post(daemon: LiveDaemon, secret: str, body: Any, **headers: str) -> tuple[int, str, bytes]:
    sent = {"authorization": f"Bearer {secret}", "accept": ACCEPT, **headers}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent.setdefault("content-type", "application/json")
    with httpx.Client(base_url=daemon.url, timeout=60) as http:
        return wire(http.post("/mcp", content=content, headers=sent))


@pytest.mark.parametrize("key", KEYS)
async def test_every_golden_call_answers_the_same_bytes_with_and_without_the_fast_path(
    pair: tuple[LiveDaemon, LiveDaemon], key: str
) -> None:
    fast, sdk = pair
    name = key.split("/", 1)[1]
    differences: list[tuple[str, dict, Any, Any]] = []
    by_scopes: dict[str, list[tuple[int, dict]]] = {}
    for index, call in enumerate(load_golden(key)["calls"]):
        by_scopes.setdefault(call.get("scopes", "all"), []).append((index, call))
    for scopes, calls in by_scopes.items():
        fast_secret, sdk_secret = token(fast, name, scopes), token(sdk, name, scopes)
        recorder = Recorder()
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {fast_secret}"},
            timeout=60,
            event_hooks={"response": [recorder.on_response]},
        )
        async with http, Client(streamable_http_client(f"{fast.url}/mcp", http_client=http)) as c:
            for index, call in calls:
                # Given the SDK client's own request (2026 wire) answered with the fast path,
                recorder.exchanges.clear()
                await sdk_call(c, call)
                assert recorder.exchanges, call
                request, fast_answer = recorder.exchanges[-1]
                # when the same request goes through the SDK alone,
                replayed = replay(sdk, request, sdk_secret)
                # then both answers are the same bytes, and so on the handshake-era wire.
                ours, theirs = same_root(fast, fast_answer), same_root(sdk, replayed)
                if ours != theirs:
                    differences.append(("2026", call, ours, theirs))
                if call.get("tool") == "memory_propose":
                    continue  # a second proposal would change what the next calls see
                body, version = legacy_body(call, index), {"mcp-protocol-version": LEGACY}
                old_fast = same_root(fast, post(fast, fast_secret, body, **version))
                old_sdk = same_root(sdk, post(sdk, sdk_secret, body, **version))
                if old_fast != old_sdk:
                    differences.append((LEGACY, call, old_fast, old_sdk))
    assert not differences, (
        "\n".join(
            f"{era} {call.get('tool') or call.get('resource')}: {_first_difference(a, b)}"
            for era, call, a, b in differences[:5]
        )
        + f"\n{len(differences)} differ"
    )


def same_root(daemon: LiveDaemon, answer: tuple[int, str, bytes]) -> tuple[int, str, bytes]:
    """The answer with the daemon's own copy of the workspaces named alike, and the
    random part of proposal ids blanked."""
    root = Path(next(iter(daemon.workspaces.values()))).parent
    body = answer[2].replace(f"/{root.parent.name}/ws/".encode(), b"/ws/")
    return (
        answer[0],
        answer[1],
        TIMESTAMP.sub(rb"<time>", PROPOSAL_ID.sub(rb"p-yyyymmdd-hhmmss-xxxxxx", body)),
    )


def _first_difference(a: tuple[int, str, bytes], b: tuple[int, str, bytes]) -> str:
    if a[:2] != b[:2]:
        return f"{a[:2]} != {b[:2]}"
    at = next((i for i, (x, y) in enumerate(zip(a[2], b[2], strict=False)) if x != y), None)
    at = min(len(a[2]), len(b[2])) if at is None else at
    return (
        f"at byte {at}: {a[2][max(0, at - 60) : at + 60]!r} != {b[2][max(0, at - 60) : at + 60]!r}"
    )


def replay(daemon: LiveDaemon, request: httpx2.Request, secret: str) -> tuple[int, str, bytes]:
    """`request` as the SDK client sent it, sent to `daemon` with `secret` instead."""
    # httpx recomputes the length and host for the replayed body.
    skip = ("authorization", "content-length", "host")
    headers = {k: v for k, v in request.headers.items() if k.lower() not in skip}
    headers["authorization"] = f"Bearer {secret}"
    with httpx.Client(timeout=60) as plain:
        return wire(plain.post(f"{daemon.url}/mcp", content=request.content, headers=headers))


REFUSAL_CASES = {
    "unknown tool": {"name": "memory_nonexistent", "arguments": {}},
    "bad argument type": {"name": "memory_query", "arguments": {"query": 5, "limit": "x"}},
    "missing argument": {"name": "memory_query", "arguments": {}},
    "arguments not an object": {"name": "memory_query", "arguments": [1]},
    "no name": {"arguments": {}},
    # orjson reads it as a float: the SDK clamps the int
    "an integer past 64 bits": {"name": "memory_list", "arguments": {"limit": 10**20}},
}


@pytest.mark.parametrize("case", sorted(REFUSAL_CASES))
@pytest.mark.parametrize("version", [LEGACY, None])
async def test_bad_calls_are_refused_as_the_sdk_refuses_them(
    pair: tuple[LiveDaemon, LiveDaemon], case: str, version: str | None
) -> None:
    fast, sdk = pair
    name = KEYS[0].split("/", 1)[1]
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": REFUSAL_CASES[case]}
    headers = {"mcp-protocol-version": version} if version else {}
    got = same_root(fast, post(fast, token(fast, name, "all"), body, **headers))
    assert got == same_root(sdk, post(sdk, token(sdk, name, "all"), body, **headers))
    assert got[0] in (200, 400), got


async def test_over_the_result_limit_is_refused_as_by_the_sdk(
    pair: tuple[LiveDaemon, LiveDaemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, sdk = pair
    name = KEYS[0].split("/", 1)[1]
    body = legacy_body({"tool": "memory_map", "arguments": {}}, 3)
    answers = []
    for daemon in (fast, sdk):
        from memhubd.mcp import server as mcp_server

        monkeypatch.setattr(mcp_server.MemhubMCP, "_result_limit", lambda self: 10)
        answers.append(post(daemon, token(daemon, name, "all"), body))
    assert answers[0] == answers[1]
    assert b"too_large" in answers[0][2] and b'"isError":false' in answers[0][2]


REFUSED_REQUESTS: dict[str, tuple[dict[str, str], Any]] = {
    "no token": ({"authorization": ""}, None),
    "a foreign origin": ({"origin": "http://evil.example"}, None),
    "a wrong token": ({"authorization": "Bearer nope"}, None),
    "no JSON accepted": ({"accept": "text/html"}, None),
    "a form body": ({"content-type": "application/x-www-form-urlencoded"}, None),
    "an unknown protocol version": ({"mcp-protocol-version": "1999-01-01"}, None),
    "a malformed body": ({}, b"{not json"),
    "a batch": ({}, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
    "a notification": ({}, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
}


@pytest.mark.parametrize("case", sorted(REFUSED_REQUESTS))
async def test_requests_the_fast_path_leaves_alone_are_answered_as_before(
    pair: tuple[LiveDaemon, LiveDaemon], case: str
) -> None:
    fast, sdk = pair
    name = KEYS[0].split("/", 1)[1]
    headers, body = REFUSED_REQUESTS[case]
    call = body if body is not None else legacy_body({"tool": "memory_map", "arguments": {}}, 1)
    answers = []
    for daemon in (fast, sdk):
        sent = {"mcp-protocol-version": LEGACY, **headers}
        if sent.get("authorization") == "":
            sent.pop("authorization")
            answers.append(_post_without_token(daemon, call, sent))
        else:
            answers.append(post(daemon, token(daemon, name, "all"), call, **sent))
    assert answers[0] == answers[1]
    assert answers[0][0] != 200 or case in ("a notification",)


def _post_without_token(daemon: LiveDaemon, body: Any, headers: dict[str, str]) -> Any:
    sent = {"accept": ACCEPT, "content-type": "application/json", **headers}
    with httpx.Client(base_url=daemon.url, timeout=60) as http:
        return wire(http.post("/mcp", content=json.dumps(body).encode(), headers=sent))


async def test_an_oversized_body_is_refused_as_by_the_sdk(
    pair: tuple[LiveDaemon, LiveDaemon],
) -> None:
    fast, sdk = pair
    name = KEYS[0].split("/", 1)[1]
    huge = {"query": "x" * (5 * 1024 * 1024)}
    body = legacy_body({"tool": "memory_query", "arguments": huge}, 1)
    answers = [post(d, token(d, name, "all"), body) for d in (fast, sdk)]
    assert answers[0] == answers[1]
    assert answers[0][0] == 413


async def test_the_fast_path_answers_both_eras_and_leaves_other_methods_to_the_sdk(
    pair: tuple[LiveDaemon, LiveDaemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhubd.mcp import fast as fast_module

    answered: list[str] = []
    original = fast_module.answer

    async def counting(*args: Any) -> Any:
        answered.extend(a.version for a in args if isinstance(a, fast_module.ToolCall))
        return await original(*args)

    monkeypatch.setattr(fast_module, "answer", counting)
    fast, sdk = pair
    name = KEYS[0].split("/", 1)[1]
    secret = token(fast, name, "all")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60)
    async with http, Client(streamable_http_client(f"{fast.url}/mcp", http_client=http)) as c:
        await c.call_tool("memory_map", {})
        await c.list_tools()
    post(fast, secret, legacy_body({"tool": "memory_map", "arguments": {}}, 1))
    post(sdk, token(sdk, name, "all"), legacy_body({"tool": "memory_map", "arguments": {}}, 1))
    assert answered == ["2026-07-28", "2025-03-26"]


def test_fast_path_refuses_an_sdk_without_the_internals_it_calls() -> None:
    """mount_mcp catches this and serves every call through the SDK's own path."""
    from memhubd.mcp.fast import ToolCallFastPath

    class NoInternals:
        _lowlevel_server = None

    with pytest.raises(AttributeError):
        ToolCallFastPath(NoInternals(), fallback=None, max_body_bytes=1024)  # type: ignore[arg-type]


QUERY_CALLS = [
    (key, index, call)
    for key in KEYS
    for index, call in enumerate(load_golden(key)["calls"])
    if call.get("tool") == "memory_query"
]


def handovers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts tools hand over to the fast path from now on (the daemons run in this
    process)."""
    from memhubd.mcp import kept

    handed: list[str] = []
    original = kept.Splice.hand_over

    def counting(self: Any, text: Any) -> str:
        handed.append(text)
        return original(self, text)

    monkeypatch.setattr(kept.Splice, "hand_over", counting)
    return handed


async def test_a_query_asked_again_is_answered_from_its_kept_text_with_the_same_bytes(
    pair: tuple[LiveDaemon, LiveDaemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given every golden query, asked three times on both wires of the fast path
    fast, sdk = pair
    handed = handovers(monkeypatch)
    differences = []
    for key, index, call in QUERY_CALLS:
        name = key.split("/", 1)[1]
        scopes = call.get("scopes", "all")
        fast_secret, sdk_secret = token(fast, name, scopes), token(sdk, name, scopes)
        for version in (LEGACY, MODERN):
            body, headers = query_request(call, index, version)
            expected = same_root(sdk, post(sdk, sdk_secret, body, **headers))
            for _attempt in range(3):
                got = same_root(fast, post(fast, fast_secret, body, **headers))
                if got != expected:
                    differences.append((key, index, version, _first_difference(got, expected)))
    # then every answer is the SDK's, and the long ones were spliced from kept texts
    assert not differences, differences[:3]
    assert len(handed) >= len(QUERY_CALLS)


MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def query_request(
    call: dict, request_id: int | str, version: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """(body, headers) of a golden `memory_query` call as `version`'s clients send it."""
    body = legacy_body(call, 0)
    body["id"] = request_id
    headers = {"mcp-protocol-version": version}
    if version == MODERN:
        headers |= {"mcp-method": "tools/call", "mcp-name": "memory_query"}
        body["params"]["_meta"] = MODERN_META
    return body, headers


def _long_query() -> tuple[str, int, dict]:
    """A golden query whose answer is long enough to be kept."""
    for key, index, call in QUERY_CALLS:
        if len(json.dumps(call.get("payload", ""))) > 4096 and not call.get("is_error"):
            return key, index, call
    raise AssertionError("no golden query has a long answer")


async def test_a_kept_text_over_the_result_limit_is_refused_as_by_the_sdk(
    pair: tuple[LiveDaemon, LiveDaemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a long answer kept by the fast daemon
    fast, sdk = pair
    key, index, call = _long_query()
    name = key.split("/", 1)[1]
    body = legacy_body(call, index)
    secrets_ = {d.url: token(d, name, call.get("scopes", "all")) for d in (fast, sdk)}
    sizes = {d.url: len(_text_of(post(d, secrets_[d.url], body)).encode()) for d in (fast, sdk)}
    # when the result limit falls below its size
    from memhubd.mcp import server as mcp_server

    monkeypatch.setattr(mcp_server.MemhubMCP, "_result_limit", lambda self: 1000)
    refused = {d.url: post(d, secrets_[d.url], body) for d in (fast, sdk)}
    # then it is refused with its real size, as the SDK's path refuses it (the two
    # daemons' copies of the workspace have paths of different lengths)
    payload = json.loads(_text_of(refused[fast.url]))
    assert payload["status"] == "too_large" and payload["size"] == sizes[fast.url]
    ours = refused[fast.url][2].replace(str(sizes[fast.url]).encode(), b"<size>")
    theirs = refused[sdk.url][2].replace(str(sizes[sdk.url]).encode(), b"<size>")
    assert (refused[fast.url][:2], ours) == (refused[sdk.url][:2], theirs)


def _text_of(answer: tuple[int, str, bytes]) -> str:
    text = json.loads(answer[2])["result"]["content"][0]["text"]
    assert isinstance(text, str)
    return text


async def test_a_kept_text_for_a_call_with_a_string_id_is_written_by_the_sdk_path(
    pair: tuple[LiveDaemon, LiveDaemon], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a long answer asked for with a string id, which no envelope takes
    handed = handovers(monkeypatch)
    key, _index, call = _long_query()
    name = key.split("/", 1)[1]
    for version in (LEGACY, MODERN):
        body, headers = query_request(call, "call-\u00e9", version)
        for _attempt in range(2):
            # then its kept text is put back and written as the SDK writes it
            answers = [
                same_root(d, post(d, token(d, name, call.get("scopes", "all")), body, **headers))
                for d in pair
            ]
            assert answers[0] == answers[1]
    assert handed
