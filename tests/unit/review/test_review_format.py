"""Proposal files: memdsl's layout and header format, memhub's extra keys, ids, listing."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from review_helpers import fact_source, load

from memhubd.review import (
    Proposal,
    ReviewStore,
    approval_marker,
    is_proposal_id,
    parse_proposal,
    render_proposal,
)
from memhubd.review.proposal import one_line


def read_like_memdsl(text: str) -> dict[str, str] | None:
    """A reader written from spec §7.3 alone: header keys, then the stripped source."""
    lines = text.splitlines()
    meta: dict[str, str] = {}
    for index, line in enumerate(lines):
        if line.strip() == "# ---":
            meta["source"] = "\n".join(lines[index + 1 :]).strip() + "\n"
            return meta if "id" in meta else None
        if line.startswith("# ") and ": " in line:
            key, value = line[2:].split(": ", 1)
            meta[key.strip()] = value.strip()
    return None


def propose(store: ReviewStore, root: Path, name: str = "db.version", **kwargs: object):
    kwargs.setdefault("proposer", "agent-a")
    return store.propose(load(root), fact_source(name), **kwargs)  # type: ignore[arg-type]


def test_proposal_is_stored_where_memdsl_looks_with_a_private_mode(
    store: ReviewStore, root: Path
) -> None:
    result = propose(store, root)

    assert result.ok and result.status == "pending_review"
    path = Path(result.proposal.path)
    assert path.parent == root / ".memdsl" / "proposals"
    assert path.name == f"{result.proposal_id}.mem.proposal"
    assert re.fullmatch(r"p-\d{8}-\d{6}-[0-9a-f]{6}", result.proposal_id)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_memdsl_reader_sees_its_fields_and_the_source(store: ReviewStore, root: Path) -> None:
    result = propose(store, root, client="cli\n  tool", reason="the user\tsaid so")

    meta = read_like_memdsl(Path(result.proposal.path).read_text(encoding="utf-8"))

    assert meta is not None
    assert meta["id"] == result.proposal_id
    assert meta["status"] == "pending"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", meta["created_at"])
    assert meta["client"] == "cli tool"
    assert meta["reason"] == "the user said so"
    assert meta["source"] == fact_source("db.version")


def test_header_carries_memhub_attribution_as_extra_lines(store: ReviewStore, root: Path) -> None:
    source = fact_source("db.engine2", extra='  supersedes: "fact:db.engine"\n')
    result = store.propose(
        load(root), source, proposer="agent-b", generation=12, supersedes="fact:db.engine"
    )

    meta = read_like_memdsl(Path(result.proposal.path).read_text(encoding="utf-8"))

    assert meta is not None
    assert meta["proposer"] == "agent-b"
    assert meta["generation"] == "12"
    assert meta["supersedes"] == "fact:db.engine"
    assert "client" not in meta and "reason" not in meta  # empty fields are left out


def test_file_round_trips_through_render_and_parse() -> None:
    proposal = Proposal(
        id="p-20260101-120000-abcdef",
        status="approved",
        created_at="2026-01-01T12:00:00+00:00",
        source=fact_source("x"),
        path="/somewhere/p.mem.proposal",
        client="cli",
        reason="because: reasons",
        decided_at="2026-01-02T08:00:00+00:00",
        merged_into="/ws/approved.mem",
        proposer="agent",
        generation=0,
        supersedes="fact:y",
        decided_by="alice",
    )

    assert parse_proposal(render_proposal(proposal), proposal.path) == proposal


def test_memdsl_written_proposal_reads_with_empty_attribution() -> None:
    text = (
        "# memdsl:proposal\n# id: p-20260101-120000-abcdef\n# status: rejected\n"
        "# created_at: 2026-01-01T12:00:00+00:00\n# reject_reason: not true\n# ---\n"
        "\n" + fact_source("x") + "\n\n"
    )

    proposal = parse_proposal(text)

    assert proposal is not None
    assert proposal.status == "rejected" and proposal.reject_reason == "not true"
    assert proposal.source == fact_source("x")
    assert (proposal.proposer, proposal.generation, proposal.decided_by) == ("", None, "")


@pytest.mark.parametrize(
    "text",
    [
        "# memdsl:proposal\n# id: p-20260101-120000-abcdef\nfact x {}\n",
        "# status: pending\n# ---\n",
    ],
)
def test_file_without_separator_or_id_is_unreadable(text: str) -> None:
    assert parse_proposal(text) is None


def test_list_filters_by_status_in_creation_order(store: ReviewStore, root: Path) -> None:
    first = propose(store, root, "db.a").proposal_id
    second = propose(store, root, "db.b").proposal_id
    store.reject(first, reviewer="alice", reason="no")

    assert [p.id for p in store.list()] == [second]
    assert [p.id for p in store.list("rejected")] == [first]
    assert [p.id for p in store.list("all")] == sorted([first, second])
    with pytest.raises(ValueError):
        store.list("everything")


def test_list_is_empty_before_anything_was_proposed(store: ReviewStore) -> None:
    assert store.list("all") == []


def test_list_skips_files_that_are_not_proposals(store: ReviewStore, root: Path) -> None:
    kept = propose(store, root).proposal_id
    proposals = root / ".memdsl" / "proposals"
    (proposals / "notes.txt").write_text("hello")
    (proposals / "p-20260101-120000-000000.mem.proposal").write_text("no header at all\n")
    (proposals / "evil.mem.proposal").write_text("# id: ../../base\n# ---\nfact z {}\n")

    assert [p.id for p in store.list("all")] == [kept]


@pytest.mark.parametrize(
    "bad_id",
    ["../../ws/base", "../proposals/x", "/etc/passwd", "", "p-2026-x", "P-20260101-120000-ABCDEF"],
)
def test_get_refuses_ids_that_are_not_proposal_ids(store: ReviewStore, bad_id: str) -> None:
    assert not is_proposal_id(bad_id)
    assert store.get(bad_id) is None


def test_get_returns_the_stored_proposal(store: ReviewStore, root: Path) -> None:
    result = propose(store, root, reason="why not")

    proposal = store.get(result.proposal_id)

    assert proposal == result.proposal
    assert proposal is not None and proposal.declaration == "fact:db.version"
    assert proposal.as_dict()["source"] == fact_source("db.version")


SOURCE_LINES = st.lists(
    st.text(st.characters(blacklist_categories=("Cs", "Zl", "Zp", "Cc")), max_size=30), max_size=6
)


@given(
    client=st.text(max_size=40),
    reason=st.text(max_size=40),
    proposer=st.text(max_size=20),
    lines=SOURCE_LINES,
)
def test_any_header_text_stays_on_its_line_and_round_trips(
    client: str, reason: str, proposer: str, lines: list[str]
) -> None:
    source = "\n".join(lines).strip() + "\n"
    proposal = Proposal(
        id="p-20260101-120000-abcdef",
        status="pending",
        created_at="2026-01-01T12:00:00+00:00",
        source=source,
        client=one_line(client),
        reason=one_line(reason),
        proposer=one_line(proposer),
    )

    text = render_proposal(proposal)

    assert parse_proposal(text) == proposal
    assert text.count("\n# ---\n") >= 1 and read_like_memdsl(text)["id"] == proposal.id


def test_approval_marker_is_the_text_memdsl_searches_for() -> None:
    assert approval_marker("p-20260101-120000-abcdef") == (
        "# approved from proposal p-20260101-120000-abcdef at "
    )


def test_a_proposal_file_that_cannot_be_read_is_logged_not_listed(tmp_path) -> None:
    import os

    import structlog.testing

    from memhubd.review import ReviewStore

    store = ReviewStore(str(tmp_path))
    os.makedirs(store.proposals_dir, exist_ok=True)
    damaged = os.path.join(store.proposals_dir, "p-20261203-000000-abcdef.mem.proposal")
    with open(damaged, "w", encoding="utf-8") as handle:
        handle.write("# not a proposal header\n")
    with structlog.testing.capture_logs() as logs:
        assert store.list("all") == []
    assert [entry["event"] for entry in logs] == ["proposal file unreadable, not listed"]
    assert logs[0]["path"] == damaged
