"""Which cached entries belong to which snapshot, so that a cache lets go of a replaced
snapshot's entries as soon as the snapshot is gone, instead of keeping them until they
age out of its size bound (up to 64 MiB of answers no one can ask for again).

A cache key that starts with a snapshot serial (`service.encoding.snapshot_serial`),
or with such a key, is tracked; any other key is left to the cache's own bound.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any

# serial -> its snapshot, while the snapshot lives (an entry leaves with it).
_LIVE: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def remember(serial: int, snapshot: Any) -> None:
    """Note that `serial` names `snapshot` (for as long as it lives)."""
    _LIVE[serial] = snapshot


def _serial_of(key: Any) -> int | None:
    while type(key) is tuple and key:
        key = key[0]
    return key if type(key) is int else None


class KeysBySnapshot:
    """A cache's keys grouped by snapshot serial. Not thread-safe: the cache's lock."""

    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[int, set[Hashable]] = {}

    def add(self, key: Hashable) -> None:
        serial = _serial_of(key)
        if serial is not None:
            self._keys.setdefault(serial, set()).add(key)

    def discard(self, key: Hashable) -> None:
        serial = _serial_of(key)
        keys = self._keys.get(serial) if serial is not None else None
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._keys[serial]

    def take_freed(self) -> list[Hashable]:
        """The keys of snapshots no longer alive, forgotten here (the cache drops them)."""
        freed = [serial for serial in self._keys if serial not in _LIVE]
        return [key for serial in freed for key in self._keys.pop(serial)]

    def __len__(self) -> int:
        return sum(len(keys) for keys in self._keys.values())
