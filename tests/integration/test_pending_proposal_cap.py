"""`[limits] max_pending_proposals` against a real daemon: an identity's pending
proposals in a workspace are bounded, also when it proposes many at once; the refusal is
`429 too_many` over HTTP, a tool error over MCP and one line from memctl; and a decision
makes room again, for that identity only."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon
from tests.integration.test_mcp import mcp_client, mcp_mounted

EXAMPLE = "team-coding"
CAP = 3


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    workspaces = {"ws": copy_examples(tmp_path / "ws", [EXAMPLE])[EXAMPLE]}
    with (
        mcp_mounted(),
        start_daemon(tmp_path, workspaces, **{"limits.max_pending_proposals": CAP}) as live,
    ):
        live.add_token("agent", "write:candidate,read:summary")
        live.add_token("other", "write:candidate,read:summary")
        live.add_token("alice", "review,read:summary", roles=["*"])
        yield live


def fact(name: str) -> str:
    return (
        f'fact {name} {{\n  subject: Service.Ledger\n  claim: "Claim {name}."\n'
        f'  evidence {{ source: "chat" quote: "said {name}" }}\n}}\n'
    )


def propose(daemon: LiveDaemon, who: str, name: str) -> tuple[int, dict]:
    with daemon.http(daemon.tokens[who], timeout=60) as client:
        answer = client.post("/v1/workspaces/ws/proposals", json={"source": fact(name)})
    return answer.status_code, answer.json()


def pending(daemon: LiveDaemon) -> list[dict]:
    with daemon.http(daemon.tokens["alice"]) as client:
        answer = client.get("/v1/workspaces/ws/proposals", params={"status": "pending"})
    return answer.json()["proposals"]


def test_racing_proposals_stop_at_the_cap(daemon: LiveDaemon) -> None:
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: propose(daemon, "agent", f"race_{n}"), range(8)))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] * CAP + [429] * (8 - CAP)
    refused = next(body for status, body in answers if status == 429)
    assert refused["error"]["code"] == "too_many"
    assert "max_pending_proposals = 3" in refused["error"]["message"]
    assert refused["error"]["detail"]["status"] == "too_many"
    assert len(pending(daemon)) == CAP

    # Another identity has its own allowance.
    assert propose(daemon, "other", "theirs")[0] == 201
    # A decision makes room again.
    first = next(body for status, body in answers if status == 201)
    with daemon.http(daemon.tokens["alice"]) as client:
        rejected = client.post(
            f"/v1/workspaces/ws/proposals/{first['proposal_id']}/reject", json={"reason": "no"}
        )
    assert rejected.status_code == 200
    assert propose(daemon, "agent", "after_reject")[0] == 201
    assert propose(daemon, "agent", "one_too_many")[0] == 429


def test_the_cap_at_mcp_and_memctl(daemon: LiveDaemon) -> None:
    for n in range(CAP):
        assert propose(daemon, "agent", f"fill_{n}")[0] == 201

    async def over_mcp() -> str:
        async with mcp_client(daemon, daemon.tokens["agent"]) as client:
            result = await client.call_tool(
                "memory_propose", {"source": fact("by_mcp"), "workspace": "ws"}
            )
            assert result.is_error
            return result.content[0].text

    assert "max_pending_proposals" in anyio.run(over_mcp)

    source = Path(daemon.workspaces["ws"]).parent / "candidate.mem"
    source.write_text(fact("by_memctl"))
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", daemon.tokens["agent"]]
        + ["-w", "ws", "propose", str(source)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "too_many_pending" in done.stderr and "max_pending_proposals" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert len(pending(daemon)) == CAP
