"""Recall through a real daemon: ingest of every fixture format, the same hits through
the JSON API, MCP and memctl, scopes, grants and reader roles that never leak a drawer,
soft delete, purge, taxonomy, status and wake-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memhubd.recall.store import CURRENT_VERSION
from tests.integration.conftest import LiveDaemon, copy_examples, memctl, start_daemon

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "recall"
TEAM, OTHER = "team-coding", "writing"
QUERY = "why do ledger totals drift by a cent on currency conversion"


def uploads() -> list[dict[str, str]]:
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix != ".png")
    return [{"name": str(p.relative_to(FIXTURES)), "content": p.read_text()} for p in files]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("recall")
    workspaces = copy_examples(root / "ws", [TEAM, OTHER])
    with start_daemon(root, workspaces) as live:
        with live.http(live.admin_token, timeout=60) as http:
            answer = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"files": uploads()})
            assert answer.status_code == 201, answer.text
            secret = {"content": "billing ledger secret: the cent drift budget is 4 cents"}
            answer = http.post(
                f"/v1/workspaces/{OTHER}/recall/ingest", json={**secret, "room": "ledger"}
            )
            assert answer.status_code == 201, answer.text
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def team_reader(daemon: LiveDaemon) -> str:
    return token(
        daemon, "team-reader", "read:summary,read:search", workspaces=[TEAM], roles=["dev"]
    )


def search_api(daemon: LiveDaemon, secret: str, query: str = QUERY, **body: Any) -> Any:
    with daemon.http(secret) as http:
        answer = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": query, **body})
    assert answer.status_code == 200, answer.text
    return answer.json()


@asynccontextmanager
async def mcp_client(daemon: LiveDaemon, secret: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http)) as c:
        yield c


def test_every_fixture_format_was_ingested(daemon: LiveDaemon) -> None:
    with daemon.http(daemon.admin_token) as http:
        status = http.get(f"/v1/workspaces/{TEAM}/recall/status").json()
    rooms = {r["room"]: r["drawer_count"] for r in status["rooms"]}
    # Rooms: the transcripts' project directories, else the source's directory.
    assert rooms == {"billing": 3, "chatgpt": 3, "deploys": 1, "ledger": 2, "notes": 5}
    assert status["store_schema_version"] == CURRENT_VERSION and status["deleted_count"] == 0


def test_a_hit_cites_its_source_and_position(daemon: LiveDaemon) -> None:
    top = search_api(daemon, team_reader(daemon))["hits"][0]
    assert top["room"] == "ledger" and top["source_kind"] == "codex"
    assert top["citation"].endswith(".jsonl (lines 3-9)")
    assert top["content"].startswith("> Why do the ledger totals drift by a cent")
    assert top["signals"]["bm25"]["rank"] == 1 and top["fused_score"] > 0


@pytest.mark.anyio
async def test_api_mcp_and_memctl_give_the_same_hits(daemon: LiveDaemon) -> None:
    secret = team_reader(daemon)
    api = [h["drawer_id"] for h in search_api(daemon, secret, limit=5)["hits"]]
    async with mcp_client(daemon, secret) as client:
        result = await client.call_tool("memory_search", {"query": QUERY, "top_k": 5})
    assert not result.is_error, result.content[0].text
    mcp = [h["drawer_id"] for h in json.loads(result.content[0].text)["results"]]
    code, out, err = memctl(
        daemon, secret, "-w", TEAM, "recall", "search", QUERY, "--limit", "5", "--json"
    )
    assert code == 0, err
    cli = [h["drawer_id"] for h in json.loads(out)["hits"]]
    assert api == mcp == cli and len(api) == 5


def test_a_token_without_write_recall_cannot_ingest(daemon: LiveDaemon) -> None:
    with daemon.http(team_reader(daemon)) as http:
        answer = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"content": "x y z"})
    assert answer.status_code == 403
    assert answer.json()["error"]["detail"]["required_scope"] == "write:recall"


def test_search_across_workspaces_never_reaches_an_ungranted_one(daemon: LiveDaemon) -> None:
    secret = team_reader(daemon)
    with daemon.http(secret) as http:
        everywhere = http.post("/v1/recall/search", json={"query": "ledger cent drift budget"})
        named = http.post(
            "/v1/recall/search", json={"query": "cent drift budget", "workspaces": [OTHER]}
        )
    assert everywhere.status_code == 200
    body = everywhere.json()
    assert body["workspaces"] == [TEAM]
    assert all(h["workspace"] == TEAM for h in body["hits"])
    assert all(h["tunnel_hints"] == [] for h in body["hits"])  # `writing` has a ledger room
    assert "4 cents" not in everywhere.text
    assert named.status_code == 404  # as a workspace that does not exist
    # The admin sees both, and the shared room is a tunnel.
    with daemon.http(daemon.admin_token) as http:
        admin = http.post("/v1/recall/search", json={"query": "ledger cent drift budget"}).json()
    ledger = [h for h in admin["hits"] if h["workspace"] == TEAM and h["room"] == "ledger"]
    assert ledger and ledger[0]["tunnel_hints"] == [OTHER]


def test_drawers_whose_readers_exclude_the_caller_never_show(daemon: LiveDaemon) -> None:
    writer = token(daemon, "recall-writer", "write:recall,read:search", workspaces=[TEAM])
    text = "payroll cutover happens on the quietest weekday of the quarter"
    with daemon.http(writer) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"content": text, "readers": ["finance"], "room": "payroll"},
        )
    assert answer.status_code == 201, answer.text
    drawer_id = answer.json()["sources"][0]["drawer_ids"][0]
    reader = team_reader(daemon)  # roles: dev
    hits = search_api(daemon, reader, "payroll cutover quietest weekday")["hits"]
    assert drawer_id not in [h["drawer_id"] for h in hits] and "payroll" not in str(hits)
    with daemon.http(reader) as http:
        assert http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer_id}").status_code == 404
        status = http.get(f"/v1/workspaces/{TEAM}/recall/status").json()
    assert "payroll" not in {r["room"] for r in status["rooms"]} and status["hidden_count"] == 1
    finance = token(daemon, "fin", "read:search", workspaces=[TEAM], roles=["finance"])
    hits = search_api(daemon, finance, "payroll cutover quietest weekday")["hits"]
    assert hits[0]["drawer_id"] == drawer_id and hits[0]["readers"] == ["finance"]


def test_soft_delete_hides_and_purge_removes(daemon: LiveDaemon) -> None:
    admin = daemon.admin_token
    text = "temporary note: the staging vault token rotates every 6 hours"
    with daemon.http(admin) as http:
        made = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"content": text}).json()
        drawer_id = made["sources"][0]["drawer_ids"][0]
        assert (
            search_api(daemon, admin, "staging vault token rotates")["hits"][0]["drawer_id"]
            == drawer_id
        )
        deleted = http.delete(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer_id}")
        assert deleted.status_code == 200 and deleted.json()["deleted"] is True
        hits = search_api(daemon, admin, "staging vault token rotates")["hits"]
        assert drawer_id not in [h["drawer_id"] for h in hits]
        assert http.get(f"/v1/workspaces/{TEAM}/recall/status").json()["deleted_count"] == 1
        again = http.delete(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer_id}")
        assert again.status_code == 404
        reader_purge = daemon.http(team_reader(daemon)).post(
            f"/v1/workspaces/{TEAM}/recall/purge", json={}
        )
        assert reader_purge.status_code == 403
        old = http.post(f"/v1/workspaces/{TEAM}/recall/purge", json={"before": "2020-01-01"})
        assert old.json()["purged"] == 0  # an ISO time is a time, not text
        purged = http.post(f"/v1/workspaces/{TEAM}/recall/purge", json={})
        assert purged.json()["purged"] == 1
        assert http.get(f"/v1/workspaces/{TEAM}/recall/status").json()["deleted_count"] == 0


@pytest.mark.anyio
async def test_mcp_ingest_answers_like_mempal(daemon: LiveDaemon) -> None:
    writer = token(daemon, "mcp-writer", "write:recall,read:search,read:summary", workspaces=[TEAM])
    content = "Decision: invoices are immutable once sent; corrections are credit notes."
    async with mcp_client(daemon, writer) as client:
        first = json.loads(
            (await client.call_tool("memory_ingest", {"content": content, "importance": 4}))
            .content[0]
            .text
        )
        again = json.loads(
            (await client.call_tool("memory_ingest", {"content": content})).content[0].text
        )
        wake = json.loads((await client.call_tool("memory_wake_up", {"limit": 1})).content[0].text)
        tax = await client.call_tool(
            "memory_taxonomy", {"action": "edit", "room": "invoices", "keywords": ["credit notes"]}
        )
    assert first["drawer_id"].startswith("drawer_team_coding_default_")
    assert first["lock_wait_ms"] is not None
    assert again["drawer_id"] == first["drawer_id"] and again["status"] == "unchanged"
    assert wake["drawers"][0]["drawer_id"] == first["drawer_id"]  # importance first
    assert "## Identity" in wake["text"]
    assert not tax.is_error
    entries = json.loads(tax.content[0].text)["entries"]
    invoices = {"room": "invoices", "display_name": None, "keywords": ["credit notes"]}
    assert {**invoices, "wing": TEAM} in entries


@pytest.mark.anyio
async def test_mcp_search_and_status_keep_mempals_fields(daemon: LiveDaemon) -> None:
    writer = token(daemon, "mcp-fields", "write:recall,read:search,read:summary", workspaces=[TEAM])
    blank = "A drawer stored with a blank source cites itself, as mempal's do."
    async with mcp_client(daemon, writer) as client:
        stored = json.loads(
            (await client.call_tool("memory_ingest", {"content": blank, "source": "  "}))
            .content[0]
            .text
        )
        dry = json.loads(
            (await client.call_tool("memory_ingest", {"content": "x y z", "dry_run": True}))
            .content[0]
            .text
        )
        found = json.loads(
            (await client.call_tool("memory_search", {"query": blank, "wing": TEAM, "top_k": 3}))
            .content[0]
            .text
        )
        status = json.loads((await client.call_tool("memory_recall_status", {})).content[0].text)
    assert "lock_wait_ms" not in dry  # no lock taken, as mempal leaves it out
    (hit,) = [r for r in found["results"] if r["drawer_id"] == stored["drawer_id"]]
    assert hit["wing"] == TEAM and hit["source_file"] == f"mempal://drawer/{hit['drawer_id']}"
    assert hit["citation"] == hit["source_file"]
    reason = f"explicit filters provided: {TEAM}"
    assert hit["route"] == {"wing": TEAM, "room": None, "confidence": 1.0, "reason": reason}
    assert any(
        s["wing"] == TEAM and s["room"] == hit["room"] and s["drawer_count"] >= 1
        for s in status["scopes"]
    )
    assert sum(s["drawer_count"] for s in status["scopes"]) == status["drawer_count"]
    assert "AAAK" in status["aaak_spec"] and status["memory_protocol"]


def test_memctl_ingests_a_directory_with_a_summary(daemon: LiveDaemon, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / ".git").mkdir(parents=True)
    (notes / ".git" / "config").write_text("[core]\n")
    (notes / "plan.md").write_text("# Plan\n\nShip the ledger export in July.\n")
    (notes / "logo.png").write_bytes(b"\x89PNG\x00\x00binary")
    writer = token(daemon, "cli-writer", "write:recall,read:search", workspaces=[TEAM])
    code, out, err = memctl(daemon, writer, "-w", TEAM, "recall", "ingest", str(notes))
    assert code == 0, err
    assert out.splitlines()[0] == (
        "dry_run=false files=1 chunks=1 duplicates=0 replaced=0 skipped=1 failed=0"
    )
    assert "skipped logo.png: binary file" in out
    code, out, err = memctl(daemon, writer, "-w", TEAM, "recall", "ingest", str(notes))
    assert code == 0 and "chunks=0 duplicates=1" in out
    code, out, _ = memctl(daemon, writer, "-w", TEAM, "recall", "search", "ledger export July")
    assert code == 0 and "source: plan.md (section Plan, chars 0-" in out


def test_memctl_ingest_again_with_an_importance_raises_the_stored_drawers(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    note = tmp_path / "rota.md"
    note.write_text("# Rota\n\nThe quarterly failover drill is owned by the storage team.\n")
    writer = token(daemon, "cli-importance", "write:recall,read:search", workspaces=[TEAM])

    def importance() -> int:
        found = search_api(daemon, writer, "quarterly failover drill storage", limit=1)
        return found["hits"][0]["importance"]

    assert memctl(daemon, writer, "-w", TEAM, "recall", "ingest", str(note))[0] == 0
    assert importance() == 0
    code, out, err = memctl(
        daemon, writer, "-w", TEAM, "recall", "ingest", "--importance", "5", str(note)
    )
    assert code == 0, err
    assert importance() == 5
    # Sent again without one, it keeps what it was given; over the API a null is the same
    assert memctl(daemon, writer, "-w", TEAM, "recall", "ingest", str(note))[0] == 0
    with daemon.http(writer) as http:
        # (memctl cites a file given itself by its name: the same source, nothing stored)
        body = {"files": [{"name": note.name, "content": note.read_text()}], "importance": None}
        assert http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json=body).status_code == 200
    assert importance() == 5


def test_pruning_the_audit_alone_removes_no_drawer_at_any_door(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    note = tmp_path / "withdrawn.md"
    note.write_text("# Withdrawn\n\nThe staging password rotation note, withdrawn.\n")
    writer = token(daemon, "cli-audit-pruner", "write:recall,read:search", workspaces=[TEAM])
    code, out, err = memctl(daemon, writer, "-w", TEAM, "--json", "recall", "ingest", str(note))
    assert code == 0, err
    (drawer,) = json.loads(out)["sources"][0]["drawer_ids"]
    assert memctl(daemon, writer, "-w", TEAM, "recall", "delete", drawer)[0] == 0
    # An admin prunes old audit entries over the API, naming no `before`
    with daemon.http(daemon.admin_token) as http:
        answer = http.post(f"/v1/workspaces/{TEAM}/recall/purge", json={"audit_before": 946684800})
    assert answer.status_code == 200, answer.text
    assert answer.json()["purged"] == 0
    # The drawer deleted on purpose stays deleted: ingesting its text again does not revive it
    code, out, err = memctl(daemon, writer, "-w", TEAM, "--json", "recall", "ingest", str(note))
    assert code == 0, err
    assert json.loads(out)["deleted"] == 1


def test_memctl_says_when_ingested_text_matches_a_deleted_drawer(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # Given a note ingested, then its drawer deleted on purpose
    note = tmp_path / "gone.md"
    note.write_text("# Gone\n\nThe pager rota moved to the ops wiki.\n")
    writer = token(daemon, "cli-deleter", "write:recall,read:search", workspaces=[TEAM])
    code, out, err = memctl(daemon, writer, "-w", TEAM, "--json", "recall", "ingest", str(note))
    assert code == 0, err
    first = json.loads(out)
    (drawer,) = first["sources"][0]["drawer_ids"]
    assert first["workspace"] == TEAM and first["schema_version"].startswith("memhub.recall")
    assert memctl(daemon, writer, "-w", TEAM, "recall", "delete", drawer)[0] == 0
    # When it is ingested again
    code, out, err = memctl(daemon, writer, "-w", TEAM, "recall", "ingest", str(note))
    # Then the summary says why nothing was stored, and the JSON counts it
    assert code == 0, err
    assert "1 chunk(s) match drawers deleted on purpose: not brought back" in out
    code, out, _ = memctl(daemon, writer, "-w", TEAM, "--json", "recall", "ingest", str(note))
    again = json.loads(out)
    assert (again["chunks"], again["deleted"]) == (0, 1)
    assert again["sources"][0]["deleted"] == 1


def test_memctl_ingest_fails_for_a_path_that_is_not_there(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # Given one note that exists and one path that does not (a typo)
    (tmp_path / "fax.md").write_text("# Fax\n\nRetire the fax gateway in May.\n")
    missing = tmp_path / "fxa.md"
    writer = token(daemon, "cli-typo", "write:recall,read:search", workspaces=[TEAM])
    # When both are ingested
    code, out, err = memctl(
        daemon, writer, "-w", TEAM, "recall", "ingest", str(tmp_path / "fax.md"), str(missing)
    )
    # Then the note is stored, the missing path is a failure, and memctl exits 1
    assert code == 1, err
    assert out.splitlines()[0] == (
        "dry_run=false files=1 chunks=1 duplicates=0 replaced=0 skipped=0 failed=1"
    )
    assert f"failed  {missing}: no such file or directory" in out


def test_memctl_ingests_stdin_as_a_file_is_read(daemon: LiveDaemon) -> None:
    writer = token(daemon, "cli-stdin", "write:recall,read:search", workspaces=[TEAM])

    def ingest(data: bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", writer]
            + ["-w", TEAM, "recall", "ingest", "-", "--source", "piped.txt"],
            input=data,
            capture_output=True,
            timeout=60,
            env=dict(os.environ),
        )

    # Given UTF-8 text on stdin, it is stored as it was written
    good = ingest("Renée moved the façade review to Thursday.\n".encode())
    assert good.returncode == 0, good.stderr
    assert b"chunks=1" in good.stdout
    # Given a text with one byte that is not UTF-8, it is text, the byte read as U+FFFD
    latin = ingest(b"Ren\xe9e moved the budget review to Friday, after the audit.\n")
    assert latin.returncode == 0, latin.stderr
    assert b"chunks=1" in latin.stdout
    # Given bytes mostly not UTF-8, the source is skipped as binary, and no traceback
    bad = ingest(b"\xff\xfe not text")
    assert bad.returncode == 0
    assert b"skipped piped.txt: binary file" in bad.stdout
    assert b"Traceback" not in bad.stderr


def test_get_search_takes_query_parameters_and_filters(daemon: LiveDaemon) -> None:
    with daemon.http(team_reader(daemon)) as http:
        answer = http.get(
            f"/v1/workspaces/{TEAM}/recall/search",
            params={"q": "migration invoices deploy", "source_kind": "slack", "limit": "3"},
        )
        bad = http.get(f"/v1/workspaces/{TEAM}/recall/search", params={"q": "x", "since": "soon"})
    assert answer.status_code == 200, answer.text
    hits = answer.json()["hits"]
    assert hits and {h["source_kind"] for h in hits} == {"slack"}
    assert bad.status_code == 422 and bad.json()["error"]["detail"]["field"] == "since"


def test_only_the_writer_or_a_reviewer_deletes_a_drawer(daemon: LiveDaemon) -> None:
    # given a note written by one agent, readable by the whole team
    alice = token(daemon, "alice-w", "write:recall,read:search", workspaces=[TEAM])
    bob = token(daemon, "bob-w", "write:recall,read:search", workspaces=[TEAM])
    reviewer = token(daemon, "rev-w", "review,write:recall", workspaces=[TEAM])
    base = f"/v1/workspaces/{TEAM}/recall"
    with daemon.http(alice) as http:
        made = http.post(f"{base}/ingest", json={"content": "alice: the canary runs at 5%"})
        first = made.json()["sources"][0]["drawer_ids"][0]
        made = http.post(f"{base}/ingest", json={"content": "alice: rollbacks need two people"})
        second = made.json()["sources"][0]["drawer_ids"][0]

    # when a teammate tries to delete it, it is refused; the writer and a reviewer may
    with daemon.http(bob) as http:
        refused = http.delete(f"{base}/drawers/{first}")
    with daemon.http(alice) as http:
        own = http.delete(f"{base}/drawers/{first}")
    with daemon.http(reviewer) as http:
        moderated = http.delete(f"{base}/drawers/{second}")

    # then
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["detail"]["required_scope"] == "review"
    assert own.status_code == 200 and moderated.status_code == 200


def open_files_under(directory: Path) -> list[str]:
    """Files of this process (the daemon runs in it) open under `directory`."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            found.append(target)
    return found


