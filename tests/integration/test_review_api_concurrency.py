"""Concurrent approvals through a real daemon: exactly-once writes, nothing lost, and a
person's edits to the target kept while approvals run."""

from __future__ import annotations

import fcntl
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memhubd.lang import parse_file
from memhubd.review import approval_marker
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"
CLIENTS = 16


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    with start_daemon(tmp_path, copy_examples(tmp_path / "ws", [WS])) as live:
        live.add_token("agent", "write:candidate")
        live.add_token("alice", "review,read:summary", roles=["*"])
        yield live


def fact(name: str) -> str:
    return (
        f'fact {name} {{\n  subject: Service.Ledger\n  claim: "Claim {name}."\n'
        f'  evidence {{ source: "chat" quote: "said {name}" }}\n}}\n'
    )


def propose_all(daemon: LiveDaemon, names: list[str]) -> list[str]:
    with daemon.http(daemon.tokens["agent"]) as client:
        answers = [client.post(f"{BASE}/proposals", json={"source": fact(n)}) for n in names]
    assert all(a.status_code == 201 for a in answers), [a.text for a in answers]
    return [a.json()["proposal_id"] for a in answers]


def approve_concurrently(daemon: LiveDaemon, ids: list[str], into: str) -> list[Any]:
    """Each approval from its own client, all released at the same moment."""
    start = threading.Barrier(len(ids))

    def one(proposal_id: str) -> Any:
        with daemon.http(daemon.tokens["alice"], timeout=60) as client:
            start.wait()
            return client.post(f"{BASE}/proposals/{proposal_id}/approve", json={"into": into})

    with ThreadPoolExecutor(len(ids)) as pool:
        return list(pool.map(one, ids))


def served_ids(daemon: LiveDaemon) -> Counter[str]:
    with daemon.http(daemon.tokens["alice"]) as client:
        listed = client.get(f"{BASE}/declarations", params={"limit": "500"}).json()
    return Counter(item["id"] for item in listed["items"])


def approve_actions(daemon: LiveDaemon) -> Counter[str]:
    lines = (Path(daemon.workspaces[WS]) / ".memdsl" / "audit.log").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    return Counter(e["proposal_id"] for e in entries if e["action"] == "approve")


def test_concurrent_approvals_of_one_proposal_write_exactly_once(daemon: LiveDaemon) -> None:
    [proposal_id] = propose_all(daemon, ["ledger.once"])

    answers = approve_concurrently(daemon, [proposal_id] * CLIENTS, "decisions.mem")

    statuses = Counter(a.status_code for a in answers)
    assert statuses == {200: 1, 409: CLIENTS - 1}, [a.text for a in answers]
    refusals = {a.json()["error"]["detail"]["status"] for a in answers if a.status_code == 409}
    assert refusals == {"already_approved"}
    text = (Path(daemon.workspaces[WS]) / "decisions.mem").read_text()
    assert text.count(approval_marker(proposal_id)) == 1
    assert approve_actions(daemon) == {proposal_id: 1}
    assert served_ids(daemon)["fact:ledger.once"] == 1


def test_concurrent_approvals_of_different_proposals_into_one_file_all_land(
    daemon: LiveDaemon,
) -> None:
    names = [f"ledger.many{i:02d}" for i in range(CLIENTS)]
    ids = propose_all(daemon, names)

    answers = approve_concurrently(daemon, ids, "ledger.mem")

    assert [a.status_code for a in answers] == [200] * CLIENTS, [a.text for a in answers]
    generations = [a.json()["served_generation"] for a in answers]
    assert len(set(generations)) == CLIENTS  # each approval was served by its own reload
    target = Path(daemon.workspaces[WS]) / "ledger.mem"
    parse_file(str(target))
    text = target.read_text()
    assert all(text.count(approval_marker(pid)) == 1 for pid in ids)
    served = served_ids(daemon)
    assert all(served[f"fact:{name}"] == 1 for name in names)


