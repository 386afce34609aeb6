"""Guard regexes run with a time bound, and still mean what Python's `re` says."""

from __future__ import annotations

import contextlib
import re
import time
import warnings

from hypothesis import given
from hypothesis import strategies as st
from workspace_loading import Loader

from memhubd.check import check_compliance, patterns

# Backtracks exponentially on both engines for a long run of "a" not followed by "!".
CATASTROPHIC = "(a|aa)+$"
HOSTILE = "a" * 60 + "!"


def guarded(field: str, *patterns_: str, extra: str = "") -> str:
    listed = ", ".join('"' + p.replace("\\", "\\\\") + '"' for p in patterns_)
    return f'boundary r {{ rule: "r" scope: global guard {{ {field}: [{listed}] {extra} }} }}'


def test_a_runaway_deny_pattern_times_out_into_needs_review(load: Loader) -> None:
    ws = load(guarded("deny_regex", CATASTROPHIC))

    started = time.perf_counter()
    pack = check_compliance(ws, "t", HOSTILE, regex_timeout=0.05)

    assert time.perf_counter() - started < 2
    assert pack.verdict == "needs_review"
    assert pack.unknowns[0]["reason"] == f"guard regex timed out: deny_regex={CATASTROPHIC!r}"
    assert pack.evaluated[0]["status"] == "needs_review"


def test_a_definite_violation_still_blocks_when_another_pattern_times_out(
    load: Loader,
) -> None:
    ws = load(guarded("deny_regex", CATASTROPHIC, extra="deny_any: [aaa]"))

    pack = check_compliance(ws, "t", HOSTILE, regex_timeout=0.05)

    assert pack.verdict == "block"
    assert pack.violations[0]["matched"] == ["aaa"]


def test_a_required_pattern_that_matched_outweighs_one_that_timed_out(load: Loader) -> None:
    # The budget is the whole check's: the quick pattern comes first, so it still runs.
    ws = load(guarded("require_regex", "!$", CATASTROPHIC))

    pack = check_compliance(ws, "t", HOSTILE, regex_timeout=0.05)

    assert (pack.verdict, pack.evaluated[0]["status"]) == ("allow", "passed")


def test_a_timed_out_required_pattern_is_not_reported_missing(load: Loader) -> None:
    ws = load(guarded("require_regex", CATASTROPHIC))

    pack = check_compliance(ws, "t", HOSTILE, regex_timeout=0.05)

    assert pack.violations == []
    assert pack.unknowns[0]["reason"].startswith("guard regex timed out: require_regex=")