def test_a_removed_workspace_leaves_no_store_open_and_no_series(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    # Given a workspace added at run time, whose recall store and cowork inbox were used
    root = copy_examples(tmp_path / "ws", [OTHER])[OTHER]
    base = "/v1/workspaces/passing"
    with daemon.http(daemon.admin_token) as http:
        assert (
            http.post("/v1/workspaces", json={"name": "passing", "path": root}).status_code == 201
        )
        assert (
            http.post(f"{base}/recall/ingest", json={"content": "a passing note"}).status_code
            == 201
        )
        assert http.post(f"{base}/recall/search", json={"query": "passing"}).status_code == 200
        mate = token(daemon, "passing-mate", "read:summary", workspaces=["*"])
        pushed = http.post(f"{base}/cowork/push", json={"to": "passing-mate", "content": "hi"})
        assert pushed.status_code == 201, pushed.text
        assert mate
        held = [p for p in open_files_under(daemon.state_dir) if "passing" in p]
        assert held  # the stores are open while it is served
        # When it is removed
        assert http.delete(base).status_code == 200
        metrics = http.get("/metrics").text
    # Then none of its files is held open, and no metric series names it
    assert [p for p in open_files_under(daemon.state_dir) if "passing" in p] == []
    assert 'workspace="passing"' not in metrics


@pytest.mark.anyio
async def test_a_damaged_store_is_named_at_every_door_never_a_bare_internal_error(
    tmp_path: Path,
) -> None:
    # Given a daemon whose recall store and cowork inbox for one workspace are not SQLite
    workspaces = copy_examples(tmp_path / "ws", [OTHER])
    with start_daemon(tmp_path, workspaces) as live:
        for folder, suffix in (("recall", ".db"), ("cowork", ".sqlite")):
            damaged = live.state_dir / folder / f"{OTHER}{suffix}"
            damaged.parent.mkdir(parents=True, exist_ok=True)
            damaged.write_text("this is not a database, it is a note left here by mistake\n" * 50)
        base = f"/v1/workspaces/{OTHER}"
        # When it is asked for at the API and over MCP
        with live.http(live.admin_token) as http:
            recall = http.get(f"{base}/recall/status")
            cowork = http.get(f"{base}/cowork/status")
        async with mcp_client(live, live.admin_token) as client:
            result = await client.call_tool("memory_recall_status", {"workspace": OTHER})
    # Then each says which file cannot be used, and nothing else fails
    assert recall.status_code == 503, recall.text
    assert recall.json()["error"]["code"] == "workspace_unavailable"
    assert f"recall/{OTHER}.db: not a usable recall store" in recall.json()["error"]["message"]
    assert cowork.status_code == 503 and f"cowork/{OTHER}.sqlite" in cowork.text
    assert result.is_error and f"recall/{OTHER}.db: not a usable recall store" in (
        result.content[0].text
    )
    assert str(tmp_path) not in recall.text  # the state dir's path stays on the server


def test_removing_a_workspace_under_recall_traffic_answers_cleanly(tmp_path: Path) -> None:
    # Its store is closed on removal while requests may still run on it: each in-flight
    # one must finish or fail cleanly (closing an SQLite connection under a running
    # statement crashed the process)
    import collections
    import threading
    import time

    workspaces = copy_examples(tmp_path / "ws", [TEAM])
    extra = copy_examples(tmp_path / "ws2", [OTHER])[OTHER]
    with start_daemon(tmp_path, workspaces) as live:
        stop = threading.Event()
        codes: collections.Counter[int] = collections.Counter()

        def churn() -> None:
            with live.http(live.admin_token, timeout=30) as admin:
                while not stop.is_set():
                    admin.post("/v1/workspaces", json={"name": "churn", "path": extra})
                    time.sleep(0.05)
                    admin.delete("/v1/workspaces/churn")

        def ask(n: int) -> None:
            with live.http(live.admin_token, timeout=30) as http:
                while not stop.is_set():
                    if n % 2:
                        body = {"content": f"note {n} {time.monotonic()} about tone"}
                        answer = http.post("/v1/workspaces/churn/recall/ingest", json=body)
                    else:
                        answer = http.post(
                            "/v1/workspaces/churn/recall/search", json={"query": "tone"}
                        )
                    codes[answer.status_code] += 1

        threads = [threading.Thread(target=churn)]
        threads += [threading.Thread(target=ask, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(6)
        stop.set()
        for thread in threads:
            thread.join(30)
        with live.http(live.admin_token) as http:
            assert http.get("/healthz").status_code == 200  # still serving
    assert set(codes) <= {200, 201, 404, 503}, codes


def test_get_search_takes_mempals_top_k_and_refuses_unknown_parameters(
    daemon: LiveDaemon,
) -> None:
    path = f"/v1/workspaces/{TEAM}/recall/search"
    with daemon.http(team_reader(daemon)) as http:
        one = http.get(path, params={"q": QUERY, "top_k": 1})
        misspelt = http.get(path, params={"q": QUERY, "rooom": "ledger"})
    assert one.status_code == 200 and len(one.json()["hits"]) == 1
    assert misspelt.status_code == 422
    assert "unknown parameter(s): rooom" in misspelt.json()["error"]["message"]


@pytest.mark.anyio
async def test_wake_up_never_carries_whole_drawers(daemon: LiveDaemon) -> None:
    writer = token(daemon, "wake-long", "write:recall,read:summary", workspaces=[OTHER])
    long = " ".join(f"word{i}" for i in range(3000))  # about 26,000 characters
    with daemon.http(writer) as http:
        stored = http.post(
            f"/v1/workspaces/{OTHER}/recall/ingest",
            json={"content": long, "importance": 5, "room": "essays"},
        )
        assert stored.status_code == 201, stored.text
        wake = http.get(
            f"/v1/workspaces/{OTHER}/recall/wake-up", params={"limit": 1, "budget": 200}
        )
    assert wake.status_code == 200 and len(wake.content) < 3000, len(wake.content)
    drawer = wake.json()["drawers"][0]
    assert "content" not in drawer and drawer["summary"] == long[:200] + "..."
    async with mcp_client(daemon, writer) as client:
        result = await client.call_tool(
            "memory_wake_up", {"limit": 1, "budget": 200, "wing": OTHER}
        )
    assert len(result.content[0].text) < 3000 and "word2999" not in result.content[0].text


def test_memctl_refuses_two_files_it_would_cite_alike(daemon: LiveDaemon, tmp_path: Path) -> None:
    for channel in ("general", "random"):
        (tmp_path / "slack" / channel).mkdir(parents=True)
        (tmp_path / "slack" / channel / "README.md").write_text(f"# {channel}\n\nNotes.\n")
    writer = token(daemon, "cli-alike", "write:recall,read:search", workspaces=[TEAM])
    general, random = tmp_path / "slack/general", tmp_path / "slack/random"
    for paths in ((general, random), (general / "README.md", random / "README.md")):
        code, out, err = memctl(daemon, writer, "-w", TEAM, "recall", "ingest", *map(str, paths))
        assert (code, out) == (2, ""), err
        assert "would both be cited as 'README.md'" in err
        assert f"ingest {tmp_path / 'slack'} instead" in err
    # The same file named twice is one source, not a clash.
    code, out, err = memctl(
        daemon, writer, "-w", TEAM, "recall", "ingest", str(general), str(general / "README.md")
    )
    assert code == 0, err


def test_an_upload_of_two_files_of_one_name_is_refused(daemon: LiveDaemon) -> None:
    writer = token(daemon, "api-alike", "write:recall,read:search", workspaces=[TEAM])
    files = [
        {"name": "README.md", "content": "# One\n"},
        {"name": "README.md", "content": "# Two\n"},
    ]
    with daemon.http(writer) as http:
        refused = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"files": files})
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["message"] == (
            "two files named 'README.md': each needs a name of its own"
        )
        parts = [
            {"name": "long.md", "content": "# Long\n\nfirst half ", "upload": "u" * 8,
             "part": 0, "parts": 2},
            {"name": "long.md", "content": "second half\n", "upload": "u" * 8,
             "part": 1, "parts": 2},
        ]  # fmt: skip
        whole = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"files": parts})
        assert whole.status_code == 201, whole.text


