"""Recall and the agent diary against callers who may not read everything.

A token without roles, one with another role, a token of another workspace and a scoped
admin probe a real daemon's recall doors (search, drawers, delete, status, wake-up,
purge, the diary). A drawer whose `readers` exclude the caller is never shown, never
distinguishable from a drawer that does not exist, and never moves a number the caller
receives: not a hit's score, not a count beyond the documented `hidden_count`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, memctl, start_daemon
from tests.security.test_role_hiding import mcp_client

TEAM, OTHER = "team-coding", "writing"
AGENT = "read:summary,read:search,write:recall"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("recall-access")
    with start_daemon(root, copy_examples(root / "ws", [TEAM, OTHER])) as live:
        yield live


def token(daemon: LiveDaemon, name: str, scopes: str = AGENT, **grants: Any) -> str:
    return daemon.tokens.get(name) or daemon.add_token(name, scopes, **grants)


def ingest(daemon: LiveDaemon, secret: str, workspace: str = TEAM, **body: Any) -> list[str]:
    with daemon.http(secret) as http:
        answer = http.post(f"/v1/workspaces/{workspace}/recall/ingest", json=body)
    assert answer.status_code in (200, 201), answer.text
    return [i for source in answer.json()["sources"] for i in source.get("drawer_ids", [])]


def search(daemon: LiveDaemon, secret: str, query: str) -> dict[str, Any]:
    with daemon.http(secret) as http:
        answer = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": query})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def comparable(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hits without what changes between two identical searches anyway."""
    return [{k: v for k, v in hit.items() if k not in ("took_ms",)} for hit in hits]


def test_hidden_drawers_never_move_a_visible_hits_scores(daemon: LiveDaemon) -> None:
    # Given a visible drawer with a rare word, searched by a caller without roles
    reader = token(daemon, "score-reader", workspaces=[TEAM])
    writer = token(daemon, "score-writer", workspaces=[TEAM], roles=["vault"])
    ingest(daemon, reader, content="the okapi lives in the canteen fridge", room="misc")
    for topic in ("parking rota", "coffee order", "fire drill", "desk move", "badge renewal"):
        ingest(daemon, reader, content=f"a quiet note about the {topic}", room="misc")
    before = search(daemon, reader, "okapi")["hits"]
    # When drawers only `vault` may read start using the word
    for n in range(6):
        ingest(
            daemon,
            writer,
            content=f"okapi okapi vault entry {n} about the merger",
            room="vault",
            readers=["vault"],
        )
    after = search(daemon, reader, "okapi")["hits"]
    # Then the reader's hits are the same in every field: BM25 weighs a word by how many
    # drawers hold it, so its raw score is withheld from a caller that cannot see them all
    assert comparable(after) == comparable(before)
    assert after and after[0]["signals"]["bm25"]["score"] is None
    assert "merger" not in str(after)
    # And a caller that sees everything still gets the score
    admin = search(daemon, daemon.admin_token, "okapi")["hits"]
    assert all(
        isinstance(h["signals"]["bm25"]["score"], float) for h in admin if "bm25" in h["signals"]
    )


def test_a_hidden_drawer_answers_exactly_as_a_missing_one(daemon: LiveDaemon) -> None:
    writer = token(daemon, "oracle-writer", workspaces=[TEAM], roles=["legal"])
    reader = token(daemon, "oracle-reader", workspaces=[TEAM])
    (hidden,) = ingest(
        daemon, writer, content="settlement terms for the tidewater case", readers=["legal"]
    )
    missing = hidden[:-4] + ("0000" if not hidden.endswith("0000") else "1111")
    with daemon.http(reader) as http:
        base = f"/v1/workspaces/{TEAM}/recall/drawers/"
        for method in ("GET", "DELETE"):
            seen = http.request(method, base + hidden)
            absent = http.request(method, base + missing)
            assert seen.status_code == absent.status_code == 404
            assert seen.json()["error"]["message"].replace(hidden, "X") == absent.json()["error"][
                "message"
            ].replace(missing, "X")
    with daemon.http(writer) as http:  # and the failed delete left it in place
        assert http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{hidden}").status_code == 200


