"""Guard patterns compiled without keeping long ones: the caches of compiled patterns
(`re`'s and ours) are bounded by count, and a pattern may be as long as a proposal
(`limits.max_body_bytes`, 1 MiB), its compiled form about ten times that. A pattern
longer than `CACHED_PATTERN_CHARS` is compiled each time it is used and kept by no
cache (`memhubd.check.patterns` runs it on `re` alone); real guards are far shorter and
are cached as before."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TypeVar

CACHED_PATTERN_CHARS = 4096

T = TypeVar("T")

# `re.compile` without its module cache (present in CPython 3.11 to 3.14; without it, a
# long pattern is compiled and then dropped from the cache).
_UNCACHED = getattr(getattr(re, "_compiler", None), "compile", None)


def re_compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`; a long pattern is not left in `re`'s cache."""
    if len(pattern) <= CACHED_PATTERN_CHARS:
        return re.compile(pattern, flags)
    if _UNCACHED is not None:
        return _UNCACHED(pattern, int(flags))  # type: ignore[no-any-return]
    compiled = re.compile(pattern, flags)
    re.purge()
    return compiled


def cached_when_short(maxsize: int) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """`functools.lru_cache(maxsize)` for patterns up to `CACHED_PATTERN_CHARS` long;
    a longer one is computed on each call and not kept."""

    def wrap(function: Callable[[str], T]) -> Callable[[str], T]:
        cached = functools.lru_cache(maxsize=maxsize)(function)

        @functools.wraps(function)
        def call(pattern: str) -> T:
            if len(pattern) <= CACHED_PATTERN_CHARS:
                return cached(pattern)
            return function(pattern)

        call.cache_info = cached.cache_info  # type: ignore[attr-defined]
        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return call

    return wrap