def test_compress_takes_text_as_long_as_a_query_and_no_longer(daemon: LiveDaemon) -> None:
    reader = token(daemon, "compress-reader", "read:summary", workspaces=[TEAM])
    sentence = "Kai recommended Clerk over Auth0 based on pricing. "
    with daemon.http(reader) as http:
        within = http.post("/v1/recall/compress", json={"text": sentence * 1200})  # 61,200
        over = http.post("/v1/recall/compress", json={"text": sentence * 1300})  # 66,300
    assert within.status_code == 200, within.text
    assert over.status_code == 413 and over.json()["error"]["detail"] == {"field": "text"}
    assert "longer than 65536 characters" in over.json()["error"]["message"]


def test_a_comma_separates_filter_names_alike_at_get_and_post(daemon: LiveDaemon) -> None:
    writer = token(daemon, "comma-writer", "write:recall,read:search", workspaces=[TEAM])
    with daemon.http(writer) as http:
        for room in ("cranes", "herons"):
            stored = http.post(
                f"/v1/workspaces/{TEAM}/recall/ingest",
                json={"content": f"the {room} nest by the weir in spring", "room": room},
            )
            assert stored.status_code == 201, stored.text
        path = f"/v1/workspaces/{TEAM}/recall/search"
        answers = [
            http.get(path, params={"q": "nest weir", "room": "cranes,herons"}),
            http.get(path, params=[("q", "nest weir"), ("room", "cranes"), ("room", "herons")]),
            http.post(path, json={"query": "nest weir", "room": "cranes,herons"}),
            http.post(path, json={"query": "nest weir", "room": ["cranes,herons"]}),
            http.post(path, json={"query": "nest weir", "room": ["cranes", "herons"]}),
        ]
    rooms = [sorted({h["room"] for h in a.json()["hits"]}) for a in answers]
    assert rooms == [["cranes", "herons"]] * 5, [a.text[:200] for a in answers]


