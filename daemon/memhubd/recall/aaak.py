"""mempal's AAAK dialect (spec mempal §6.3): an output-only shorthand of text for LLM
readers. Encoder, parser, decoder and the round-trip coverage check.

Pure functions over strings; nothing here stores, reads files or knows a workspace.
AAAK is never stored and never searched: it is a rendering of drawers.

Two deliberate differences from mempal, both so that every encoded document parses
back: the parser finds a zettel's quote between its second `|` and its last three, so
a quote may hold `|`; and the encoder writes `|` and line breaks in header fields as
`/` and a space.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhubd.recall.signals import (
    DEFAULT_TOPIC,
    EMOTIONS,
    FLAGS,
    Signals,
    analyze,
    normalize,
    replace_codes,
)

VERSION = 1
STAR = "★"
MAX_STARS = 5

_ENTITY = re.compile(r"[A-Z]{3}")
_EMOTION = re.compile(r"[a-z]{3,7}")
_TOPIC = re.compile(r"[^\s|_]+")
_ZETTEL_HEAD = re.compile(r"(\d+):([^|]*)\|([^|]*)\|(.*)\Z", re.DOTALL)
_TUNNEL = re.compile(r"T:(\d+)<->(\d+)\|(.+)\Z")
_ASSERTION_SPLIT = re.compile(r"[.!?;。！？；，]")


class AaakError(ValueError):
    """A document that is not AAAK; `line` is 1-based (0: the document as a whole)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass(frozen=True, slots=True)
class Header:
    wing: str
    room: str
    date: str
    source: str
    version: int = VERSION

    def render(self) -> str:
        fields = (self.wing, self.room, self.date, self.source)
        return "|".join([f"V{self.version}", *(_header_field(f) for f in fields)])


@dataclass(frozen=True, slots=True)
class Zettel:
    id: int
    entities: tuple[str, ...]
    topics: tuple[str, ...]
    quote: str
    weight: int
    emotions: tuple[str, ...]
    flags: tuple[str, ...]

    def render(self) -> str:
        quote = self.quote.replace('"', "'")
        stars = STAR * max(self.weight, 1)
        return (
            f"{self.id}:{'+'.join(self.entities)}|{'_'.join(self.topics)}|"
            f'"{quote}"|{stars}|{"+".join(self.emotions)}|{"+".join(self.flags)}'
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "entities": list(self.entities),
            "topics": list(self.topics),
            "quote": self.quote,
            "weight": self.weight,
            "emotions": list(self.emotions),
            "flags": list(self.flags),
        }


@dataclass(frozen=True, slots=True)
class Tunnel:
    left: int
    right: int
    label: str

    def render(self) -> str:
        return f"T:{self.left}<->{self.right}|{self.label}"


@dataclass(frozen=True, slots=True)
class Document:
    header: Header
    zettels: tuple[Zettel, ...]
    tunnels: tuple[Tunnel, ...] = ()
    arcs: tuple[tuple[str, ...], ...] = ()

    def render(self) -> str:
        lines = [self.header.render()]
        lines += [z.render() for z in self.zettels]
        lines += [t.render() for t in self.tunnels]
        lines += ["ARC:" + "->".join(arc) for arc in self.arcs]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Report:
    topics_truncated: int
    key_sentence_truncated: bool
    coverage: float
    lost_assertions: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topics_truncated": self.topics_truncated,
            "key_sentence_truncated": self.key_sentence_truncated,
            "coverage": self.coverage,
            "lost_assertions": list(self.lost_assertions),
        }


@dataclass(frozen=True, slots=True)
class Encoded:
    document: str
    report: Report


def _header_field(value: str) -> str:
    return " ".join(value.split()).replace("|", "/")


# --------------------------------------------------------------------------- encoding