@pytest.mark.anyio
async def test_reading_a_hidden_drawer_by_id_answers_as_a_missing_one_at_mcp_and_memctl(
    daemon: LiveDaemon,
) -> None:
    # Given a drawer only `legal` may read, and an id of the same form that names nothing
    writer = token(daemon, "get-writer", workspaces=[TEAM], roles=["legal"])
    reader = token(daemon, "get-reader", workspaces=[TEAM])
    (hidden,) = ingest(
        daemon, writer, content="the walrus settlement sum stays sealed", readers=["legal"]
    )
    missing = hidden[:-4] + ("0000" if not hidden.endswith("0000") else "1111")
    # When a caller without the role reads both by id, at MCP and with memctl
    async with mcp_client(daemon, reader) as client:
        seen = await client.call_tool("memory_get_drawer", {"drawer_id": hidden})
        absent = await client.call_tool("memory_get_drawer", {"drawer_id": missing})
        # (a workspace the caller has no grant for is told as one that does not exist)
        other = await client.call_tool("memory_get_drawer", {"drawer_id": hidden, "wing": OTHER})
        unknown = await client.call_tool("memory_get_drawer", {"drawer_id": hidden, "wing": "nope"})
    shown = [memctl(daemon, reader, "-w", TEAM, "recall", "show", i) for i in (hidden, missing)]
    # Then both answer alike but for the id asked, and nothing of the drawer shows
    assert seen.is_error and absent.is_error
    assert seen.content[0].text.replace(hidden, "X") == absent.content[0].text.replace(missing, "X")
    assert other.is_error and unknown.is_error
    assert other.content[0].text.replace(OTHER, "X") == unknown.content[0].text.replace("nope", "X")
    (code, out, err), (code_missing, out_missing, err_missing) = shown
    assert code == code_missing != 0 and out == out_missing == ""
    assert err.replace(hidden, "X") == err_missing.replace(missing, "X")
    assert "walrus" not in seen.content[0].text + err
    # And the writer, who holds the role, reads it whole
    async with mcp_client(daemon, writer) as client:
        read = await client.call_tool("memory_get_drawer", {"drawer_id": hidden})
    assert not read.is_error and "walrus settlement" in read.content[0].text


def test_wake_up_never_names_the_daemons_state_directory(daemon: LiveDaemon) -> None:
    reader = token(daemon, "wake-reader", workspaces=[OTHER])
    with daemon.http(reader) as http:
        answer = http.get(f"/v1/workspaces/{OTHER}/recall/wake-up")
    assert answer.status_code == 200, answer.text
    assert str(daemon.state_dir) not in answer.text
    assert "<state dir>/recall/identity/writing.txt" in answer.json()["text"]


def test_searching_every_workspace_spans_only_the_granted_ones(daemon: LiveDaemon) -> None:
    ingest(daemon, daemon.admin_token, OTHER, content="the narwhal chapter needs a new ending")
    reader = token(daemon, "span-reader", workspaces=[TEAM])
    with daemon.http(reader) as http:
        every = http.post("/v1/recall/search", json={"query": "narwhal chapter ending"})
        named = http.post(
            "/v1/recall/search", json={"query": "narwhal", "workspaces": [TEAM, OTHER]}
        )
    assert every.status_code == 200 and every.json()["workspaces"] == [TEAM]
    assert "narwhal chapter" not in str(every.json()["hits"]) and OTHER not in every.text
    assert named.status_code == 404  # as a workspace that does not exist


def test_a_scoped_admin_purges_and_reindexes_only_its_own_workspace(daemon: LiveDaemon) -> None:
    scoped = token(daemon, "scoped-admin", "all", workspaces=[OTHER])
    with daemon.http(scoped) as http:
        for path in ("purge", "reindex"):
            answer = http.post(f"/v1/workspaces/{TEAM}/recall/{path}", json={})
            assert answer.status_code == 404, answer.text
            assert answer.json()["error"]["detail"]["available"] == [OTHER]


