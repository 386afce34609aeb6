"""Markdown sections: a `# comment` inside a fenced code block is code, not a heading,
so it neither cuts the block in two nor names the section."""

from __future__ import annotations

import pytest

from memhubd.recall.ingest import chunk, parse

DOC = """# Runbook

Restart the worker:

{fence}sh
# stop it first
systemctl stop worker
# then start it again
systemctl start worker
{fence}

## After

Check the queue drains.
"""


@pytest.mark.parametrize("fence", ["```", "~~~", "````", "   ```"])
def test_a_comment_in_a_fenced_block_heads_no_section(fence: str) -> None:
    chunks = chunk(parse(DOC.format(fence=fence), "markdown"))
    assert [c.locator.split(",")[0] for c in chunks] == ["section Runbook", "section After"]
    assert [c.context for c in chunks] == ["Runbook", "After"]
    block = chunks[0].content
    assert "# stop it first" in block and "systemctl start worker" in block


def test_a_fence_closes_only_with_its_own_kind() -> None:
    text = "# Top\n\n````md\n```\n# inside\n```\n````\n\n~~~\n```\n# still code\n~~~\n# Next\nx\n"
    chunks = chunk(parse(text, "markdown"))
    assert [c.context for c in chunks] == ["Top", "Next"]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    text = "# Notes\n\n```\n# not a heading\necho hi\n"
    chunks = chunk(parse(text, "markdown"))
    assert [c.context for c in chunks] == ["Notes"]
    assert "# not a heading" in chunks[0].content


def test_an_inline_code_span_opens_no_fence() -> None:
    # A backtick fence's info string cannot hold a backtick: this line is inline code.
    text = "# One\n```a` b\n# Two\nbody\n"
    assert [c.context for c in chunk(parse(text, "markdown"))] == ["One", "Two"]
