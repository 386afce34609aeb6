"""DNS-rebinding defence for the MCP endpoint on TCP: a browser request (one that
carries an Origin header) is accepted only from, and to, a local or configured host.

Pure functions over header values; the endpoint decides what to answer.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from memhubd.runtime.config import is_loopback_host


def _split_host(value: str) -> tuple[str, str]:
    """(`host`, `host:port` as written) from a Host header value; IPv6 stays bracketless."""
    value = value.strip().lower()
    if value.startswith("["):
        host = value[1 : value.find("]")] if "]" in value else value[1:]
        return host, value
    return value.rsplit(":", 1)[0] if ":" in value else value, value


def host_allowed(host: str, written: str, allowed: tuple[str, ...]) -> bool:
    """Loopback names and addresses always; others when listed, with or without port."""
    if not host:
        return False
    if is_loopback_host(host):
        return True
    listed = {item.strip().lower() for item in allowed}
    return host in listed or written in listed


def rebinding_problem(
    origin: str | None, host_header: str | None, allowed: tuple[str, ...]
) -> str | None:
    """Why a browser request must be refused, or None when it may proceed.

    Requests without an Origin header come from programs, not from web pages, and
    are left to authentication. With one, both the page's origin and the Host it
    reached must be local or in `mcp.allowed_hosts`: a page from a rebound domain
    has neither.
    """
    if origin is None:
        return None
    parts = urlsplit(origin.strip())
    origin_host = (parts.hostname or "").lower()
    if not host_allowed(origin_host, parts.netloc.lower(), allowed):
        return f"requests from origin {origin!r} are not accepted (DNS rebinding protection)"
    host, written = _split_host(host_header or "")
    if not host_allowed(host, written, allowed):
        return f"requests for host {host_header!r} are not accepted (DNS rebinding protection)"
    return None