def test_syntax_the_regex_engine_reads_differently_keeps_its_re_meaning() -> None:
    # `{e<=1}` is fuzzy matching to `regex` but literal text to `re`; POSIX classes too.
    assert patterns.search("a{e<=1}", "a{e<=1}")
    assert not patterns.search("a{e<=1}", "b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert patterns.search("[[:alpha:]]", ":") == bool(re.search("[[:alpha:]]", ":"))


# Patterns without nested quantifiers, so that `re` itself always finishes.
ATOMS = [
    "a", "i", "k", "s", "I", ".", r"\w", r"\W", r"\d", r"\s", r"\S", r"\b", r"\B", "^", "$",
    "[a-c]", "[^a-c]", "[^i]", " ", "_", "1", "(?-i:k)", r"(\w)\1",
    r"(?=a)", r"(?<!b)", "{", "{,}", "a{2}",
]  # fmt: skip
QUANTIFIERS = ["", "", "*", "+", "?", "{1,2}", "*?", "++"]
GLOBAL_FLAGS = ["", "", "(?s)", "(?a)", "(?x)"]
CHARACTERS = "abiksIKS 1_-.\n\t\x1cİıſK²٣é丂\u2003\u00a0€ß"


@given(
    st.sampled_from(GLOBAL_FLAGS),
    st.lists(st.tuples(st.sampled_from(ATOMS), st.sampled_from(QUANTIFIERS)), max_size=4),
    st.text(alphabet=CHARACTERS, max_size=8),
)
def test_bounded_search_agrees_with_re(
    flags: str, pieces: list[tuple[str, str]], text: str
) -> None:
    pattern = flags + "".join(atom + quantifier for atom, quantifier in pieces)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if patterns.regex_error(pattern) is not None:
            return
        expected = re.search(pattern, text, re.IGNORECASE | re.MULTILINE) is not None

    assert patterns.search(pattern, text, timeout=1.0) == expected


# One pattern per form that only `re` itself can be trusted with, each backtracking
# exponentially on a long run of "a" that cannot end the way the pattern wants.
DIVERGENT_CATASTROPHIC = [
    r"(\x61+)+$",
    r"(\u0061+)+$",
    r"(\N{LATIN SMALL LETTER A}+)+$",
    r"(a+)+(?P<end>!)(?P=end)",
    r"((?:a|[:])+)+$",
    r"((?:a|{)+)+$",
    r"(?u)(a+)+$",
    r"(a+)+é",
]
HOSTILE_A = "a" * 40 + "!"


def test_every_divergent_form_is_bounded_in_time() -> None:
    for pattern in DIVERGENT_CATASTROPHIC:
        assert patterns.regex_error(pattern) is None, pattern
        assert patterns._bounded(pattern) is None, pattern  # it takes the `re` path

        started = time.perf_counter()
        try:
            patterns.search(pattern, HOSTILE_A, timeout=0.1)
        except patterns.GuardRegexTimeout:
            pass
        else:
            raise AssertionError(f"{pattern!r} finished a search that takes years")
        assert time.perf_counter() - started < 10, pattern  # a hang guard, not a speed test


def test_divergent_patterns_keep_re_meaning_after_a_timeout() -> None:
    # A killed helper is replaced: later searches still answer exactly as `re` does.
    with contextlib.suppress(patterns.GuardRegexTimeout):
        patterns.search(r"(\x61+)+$", HOSTILE_A, timeout=0.05)
    for pattern, text in [(r"\x61b", "xAB"), (r"\u00e9t\u00e9", "ÉTÉ"), (r"(a)\1", "aA")]:
        expected = re.search(pattern, text, patterns.FLAGS) is not None
        assert patterns.search(pattern, text, timeout=5.0) == expected


def test_the_time_budget_covers_the_whole_check(load: Loader, monkeypatch) -> None:
    from memhubd.check import re_sandbox

    started_searches = []
    real_search = re_sandbox.search

    def counting(pattern: str, text: str, flags: int, timeout: float) -> bool:
        started_searches.append(pattern)
        return real_search(pattern, text, flags, timeout)

    monkeypatch.setattr(re_sandbox, "search", counting)
    rules = [
        f'boundary r{i} {{ rule: "r{i}" scope: global guard {{ deny_regex: ["{p}"] }} }}'.replace(
            "\\", "\\\\"
        )
        for i, p in enumerate(DIVERGENT_CATASTROPHIC[:4])
    ]
    ws = load("\n".join(rules))

    pack = check_compliance(ws, "t", HOSTILE_A, regex_timeout=0.2)

    # The first runaway search spends the budget; the others are not even started,
    # and every undecided guard is named for review.
    assert started_searches == [DIVERGENT_CATASTROPHIC[0]]
    assert pack.verdict == "needs_review"
    assert [u["reason"] for u in pack.unknowns] == [
        f"guard regex timed out: deny_regex={p!r}" for p in DIVERGENT_CATASTROPHIC[:4]
    ]


@given(st.sampled_from([r"\x61", r"\u00e9", r"[[:a]", "é", r"(?P<x>a)(?P=x)", "a{x}"]),
       st.text(alphabet="aAéÉ:{}x ", max_size=6))  # fmt: skip
def test_sandboxed_search_agrees_with_re(pattern: str, text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        expected = re.search(pattern, text, patterns.FLAGS) is not None
    assert patterns.search(pattern, text, timeout=5.0) == expected
