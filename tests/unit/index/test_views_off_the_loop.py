"""A view not made yet is made in a worker thread, never on the event loop: with more
role sets taking turns than a snapshot keeps views for, every query, read and change
event of a role-limited caller still answers from its own view, and no view is made on
the loop (where one stalled every other caller, /healthz included)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memhub_protocol import QueryRequest
from memhubd.auth.identity import Identity
from memhubd.runtime.hub import Hub, WatchSettings
from memhubd.service import access, reads

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "team-coding"
WS = "team-coding"
SECRET_BUG = "teamcode.bug_pattern:payments.sandbox_key_in_logs"
QUERY = QueryRequest("payment sdk sandbox key logs debug ledger retry")
SCOPES = frozenset({"read:search", "read:summary"})


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    root = tmp_path / WS
    shutil.copytree(EXAMPLES, root)
    hub = Hub(watch=WatchSettings(enabled=False))
    async with hub.running({WS: str(root)}):
        yield hub


@pytest.fixture
def made_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> list[frozenset[str]]:
    """The role sets whose view was made on the thread running the test's event loop."""
    loop_thread = threading.get_ident()
    on_loop: list[frozenset[str]] = []
    build = access._build_cut  # noqa: SLF001

    def recorded(whole: Any, roles: frozenset[str], *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == loop_thread:
            on_loop.append(roles)
        return build(whole, roles, *args, **kwargs)

    monkeypatch.setattr(access, "_build_cut", recorded)
    return on_loop


def callers() -> list[Identity]:
    """More role sets than a snapshot keeps views for, one of them reading the bug."""
    count = access.MAX_CUTS_PER_SNAPSHOT + 3
    agents = [
        Identity(f"agent-{n}", SCOPES, roles=frozenset({"coding_agent", f"agent-{n}"}))
        for n in range(count)
    ]
    return [*agents, Identity("maintainer", SCOPES, roles=frozenset({"maintainer"}))]


def reads_bug(identity: Identity) -> bool:
    return "maintainer" in identity.roles


async def test_queries_of_more_role_sets_than_kept_make_their_views_off_the_loop(
    hub: Hub, made_on_the_loop: list[frozenset[str]]
) -> None:
    # Given more role sets than a snapshot keeps views for, taking turns
    for _round in range(2):
        for identity in callers():
            # When each queries (as the query route does: lookup, then answer)
            lookup = await reads.awaited_query_lookup(hub, identity, WS, QUERY)
            answer, view = await reads.query(hub, identity, WS, QUERY, lookup=lookup)
            # Then each answer is its own view's: the bug only for those who read it
            assert (SECRET_BUG in answer.body.decode()) == reads_bug(identity)
            assert view.cut.roles == identity.roles
    # And no view was made on the event loop
    assert made_on_the_loop == []


async def test_reads_of_more_role_sets_than_kept_make_their_views_off_the_loop(
    hub: Hub, made_on_the_loop: list[frozenset[str]]
) -> None:
    for identity in callers():
        listed = await reads.list_declarations(hub, identity, WS)
        assert (SECRET_BUG in json.dumps(listed)) == reads_bug(identity)
        await reads.memory_map(hub, identity, WS)
    assert made_on_the_loop == []


async def test_reload_events_count_each_callers_view_off_the_loop(
    hub: Hub, made_on_the_loop: list[frozenset[str]]
) -> None:
    # Given a reload event of the snapshot served
    snapshot = hub.get(WS).snapshot  # type: ignore[union-attr]
    whole = len(snapshot.workspace.declarations)
    event = {"workspace": WS, "generation": snapshot.generation, "declarations": whole}
    for identity in callers():
        # When it is delivered to a stream of each role set
        data = await access.awaited_event_for(hub, identity, "workspace_reloaded", event)
        # Then each is told the count of what it reads: the bug or a rule it may not read
        assert data is not None
        assert data["declarations"] == whole - 1
    # And no view was made on the event loop
    assert made_on_the_loop == []


async def test_proposal_reads_of_more_role_sets_than_kept_make_their_views_off_the_loop(
    hub: Hub, made_on_the_loop: list[frozenset[str]]
) -> None:
    from memhubd.service import review

    for _round in range(2):
        for identity in callers():
            # A list of proposals needs the caller's view (hidden proposals are counted)
            answer = await review.list_proposals(hub, identity, WS, "all")
            assert answer["workspace"] == WS
    assert made_on_the_loop == []
