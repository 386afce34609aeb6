"""Unified diffs of approval targets, for showing a reviewer what approving changes.

Text in, text out; it reads no files and decides nothing.
"""

from __future__ import annotations

import difflib

from memhubd.lang.writer import line_end
from memhubd.review.proposal import Proposal, approval_block, has_marker, marker_stamp, now_iso


def approval_change(proposal: Proposal, text: str, marked: str | None = None) -> tuple[str, str]:
    """Target text before and after this proposal's approval block, given the file as it is.

    When the block is already there (approved), "before" is the file without it;
    otherwise "after" is the file with a block stamped now, appended to `marked` (the
    file with what the proposal supersedes marked) when given.
    """
    end = line_end(text)
    if has_marker(text, proposal.id):
        block = approval_block(proposal, marker_stamp(text, proposal.id), end)
        return text.replace(block, "", 1), text
    return text, (text if marked is None else marked) + approval_block(proposal, now_iso(), end)


def unified_diff(before: str, after: str, label: str) -> str:
    """`diff -u` text between two versions of one file, `a/<label>` → `b/<label>`."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"a/{label}",
        f"b/{label}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