def test_a_person_editing_the_target_while_approvals_run_loses_nothing(
    daemon: LiveDaemon,
) -> None:
    """The person's tool takes memdsl's review lock for each edit, as `memdsl review` does.

    An editor that takes no lock is covered by the engine's hash check, which leaves a
    window of microseconds between its check and its rename (see docs/review.md).
    """
    # given proposals for a file a person keeps appending notes to
    names = [f"ledger.edit{i:02d}" for i in range(CLIENTS)]
    ids = propose_all(daemon, names)
    root = Path(daemon.workspaces[WS])
    target = root / "decisions.mem"
    notes: list[str] = []
    stop = threading.Event()

    def person() -> None:
        with open(root / ".memdsl" / "review.lock", "a+b") as lock:
            while not stop.is_set():
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                try:
                    note = f"# a person's note {len(notes)}\n"
                    with open(target, "a", encoding="utf-8") as handle:
                        handle.write(note)
                    notes.append(note)
                finally:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
                time.sleep(0.002)

    editor = threading.Thread(target=person)
    editor.start()
    # when the approvals run meanwhile
    try:
        answers = approve_concurrently(daemon, ids, "decisions.mem")
        during = len(notes)
    finally:
        stop.set()
        editor.join()

    # then every note and every approval is in the file, once
    assert during >= 2, "the edits should overlap the approvals"
    assert [a.status_code for a in answers] == [200] * CLIENTS, [a.text for a in answers]
    text = target.read_text()
    assert all(text.count(note) == 1 for note in notes)
    assert all(text.count(approval_marker(pid)) == 1 for pid in ids)
    parse_file(str(target))


def test_an_approval_during_an_in_place_save_keeps_the_save(daemon: LiveDaemon) -> None:
    """A program saving the target in place (truncate, then write) while an approval
    comes: the approval waits for the save, as serving does, and merges onto it."""
    [proposal_id] = propose_all(daemon, ["ledger.during_save"])
    target = Path(daemon.workspaces[WS]) / "decisions.mem"
    saved = target.read_text() + "\n# saved by the editor\n"
    # Opening for writing truncates: the save has begun.
    with open(target, "w") as handle, ThreadPoolExecutor(1) as pool:
        answer = pool.submit(approve_concurrently, daemon, [proposal_id], "decisions.mem")
        time.sleep(0.3)  # the approval has come, and waits for the emptied file
        handle.write(saved)  # one write: pauses longer than settle_ms are served half-way
        handle.flush()
        [approved] = answer.result(timeout=30)
    assert approved.status_code == 200, approved.text
    text = target.read_text()
    assert text.startswith(saved) and approval_marker(proposal_id) in text


def test_a_declaration_written_elsewhere_after_the_read_and_before_the_lock_is_seen(
    daemon: LiveDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (memdsl, a second daemon) may approve a declaration of the same id
    into another file after this approval read the sources and before it took the review
    lock: the approval sees that the sources changed, reads them again, and refuses the
    duplicate instead of writing the id into a second file."""
    import memhubd.service.review as review

    [proposal_id] = propose_all(daemon, ["ledger.twice"])
    elsewhere = Path(daemon.workspaces[WS]) / "elsewhere.mem"
    original = review.awaited_view_for
    written: list[bool] = []

    async def read_then_written_elsewhere(*args: Any, **kwargs: Any) -> Any:
        view = await original(*args, **kwargs)  # after the reload the approval validates on
        if not written:
            written.append(True)
            elsewhere.write_text(fact("ledger.twice"))  # as the other process's approval
        return view

    monkeypatch.setattr(review, "awaited_view_for", read_then_written_elsewhere)
    with daemon.http(daemon.tokens["alice"], timeout=60) as client:
        answer = client.post(f"{BASE}/proposals/{proposal_id}/approve", json={"into": "decisions.mem"})
    assert written
    assert answer.status_code == 409, answer.text
    decisions = (Path(daemon.workspaces[WS]) / "decisions.mem").read_text()
    assert "ledger.twice" not in decisions
