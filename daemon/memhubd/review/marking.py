"""What an approved correction supersedes, and marking it `status: superseded` in source text.

memdsl's lint asks for the old declaration of a `supersedes` pair to carry
`status: superseded` (`unmarked_supersede_status`); an approval makes that change
itself, in the text it writes. Text and loaded workspaces in, text out: nothing
here reads or writes files or takes locks.
"""

from __future__ import annotations

import os

from memhubd.lang import ParseError, parse_text
from memhubd.lang.writer import set_status
from memhubd.model import EXCLUDED_STATUSES, Declaration, Workspace
from memhubd.review.proposal import PROPOSAL_LABEL

SUPERSEDED = "superseded"


def proposed_declaration(source: str, workspace: Workspace) -> Declaration | None:
    """The one declaration of a proposal's source, typed by `workspace`; None when the
    source does not parse or holds another number of declarations."""
    try:
        document = parse_text(source, file=PROPOSAL_LABEL)
    except ParseError:
        return None
    if len(document.declarations) != 1:
        return None
    raw = document.declarations[0]
    return Declaration.from_raw(raw, workspace.registry.resolve(raw.kind))


def superseded_by(source: str, workspace: Workspace) -> list[Declaration]:
    """The declarations of `workspace` the proposal's `supersedes` targets name (memdsl's
    `by_id`: full id or bare name) that do not yet carry an inactive status."""
    proposed = proposed_declaration(source, workspace)
    if proposed is None:
        return []
    found: list[Declaration] = []
    for target in proposed.relation_targets("supersedes"):
        old = workspace.by_id(target)
        if old is not None and old.status not in EXCLUDED_STATUSES and old not in found:
            found.append(old)
    return found


def in_file(declarations: list[Declaration], path: str) -> list[Declaration]:
    """Those of `declarations` read from `path` (compared by real path)."""
    real = os.path.realpath(path)
    return [d for d in declarations if os.path.realpath(d.file) == real]


def mark(text: str, declarations: list[Declaration]) -> tuple[str, tuple[str, ...]]:
    """`text` with each of `declarations` marked superseded, and the ids it could mark.

    A declaration whose status cannot be rewritten safely (see `set_status`) is left
    as it is; lint then still reports it, as before.
    """
    marked: list[str] = []
    for declaration in declarations:
        changed = set_status(text, declaration.kind, declaration.name, SUPERSEDED)
        if changed is not None:
            text = changed
            marked.append(declaration.id)
    return text, tuple(marked)
