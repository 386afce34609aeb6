"""A declaration's piece of an answer, written by orjson where that writes the same bytes,
is exactly `compact_json(declaration_dict(d))`: for the example workspaces, and for any
fields and type defaults (floats in defaults, lone surrogates, huge ints included)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compact_json import written_alike

from memhubd.model import Declaration, Workspace
from memhubd.query import pack
from memhubd.query.pack import compact_json, declaration_dict, declaration_json
from memhubd.schema import TypeRegistry
from memhubd.schema.descriptor import TypeDescriptor

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _reference(d: Declaration) -> bytes:
    value = declaration_dict(d)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@pytest.mark.parametrize("name", ["team-coding", "assistant", "writing", "broken"])
def test_every_example_declaration_is_written_as_json_dumps_writes_it(name: str) -> None:
    from memhubd.lang import parse_text

    documents = [
        parse_text(path.read_text(encoding="utf-8"), file=str(path))
        for path in sorted((EXAMPLES / name).rglob("*.mem"))
    ]
    ws = Workspace.from_documents(documents, TypeRegistry.standard())
    assert ws.declarations
    for d in ws.declarations:
        assert declaration_json(d) == _reference(d)


def test_a_type_with_a_float_default_is_written_by_the_standard_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    floats = TypeDescriptor(
        name="metric",
        runtime_role="assertion",
        defaults={"confidence": 1e-07, "lifecycle": {"ttl": float("nan")}},
    )
    plain = TypeDescriptor(name="note", runtime_role="assertion", defaults={"confidence": "low"})
    assert not floats.float_free and plain.float_free
    written: list[object] = []

    def standard(value: object) -> bytes:
        written.append(value)
        return compact_json(value)

    monkeypatch.setattr(pack, "compact_json", standard)
    d = Declaration("metric", "m", {"claim": "c"}, "a.mem", 1, None, floats)
    assert declaration_json(d) == _reference(d)
    assert b'"confidence":1e-07' in declaration_json(d)
    assert len(written) == 2
    d = Declaration("note", "n", {"claim": "c"}, "a.mem", 1, None, plain)
    assert declaration_json(d) == _reference(d)
    assert len(written) == 2  # orjson wrote it


def test_a_piece_takes_about_its_length_in_memory() -> None:
    import tracemalloc

    d = Declaration("fact", "f", {"claim": "x" * 300, "subject": "s"}, "a.mem", 1)
    declaration_json(d)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [declaration_json(d) for _ in range(100)]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # orjson's own bytes would keep the buffer it reserved: several KB each.
    assert held < 100 * (len(kept[0]) + 200)


# What a parsed field holds: strings (numbers too), lists and blocks.
_TEXT = st.text() | st.sampled_from(["\ud800", "a\udfffb", "\x7f\u2028\x00", '"\\/'])
_FIELDS = st.recursive(
    _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
# What a type pack's JSON may give a default.
_DEFAULTS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.sampled_from([1e-7, 1e16, float("nan"), float("inf")])
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
_NAMES = st.sampled_from(
    ["claim", "subject", "scope", "confidence", "lifecycle", "access_policy", "evidence",
     "force", "status", "as_of", "valid_until", "tags", "other"]
)


@settings(max_examples=300)
@given(
    fields=st.dictionaries(_NAMES, _FIELDS, max_size=8),
    defaults=st.dictionaries(_NAMES, _DEFAULTS, max_size=4),
    typed=st.booleans(),
)
def test_any_declaration_is_written_as_json_dumps_writes_it(
    fields: dict, defaults: dict, typed: bool
) -> None:
    descriptor = (
        TypeDescriptor(name="fact", runtime_role="assertion", defaults=defaults)
        if typed
        else None
    )
    d = Declaration("fact", "f", fields, "a.mem", 7, None, descriptor)
    written_alike(lambda: declaration_json(d), lambda: _reference(d))


def test_orjson_and_the_standard_encoder_differ_on_floats_only_as_guarded() -> None:
    # The reason for the guard: were it dropped, these would be written otherwise.
    assert orjson.dumps(1e-07) != json.dumps(1e-07).encode()
    assert orjson.dumps(float("nan")) != json.dumps(float("nan")).encode()
