"""The MUST layer is worked out once per distinct set of rules and reused, without
changing any answer: CONFLICT and MISSING still depend on the query's own hits."""

from __future__ import annotations

from workspace_loading import Loader

from memhubd.index import adopt_index, build_segment
from memhubd.index.workspace import WorkspaceIndex
from memhubd.model import Workspace
from memhubd.query import build_evidence_pack
from memhubd.query.reference import build_evidence_pack_linear

RULES = """
    boundary rule.freeze { rule: "Freeze deploys during audits" scope: release
                           conflicts_with: "fact:deploy.friday" }
    boundary rule.review { rule: "Every deploy is reviewed" scope: release }
    fact deploy.tuesday { claim: "Deploys happen on Tuesday" scope: release }
    fact deploy.friday { claim: "Hotfix deploys happen on Friday" scope: release
                         conflicts_with: rule.review }
    fact audit.window { claim: "Audits run in March" scope: release }
"""


def test_queries_meeting_the_same_must_set_share_one_layer(load: Loader) -> None:
    # Given two questions whose hits share one scope
    ws = load(RULES)

    # When both are asked
    first = build_evidence_pack(ws, "tuesday")
    second = build_evidence_pack(ws, "audits march")

    # Then their MUST layers are one object, in workspace order
    assert first.must is second.must
    assert [d.id for d in first.must] == ["boundary:rule.freeze", "boundary:rule.review"]


def test_conflicts_of_a_reused_must_layer_follow_each_querys_hits(load: Loader) -> None:
    ws = load(RULES)

    # Given a MUST layer first met by a query that does not select the Friday fact
    without = build_evidence_pack(ws, "tuesday")
    # When a query selecting it meets the same layer
    with_friday = build_evidence_pack(ws, "friday hotfix")

    # Then only the second answer lists the rule's conflict with that fact, and the
    # fact's own conflict with a MUST rule comes after the MUST layer's
    assert without.must is with_friday.must
    assert [(d.id, t) for d, t in without.conflicts] == []
    assert [(d.id, t) for d, t in with_friday.conflicts] == [
        ("boundary:rule.freeze", "fact:deploy.friday"),
        ("fact:deploy.friday", "rule.review"),
    ]


def test_reused_layers_answer_as_the_linear_reference_does(load: Loader) -> None:
    ws = load(RULES)
    for query in ["tuesday", "friday hotfix", "audits", "tuesday", "deploys", "friday"]:
        for subject in (None, "Nobody"):
            fast = build_evidence_pack(ws, query, subject=subject)
            slow = build_evidence_pack_linear(ws, query, subject=subject)
            assert fast.as_dict() == slow.as_dict()


