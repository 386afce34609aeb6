"""A tool error's text says its code once, also for a review refusal whose status is
the code itself (`too_many` from `max_pending_proposals`)."""

from __future__ import annotations

from memhub_protocol.errors import ErrorCode, ProtocolError
from memhubd.mcp.tools import tool_error


def test_a_refusal_whose_status_is_its_code_says_the_code_once() -> None:
    refused = ProtocolError(ErrorCode.TOO_MANY, "too_many: too_many_pending: agent has 1")

    assert str(tool_error(refused)) == "too_many: too_many_pending: agent has 1"


def test_other_errors_keep_their_code_before_the_message() -> None:
    refused = ProtocolError(ErrorCode.CONFLICT, "already_approved: proposal p1 was approved")

    assert str(tool_error(refused)) == "conflict: already_approved: proposal p1 was approved"
