"""The review pipeline: proposals, validation, decisions, audit log, locks and atomic writes.

Agents propose, people decide; approval is the only path by which memory sources
change. Plain synchronous Python over files; nothing here knows about HTTP or MCP.
"""

from memhubd.review.audit import AuditLog
from memhubd.review.diffs import unified_diff
from memhubd.review.proposal import (
    PROPOSAL_ID,
    PROPOSAL_SUFFIX,
    STATUSES,
    Proposal,
    approval_marker,
    is_proposal_id,
    parse_proposal,
    render_proposal,
)
from memhubd.review.results import Decision, ProposalDiff, ProposalResult
from memhubd.review.store import LIST_STATUSES, ReviewStore
from memhubd.review.validation import DEFAULT_MAX_BYTES, Issue, ValidationResult, validate_source

__all__ = [
    "DEFAULT_MAX_BYTES",
    "LIST_STATUSES",
    "PROPOSAL_ID",
    "PROPOSAL_SUFFIX",
    "STATUSES",
    "AuditLog",
    "Decision",
    "Issue",
    "Proposal",
    "ProposalDiff",
    "ProposalResult",
    "ReviewStore",
    "ValidationResult",
    "approval_marker",
    "is_proposal_id",
    "parse_proposal",
    "render_proposal",
    "unified_diff",
    "validate_source",
]
