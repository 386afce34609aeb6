"""Tunnels: a room in two or more of the given workspaces, whatever kind of room it is
there; the fallback room never is one."""

from __future__ import annotations

from memhubd.graph import find_tunnels


def test_rooms_shared_by_several_workspaces_are_tunnels() -> None:
    rooms = {
        "a": {"ledger": {"recall"}, "default": {"recall"}, "solo": {"module"}},
        "b": {"ledger": {"module", "recall"}, "default": {"recall"}},
        "c": {"ledger": {"entity"}},
    }
    (tunnel,) = find_tunnels(rooms)
    assert tunnel.as_dict() == {
        "room": "ledger",
        "wings": ["a", "b", "c"],
        "workspaces": ["a", "b", "c"],
        "kinds": {"a": ["recall"], "b": ["recall", "module"], "c": ["entity"]},
    }


def test_the_fallback_room_and_single_workspace_rooms_are_not_tunnels() -> None:
    assert find_tunnels({"a": {"default": {"recall"}}, "b": {"default": {"recall"}}}) == []
    assert find_tunnels({"a": {"x": {"recall"}}}) == []
