"""A secret verified once is not hashed again while the token file is unchanged; any
change to the file (a revocation, another token) makes the next request verify anew."""

from __future__ import annotations

import hmac
from pathlib import Path

import pytest

from memhubd.auth import TokenStore


def _count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = hmac.compare_digest

    def counting(a: str, b: str) -> bool:
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    return calls


def test_a_verified_secret_is_not_hashed_again_while_the_file_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TokenStore(tmp_path)
    _, secret = store.create("alice", "read:search")
    calls = _count_hashes(monkeypatch)

    first, second = store.verify(secret), store.verify(secret)

    assert first is not None and first is second
    assert len(calls) == 1


def test_a_change_to_the_file_verifies_again_and_a_revocation_holds_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daemon = TokenStore(tmp_path)
    _, secret = TokenStore(tmp_path).create("alice", "read:search")
    calls = _count_hashes(monkeypatch)
    assert daemon.verify(secret) is not None

    TokenStore(tmp_path).create("bob", "read:search")  # another process writes the file
    assert daemon.verify(secret) is not None
    assert len(calls) == 2

    TokenStore(tmp_path).revoke("alice")
    assert daemon.verify(secret) is None


def test_an_unknown_secret_is_never_remembered(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    store.create("alice", "read:search")

    assert store.verify("mh_nothere_" + "x" * 43) is None
    assert store._verified == {}
