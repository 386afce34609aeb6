"""Triples derived from declarations: subjects and declared relations (top level and
in `relations { }`), validity from the lifecycle, retired when no longer agreed, one
cached tuple per workspace that goes away with it."""

from __future__ import annotations

import datetime as dt
import gc

from memhubd.graph import derived_facts, is_derived_id
from memhubd.graph.derived import cached_workspaces, end_of, epoch_of
from memhubd.lang import parse_text
from memhubd.model import Workspace
from memhubd.schema import TypeRegistry

SOURCE = """
module team.decisions

decision queue.redis {
  subject: Service.Tide
  decision: "Use Redis."
  status: superseded
}

decision queue.nats {
  subject: Service.Tide
  decision: "Use NATS."
  supersedes: "decision:queue.redis"
  depends_on: [infra.cluster, infra.dns]
  lifecycle { status: active as_of: 2026-10-28 valid_until: 2027-01-01 }
}

decision api.path {
  decision: "Version in the path."
  relations { conflicts_with: "decision:api.header" part_of: api.design }
}
"""


def workspace(text: str = SOURCE) -> Workspace:
    return Workspace.from_documents([parse_text(text, file="d.mem")], TypeRegistry.standard())


def edges(ws: Workspace) -> list[tuple[str, str, str]]:
    return [(f.subject, f.predicate, f.object) for f in derived_facts(ws)]


def test_subjects_and_relations_become_triples_carrying_their_declaration() -> None:
    ws = workspace()
    assert edges(ws) == [
        ("decision:queue.redis", "about", "Service.Tide"),
        ("decision:queue.nats", "about", "Service.Tide"),
        ("decision:queue.nats", "supersedes", "decision:queue.redis"),
        ("decision:queue.nats", "depends_on", "infra.cluster"),
        ("decision:queue.nats", "depends_on", "infra.dns"),
        ("decision:api.path", "conflicts_with", "decision:api.header"),
        ("decision:api.path", "part_of", "api.design"),
    ]
    facts = derived_facts(ws)
    assert all(is_derived_id(f.id) and f.derived and f.file == "d.mem" for f in facts)
    assert facts[2].source_declaration == "decision:queue.nats"


def test_validity_comes_from_the_lifecycle_and_superseded_ones_are_retired() -> None:
    facts = derived_facts(workspace())
    redis, nats = facts[0], facts[1]
    assert redis.retired and not redis.valid_at(epoch_of("2026-11-01") or 0)
    assert (nats.valid_from, nats.valid_to) == (epoch_of("2026-10-28"), epoch_of("2027-01-02"))
    assert nats.valid_at(epoch_of("2026-10-28") or 0)
    # A valid_until date is still current on its day, as memdsl's lint reads it (stale
    # only once the day is past); the period ends at the next midnight, exclusive.
    assert nats.valid_at(epoch_of("2027-01-01T23:59:59Z") or 0)
    assert not nats.valid_at(epoch_of("2027-01-02") or 0)
    assert not nats.valid_at(epoch_of("2026-10-27") or 0)
    assert facts[5].valid_from is None and facts[5].valid_at(0)


def test_ids_are_stable_across_snapshots_and_differ_per_declaration() -> None:
    first, second = derived_facts(workspace()), derived_facts(workspace())
    assert [f.id for f in first] == [f.id for f in second]
    assert len({f.id for f in first}) == len(first)
    assert first[0].id != first[1].id  # same edge shape, another declaration


def test_the_cache_holds_one_entry_per_live_workspace_only() -> None:
    gc.collect()
    before = cached_workspaces()
    ws = workspace()
    assert derived_facts(ws) is derived_facts(ws)
    assert cached_workspaces() == before + 1
    for _ in range(20):  # as many reloads
        derived_facts(workspace())
    del ws
    gc.collect()
    assert cached_workspaces() == before


def test_a_valid_until_date_time_ends_at_itself_and_a_date_with_its_day() -> None:
    assert end_of("2027-01-01") == epoch_of("2027-01-02")
    assert end_of("2027-01-01Z") == epoch_of("2027-01-02")
    assert end_of("2027-01-01T12:00:00Z") == epoch_of("2027-01-01T12:00:00Z")
    assert end_of("2027-01-01 12:00") == epoch_of("2027-01-01T12:00:00Z")
    assert end_of(dt.date(2027, 1, 1)) == epoch_of("2027-01-02")
    assert end_of(dt.datetime(2027, 1, 1, 12, tzinfo=dt.UTC)) == epoch_of("2027-01-01T12:00Z")
    assert end_of("2026-13-01") is None and end_of(None) is None
