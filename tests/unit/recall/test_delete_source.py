"""Every drawer of one source soft-deleted at once, by the one-drawer delete's rules: on
purpose and audited per drawer (a later ingest does not bring them back); another
identity's drawers need review or admin, or nothing is deleted; drawers the caller may
not read are left alone and never counted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from recall_fakes import options

from memhub_protocol import ErrorCode, ProtocolError
from memhub_protocol.recall import SourceDeleteRequest
from memhub_protocol.scopes import REVIEW, WRITE_RECALL
from memhubd.auth.identity import Identity
from memhubd.recall.shelf import RecallSettings, RecallShelf
from memhubd.service import recall_admin

pytestmark = pytest.mark.anyio

SECRETS = "home/me/.env.notes"
OTHER = "notes/runbook.md"
ALICE = Identity("alice", frozenset({WRITE_RECALL}), roles=frozenset({"dev"}))
REVIEWER = Identity("rita", frozenset({WRITE_RECALL, REVIEW}), roles=frozenset({"dev"}))


def sections(count: int, word: str) -> str:
    return "".join(
        f"# {word} {n}\n\nThe {word} number {n} holds value {n * 7919} for the service.\n\n"
        for n in range(count)
    )


@pytest.fixture
def shelf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecallShelf]:
    monkeypatch.setattr(recall_admin, "host_for", lambda *_args: None)
    opened = RecallShelf(tmp_path / "recall", RecallSettings(vectors=False))
    yield opened
    opened.close()


def ingest(shelf: RecallShelf, source: str, text: str, **changes: Any) -> list[str]:
    report = shelf.ingestor("w").ingest_text(source, text, options(workspace="w", **changes))
    assert report.status == "ingested", report.as_dict()
    return list(report.drawer_ids)


async def delete_source(
    shelf: RecallShelf, identity: Identity, source: str, *, dry_run: bool = False
) -> dict[str, Any]:
    hub = SimpleNamespace(recall=shelf)
    request = SourceDeleteRequest(source, dry_run)
    return await recall_admin.delete_source(hub, identity, "w", request, "api")  # type: ignore[arg-type]


def live_ids(shelf: RecallShelf) -> set[str]:
    return {d.id for batch in shelf.store("w").iter_live(500) for d in batch}


async def test_every_drawer_of_the_source_is_deleted_on_purpose_and_audited(
    shelf: RecallShelf,
) -> None:
    # Given a file ingested by mistake, beside another
    mistaken = ingest(shelf, SECRETS, sections(12, "secret"), identity="alice")
    kept = ingest(shelf, OTHER, sections(3, "runbook"), identity="alice")
    assert len(mistaken) > 1
    # When its writer deletes the source
    answer = await delete_source(shelf, ALICE, SECRETS)
    # Then each of its drawers is gone, and only those
    assert answer == {
        "workspace": "w",
        "source": SECRETS,
        "deleted": len(mistaken),
        "drawer_ids": mistaken,
    }
    assert live_ids(shelf) == set(kept)
    # each with its own delete entry, as a drawer deleted alone has
    audited = [e for e in shelf.store("w").audit(500) if e.action == "delete"]
    assert sorted(e.detail["drawer_id"] for e in audited) == sorted(mistaken)
    assert {(e.identity, e.door, e.detail["source"]) for e in audited} == {
        ("alice", "api", SECRETS)
    }
    # and the same file sent again brings none back
    again = shelf.ingestor("w").ingest_text(
        SECRETS, sections(12, "secret"), options(workspace="w", identity="alice")
    )
    assert (again.chunks, again.deleted) == (0, len(mistaken))
    assert live_ids(shelf) == set(kept)


async def test_a_dry_run_lists_the_drawers_and_deletes_none(shelf: RecallShelf) -> None:
    mistaken = ingest(shelf, SECRETS, sections(5, "secret"), identity="alice")
    answer = await delete_source(shelf, ALICE, SECRETS, dry_run=True)
    assert answer == {
        "workspace": "w",
        "source": SECRETS,
        "deleted": len(mistaken),
        "drawer_ids": mistaken,
        "dry_run": True,
    }
    assert live_ids(shelf) == set(mistaken)


async def test_others_drawers_refuse_the_whole_request_without_review(
    shelf: RecallShelf,
) -> None:
    # Given one source holding alice's drawers and bob's, both readable by dev
    own = ingest(shelf, SECRETS, sections(3, "secret"), identity="alice")
    theirs = ingest(shelf, SECRETS, sections(2, "other"), identity="bob", replaces_others=False)
    # When alice (no review scope) deletes it, then nothing is deleted
    with pytest.raises(ProtocolError) as refused:
        await delete_source(shelf, ALICE, SECRETS)
    assert refused.value.code is ErrorCode.FORBIDDEN
    assert refused.value.detail == {"source": SECRETS, "others": 2, "required_scope": REVIEW}
    assert "2 of the 5 drawers" in refused.value.message
    assert live_ids(shelf) >= set(own) | set(theirs)
    # while a reviewer deletes them all
    answer = await delete_source(shelf, REVIEWER, SECRETS)
    assert sorted(answer["drawer_ids"]) == sorted(own + theirs)
    assert live_ids(shelf) == set()


async def test_drawers_the_caller_may_not_read_are_left_alone_and_not_counted(
    shelf: RecallShelf,
) -> None:
    # Given a source with alice's drawers and bob's hidden from alice's roles
    own = ingest(shelf, SECRETS, sections(3, "secret"), identity="alice")
    hidden = ingest(
        shelf,
        SECRETS,
        sections(4, "hidden"),
        identity="bob",
        readers=("ops",),
        replaces_others=False,
    )
    # When alice deletes the source, then hers go and bob's stay, unmentioned
    answer = await delete_source(shelf, ALICE, SECRETS)
    assert (answer["deleted"], answer["drawer_ids"]) == (len(own), own)
    assert live_ids(shelf) == set(hidden)
    # and a source of hidden drawers only answers as one unknown
    for source in (SECRETS, "no/such/file.md"):
        with pytest.raises(ProtocolError) as missing:
            await delete_source(shelf, ALICE, source)
        assert missing.value.code is ErrorCode.NOT_FOUND
        assert missing.value.detail == {"source": source}
        assert missing.value.message == f"no live drawers of source '{source}'"
