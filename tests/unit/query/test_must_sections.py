"""A MUST layer's joined JSON and text are kept per snapshot for the tuple the engine
hands back, and equal what joining the pieces again gives."""

from __future__ import annotations

from types import SimpleNamespace

from workspace_loading import Loader

from memhubd.query import build_evidence_pack
from memhubd.query.pack import declaration_json, join_pieces, must_text
from memhubd.service import encoding

RULES = (
    "\n".join(
        f'boundary rule.r{n} {{ rule: "Rule {n} of the release train" scope: release }}'
        for n in range(40)
    )
    + '\nfact train { claim: "The release train leaves weekly" scope: release }\n'
)


class FakeSnapshot:
    def __init__(self, workspace: object) -> None:
        self.workspace = workspace


def counting(join):  # noqa: ANN001, ANN201
    calls = []

    def counted(items):  # noqa: ANN001, ANN202
        calls.append(len(items))
        return join(items)

    return counted, calls


def test_a_must_layer_met_again_is_joined_once_per_snapshot(load: Loader) -> None:
    ws = load(RULES)
    snapshot = FakeSnapshot(ws)
    piece = encoding.pieces(snapshot, "query", declaration_json)
    join, calls = counting(lambda must: join_pieces(must, piece))

    first = build_evidence_pack(ws, "release train")
    second = build_evidence_pack(ws, "weekly train")
    a = b"".join(first.json_parts(piece, None, encoding.sections(snapshot, "query", join)))
    b = b"".join(second.json_parts(piece, None, encoding.sections(snapshot, "query", join)))

    assert first.must is second.must and len(first.must) == 40
    assert calls == [40]
    assert a == b"".join(first.json_parts(piece))
    assert b == b"".join(second.json_parts(piece))


def test_the_text_section_equals_the_plain_rendering(load: Loader) -> None:
    ws = load(RULES)
    snapshot = FakeSnapshot(ws)
    pack = build_evidence_pack(ws, "release train")
    section = encoding.sections(snapshot, "text", must_text)

    assert pack.render_text(section) == pack.render_text()
    assert pack.render_text(section) == pack.render_text()  # from the kept section


def test_lists_and_short_layers_are_joined_every_time() -> None:
    snapshot = FakeSnapshot(SimpleNamespace(declarations=[]))
    join, calls = counting(lambda items: ",".join(items))
    section = encoding.sections(snapshot, "text", join)
    long_list = ["x"] * 40
    short = ("x",) * 3

    section(long_list), section(long_list), section(short), section(short)

    assert calls == [40, 40, 3, 3]


def test_kept_sections_stay_within_their_byte_bound(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(encoding, "SECTION_BYTES", 10_000)
    snapshot = FakeSnapshot(SimpleNamespace(declarations=[]))
    section = encoding.sections(snapshot, "text", lambda items: "y" * 2_000)
    layers = [tuple(str(n) for n in range(40 + k)) for k in range(10)]

    for layer in layers:
        section(layer)

    store, _owned = encoding._store(snapshot)
    assert store.section_bytes <= 10_000
    assert len(store.sections) < len(layers)


def test_a_kept_text_section_is_charged_as_allocated(monkeypatch) -> None:  # noqa: ANN001
    # 2,000 characters of one wide character take 8,000 bytes, not 2,000: a 40,000-byte
    # bound keeps four such sections of six, not all six.
    monkeypatch.setattr(encoding, "SECTION_BYTES", 40_000)
    snapshot = FakeSnapshot(SimpleNamespace(declarations=[]))
    section = encoding.sections(snapshot, "text", lambda items: "\U0001f512" * 2_000)

    for k in range(6):
        section(tuple(str(n) for n in range(40 + k)))

    store, _owned = encoding._store(snapshot)
    assert store.section_bytes <= 40_000
    assert len(store.sections) == 4
