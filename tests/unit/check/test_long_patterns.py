"""A guard pattern longer than `CACHED_PATTERN_CHARS` is compiled when used and kept by
no cache (ours, `re`'s, `regex`'s), with the same verdicts as a short one."""

from __future__ import annotations

import gc
import random
import re
import string
import tracemalloc

from memhubd import compiled
from memhubd.check import patterns, re_sandbox
from memhubd.lint import declaration_checks

LONG = compiled.CACHED_PATTERN_CHARS + 1
SLACK_S = 30.0  # a search's time limit here: these tests are not about time


def words(count: int, seed: int) -> str:
    chance = random.Random(seed)
    return "".join(chance.choice(string.ascii_lowercase) for _ in range(count))


def held_after(make) -> int:  # noqa: ANN001 - a no-argument callable
    """Bytes still allocated once `make()` ran and its result was dropped."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        make()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_long_pattern_is_not_left_compiled_in_a_cache() -> None:
    pattern = words(50_000, 1)  # compiled, about ten times that
    assert held_after(lambda: compiled.re_compile(pattern).search(pattern)) < 50_000
    assert held_after(lambda: patterns.regex_error(pattern + "x")) < 50_000
    assert held_after(lambda: declaration_checks.regex_error(pattern + "y")) < 50_000
    # The searches' time is not what is tested: a loaded machine gets all it needs.
    patterns.search(pattern + "w", "the helper processes started before measuring", SLACK_S)
    assert held_after(lambda: patterns.search(pattern + "z", "no match here", SLACK_S)) < 50_000
    # A short one is kept as before, a long one not.
    for check in (patterns.regex_error, declaration_checks.regex_error):
        before = check.cache_info().currsize  # type: ignore[attr-defined]
        check(words(50, 2))
        check(words(LONG, 3))
        assert check.cache_info().currsize == before + 1  # type: ignore[attr-defined]


def test_long_patterns_get_the_verdicts_of_short_ones() -> None:
    for pattern in ("(" * 5 + "a" * LONG, "a" * LONG + "[", "[" + "b" * LONG + "]"):
        try:
            re.compile(pattern)
        except re.error as error:
            expected = str(error)
        else:
            expected = None
        assert patterns.regex_error(pattern) == expected
        assert declaration_checks.regex_error(pattern) == expected
    long_literal = "deploy" + "x?" * (LONG // 2)
    assert patterns.search(long_literal, "We DEPLOY on fridays", SLACK_S)
    assert not patterns.search(long_literal, "we ship on fridays", SLACK_S)
    assert patterns.search(long_literal, "") is (
        re.search(long_literal, "", patterns.FLAGS) is not None
    )


def test_the_sandbox_answers_long_patterns() -> None:
    pattern = "(?i)" + "release" + "(?:x)?" * (LONG // 6)
    assert re_sandbox.search(pattern, "a Release today", 0, 10.0)
    assert not re_sandbox.search(pattern, "nothing today", 0, 10.0)
