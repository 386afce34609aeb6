"""Hybrid search: weighted RRF (k = 60) over BM25 and vectors, room boosts that
never hide, filters, and BM25 carrying on when vectors are unavailable."""

from __future__ import annotations

import pytest
from recall_fakes import HashingEmbedder, fixture_text, options

from memhubd.recall.ingest import Ingestor
from memhubd.recall.search import RRF_K, Signal, Weights, fuse, query_terms, search
from memhubd.recall.store import AuditEntry, DrawerFilter, DrawerStore, RankedRow, TaxonomyEntry

FILES = {
    "claude/s.jsonl": "claude-code/3b1f6c2e-9a41-4d2b-8c77-0e5d2f9a1b34.jsonl",
    "codex/r.jsonl": "codex/rollout-2025-06-05T14-02-11-5c0e9d7a-2f1b-4c3d-9e8f-a1b2c3d4e5f6.jsonl",
    "chats/conversations.json": "chatgpt/conversations.json",
    "slack/deploys.json": "slack/deploys/2025-06-04.json",
    "notes/architecture.md": "notes/architecture.md",
    "notes/standup.txt": "notes/standup-2025-06-06.txt",
}


@pytest.fixture
def loaded(ingestor: Ingestor, store: DrawerStore) -> DrawerStore:
    for name, relative in FILES.items():
        assert ingestor.ingest_text(name, fixture_text(relative), options()).status == "ingested"
    return store


def test_rrf_adds_weight_over_k_plus_rank_per_signal() -> None:
    lists = {"bm25": [RankedRow(1, 9.0), RankedRow(2, 5.0)], "vector": [RankedRow(2, 0.8)]}
    fused = fuse(lists, {"bm25": 1.0, "vector": 2.0})
    assert fused.rowids.tolist() == [1, 2]
    assert fused.scores[0] == 1 / (RRF_K + 1)
    assert fused.scores[1] == 1 / (RRF_K + 2) + 2 / (RRF_K + 1)  # bm25 first, as listed
    assert fused.signals(0) == {"bm25": Signal(1, 9.0)}
    assert fused.signals(1) == {"bm25": Signal(2, 5.0), "vector": Signal(1, 0.8)}


def test_query_terms_drop_stopwords_and_keep_order() -> None:
    assert query_terms("Why did the ledger drift by a cent?") == ["ledger", "drift", "cent"]
    assert query_terms("what is it") == ["what", "is", "it"]  # nothing left: keep them all


def test_a_hit_carries_citation_signals_and_verbatim_content(
    loaded: DrawerStore, embedder: HashingEmbedder
) -> None:
    result = search(loaded, embedder, "why do ledger totals drift by a cent", DrawerFilter(), 3)
    top = result.hits[0]
    assert top.drawer.source_file == "codex/r.jsonl" and top.drawer.locator == "lines 3-9"
    assert set(top.signals) == {"bm25", "vector"}
    assert top.drawer.content.startswith("> Why do the ledger totals drift by a cent")
    assert result.signals_used == ["bm25", "vector"]


def test_a_taxonomy_room_boosts_but_never_hides(
    loaded: DrawerStore, embedder: HashingEmbedder
) -> None:
    loaded.set_taxonomy(TaxonomyEntry("notes", ("courier",)), AuditEntry("t", "test", "tax"))
    result = search(loaded, embedder, "courier event bus name", DrawerFilter(), 10)
    rooms = [h.drawer.room for h in result.hits]
    assert result.boosted_rooms == {"notes": ["courier"]}
    assert "chats" in rooms  # the ChatGPT conversation about the name still shows
    assert all("room" in h.signals for h in result.hits if h.drawer.room == "notes")


