"""The workspace index: built once per workspace, per-file segments, bounded caches."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhubd.index import adopt_index, build_index, build_segment, index_for
from memhubd.index import workspace as index_workspace
from memhubd.index.workspace import TERM, WorkspaceIndex, _AliasMatcher
from memhubd.lang import parse_text
from memhubd.model import Workspace
from memhubd.query import build_evidence_pack
from memhubd.schema import TypeRegistry

SOURCES = {
    "a.mem": 'fact a1 { claim: "deploy on tuesday" }\nfact a2 { claim: "deploy again" }',
    "b.mem": 'fact b1 { claim: "deploy later" supersedes: a2 }',
}


def workspace(sources: dict[str, str] = SOURCES) -> Workspace:
    documents = [parse_text(text, file=name) for name, text in sources.items()]
    return Workspace.from_documents(documents, TypeRegistry.standard())


def test_index_is_built_once_per_workspace_and_rebuilt_after_new_documents() -> None:
    ws = workspace()
    first = index_for(ws)

    assert index_for(ws) is first
    assert index_for(workspace()) is not first

    ws.add_document(parse_text('fact c1 { claim: "deploy now" }', file="c.mem"))

    assert index_for(ws) is not first
    assert [s.declaration.name for s in build_evidence_pack(ws, "deploy").context] == [
        "a1",
        "b1",
        "c1",
    ]


def test_one_segment_per_file_and_supersession_across_files() -> None:
    ix = build_index(workspace())

    assert [len(s) for s in ix.segments] == [2, 1]
    assert ix.space.members(ix.bits(TERM, "deploy") & ix.pool) == [0, 8]  # a1, b1 (a2 hidden)


def test_an_index_composed_from_reused_segments_can_be_adopted() -> None:
    ws = workspace()
    segments = [build_segment(ws.declarations[:2]), build_segment(ws.declarations[2:])]

    assert adopt_index(ws, WorkspaceIndex(segments))
    assert index_for(ws).segments == tuple(segments)
    # An index over other declaration objects is refused.
    assert not adopt_index(ws, build_index(workspace()))


def test_posting_bitmaps_stay_correct_when_the_cache_evicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every key counts as common (keys of a few files are never cached)
    monkeypatch.setattr(index_workspace, "_RARE", 0)
    ix = build_index(workspace())
    ix._cache_budget = 1  # bytes: one bitmap at a time
    expected = {t: ix.bits(TERM, t) for t in ("deploy", "tuesday", "again", "later")}

    for term in ["tuesday", "deploy", "later", "again", "deploy"]:
        assert ix.bits(TERM, term) == expected[term]
    assert len(ix._cache) == 1


ALIAS_TEXT = st.text(alphabet="abc ", max_size=7)  # shorter and longer than a head


@given(st.lists(ALIAS_TEXT, max_size=12), st.text(alphabet="abc ", max_size=16))
def test_alias_lookup_by_substrings_equals_a_scan_of_all_aliases(
    aliases: list[str], query: str
) -> None:
    # Given an alias map (its insertion order is the trace's order)
    amap: dict[str, list[str]] = {}
    for n, alias in enumerate(aliases):
        amap.setdefault(alias, []).append(f"S{n}")
    matcher = _AliasMatcher(amap)

    # Then scanning every alias and looking up each substring of the query agree
    expected = [(alias, symbols) for alias, symbols in amap.items() if alias in query]
    assert matcher.scan(query) == expected
    assert matcher.lookup(query) == expected
    assert matcher.match(query) == expected


def test_a_derived_per_slot_structure_is_carried_to_the_next_index() -> None:
    # Given an index over three files and a per-slot structure derived from it
    ws = workspace({**SOURCES, "c.mem": 'fact c1 { claim: "deploy now" }'})
    segments = [build_segment(ws.declarations[:2]), *map(build_segment, _runs(ws)[1:])]
    first = WorkspaceIndex(segments)
    built: list[int] = []

    def slots_named(ix: WorkspaceIndex) -> list[str | None]:
        built.append(ix.space.size)
        return [None if d is None else d.name for d in ix.declarations]

    def carry(old: list[str | None], slots: index_workspace.SlotSplice) -> list[str | None]:
        return slots.list(old, "changed")

    before = first.derived("test.names", lambda: slots_named(first), carry)

    # When the middle file is edited and the index composed from the first one
    segments[1] = build_segment(
        workspace({"b.mem": 'fact b1 { claim: "x" }\nfact b2 { claim: "y" }'}).declarations
    )
    second = WorkspaceIndex(segments, previous=first)
    after = second.derived("test.names", lambda: slots_named(second), carry)

    # Then the unchanged files' slots are carried over and only the edited one's are not
    assert len(built) == 1
    assert before[:8] == after[:8] and before[-8:] == after[-8:]
    assert after[8:-8] == ["changed"] * (second.space.size - 16)


def test_a_derived_structure_that_cannot_be_carried_is_built_anew() -> None:
    ws = workspace()
    first = build_index(ws)
    first.derived("test.count", lambda: 1, lambda old, slots: old + 1)

    second = WorkspaceIndex(first.segments, previous=first)

    assert second.derived("test.count", lambda: 10, lambda old, slots: None) == 10


def _runs(ws: Workspace) -> list[list]:
    out: list[list] = []
    for decl in ws.declarations:
        if out and out[-1][0].file == decl.file:
            out[-1].append(decl)
        else:
            out.append([decl])
    return out


def test_cached_bitmaps_are_charged_as_allocated_and_stay_within_their_bound() -> None:
    # Thirty words, each in every one of 100 files (more than a rare key's holders), so
    # each word's bitmap is cached and all are the same size, as are their keys.
    sources = {
        f"f{n:03d}.mem": "\n".join(
            f'fact f{n}d{k} {{ claim: "word{k:02d} is said here" }}' for k in range(30)
        )
        for n in range(100)
    }
    ix = build_index(workspace(sources))
    first = ix.bits(TERM, "word00")
    one = sys.getsizeof(first) + sys.getsizeof("word00") + index_workspace._ENTRY_OVERHEAD
    assert index_workspace._cost("word00", first) == one
    ix._cache_budget = 15 * one
    ix._cache.clear()
    ix._cache_bytes = 0

    for k in range(30):
        ix.bits(TERM, f"word{k:02d}")

    assert ix._cache_bytes == sum(index_workspace._cost(k, b) for (_t, k), b in ix._cache.items())
    assert len(ix._cache) == 15 and ix._cache_bytes <= ix._cache_budget
    assert list(ix._cache) == [(TERM, f"word{k:02d}") for k in range(15, 30)]


def test_words_found_nowhere_are_not_kept_and_a_long_word_is_charged_its_length() -> None:
    # A caller's distinct words must not fill the cache: one found nowhere is answered
    # again by a lookup, and one found is charged for its key as well as its bitmap.
    long_word = "x" * 20_000
    sources = {
        f"f{n:03d}.mem": f'fact f{n} {{ claim: "common {long_word}" }}' for n in range(100)
    }
    ix = build_index(workspace(sources))
    ix._cache.clear()
    ix._cache_bytes = 0
    for n in range(500):
        assert ix.bits(TERM, f"{n}{'y' * 20_000}") == 0
    assert len(ix._cache) == 0 and ix._cache_bytes == 0
    found = ix.bits(TERM, long_word)
    assert found and ix._cache_bytes >= 20_000