def test_status_counts_move_only_with_drawers_the_caller_may_see(daemon: LiveDaemon) -> None:
    watcher = token(daemon, "count-watcher", workspaces=[TEAM])
    keeper = token(daemon, "count-keeper", workspaces=[TEAM], roles=["ledger"])
    base = f"/v1/workspaces/{TEAM}/recall"

    def counts(secret: str) -> dict[str, Any]:
        with daemon.http(secret) as http:
            state = http.get(f"{base}/status").json()
        return {k: state[k] for k in ("drawer_count", "deleted_count", "vector_count")}

    before = counts(watcher)
    # When a drawer hidden from the watcher is written, then deleted by its writer
    (hidden,) = ingest(daemon, keeper, content="ledger close moves to the 3rd", readers=["ledger"])
    written = counts(watcher)
    with daemon.http(keeper) as http:
        assert http.delete(f"{base}/drawers/{hidden}").status_code == 200
    # Then none of the watcher's counts moved (only `hidden_count` may tell of it)
    assert written == before and counts(watcher) == before
    # And a visible drawer's write and delete move them as for anyone
    (shown,) = ingest(daemon, watcher, content="the canteen opens at eight from monday")
    with daemon.http(watcher) as http:
        assert http.delete(f"{base}/drawers/{shown}").status_code == 200
    after = counts(watcher)
    assert after["deleted_count"] == before["deleted_count"] + 1
    assert after["vector_count"] == before["vector_count"]


def test_only_an_admin_hidden_nothing_may_purge(daemon: LiveDaemon) -> None:
    # Given drawers hidden from an admin of the workspace (its roles do not read them),
    # soft-deleted by their writer
    writer = token(daemon, "purge-writer", workspaces=[TEAM], roles=["vault"])
    limited = token(daemon, "purge-admin", "all", workspaces=[TEAM])
    hidden = ingest(daemon, writer, content="vault rotation is on the 9th", readers=["vault"])
    base = f"/v1/workspaces/{TEAM}/recall"
    with daemon.http(writer) as http:
        assert http.delete(f"{base}/drawers/{hidden[0]}").status_code == 200
    # When that admin purges, or prunes the audit
    with daemon.http(limited) as http:
        answers = [
            http.post(f"{base}/purge", json={}),
            http.post(f"{base}/purge", json={"before": 0, "audit_before": 4_000_000_000}),
        ]
    # Then it is refused, with no count of what it may not read, and nothing is removed
    for answer in answers:
        assert answer.status_code == 403, answer.text
        error = answer.json()["error"]
        assert error["code"] == "forbidden" and error["detail"] == {"required_role": "*"}
        assert "purged" not in answer.text and "audit_removed" not in answer.text
    with daemon.http(daemon.admin_token) as http:
        assert http.get(f"{base}/status").json()["deleted_count"] >= 1


def test_purge_before_the_epoch_removes_nothing_deleted_since(daemon: LiveDaemon) -> None:
    # Given a drawer soft-deleted just now
    (drawer,) = ingest(daemon, daemon.admin_token, content="a draft to be deleted, kept a while")
    with daemon.http(daemon.admin_token) as http:
        base = f"/v1/workspaces/{TEAM}/recall"
        assert http.delete(f"{base}/drawers/{drawer}").status_code == 200
        deleted = http.get(f"{base}/status").json()["deleted_count"]
        # When an admin purges what was deleted before 1970-01-01
        answer = http.post(f"{base}/purge", json={"before": 0})
        # Then nothing is purged (0 is a time, not "no limit")
        assert answer.status_code == 200 and answer.json()["purged"] == 0, answer.text
        assert http.get(f"{base}/status").json()["deleted_count"] == deleted


def test_a_private_diary_entry_reaches_only_its_writer_and_reviewers(daemon: LiveDaemon) -> None:
    author = token(daemon, "diarist", workspaces=[TEAM])
    peer = token(daemon, "diary-peer", workspaces=[TEAM], roles=["dev"])
    reviewer = token(daemon, "diary-reviewer", "read:summary,review", workspaces=[TEAM])
    with daemon.http(author) as http:
        written = http.post(
            f"/v1/workspaces/{TEAM}/diary",
            json={"type": "LESSON", "content": "the quokka cache flag must stay off"},
        )
    assert written.status_code == 201, written.text
    drawer = written.json()["drawer_id"]
    with daemon.http(peer) as http:
        listed = http.get(f"/v1/workspaces/{TEAM}/diary", params={"identity": "diarist"})
        searched = http.post(f"/v1/workspaces/{TEAM}/recall/search", json={"query": "quokka"})
        direct = http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}")
    assert listed.status_code == 200 and listed.json()["entries"] == []
    assert "quokka" not in str(searched.json()["hits"]) and direct.status_code == 404
    with daemon.http(reviewer) as http:
        entries = http.get(f"/v1/workspaces/{TEAM}/diary", params={"identity": "diarist"}).json()
    assert [e["drawer_id"] for e in entries["entries"]] == [drawer]


