"""The API's compact encoding, made with one C encoder for the process or by orjson
where that writes the same bytes, writes exactly what `json.dumps(...,
ensure_ascii=False, separators=(",", ":"))` writes."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhubd.query import pack
from memhubd.query.pack import compact_json, compact_text

VALUES = [
    {"id": "a.b", "claim": 'naïve ✓ \u2028 "quoted" \\ tab\t', "line": 3, "score": 0.125},
    [1, 2.5, -0.0, 1e16, 1e-7, float("inf"), float("nan"), True, False, None],
    {"nested": {"list": [{"k": []}, {}], "n": 12345678901234567890}},
    {1: "int key", 2.5: "float key", None: "null key", False: "bool key"},
    "a string alone",
    0.1 + 0.2,
    [],
    {},
]


def _reference(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_compact_json_matches_json_dumps() -> None:
    for value in VALUES:
        assert compact_json(value) == _reference(value)


def test_compact_json_refuses_what_json_dumps_refuses() -> None:
    for bad in (object(), {"set": {1, 2}}, {("tuple", "key"): 1}):
        try:
            _reference(bad)
        except TypeError as expected:
            try:
                compact_json(bad)
            except TypeError as error:
                assert type(error) is type(expected)
            else:
                raise AssertionError(f"{bad!r} was encoded")


def test_threads_may_share_the_encoder() -> None:
    value = {"claim": "x" * 1000, "items": list(range(200))}
    expected = _reference(value)
    seen: list[bool] = []

    def encode() -> None:
        seen.extend(compact_json(value) == expected for _ in range(200))

    threads = [threading.Thread(target=encode) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 800 and all(seen)


def test_every_code_point_is_escaped_as_json_dumps_escapes_it() -> None:
    text = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    assert compact_json(text) == _reference(text)
    assert compact_json({"k": text, text: [text]}) == _reference({"k": text, text: [text]})


def test_long_strings_are_written_by_orjson_and_the_rest_by_the_standard_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(value: object) -> str:
        raise AssertionError(f"the standard encoder wrote {value!r}")

    monkeypatch.setattr(pack, "_compact", refused)
    long = 'a "quoted" \\ line\n ✓ \u2028' * pack.LONG_TEXT
    assert compact_json(long) == _reference(long)
    assert compact_text(long) == _reference(long).decode("utf-8")
    too_short = "x" * (pack.LONG_TEXT - 1)
    for other in (too_short, {"claim": long}, [long], 1e-7, "\ud800" * pack.LONG_TEXT):
        with pytest.raises(AssertionError, match="the standard encoder wrote"):
            compact_json(other)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    # floats orjson would write otherwise (1e-7, null), drawn often
    | st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e-7, 1e-5, 1e16, 1e22])
    | st.text()
    # long strings, which orjson writes: a short text repeated past the threshold
    | st.builds(
        lambda text, extra: text * (pack.LONG_TEXT + extra),
        st.text(min_size=1, max_size=4),
        st.integers(0, 64),
    )
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        | st.dictionaries(st.integers() | st.booleans() | st.none(), inner, max_size=3)
    ),
    max_leaves=20,
)


def written_alike(encode: Callable[[], bytes], reference: Callable[[], bytes]) -> bytes | None:
    """Assert `encode()` gives `reference()`'s bytes, or fails as it does on a lone
    surrogate (no UTF-8 for either); the bytes, or None when both failed."""
    try:
        expected = reference()
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            encode()
        return None
    assert encode() == expected
    return expected


@given(_VALUES)
def test_any_json_value_is_written_as_json_dumps_writes_it(value: object) -> None:
    expected = written_alike(lambda: compact_json(value), lambda: _reference(value))
    if expected is not None:
        assert compact_text(value) == expected.decode("utf-8")


def test_a_long_string_takes_about_its_length_in_memory() -> None:
    import tracemalloc

    text = 'a "quoted" line\n' * 10_000
    compact_json(text)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        encoded = compact_json(text)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert encoded == _reference(text)
    assert held < 1.1 * len(encoded) + 4_096