def zettel(
    text: str,
    zettel_id: int = 0,
    aliases: Mapping[str, str] | None = None,
    quote_chars: int | None = None,
) -> Zettel:
    """One zettel whose quote is the whole normalised text (its first `quote_chars`
    characters when given); its signals are read from the whole text either way."""
    found: Signals = analyze(text, aliases)
    return Zettel(
        id=zettel_id,
        entities=found.entities,
        topics=found.topics or (DEFAULT_TOPIC,),
        quote=normalize(text if quote_chars is None else text[:quote_chars]),
        weight=found.importance_stars,
        emotions=found.emotions,
        flags=found.flags,
    )


def encode(
    text: str,
    wing: str,
    room: str,
    date: str,
    source: str,
    aliases: Mapping[str, str] | None = None,
) -> Encoded:
    """mempal's `encode(text, meta)`: a header and one zettel with id 0."""
    return encode_many([text], wing, room, date, source, aliases)


def encode_many(
    texts: Sequence[str],
    wing: str,
    room: str,
    date: str,
    source: str,
    aliases: Mapping[str, str] | None = None,
    quote_chars: int | None = None,
) -> Encoded:
    """A header and one zettel per text, numbered from 0 (search results, one per hit);
    each quote cut to `quote_chars` characters when given (its signals read whole), and
    the round trip checked against what is quoted."""
    zettels = tuple(zettel(text, i, aliases, quote_chars) for i, text in enumerate(texts))
    document = Document(Header(wing, room, date, source), zettels).render()
    truncated = sum(max(0, analyze(text, aliases).topics_total - 3) for text in texts)
    quoted = texts if quote_chars is None else [text[:quote_chars] for text in texts]
    check = verify_roundtrip(" ".join(quoted), document, aliases)
    report = Report(truncated, False, check.coverage, check.lost_assertions)
    return Encoded(document, report)


# --------------------------------------------------------------------------- parsing


def parse(document: str) -> Document:
    """A document by mempal's grammar (blank lines ignored; the first line is the header)."""
    numbered = [(n, line) for n, line in enumerate(document.split("\n"), 1) if line.strip()]
    if not numbered:
        raise AaakError("an AAAK document needs a header line")
    first, head = numbered[0]
    header = _parse_header(head.strip(), first)
    zettels: list[Zettel] = []
    tunnels: list[Tunnel] = []
    arcs: list[tuple[str, ...]] = []
    for number, line in numbered[1:]:
        line = line.strip()
        if line.startswith("T:"):
            tunnels.append(_parse_tunnel(line, number))
        elif line.startswith("ARC:"):
            arcs.append(_parse_arc(line, number))
        else:
            zettels.append(_parse_zettel(line, number))
    ids = [z.id for z in zettels]
    if len(set(ids)) != len(ids):
        raise AaakError("zettel ids must be unique")
    for tunnel in tunnels:
        if tunnel.left not in ids or tunnel.right not in ids:
            raise AaakError(f"tunnel {tunnel.left}<->{tunnel.right} names an unknown zettel")
    return Document(header, tuple(zettels), tuple(tunnels), tuple(arcs))


def _parse_header(line: str, number: int) -> Header:
    parts = line.split("|")
    if len(parts) != 5 or not re.fullmatch(r"V\d{1,3}", parts[0]) or int(parts[0][1:]) > 255:
        raise AaakError("the header is V<version>|wing|room|date|source", number)
    return Header(parts[1], parts[2], parts[3], parts[4], int(parts[0][1:]))


def _parse_tunnel(line: str, number: int) -> Tunnel:
    match = _TUNNEL.fullmatch(line)
    if match is None:
        raise AaakError("a tunnel is T:<id><-><id>|<label>", number)
    return Tunnel(int(match.group(1)), int(match.group(2)), match.group(3))


def _parse_arc(line: str, number: int) -> tuple[str, ...]:
    codes = tuple(line[4:].split("->"))
    if not all(_EMOTION.fullmatch(code) for code in codes):
        raise AaakError("an arc is ARC:emotion->emotion...", number)
    return codes