def test_ingest_never_quotes_a_hidden_drawer_as_a_near_duplicate(daemon: LiveDaemon) -> None:
    # Given a drawer only `board` may read
    board = token(daemon, "near-board", workspaces=[TEAM], roles=["board"])
    secret = "The acquisition of Northwind closes on March 3 for 41 million euros."
    (hidden,) = ingest(daemon, board, content=secret, room="deals", readers=["board"])
    # A caller that may read it is told about a near copy (kept hidden as well)
    with daemon.http(board) as http:
        told = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={
                "content": "For 41 million euros, the acquisition of Northwind closes on March 3.",
                "readers": ["board"],
            },
        )
    assert told.status_code == 201, told.text
    assert hidden in {n["similar_drawer_id"] for n in told.json()["near_duplicates"]}
    # When a caller without the role ingests a near copy (the same words, reordered)
    guesser = token(daemon, "near-guesser", workspaces=[TEAM])
    with daemon.http(guesser) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={
                "content": "For 41 million euros the acquisition of Northwind closes on March 3."
            },
        )
    # Then nothing in the answer names or quotes either hidden drawer
    assert answer.status_code == 201, answer.text
    assert answer.json()["near_duplicates"] == []
    assert hidden not in answer.text and "Northwind closes on March 3 for" not in answer.text


def test_a_hidden_near_duplicate_never_masks_a_visible_one(daemon: LiveDaemon) -> None:
    # Given a visible drawer and a hidden one nearer still to what will be ingested
    keeper = token(daemon, "mask-keeper", workspaces=[TEAM], roles=["board"])
    writer = token(daemon, "mask-writer", workspaces=[TEAM])
    text = "The staging database of the marmot service restarts every night at two."
    (visible,) = ingest(
        daemon,
        writer,
        content="The staging database of the marmot service restarts nightly at two.",
    )
    ingest(daemon, keeper, content=text.replace("The", "the", 1), readers=["board"])
    # When the writer ingests the text
    with daemon.http(writer) as http:
        answer = http.post(f"/v1/workspaces/{TEAM}/recall/ingest", json={"content": text})
    # Then the warning names the visible near copy, the best it may read
    assert answer.status_code == 201, answer.text
    assert [n["similar_drawer_id"] for n in answer.json()["near_duplicates"]] == [visible]


def test_exact_content_of_a_hidden_drawer_is_no_duplicate_oracle(daemon: LiveDaemon) -> None:
    board = token(daemon, "dup-board", workspaces=[TEAM], roles=["board"])
    secret = "the vault door code is 4417"
    (hidden,) = ingest(daemon, board, content=secret, room="vault", readers=["board"])
    guesser = token(daemon, "dup-guesser", workspaces=[TEAM])
    with daemon.http(guesser) as http:
        right = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest", json={"content": secret, "room": "vault"}
        ).json()
        wrong = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"content": "the vault door code is 4418", "room": "vault"},
        ).json()
    # A right guess is stored as a wrong one is, a new drawer of the caller's own, never
    # answered "unchanged" (its id takes the long form, as on a hash clash)
    for answer in (right, wrong):
        assert (answer["chunks"], answer["duplicates"]) == (1, 0), answer
        assert answer["sources"][0]["status"] == "ingested"
    assert hidden not in right["sources"][0]["drawer_ids"]
    with daemon.http(board) as http:  # the hidden drawer is untouched
        assert http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{hidden}").status_code == 200


