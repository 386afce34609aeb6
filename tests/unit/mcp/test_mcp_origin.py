"""DNS-rebinding defence: which browser requests the MCP endpoint refuses."""

from __future__ import annotations

import pytest

from memhubd.mcp.origin import rebinding_problem

LOCAL_HOST = "127.0.0.1:8377"


def test_requests_without_origin_are_left_to_authentication():
    assert rebinding_problem(None, "anything.example", ()) is None


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:5173", "http://127.0.0.1", "https://[::1]:8443", "http://127.9.9.9:1"],
)
def test_loopback_origins_reaching_a_loopback_host_are_accepted(origin):
    assert rebinding_problem(origin, LOCAL_HOST, ()) is None


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://10.0.0.5:8377"])
def test_foreign_origins_are_refused(origin):
    assert "not accepted" in rebinding_problem(origin, LOCAL_HOST, ())


def test_a_rebound_host_is_refused_even_from_a_local_origin():
    problem = rebinding_problem("http://localhost:3000", "evil.example:8377", ())
    assert "host" in problem


def test_configured_hosts_are_accepted_with_or_without_port():
    allowed = ("memhub.internal", "ide.corp:443")
    assert rebinding_problem("https://ide.corp:443", "memhub.internal:8377", allowed) is None
    assert rebinding_problem("https://ide.corp", "memhub.internal", allowed) is not None
