"""What the review engine returns: immutable results with memdsl's `ok`/`status` and `as_dict()`.

Data only; the engine decides, adapters render. Statuses are memdsl's plus `invalid`
(bad arguments) and `conflict` (the target kept changing under the approval).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from memhubd.review.proposal import Proposal
from memhubd.review.validation import Issue


def _dicts(issues: tuple[Issue, ...]) -> list[dict[str, Any]]:
    return [issue.as_dict() for issue in issues]


def _plain(result: Any) -> dict[str, Any]:
    """Every field in declaration order, with issue tuples as lists of dicts."""
    out: dict[str, Any] = {}
    for field in fields(result):
        value = getattr(result, field.name)
        out[field.name] = _dicts(value) if field.name in ("errors", "warnings") else value
    return out


@dataclass(frozen=True, slots=True)
class ProposalResult:
    """Outcome of `propose`: `pending_review` with the stored proposal, or `invalid` with errors."""

    ok: bool
    status: str
    proposal: Proposal | None = None
    declaration_id: str = ""
    errors: tuple[Issue, ...] = ()
    warnings: tuple[Issue, ...] = ()

    @property
    def proposal_id(self) -> str:
        return self.proposal.id if self.proposal else ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "status": self.status,
            "proposal_id": self.proposal_id,
            "declaration_id": self.declaration_id,
            "path": self.proposal.path if self.proposal else "",
            "errors": _dicts(self.errors),
            "warnings": _dicts(self.warnings),
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """Outcome of `approve` or `reject`.

    `recovered` is true when an approval found its block already in the target (a
    retry finishing an interrupted approval). The target hashes frame this call's
    write (None for a file that did not exist); a recovery knows only `after`.
    """

    ok: bool
    status: str
    proposal_id: str
    declaration_id: str = ""
    merged_into: str = ""
    decided_by: str = ""
    recovered: bool = False
    errors: tuple[Issue, ...] = ()
    warnings: tuple[Issue, ...] = ()
    hint: str = ""
    target_sha256_before: str | None = None
    target_sha256_after: str | None = None
    marked_superseded: tuple[str, ...] = ()  # ids this approval marked `status: superseded`
    # The workspace files this approval wrote (the target, files marked elsewhere), for
    # the daemon to serve at once; not part of the answer.
    written: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        data = _plain(self)
        data["marked_superseded"] = list(self.marked_superseded)
        del data["written"]
        return data


@dataclass(frozen=True, slots=True)
class ProposalDiff:
    """The unified diff an approval makes (or made) to its target file."""

    ok: bool
    status: str
    proposal_id: str
    target: str = ""
    diff: str = ""
    errors: tuple[Issue, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return _plain(self)
