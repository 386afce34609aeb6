"""Tunnels: a room present in two or more workspaces.

A room is a recall room, a governed module or an entity symbol; the fallback room
never counts (every workspace has one). Inputs are only the workspaces and rooms the
caller may see, so a tunnel can never name another workspace. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhubd.recall.ids import DEFAULT_ROOM

KINDS = ("recall", "module", "entity")


@dataclass(frozen=True, slots=True)
class Tunnel:
    room: str
    # workspace -> how the room exists there (a subset of KINDS, in that order)
    workspaces: tuple[tuple[str, tuple[str, ...]], ...]

    def as_dict(self) -> dict[str, Any]:
        names = [name for name, _kinds in self.workspaces]
        return {
            "room": self.room,
            "wings": names,
            "workspaces": names,
            "kinds": {name: list(kinds) for name, kinds in self.workspaces},
        }


def find_tunnels(rooms: Mapping[str, Mapping[str, set[str]]]) -> list[Tunnel]:
    """`rooms[workspace][room]` = the kinds of that room there; the tunnels, by room."""
    where: dict[str, dict[str, set[str]]] = {}
    for workspace, present in rooms.items():
        for room, kinds in present.items():
            if room and room != DEFAULT_ROOM and kinds:
                where.setdefault(room, {}).setdefault(workspace, set()).update(kinds)
    tunnels = []
    for room in sorted(where):
        places = where[room]
        if len(places) < 2:
            continue
        ordered = tuple(
            (name, tuple(k for k in KINDS if k in places[name])) for name in sorted(places)
        )
        tunnels.append(Tunnel(room, ordered))
    return tunnels


def tunnel_hints(tunnels: list[Tunnel]) -> dict[str, set[str]]:
    """Room -> the workspaces it is found in, for the tunnels given."""
    return {t.room: {name for name, _kinds in t.workspaces} for t in tunnels}