def test_only_the_hits_returned_are_read_in_full(
    loaded: DrawerStore, embedder: HashingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given a room boost (which may lift any candidate), when searching for 3 hits,
    then the boosts read rooms, sources and speakers from memory and 3 rows are read."""
    loaded.set_taxonomy(TaxonomyEntry("notes", ("courier",)), AuditEntry("t", "test", "tax"))
    expected = search(loaded, embedder, "courier event bus name", DrawerFilter(), 10).hits[:3]
    read: list[int] = []
    get = loaded.get

    def counted(rowids: list[int]) -> dict:
        read.extend(rowids)
        return get(rowids)

    monkeypatch.setattr(loaded, "get", counted)
    hits = search(loaded, embedder, "courier event bus name", DrawerFilter(), 3).hits
    assert [(h.drawer.id, h.fused, h.signals) for h in hits] == [
        (h.drawer.id, h.fused, h.signals) for h in expected
    ]
    assert sorted(read) == sorted(h.drawer.rowid for h in hits)


def test_filters_narrow_by_room_kind_and_time(
    loaded: DrawerStore, embedder: HashingEmbedder
) -> None:
    only_slack = DrawerFilter(source_kinds=("slack",))
    hits = search(loaded, embedder, "migration invoices deploy", only_slack, 10).hits
    assert hits and {h.drawer.source_kind for h in hits} == {"slack"}
    june_5_on = DrawerFilter(since=1749081600)  # 2025-06-05T00:00Z
    hits = search(loaded, embedder, "migration invoices cents ledger", june_5_on, 10).hits
    assert hits and all((h.drawer.said_at or h.drawer.created_at) >= 1749081600 for h in hits)


def test_bm25_alone_answers_when_vectors_come_from_another_model(
    loaded: DrawerStore,
) -> None:
    result = search(loaded, HashingEmbedder("other"), "vacuum scale factor", DrawerFilter(), 3)
    assert result.hits and result.signals_used == ["bm25", "vector"]
    assert "reindex" in result.warnings[0]
    assert set(result.hits[0].signals) == {"bm25"}


def test_weights_choose_the_signals(loaded: DrawerStore, embedder: HashingEmbedder) -> None:
    bm25_only = search(loaded, embedder, "cents", DrawerFilter(), 5, Weights(vector=0))
    assert bm25_only.signals_used == ["bm25"]
    vectors_only = search(loaded, embedder, "cents", DrawerFilter(), 5, Weights(bm25=0))
    assert vectors_only.signals_used == ["vector"]


def test_a_query_spelled_with_combining_marks_finds_the_words_it_spells(
    ingestor: Ingestor, store: DrawerStore, embedder: HashingEmbedder
) -> None:
    import unicodedata

    text = "Amélie Poulain visited the Sérénité observatory"
    for form in ("NFC", "NFD"):  # the drawer in either spelling
        ingestor.ingest_content(unicodedata.normalize(form, text), options(), f"note-{form}")
    for form in ("NFC", "NFD"):  # the query in either spelling
        query = unicodedata.normalize(form, "Sérénité Amélie")
        assert query_terms(query) == ["sérénité", "amélie"]
        result = search(store, embedder, query, DrawerFilter(), 5, Weights(vector=0))
        assert len(result.hits) == 2, (form, [h.drawer.content for h in result.hits])


def test_a_word_with_a_dotted_capital_i_is_one_term_as_fts5_reads_it(
    ingestor: Ingestor, store: DrawerStore, embedder: HashingEmbedder
) -> None:
    ingestor.ingest_content("İzmir ofisi yarın kapalı", options(), "note-tr")
    for query in ("İzmir", "İZMİR", "I\u0307zmir", "izmir"):
        assert query_terms(query) == ["izmir"]
        result = search(store, embedder, query, DrawerFilter(), 5, Weights(vector=0))
        assert [h.drawer.source_file for h in result.hits] == ["note-tr"], query


@pytest.mark.parametrize(
    ("name", "body", "wing", "room", "reason"),
    [
        ("team", {}, "team", None, "explicit filters provided: team"),
        ("team", {"room": "a"}, "team", "a", "explicit filters provided: team/a"),
        (None, {"room": "a"}, None, "a", "explicit filters provided: room=a"),
        (None, {"workspaces": ["alpha"]}, "alpha", None, "explicit filters provided: alpha"),
        (
            None,
            {"workspaces": ["alpha", "beta"], "source_kind": "manual", "until": 100},
            None,
            None,
            "explicit filters provided: workspaces=alpha,beta source_kind=manual until=100",
        ),
        (
            None,
            {},
            None,
            None,
            "no explicit filters: every room searched, taxonomy matches boosted",
        ),
    ],
)
def test_a_hits_route_names_every_filter_that_held_the_search(
    name: str | None, body: dict, wing: str | None, room: str | None, reason: str
) -> None:
    from memhub_protocol.recall import SearchRequest
    from memhubd.service.recall import _route

    route = _route(name, SearchRequest.from_json({"query": "x", **body}))
    assert (route["wing"], route["room"], route["reason"]) == (wing, room, reason)


@pytest.mark.parametrize(
    "body",
    [
        {"room": ""},
        {"room": []},
        {"room": ","},
        {"source_kind": " "},
        {"identity": [","]},
        {"workspaces": []},
    ],
)
def test_a_search_filter_naming_nothing_is_refused_as_its_query_string_is(body) -> None:
    from memhub_protocol.errors import ProtocolError
    from memhub_protocol.recall import SearchRequest

    with pytest.raises(ProtocolError) as refused:
        SearchRequest.from_json({"query": "x", **body})
    assert refused.value.detail["field"] == next(iter(body))
