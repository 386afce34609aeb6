"""The cowork shelf: every workspace's inbox store (`<dir>/<workspace>.sqlite`, opened on
first use and kept until `close()`) and the in-memory activity log for partner peek.

It knows no identities beyond their names: the service layer decides who may push,
drain or peek.
"""

from __future__ import annotations

import threading
from pathlib import Path

from memhubd.cowork.activity import ActivityLog
from memhubd.cowork.inbox import InboxLimits, InboxStore
from memhubd.sqlite import UnusableDatabase

# Removed workspace names a shelf remembers (a request that began before a removal is
# long over by the time this many more were removed).
RETIRED_KEPT = 4096


class CoworkShelf:
    """Open inbox stores by workspace name. Thread-safe; bounded by the number of workspaces."""

    def __init__(self, directory: str | Path, limits: InboxLimits | None = None) -> None:
        self.directory = Path(directory)
        self.limits = limits or InboxLimits()
        self.activity = ActivityLog()
        self._stores: dict[str, InboxStore] = {}
        # Names of removed workspaces: their inbox is being archived, or was (the
        # RETIRED_KEPT removed last).
        self._retired: dict[str, None] = {}
        self._lock = threading.Lock()

    def path_of(self, workspace: str) -> Path:
        # Workspace names are [A-Za-z0-9_.-]: never a separator, so always inside directory.
        return self.directory / f"{workspace}.sqlite"

    def store(self, workspace: str) -> InboxStore:
        with self._lock:
            if workspace in self._retired:
                # A request that began before the removal: opening the inbox again
                # would hold it open while it is moved (the move waits for it in vain).
                raise UnusableDatabase(self.path_of(workspace), "its workspace was removed")
            store = self._stores.get(workspace)
            if store is None:
                store = self._stores[workspace] = InboxStore(
                    self.path_of(workspace), self.limits, workspace
                )
            return store

    def forget(self, workspace: str) -> None:
        """Close `workspace`'s inbox store and drop its activity (it was removed)."""
        with self._lock:
            store = self._stores.pop(workspace, None)
        if store is not None:
            store.close()
        self.activity.forget_workspace(workspace)

    def retire(self, workspace: str) -> None:
        """Close `workspace`'s inbox and open it no more until `admit(workspace)`: its
        workspace was removed, and its files are moved out of the cowork directory."""
        with self._lock:
            self._retired.pop(workspace, None)
            self._retired[workspace] = None
            while len(self._retired) > RETIRED_KEPT:
                del self._retired[next(iter(self._retired))]
        self.forget(workspace)

    def admit(self, workspace: str) -> None:
        """Let `workspace`'s inbox be opened again (a workspace of that name is added)."""
        with self._lock:
            self._retired.pop(workspace, None)

    def close(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()
