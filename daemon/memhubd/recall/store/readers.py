"""Who may read which drawer of an in-memory index, by position.

Drawers that name readers are grouped by their reader list (a team has few lists: a
role or two per diary writer, a handful for restricted sources), so the mask of what a
set of roles may read costs one step per list, not one per drawer. Masks are kept per
role set until a drawer is added or the positions change.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

MASKS_KEPT = 16  # role sets whose masks are kept (each one byte per drawer)


class ReaderGroups:
    """Positions of the drawers naming readers, by reader list."""

    def __init__(self) -> None:
        self._groups: dict[frozenset[str], list[int]] = {}
        self._arrays: dict[frozenset[str], np.ndarray] = {}
        # roles -> (size it was made for, the mask)
        self._masks: dict[frozenset[str], tuple[int, np.ndarray]] = {}

    def __bool__(self) -> bool:
        return bool(self._groups)

    def add(self, position: int, readers: Iterable[str]) -> None:
        names = frozenset(readers)
        self._groups.setdefault(names, []).append(position)
        self._arrays.pop(names, None)
        self._masks.clear()

    def renumbered(self, renumber: np.ndarray) -> ReaderGroups:
        """The same drawers at their new positions (`renumber[old]`, -1: gone)."""
        out = ReaderGroups()
        for names, positions in self._groups.items():
            moved = renumber[np.asarray(positions, np.int64)]
            kept = moved[moved >= 0].tolist()
            if kept:
                out._groups[names] = kept
        return out

    def visible(self, roles: frozenset[str], size: int) -> np.ndarray:
        """Which of `size` positions a caller of `roles` may read (a drawer naming no
        readers: anyone; else one of its readers). The same array object until a drawer
        is added or `size` changes, so callers may key caches on it."""
        held = self._masks.get(roles)
        if held is not None and held[0] == size:
            return held[1]
        mask = np.ones(size, dtype=bool)
        for names, positions in self._groups.items():
            if roles.isdisjoint(names):
                at = self._arrays.get(names)
                if at is None:
                    at = self._arrays[names] = np.asarray(positions, np.int64)
                mask[at[at < size]] = False
        if len(self._masks) >= MASKS_KEPT:
            self._masks.pop(next(iter(self._masks)))
        self._masks[roles] = (size, mask)
        return mask
