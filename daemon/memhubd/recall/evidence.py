"""From a drawer to a proposed declaration: the verbatim span that supports a claim,
and the `.mem` text of a declaration whose evidence quotes it and cites the drawer.

Pure functions over strings. Nothing here proposes, validates or writes: the review
pipeline does that, and a person decides. The quote is always an exact substring of
the drawer's content, so what is agreed can be traced back to what was said.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhubd.lang.writer import write_declaration

MAX_QUOTE_CHARS = 600
CLAIM_FIELDS = ("claim", "rule", "decision", "summary", "pattern")
RESERVED_FIELDS = ("evidence",)

# Characters a proposal's text cannot carry (a stored proposal reads each as a line end,
# and a string has no escape for it): a quote never holds one.
_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# A sentence runs to its end mark (and closing quotes), to a line end or to one of those.
_SENTENCE = re.compile(rf"[^.!?。！？\n{_BREAKS}]+(?:[.!?。！？]+['\")\]]*|[\n{_BREAKS}]|$)")
_BREAK = re.compile(f"[{_BREAKS}]")
_WORD = re.compile(r"[^\W_]+")


def _word(ch: str) -> bool:
    """A character of a name: a letter, digit or mark of any script (the vowel signs of
    Devanagari or Tamil, an accent typed apart) or `_`, as memdsl's atoms allow."""
    return ch == "_" or ch.isalnum() or unicodedata.category(ch).startswith("M")


def _starts_word(ch: str) -> bool:
    return ch == "_" or (ch.isalpha() and not unicodedata.category(ch).startswith("M"))


def _is_key(text: str) -> bool:
    """A field name: a word that starts with a letter or `_`."""
    return bool(text) and _starts_word(text[0]) and all(map(_word, text))


def _is_type(text: str) -> bool:
    """A type name: field-name-like words joined by dots (`fact`, `team.rule`)."""
    return all(_is_key(part) for part in text.split("."))


def _is_name(text: str) -> bool:
    """A declaration name: words, dots and hyphens, starting with a word character."""
    return (
        bool(text)
        and _word(text[0])
        and not unicodedata.category(text[0]).startswith("M")
        and all(_word(ch) or ch in ".-" for ch in text)
    )


_COMMON = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was "
    "we were will with".split()
)


class EvidenceError(ValueError):
    """The request cannot become a declaration; `field` names the bad input."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    text: str


def sentences(content: str) -> list[Span]:
    """The sentences of `content` as exact spans, surrounding whitespace excluded."""
    out = []
    for match in _SENTENCE.finditer(content):
        raw = match.group(0)
        stripped = raw.strip()
        if not stripped:
            continue
        start = match.start() + (len(raw) - len(raw.lstrip()))
        out.append(Span(start, start + len(stripped), stripped))
    return out


def _words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _COMMON}


def pick_quote(content: str, claim: str) -> str:
    """The sentence of `content` sharing most words with `claim` (the earliest on a
    tie, the first when nothing is shared), with its neighbour when that shares words
    too; cut to MAX_QUOTE_CHARS at a word end. Always a substring of `content`."""
    spans = sentences(content)
    if not spans:
        return _BREAK.split(content.strip())[0][:MAX_QUOTE_CHARS].strip()
    wanted = _words(claim)
    scores = [len(wanted & _words(span.text)) for span in spans]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    start, end = spans[best].start, spans[best].end
    if (
        best + 1 < len(spans)
        and scores[best]
        and scores[best + 1]
        and not _BREAK.search(content, end, spans[best + 1].start)
    ):
        end = spans[best + 1].end
    quote = content[start:end]
    if len(quote) > MAX_QUOTE_CHARS:
        cut = quote[:MAX_QUOTE_CHARS]
        space = cut.rfind(" ")
        quote = (cut[:space] if space > MAX_QUOTE_CHARS // 2 else cut).rstrip()
    return quote


def check_quote(content: str, quote: str) -> str:
    """`quote` when it is a non-empty verbatim substring of `content`."""
    if not quote.strip():
        raise EvidenceError("'quote' must not be empty", "quote")
    if quote not in content:
        raise EvidenceError("'quote' must be a verbatim substring of the drawer", "quote")
    found = _BREAK.search(quote)
    if found is not None:
        raise EvidenceError(
            f"'quote' holds U+{ord(found.group()):04X}, a line separator a proposal cannot "
            "carry; quote a part of the drawer without it",
            "quote",
        )
    return quote


def claim_of(fields: Mapping[str, Any]) -> str:
    for key in CLAIM_FIELDS:
        value = fields.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def fields_from_pairs(pairs: Mapping[str, str]) -> dict[str, Any]:
    """`key=value` fields; a dotted key (`lifecycle.status`) makes a nested block."""
    out: dict[str, Any] = {}
    for key, value in pairs.items():
        parts = key.split(".")
        if not all(_is_key(part) for part in parts):
            raise EvidenceError(f"field name {key!r} is not a .mem field name", "fields")
        if parts[0] in RESERVED_FIELDS:
            raise EvidenceError("'evidence' is written from the drawer; do not set it", "fields")
        block = out
        for part in parts[:-1]:
            inner = block.setdefault(part, {})
            if not isinstance(inner, dict):
                raise EvidenceError(f"field {part!r} is both a value and a block", "fields")
            block = inner
        if isinstance(block.get(parts[-1]), dict):
            raise EvidenceError(f"field {key!r} is both a value and a block", "fields")
        block[parts[-1]] = value
    return out


@dataclass(frozen=True, slots=True)
class _Declaration:
    kind: str
    name: str
    fields: dict[str, Any]


def declaration_name(kind: str, name: str) -> str:
    """`name`, also accepted as `kind:name`; both must be plain `.mem` atoms."""
    if not _is_type(kind):
        raise EvidenceError(f"type {kind!r} is not a .mem type name", "type")
    if name.startswith(kind + ":"):
        name = name[len(kind) + 1 :]
    if not _is_name(name):
        raise EvidenceError(f"id {name!r} is not a .mem declaration name", "id")
    return name


def citation(drawer_id: str, source_file: str, locator: str = "") -> str:
    where = f"{source_file} ({locator})" if locator else source_file
    return f"recall:{drawer_id} {where}"


def declaration_source(
    kind: str,
    name: str,
    fields: Mapping[str, Any],
    quote: str,
    drawer_id: str,
    source_file: str,
    locator: str = "",
) -> str:
    """`.mem` text of one declaration: the given fields, then an evidence block whose
    `source` cites the drawer and its file, `drawer` names it and `quote` holds the span."""
    name = declaration_name(kind, name)
    body = dict(fields)
    body["evidence"] = {
        "source": citation(drawer_id, source_file, locator),
        "drawer": drawer_id,
        "file": source_file,
        "quote": quote,
    }
    return write_declaration(_Declaration(kind, name, body))


def drawer_of(evidence: Any) -> str | None:
    """The drawer id an evidence block cites (as `declaration_source` writes it)."""
    if isinstance(evidence, dict):
        drawer = evidence.get("drawer")
        if isinstance(drawer, str) and drawer.startswith("drawer_"):
            return drawer
    return None
