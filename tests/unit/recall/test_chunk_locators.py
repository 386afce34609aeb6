"""`chars A-B` locators of text and Markdown drawers index the file's text as read (after
a byte order mark is removed): characters A to B of it are the drawer's text exactly,
blank lines and spaces before the first word included in the count."""

from __future__ import annotations

import re

import pytest
from recall_fakes import options

from memhubd.recall.ingest import Ingestor, chunk, parse
from memhubd.recall.store import DrawerStore

WORDS = " ".join(f"word{i}" for i in range(400))
MARKDOWN = "\n\n  # Plan\n\nShip it.\n\n## Risks\n\n" + WORDS + "\n\n## Done\n\n   last line  \n"


def spans(locator: str) -> tuple[int, int]:
    found = re.search(r"chars (\d+)-(\d+)$", locator)
    assert found, locator
    return int(found.group(1)), int(found.group(2))


def test_a_text_starting_with_blank_lines_cites_where_its_words_are() -> None:
    text = "\n\n\n   The first line of the note.\nAnd a second.\n\n"
    (only,) = chunk(parse(text, "text"))
    a, b = spans(only.locator)
    assert (a, b) == (6, 6 + len(only.content))
    assert text[a:b] == only.content


@pytest.mark.parametrize("lead", ["", "\n", "\n\n\n   ", "\t \r\n"])
def test_every_text_window_is_the_file_between_its_offsets(lead: str) -> None:
    text = lead + WORDS + "\n"
    chunks = chunk(parse(text, "text"))
    assert len(chunks) > 1
    for piece in chunks:
        a, b = spans(piece.locator)
        assert text[a:b] == piece.content


def test_every_markdown_chunk_is_the_file_between_its_offsets() -> None:
    chunks = chunk(parse(MARKDOWN, "markdown"))
    assert len(chunks) > 3
    for piece in chunks:
        a, b = spans(piece.locator)
        assert MARKDOWN[a:b] == piece.content


def test_an_ingested_file_cites_offsets_of_its_text_after_the_byte_order_mark(
    ingestor: Ingestor, store: DrawerStore
) -> None:
    text = "\ufeff\n\n  Notes on the rollout: canary first, then everyone.\n"
    ingestor.ingest_text("rollout.txt", text, options())
    (drawer,) = [d for batch in store.iter_live(100) for d in batch]
    a, b = spans(drawer.locator)
    assert text.removeprefix("\ufeff")[a:b] == drawer.content
    assert a == 4
