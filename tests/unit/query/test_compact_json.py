"""The API's compact encoding, made with one C encoder for the process, writes exactly
what `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` writes."""

from __future__ import annotations

import json
import threading

from memhubd.query.pack import compact_json

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
