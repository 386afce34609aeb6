"""Chunking: one exchange per chunk for chats, overlapping windows for documents.

Follows mempal §2.5 (800-character windows, 100 of overlap, break at whitespace past
the middle; a chat chunk is a user turn and everything up to the next one) and fixes
its unbounded chat chunks: an exchange longer than `MAX_EXCHANGE` is split in windows.
Pure functions over parsed values.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from memhubd.recall.context import neighbours
from memhubd.recall.ingest.formats import Conversation, Parsed, Turn, heading_starts

WINDOW = 800
OVERLAP = 100
MAX_EXCHANGE = 4000
EXCHANGE_WINDOW = 2000
EXCHANGE_OVERLAP = 200
# Named-speaker channels (Slack) have no user/assistant exchanges: messages are
# grouped until a chunk is a window long or the conversation pauses this long.
CHANNEL_PAUSE_S = 3600


@dataclass(frozen=True, slots=True)
class Chunk:
    content: str
    locator: str = ""
    speaker: str | None = None
    said_at: int | None = None
    context: str = ""  # neighbouring text: searched with a lower weight, never shown


def windows(
    text: str, size: int = WINDOW, overlap: int = OVERLAP
) -> Iterator[tuple[int, int, str]]:
    """(start, end, chunk) over `text` (already trimmed), in characters."""
    length = len(text)
    start = 0
    while start < length:
        end = min(start + size, length)
        if end < length:
            cut = max(
                text.rfind(" ", start, end),
                text.rfind("\n", start, end),
                text.rfind("\t", start, end),
            )
            if cut - start > size // 2:
                end = cut + 1
        piece = text[start:end].strip()
        if piece:
            yield start, end, piece
        if end >= length:
            return
        following = end - overlap
        if following <= start:
            start = end
            continue
        # Start the overlap at a word, not in the middle of one.
        space = text.find(" ", following, end)
        start = space + 1 if 0 <= space < end - 1 else following


def chunk(parsed: Parsed) -> list[Chunk]:
    """The chunks of a parsed source, in source order."""
    if not parsed.conversations:
        text = parsed.text.strip()
        # Locators count characters of the source's text as read, blank start included.
        start = parsed.start + len(parsed.text) - len(parsed.text.lstrip())
        if parsed.kind == "markdown":
            return list(_markdown_chunks(text, start))
        return [Chunk(piece, f"chars {a}-{b}") for a, b, piece in _located(text, start)]
    chunks: list[Chunk] = []
    for conversation in parsed.conversations:
        chunks.extend(_with_neighbours(list(_conversation_chunks(conversation))))
    return chunks


def _with_neighbours(chunks: list[Chunk]) -> list[Chunk]:
    """Each exchange gets the end of the one before and the start of the one after as
    context: a question is often answered, or named, in the next or previous turn."""
    out = []
    for index, piece in enumerate(chunks):
        before = chunks[index - 1].content if index else None
        after = chunks[index + 1].content if index + 1 < len(chunks) else None
        context = neighbours(before, after)
        out.append(Chunk(piece.content, piece.locator, piece.speaker, piece.said_at, context))
    return out


def _located(text: str, start: int) -> Iterator[tuple[int, int, str]]:
    """`windows(text)` as (first, end, chunk), where `source[first:end]` is the chunk
    exactly and `text` is `source` from `start` on."""
    for a, b, piece in windows(text):
        first = start + a + len(text[a:b]) - len(text[a:b].lstrip())
        yield first, first + len(piece), piece


def _markdown_chunks(text: str, start: int = 0) -> Iterator[Chunk]:
    """Windows inside each heading's section, so a chunk never spans two topics (a
    `# comment` inside a fenced code block heads no section). `text` begins at
    character `start` of the source."""
    starts = heading_starts(text)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    bounds = [*starts, len(text)]
    for begin, finish in zip(bounds, bounds[1:], strict=False):
        section = text[begin:finish]
        heading = section.splitlines()[0].lstrip("#").strip() if section.startswith("#") else ""
        offset = start + begin + len(section) - len(section.lstrip())
        for a, b, piece in _located(section.strip(), offset):
            where = f"chars {a}-{b}"
            located = f"section {heading}, {where}" if heading else where
            yield Chunk(piece, located, context=heading)


def _render(turn: Turn, named: bool) -> str:
    if named:
        return f"{turn.speaker}: {turn.text}"
    return "> " + turn.text if turn.role == "user" else turn.text


def _groups(conversation: Conversation) -> Iterator[list[Turn]]:
    """The turns of each chunk: an exchange starts at each user turn and at a summary
    that follows no summary. Named speakers' messages are grouped while the chunk
    (`Name: text` lines) stays within WINDOW characters and nobody pauses longer than
    CHANNEL_PAUSE_S; a message longer than WINDOW alone is a chunk of its own."""
    group: list[Turn] = []
    size = 0  # characters of the group's rendered lines, with the line feeds between
    for turn in conversation.turns:
        length = len(_render(turn, True)) if conversation.named_speakers else 0
        if conversation.named_speakers:
            paused = (
                group
                and turn.said_at is not None
                and group[-1].said_at is not None
                and turn.said_at - group[-1].said_at > CHANNEL_PAUSE_S
            )
            starts = bool(group) and (size + 1 + length > WINDOW or paused)
        else:
            # A summary (of the session so far, after a compaction) is no part of the
            # exchange before it: it starts a chunk, with the summaries right after it.
            starts = bool(group) and (
                turn.role == "user" or (turn.role == "summary" and group[-1].role != "summary")
            )
        if starts:
            yield group
            group, size = [], 0
        size += length + (1 if group else 0)
        group.append(turn)
    if group:
        yield group


def _span(first: str, last: str) -> str:
    if first == last or not last:
        return first
    if first.startswith("line ") and last.startswith("line "):
        return f"lines {first[5:]}-{last[5:]}"
    return first


def _conversation_chunks(conversation: Conversation) -> Iterator[Chunk]:
    named = conversation.named_speakers
    for group in _groups(conversation):
        content = "\n".join(_render(turn, named) for turn in group).strip()
        if not content:
            continue
        said_at = next((t.said_at for t in group if t.said_at is not None), None)
        speaker = group[0].speaker
        locator = _span(group[0].locator, group[-1].locator)
        if len(content) <= MAX_EXCHANGE:
            yield Chunk(content, locator, speaker, said_at)
            continue
        parts = windows(content, EXCHANGE_WINDOW, EXCHANGE_OVERLAP)
        for number, (_start, _end, piece) in enumerate(parts, 1):
            yield Chunk(piece, f"{locator} part {number}", speaker, said_at)
