"""The answer cache is bounded by bytes and drops the least recently used answer first,
and a replaced snapshot's answers as soon as it is gone; `dumps` splices
already-encoded values into the API's own encoding."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable

from memhubd.mcp.kept import KEEP_MIN_CHARS, KeptTexts, keepable
from memhubd.service.encoding import (
    AnswerCache,
    QueryAnswer,
    Raw,
    dumps,
    dumps_text,
    snapshot_serial,
)


def answer(key: str, size: int) -> QueryAnswer:
    return QueryAnswer(
        key=key,
        body=b"x" * size,
        text="",
        tag=f'"{key}"',
        generation=1,
        health="healthy",
        counts={"must": 0, "should": 0, "context": 0, "conflicts": 0},
        missing=[],
        excluded_total=0,
    )


def test_the_least_recently_used_answer_goes_first_when_bytes_run_out() -> None:
    cache = AnswerCache(max_bytes=10_000)
    for key in "abcd":
        cache.put(key, answer(key, 1_500))  # about 2,000 bytes each, with the overhead

    cache.get("a")  # a is now the most recently used
    cache.put("e", answer("e", 1_500))

    assert cache.used <= cache.max_bytes
    assert cache.get("b") is None
    assert all(cache.get(key) is not None for key in "acde")


def test_an_answer_larger_than_a_quarter_of_the_cache_is_not_kept() -> None:
    cache = AnswerCache(max_bytes=10_000)

    cache.put("big", answer("big", 3_000))

    assert cache.get("big") is None and cache.used == 0


def test_a_compressed_copy_counts_and_only_for_a_cached_answer() -> None:
    cache = AnswerCache(max_bytes=10_000)
    kept, loose = answer("kept", 1_000), answer("loose", 1_000)
    cache.put("kept", kept)
    before = cache.used

    cache.attach_gzip(kept, b"z" * 100)
    cache.attach_gzip(loose, b"z" * 100)

    assert kept.gzipped == b"z" * 100 and cache.used == before + 100
    assert loose.gzipped is None


def test_refusals_are_remembered_within_their_bound() -> None:
    cache = AnswerCache(max_bytes=10_000)
    for n in range(AnswerCache.MAX_REFUSALS + 5):
        cache.note_refusal(n, n)

    assert cache.refused_size(0) is None
    assert cache.refused_size(AnswerCache.MAX_REFUSALS + 4) == AnswerCache.MAX_REFUSALS + 4


def test_raw_values_are_spliced_into_the_api_encoding() -> None:
    inner = {"must": [{"id": "a", "claim": "é ✓"}], "score": 0.125}
    payload = {"ok": True, "pack": Raw(dumps(inner)), "text": "naïve"}

    expected = json.dumps({**payload, "pack": inner}, ensure_ascii=False, separators=(",", ":"))
    assert dumps(payload) == expected.encode("utf-8")
    assert dumps_text(payload) == expected


class FakeSnapshot:
    """Stands for a served snapshot: only its identity and lifetime matter here."""


def test_answers_of_a_snapshot_that_is_gone_are_dropped_at_the_next_put() -> None:
    cache = AnswerCache(max_bytes=1_000_000)
    old, new = FakeSnapshot(), FakeSnapshot()
    old_keys = [(snapshot_serial(old), (), f"q{n}") for n in range(5)]
    for key in old_keys:
        cache.put(key, answer(str(key), 1_000))
    alive = (snapshot_serial(new), (), "q0")
    cache.put(alive, answer("alive", 1_000))
    assert all(cache.get(key) is not None for key in old_keys)  # its snapshot still lives

    del old
    gc.collect()
    cache.put((snapshot_serial(new), (), "q1"), answer("next", 1_000))

    assert all(cache.get(key) is None for key in old_keys)
    assert cache.get(alive) is not None
    assert cache.used == 2 * answer("x", 1_000).cost


def test_kept_mcp_texts_of_a_snapshot_that_is_gone_are_dropped_too() -> None:
    texts = KeptTexts(max_bytes=1_000_000)
    old, new = FakeSnapshot(), FakeSnapshot()
    text = keepable("x" * KEEP_MIN_CHARS)
    assert text is not None
    old_key = ((snapshot_serial(old), (), "q"), "memory_query")
    texts.put(old_key, text)

    del old
    gc.collect()
    texts.put(((snapshot_serial(new), (), "q"), "memory_query"), text)

    assert texts.get(old_key) is None and len(texts) == 1


def _allocated(make: Callable[[], object]) -> int:
    """Bytes the allocator still holds for what `make()` returned (traced while made)."""
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert made is not None
    return held


def test_a_kept_text_holds_about_its_length_in_memory() -> None:
    # The budget counts what is written: bytes keeping a larger reserved buffer would let
    # a full cache hold several times its budget (orjson's reserve is about seven times).
    text = json.dumps({"claims": ['a "quoted" claim, escaped'] * 4_000})
    assert len(text) > 100_000
    keepable(text)  # encoders' one-time set-up out of the measure
    held = _allocated(lambda: keepable(text))
    kept = keepable(text)
    assert kept is not None and kept.escaped == json.dumps(text).encode("ascii")
    assert held < 1.1 * len(kept.escaped) + 4_096


def test_an_answers_text_is_charged_as_allocated() -> None:
    import dataclasses

    plain = answer("plain", 100)
    wide = dataclasses.replace(plain, text="\U0001f512" * 1_000)  # 4 bytes a character
    narrow = dataclasses.replace(plain, text="a" * 1_000)
    assert wide.cost - plain.cost >= 4_000
    assert 1_000 <= narrow.cost - plain.cost < 1_100