def test_kept_layers_stay_within_their_byte_bound(load: Loader, monkeypatch) -> None:  # noqa: ANN001
    from memhubd.index.workspace import index_for
    from memhubd.query import engine
    from memhubd.query.layers import must_layer

    # Given five scopes of two rules each, and a bound of four and a half such layers
    scopes = ("alpha", "beta", "gamma", "delta", "epsilon")
    ws = load(
        "\n".join(
            f'boundary rule.{s} {{ rule: "Rule of {s}" scope: {s} }}\n'
            f'boundary more.{s} {{ rule: "More of {s}" scope: {s} }}\n'
            f'fact note.{s} {{ claim: "A note about {s}" scope: {s} }}'
            for s in scopes
        )
    )
    two = [d for d in ws.declarations if d.id in ("rule.alpha", "more.alpha")]
    one = engine._layer_cost(bytes(16), must_layer(two))
    monkeypatch.setattr(engine, "MUST_LAYER_BYTES", 4 * one + one // 2)

    # When queries meet five different layers
    packs = [build_evidence_pack(ws, s) for s in scopes]

    # Then the last four are kept, and every answer is still the reference's
    kept = engine._LAYERS[index_for(ws)]
    assert len(kept.by_slots) == 4
    assert kept.layer_bytes == sum(engine._layer_cost(k, v) for k, v in kept.by_slots.items())
    assert kept.layer_bytes <= engine.MUST_LAYER_BYTES
    for s, pack in zip(scopes, packs, strict=True):
        assert len(pack.must) == 2
        assert pack.as_dict() == build_evidence_pack_linear(ws, s).as_dict()


def test_a_layer_is_charged_what_it_holds() -> None:
    # Its key (8 bytes a rule) and its tuples and sets as allocated; not the rules, which
    # belong to the snapshot.
    import tracemalloc

    from memhubd.query import engine
    from memhubd.query.layers import must_layer

    for count in (3, 300, 3_000):
        rules = [object() for _ in range(count)]
        facts = [(f"rule.{n}", f"name{n}", f"Subject{n % 7}", ()) for n in range(count)]
        key = bytes(8 * count)
        must_layer(rules, facts)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            layer = must_layer(rules, facts)
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        cost = engine._layer_cost(key, layer)
        assert held + len(key) <= cost <= held + len(key) + 2 * engine._LAYER_OVERHEAD


def test_remembered_scope_constraints_are_the_indexs_and_stay_within_their_bound(
    load: Loader, monkeypatch
) -> None:
    from memhubd.index.workspace import SCOPE, SUBJECT, index_for
    from memhubd.query import engine

    # Given a bound that holds about one remembered key
    monkeypatch.setattr(engine, "CONSTRAINT_SLOTS_BYTES", 250)
    ws = load(RULES)
    ix = index_for(ws)

    # When queries meet the same scope again and again
    for query in ["tuesday", "audits", "friday hotfix", "tuesday"]:
        fast = build_evidence_pack(ws, query)
        assert fast.as_dict() == build_evidence_pack_linear(ws, query).as_dict()

    # Then what is remembered is the index's own answer, within the bound
    layers = engine._layers(ix)
    assert layers.constraints
    assert layers.constraint_bytes <= 250
    for (table, key), slots in layers.constraints.items():
        assert table in (SCOPE, SUBJECT)
        assert slots.tolist() == ix.space.members(ix.constraint_bits(table, key))


def test_rules_kept_per_slot_follow_a_one_file_edit_that_moves_the_slots(load: Loader) -> None:
    # Given an index whose queries read the rules of three files
    texts = {
        "a.mem": 'boundary a.rule { rule: "Tag every release" scope: release }',
        "b.mem": 'fact b.note { claim: "Releases ship weekly" scope: release }',
        "c.mem": """
            boundary c.freeze { rule: "Freeze deploys during audits" scope: release
                                conflicts_with: "fact:c.audit" }
            fact c.audit { claim: "Audits run in March" scope: release }
        """,
    }
    before = load(texts)
    files = [tuple(d for d in before.declarations if d.file == name) for name in texts]
    segments = [build_segment(declarations) for declarations in files]
    index = WorkspaceIndex(segments)
    assert adopt_index(before, index)
    for query in ["weekly", "audits march"]:
        build_evidence_pack(before, query)

    # When the middle file gains a rule, so that the last file's slots move, and the
    # index is updated from the one that read them (the other files kept as they were)
    # (past 8 declarations: a file's slots take whole bytes)
    more = [f'boundary b.more{n} {{ rule: "Sign the tags" scope: release }}' for n in range(8)]
    edited = "\n".join([texts["b.mem"], *more])
    files[1] = tuple(load({"b.mem": edited}).declarations)
    segments[1] = build_segment(files[1])
    after = Workspace([d for f in files for d in f], list(texts), before.registry)
    updated = WorkspaceIndex(segments, previous=index)
    assert adopt_index(after, updated)

    # Then its answers are the linear reference's, the new rule and conflict included
    for query in ["audits march", "weekly", "tags"]:
        answer = build_evidence_pack(after, query)
        assert answer.as_dict() == build_evidence_pack_linear(after, query).as_dict()
    assert "boundary:b.more0" in [d.id for d in build_evidence_pack(after, "audits").must]