@pytest.mark.parametrize("long_form", ["kept", "deleted"])
def test_content_hidden_under_both_id_forms_is_no_duplicate_oracle(
    daemon: LiveDaemon, long_form: str
) -> None:
    # Given one text stored twice by two roles, under its short id and its long form
    text = f"the {long_form} ledger key sits under the blue tile"
    first = token(daemon, f"both-first-{long_form}", workspaces=[TEAM], roles=["board"])
    second = token(daemon, f"both-second-{long_form}", workspaces=[TEAM], roles=["audit"])
    (short,) = ingest(daemon, first, content=text, room="vault", readers=["board"])
    (long,) = ingest(daemon, second, content=text, room="vault", readers=["audit"])
    assert long.startswith(short) and long != short
    if long_form == "deleted":
        with daemon.http(second) as http:
            gone = http.delete(f"/v1/workspaces/{TEAM}/recall/drawers/{long}")
        assert gone.status_code == 200, gone.text
    # When a caller holding neither role ingests the same text, twice
    guesser = token(daemon, f"both-guesser-{long_form}", workspaces=[TEAM])
    with daemon.http(guesser) as http:
        answers = [
            http.post(
                f"/v1/workspaces/{TEAM}/recall/ingest", json={"content": text, "room": "vault"}
            ).json()
            for _ in range(2)
        ]
    # Then the first is stored as a new drawer of its own, named by neither hidden id
    stored = answers[0]["sources"][0]
    assert (stored["status"], stored["chunks"], stored["deleted"]) == ("ingested", 1, 0)
    (own,) = stored["drawer_ids"]
    assert own not in (short, long)
    # And the second finds the caller's own copy, and names it
    again = answers[1]["sources"][0]
    assert (again["status"], again["duplicates"], again["drawer_ids"]) == ("unchanged", 1, [own])
    with daemon.http(guesser) as http:
        assert http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{own}").status_code == 200


def test_a_hidden_drawer_is_neither_quoted_nor_told_apart_through_proposals(
    daemon: LiveDaemon,
) -> None:
    # Given a drawer shaped like its writer's diary entry but ingested for a role
    writer_scopes = f"{AGENT},write:candidate"
    writer = token(daemon, "hsm-keeper", writer_scopes, workspaces=[TEAM], roles=["security"])
    (hidden,) = ingest(
        daemon,
        writer,
        content="LESSON: the HSM recovery phrase is in safe 7, code Orchid-5521.",
        room="hsm-keeper",
        source="diary/hsm-keeper",
        readers=["security"],
    )
    reviewer = token(
        daemon,
        "role-less-reviewer",
        "read:summary,read:search,write:candidate,review",
        workspaces=[TEAM],
        roles=["coding_agent"],
    )
    claim = {"subject": "Service.Tidewater", "claim": "The HSM holds the recovery phrase."}
    body = {"type": "fact", "id": "probe.hsm", "fields": claim}
    base = f"/v1/workspaces/{TEAM}/recall/drawers"
    # When a reviewer without the role proposes from it, and from an id that does not exist
    with daemon.http(reviewer) as http:
        quoted = http.post(f"{base}/{hidden}/propose", json=body)
        unknown = http.post(f"{base}/drawer_x_y_00000000/propose", json=body)
    # Then both are the same 404: the diary's rule for reviewers opens diary entries only
    assert quoted.status_code == unknown.status_code == 404, quoted.text
    assert "Orchid" not in quoted.text
    assert quoted.json()["error"]["code"] == unknown.json()["error"]["code"]
    # And a proposal its writer made from it shows that reviewer no more than "missing"
    with daemon.http(writer) as http:
        made = http.post(f"{base}/{hidden}/propose", json={**body, "id": "probe.hsm2"})
    assert made.status_code == 201, made.text
    with daemon.http(reviewer) as http:
        shown = http.get(f"/v1/workspaces/{TEAM}/proposals/{made.json()['proposal_id']}")
    assert shown.status_code == 200, shown.text
    assert shown.json()["recall_drawer"] == {"drawer_id": hidden, "missing": True}


def test_reingesting_a_file_name_never_replaces_drawers_hidden_from_the_caller(
    daemon: LiveDaemon,
) -> None:
    # Given a file uploaded with readers, cited by its name
    board = token(daemon, "file-board", workspaces=[TEAM], roles=["board"])
    upload = {"name": "plans/q3.md", "content": "# Q3\nclose the lisbon office quietly"}
    (hidden,) = ingest(daemon, board, files=[upload], readers=["board"])
    # When a caller without the role uploads another file of the same name
    guesser = token(daemon, "file-guesser", workspaces=[TEAM])
    with daemon.http(guesser) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={"files": [{"name": "plans/q3.md", "content": "# Q3\nmy own plan"}]},
        )
    # Then its file is stored beside the hidden one, which it neither replaced nor learnt of
    assert answer.status_code == 201, answer.text
    assert answer.json()["replaced"] == 0 and answer.json()["chunks"] == 1
    with daemon.http(board) as http:
        kept = http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{hidden}")
    assert kept.status_code == 200 and "lisbon" in kept.json()["drawer"]["content"]


