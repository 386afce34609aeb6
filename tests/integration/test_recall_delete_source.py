"""Every drawer of one source soft-deleted at once through a real daemon, at each door:
the JSON API (`POST .../recall/sources/delete`), memctl (`recall delete --source`) and
MCP (`memory_delete {source}`), with a dry run, the writer's rule and usage errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, memctl, start_daemon
from tests.security.test_role_hiding import mcp_client

TEAM = "team-coding"
AGENT = "read:summary,read:search,write:recall"
BASE = f"/v1/workspaces/{TEAM}/recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("delete-source")
    with start_daemon(root, copy_examples(root / "ws", [TEAM])) as live:
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str = AGENT) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, workspaces=[TEAM])


def upload(daemon: LiveDaemon, secret: str, name: str, sections: int) -> list[str]:
    content = "".join(
        f"# Part {n}\n\nThe {name} part {n} says the key is K{n * 7919}Q.\n\n"
        for n in range(sections)
    )
    with daemon.http(secret) as http:
        answer = http.post(f"{BASE}/ingest", json={"files": [{"name": name, "content": content}]})
    assert answer.status_code == 201, answer.text
    return list(answer.json()["sources"][0]["drawer_ids"])


def live(daemon: LiveDaemon, drawer_id: str) -> bool:
    with daemon.http(daemon.admin_token) as http:
        return http.get(f"{BASE}/drawers/{drawer_id}").status_code == 200


def test_the_api_deletes_a_sources_drawers_after_a_dry_run(daemon: LiveDaemon) -> None:
    writer = token(daemon, "api-writer")
    drawers = upload(daemon, writer, "secrets/prod.env.md", 6)
    kept = upload(daemon, writer, "notes/kept.md", 1)
    assert len(drawers) == 6
    with daemon.http(writer) as http:
        dry = http.post(
            f"{BASE}/sources/delete", json={"source": "secrets/prod.env.md", "dry_run": True}
        )
        assert dry.status_code == 200, dry.text
        assert dry.json() == {
            "workspace": TEAM,
            "source": "secrets/prod.env.md",
            "deleted": 6,
            "drawer_ids": drawers,
            "dry_run": True,
        }
        assert all(live(daemon, d) for d in drawers)
        done = http.post(f"{BASE}/sources/delete", json={"source": "secrets/prod.env.md"})
        assert done.status_code == 200, done.text
        assert done.json() == {
            "workspace": TEAM,
            "source": "secrets/prod.env.md",
            "deleted": 6,
            "drawer_ids": drawers,
        }
        again = http.post(f"{BASE}/sources/delete", json={"source": "secrets/prod.env.md"})
        invalid = http.post(f"{BASE}/sources/delete", json={"dry_run": True})
    assert not any(live(daemon, d) for d in drawers) and live(daemon, kept[0])
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"
    assert invalid.status_code == 422 and invalid.json()["error"]["detail"]["field"] == "source"
    # The same file sent again stores nothing: its drawers were deleted on purpose
    with daemon.http(writer) as http:
        content = "".join(
            f"# Part {n}\n\nThe secrets/prod.env.md part {n} says the key is K{n * 7919}Q.\n\n"
            for n in range(6)
        )
        sent = http.post(
            f"{BASE}/ingest", json={"files": [{"name": "secrets/prod.env.md", "content": content}]}
        )
    assert (sent.json()["chunks"], sent.json()["deleted"]) == (0, 6), sent.text


def test_anothers_drawers_need_review_at_the_api(daemon: LiveDaemon) -> None:
    writer = token(daemon, "api-owner")
    teammate = token(daemon, "api-teammate")
    reviewer = token(daemon, "api-reviewer", "review,write:recall")
    drawers = upload(daemon, writer, "shared/handover.md", 3)
    with daemon.http(teammate) as http:
        refused = http.post(f"{BASE}/sources/delete", json={"source": "shared/handover.md"})
    assert refused.status_code == 403, refused.text
    error = refused.json()["error"]
    assert error["detail"] == {
        "source": "shared/handover.md",
        "others": 3,
        "required_scope": "review",
    }
    assert "3 of the 3 drawers" in error["message"]
    assert all(live(daemon, d) for d in drawers)
    with daemon.http(reviewer) as http:
        moderated = http.post(f"{BASE}/sources/delete", json={"source": "shared/handover.md"})
    assert moderated.status_code == 200 and moderated.json()["deleted"] == 3


def test_memctl_deletes_a_source_and_refuses_an_id_with_it(daemon: LiveDaemon) -> None:
    writer = token(daemon, "cli-writer")
    drawers = upload(daemon, writer, "tool-results/big-log.txt", 4)
    code, out, err = memctl(
        daemon, writer, "-w", TEAM, "--json", "recall", "delete", "--source",
        "tool-results/big-log.txt", "--dry-run",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["drawer_ids"] == drawers and json.loads(out)["dry_run"] is True
    assert all(live(daemon, d) for d in drawers)
    code, out, err = memctl(
        daemon, writer, "-w", TEAM, "recall", "delete", "--source", "tool-results/big-log.txt"
    )
    assert code == 0, err
    assert out.startswith("soft-deleted 4 drawer(s) of tool-results/big-log.txt\n")
    assert all(d in out for d in drawers)
    assert not any(live(daemon, d) for d in drawers)
    # Not found is a 4xx answer (exit 1); an id with --source, neither, or --dry-run
    # with an id are usage errors (exit 2)
    code, _, err = memctl(daemon, writer, "-w", TEAM, "recall", "delete", "--source", "nowhere.md")
    assert code == 1 and "no live drawers of source 'nowhere.md'" in err
    for argv in (
        ("delete", drawers[0], "--source", "tool-results/big-log.txt"),
        ("delete",),
        ("delete", drawers[0], "--dry-run"),
    ):
        code, out, err = memctl(daemon, writer, "-w", TEAM, "recall", *argv)
        assert code == 2 and out == "", (argv, err)
        assert err


@pytest.mark.anyio
async def test_mcp_memory_delete_takes_a_source_or_a_drawer_id(daemon: LiveDaemon) -> None:
    writer = token(daemon, "mcp-writer")
    drawers = upload(daemon, writer, "mistake/credentials.md", 3)

    async def call(client: Any, arguments: dict[str, Any]) -> tuple[bool, str]:
        answer = await client.call_tool("memory_delete", arguments)
        return bool(answer.is_error), answer.content[0].text

    async with mcp_client(daemon, writer) as client:
        dry = await call(client, {"source": "mistake/credentials.md", "dry_run": True})
        done = await call(client, {"source": "mistake/credentials.md"})
        both = await call(client, {"source": "mistake/credentials.md", "drawer_id": drawers[0]})
        neither = await call(client, {})
        gone = await call(client, {"source": "mistake/credentials.md"})
        one = await call(client, {"drawer_id": drawers[0]})
    assert not dry[0] and json.loads(dry[1])["drawer_ids"] == drawers
    assert not done[0]
    assert json.loads(done[1]) == {
        "workspace": TEAM,
        "source": "mistake/credentials.md",
        "deleted": 3,
        "drawer_ids": drawers,
    }
    assert both[0] and neither[0] and "exactly one of 'drawer_id' and 'source'" in both[1]
    assert gone[0] and "no live drawers of source" in gone[1]
    # A drawer id keeps mempal's answer for a drawer already deleted
    assert not one[0] and json.loads(one[1])["deleted"] is False
