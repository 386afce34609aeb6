"""Query term extraction: the shared tokenizer minus the 66 query stopwords.

Terms keep duplicates and query order (they are reported back verbatim in the trace
and the MISSING message); scoring deduplicates them itself.
"""

from __future__ import annotations

from memhubd.index.tokens import word_tokens

QUERY_STOPWORDS = frozenset(
    """
    the a an is are was were be been of to in on at for and or not no my me i it its
    this that these those do does did how what when where which who why should would
    could can will with about into over please help going keep get make your you we
    our us if so as by from up out any
    """.split()
)


def query_terms(text: str) -> list[str]:
    """The query's terms: lowercase `[a-z0-9_]+` words that are not query stopwords."""
    return [t for t in word_tokens(text) if t not in QUERY_STOPWORDS]