def _parse_zettel(line: str, number: int) -> Zettel:
    match = _ZETTEL_HEAD.match(line)
    if match is None:
        raise AaakError('a zettel is <id>:ENT+ENT|topics|"quote"|stars|emotions|FLAGS', number)
    zettel_id, entities, topics, rest = match.groups()
    tail = rest.rsplit("|", 3)
    if len(tail) != 4:
        raise AaakError("a zettel has six fields after its id", number)
    quoted, stars, emotions, flags = tail
    if len(quoted) < 2 or not (quoted.startswith('"') and quoted.endswith('"')):
        raise AaakError("a zettel's quote is between double quotes", number)
    quote = quoted[1:-1]
    if '"' in quote:
        raise AaakError("a quote holds no double quote", number)
    entity_codes = tuple(entities.split("+"))
    if not all(_ENTITY.fullmatch(code) for code in entity_codes):
        raise AaakError("an entity is three letters A-Z", number)
    topic_words = tuple(topics.split("_"))
    if not all(_TOPIC.fullmatch(word) for word in topic_words):
        raise AaakError("topics are words joined by '_'", number)
    if not 1 <= len(stars) <= MAX_STARS or set(stars) != {STAR}:
        raise AaakError(f"importance is 1 to {MAX_STARS} {STAR}", number)
    emotion_codes = tuple(emotions.split("+"))
    if not all(_EMOTION.fullmatch(code) for code in emotion_codes):
        raise AaakError("an emotion is 3 to 7 letters a-z", number)
    flag_names = tuple(flags.split("+"))
    if not all(flag in FLAGS for flag in flag_names):
        raise AaakError(f"flags are among {', '.join(FLAGS)}", number)
    return Zettel(
        int(zettel_id), entity_codes, topic_words, quote, len(stars), emotion_codes, flag_names
    )


# --------------------------------------------------------------------------- decoding


def decode(document: str | Document, aliases: Mapping[str, str] | None = None) -> str:
    """The text of every zettel, one per line: its quote with entity codes turned back
    into alias names (`aliases`: name -> code), or the entity names when it has none."""
    parsed = parse(document) if isinstance(document, str) else document
    names = {code: name for name, code in (aliases or {}).items()}
    out = []
    for item in parsed.zettels:
        if item.quote:
            out.append(replace_codes(item.quote, names))
        else:
            out.append(" ".join(names.get(code, code) for code in item.entities))
    return "\n".join(out)


@dataclass(frozen=True, slots=True)
class Coverage:
    coverage: float
    preserved: int
    total: int
    lost_assertions: tuple[str, ...]


def assertions(text: str) -> list[str]:
    """The text split at sentence and clause ends, each piece normalised, empties dropped."""
    return [p for p in (normalize(piece) for piece in _ASSERTION_SPLIT.split(text)) if p]


def verify_roundtrip(
    original: str, document: str | Document, aliases: Mapping[str, str] | None = None
) -> Coverage:
    """How many assertions of `original` survive in the decoded document (case-blind)."""
    decoded = normalize(decode(document, aliases)).lower()
    pieces = assertions(original)
    lost = tuple(p for p in pieces if p.lower() not in decoded)
    total = len(pieces)
    coverage = 1.0 if total == 0 else (total - len(lost)) / total
    return Coverage(coverage, total - len(lost), total, lost)


# --------------------------------------------------------------------------- the dialect


SPEC_EXAMPLE = "Kai recommended Clerk over Auth0 based on pricing and DX."


def dialect_text() -> str:
    """A short description of the dialect with a live example (mempal's aaak_spec)."""
    example = encode(SPEC_EXAMPLE, "myapp", "auth", "2026-04-08", "readme").document
    emotions = ", ".join(EMOTIONS)
    return "\n".join(
        [
            "AAAK dialect (output only; never stored).",
            "Header: V1|wing|room|date|source",
            'Zettel: ID:ENT+ENT|topic_topic|"quote"|★..★|emo+emo|FLAG+FLAG',
            "Tunnel: T:ID<->ID|label    Arc: ARC:emo->emo",
            "Entities: three capital letters (the first three letters of a name, or a hash of it).",
            "Stars: 4 decision or pivot, 3 technical, 2 otherwise.",
            f"Emotions: {emotions}.",
            f"Flags: {', '.join(FLAGS)}.",
            "Example:",
            example,
        ]
    )