def test_memctl_takes_source_kinds_comma_separated_or_repeated(daemon: LiveDaemon) -> None:
    reader = token(daemon, "kinds-reader", "read:search", workspaces=[TEAM])
    base = ("-w", TEAM, "recall", "search", "ledger", "--json")
    together = memctl(daemon, reader, *base, "--source-kind", "markdown,manual")
    apart = memctl(daemon, reader, *base, "--source-kind", "markdown", "--source-kind", "manual")
    wrong = memctl(daemon, reader, *base, "--source-kind", "markdown,pdf")
    assert together[0] == apart[0] == 0, together[2] + apart[2]
    kinds = {h["source_kind"] for h in json.loads(together[1])["hits"]}
    assert kinds <= {"markdown", "manual"}
    assert json.loads(together[1])["hits"] == json.loads(apart[1])["hits"]
    assert wrong[0] == 2 and "invalid kind 'pdf'" in wrong[2]


def test_a_window_that_holds_nothing_and_a_time_given_twice_are_refused(
    daemon: LiveDaemon,
) -> None:
    path = f"/v1/workspaces/{TEAM}/recall/search"
    with daemon.http(team_reader(daemon)) as http:
        twice = http.get(path, params=[("q", QUERY), ("since", "2099-01-01"), ("since", "2000")])
        backwards = http.get(
            path, params={"q": QUERY, "since": "2026-01-01", "until": "2025-01-01"}
        )
        empty = http.post(path, json={"query": QUERY, "since": 1000, "until": 1000})
        window = http.post(path, json={"query": QUERY, "since": 1000, "until": 1001})
    assert twice.status_code == 422
    assert twice.json()["error"]["message"] == "'since' is given more than once"
    for refused in (backwards, empty):
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["message"] == "'since' must be before 'until'"
    assert window.status_code == 200


def test_a_query_given_twice_is_refused_not_the_last_one_searched(daemon: LiveDaemon) -> None:
    path = f"/v1/workspaces/{TEAM}/recall/search"
    with daemon.http(team_reader(daemon)) as http:
        twice = http.get(path, params=[("q", QUERY), ("q", "something else")])
        both = http.get(path, params=[("q", QUERY), ("query", "something else")])
        once = http.get(path, params={"query": QUERY})
    for refused in (twice, both):
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["detail"]["field"] == "q"
    assert once.status_code == 200