def test_a_writer_still_replaces_its_own_file_written_for_readers_it_lacks(
    daemon: LiveDaemon,
) -> None:
    # An agent may ingest for a role it does not hold; its own re-ingest still replaces
    agent = token(daemon, "write-only-agent", workspaces=[TEAM])
    first = {"name": "logs/session.md", "content": "# Session\nstep one done"}
    ingest(daemon, agent, files=[first], readers=["finance"])
    with daemon.http(agent) as http:
        answer = http.post(
            f"/v1/workspaces/{TEAM}/recall/ingest",
            json={
                "files": [{"name": "logs/session.md", "content": "# Session\nstep two done"}],
                "readers": ["finance"],
            },
        )
    assert answer.status_code == 201, answer.text
    assert (answer.json()["chunks"], answer.json()["replaced"]) == (1, 1), answer.text


def test_deleting_a_source_never_counts_or_tells_of_drawers_hidden_from_the_caller(
    daemon: LiveDaemon,
) -> None:
    # Given a file cited `minutes/board.md` only `board` may read, and a caller without
    # the role that stored a file of the same name
    board = token(daemon, "source-board", workspaces=[TEAM], roles=["board"])
    caller = token(daemon, "source-caller", workspaces=[TEAM])
    upload = {"name": "minutes/board.md", "content": "# Board\nsell the harbour depot in May"}
    (hidden,) = ingest(daemon, board, files=[upload], readers=["board"])
    (sealed,) = ingest(
        daemon,
        board,
        files=[{"name": "minutes/sealed.md", "content": "# Sealed\nthe depot price"}],
        readers=["board"],
    )
    mine = {"name": "minutes/board.md", "content": "# Board\nmy own notes of the meeting"}
    (own,) = ingest(daemon, caller, files=[mine])
    base = f"/v1/workspaces/{TEAM}/recall/sources/delete"
    with daemon.http(caller) as http:
        # When it deletes the source of only hidden drawers, or one that does not exist
        answers = [
            http.post(base, json={"source": source, "dry_run": dry})
            for source in ("minutes/sealed.md", "minutes/nothing.md")
            for dry in (True, False)
        ]
        # and the source it shares with the hidden drawer
        dry = http.post(base, json={"source": "minutes/board.md", "dry_run": True})
        done = http.post(base, json={"source": "minutes/board.md"})
    # Then the hidden-only source answers exactly as the missing one
    for seen, absent in (answers[0:3:2], answers[1:4:2]):
        assert seen.status_code == absent.status_code == 404
        assert seen.json()["error"]["message"].replace("sealed", "X") == absent.json()["error"][
            "message"
        ].replace("nothing", "X")
        assert seen.json()["error"]["code"] == absent.json()["error"]["code"] == "not_found"
    # and the shared one counts and deletes its own drawer only
    for answer in (dry, done):
        assert answer.status_code == 200, answer.text
        assert (answer.json()["deleted"], answer.json()["drawer_ids"]) == (1, [own])
        assert hidden not in answer.text and "harbour" not in answer.text
    with daemon.http(board) as http:
        for drawer in (hidden, sealed):
            assert http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}").status_code == 200


def test_deleting_a_source_holding_others_drawers_needs_review_and_deletes_none(
    daemon: LiveDaemon,
) -> None:
    # Given a file two teammates stored under the same name, readable by both
    first = token(daemon, "source-first", workspaces=[TEAM])
    second = token(daemon, "source-second", workspaces=[TEAM])
    (theirs,) = ingest(
        daemon, first, files=[{"name": "shared/rota.md", "content": "# Rota\nfirst's week"}]
    )
    (mine,) = ingest(
        daemon, second, files=[{"name": "shared/rota.md", "content": "# Rota\nsecond's turn"}]
    )
    # When the second, without review, deletes the source
    with daemon.http(second) as http:
        refused = http.post(
            f"/v1/workspaces/{TEAM}/recall/sources/delete", json={"source": "shared/rota.md"}
        )
        # Then it is refused whole, naming how many are another's and the scope needed
        assert refused.status_code == 403, refused.text
        error = refused.json()["error"]
        assert error["code"] == "forbidden"
        assert error["detail"] == {
            "source": "shared/rota.md",
            "others": 1,
            "required_scope": "review",
        }
        assert "1 of the 2 drawers" in error["message"]
        # and neither drawer went
        for drawer in (theirs, mine):
            assert http.get(f"/v1/workspaces/{TEAM}/recall/drawers/{drawer}").status_code == 200
