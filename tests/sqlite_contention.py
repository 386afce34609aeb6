"""SQLite as another process opening the same new file at the same moment answers it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest


def contended_connections(monkeypatch: pytest.MonkeyPatch, refusals: int) -> list[str]:
    """Connections whose first `refusals` switches to WAL are refused at once with
    "database is locked", as SQLite answers one of two processes that open a new file
    together (a race a test cannot stage reliably with two real processes). Returns
    the refused statements as they happen."""
    refused: list[str] = []

    class Contended(sqlite3.Connection):
        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
            if sql.startswith("PRAGMA journal_mode") and len(refused) < refusals:
                refused.append(sql)
                raise sqlite3.OperationalError("database is locked")
            return super().execute(sql, *args)

    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, factory=Contended, **k))
    return refused


def journal_mode(monkeypatch: pytest.MonkeyPatch, path: Path) -> str:
    """The journal mode the file at `path` is in, read on a plain connection (the
    stand-in is undone first)."""
    monkeypatch.undo()
    with sqlite3.connect(path) as connection:
        return str(connection.execute("PRAGMA journal_mode").fetchone()[0])
