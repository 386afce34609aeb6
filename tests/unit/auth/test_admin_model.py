"""The admin model without a server: the subset rule between two sets of grants,
the token store applying it for an issuer, and the admin audit file."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from memhub_protocol.scopes import ALL_SCOPES
from memhubd.auth.audit import AdminAudit
from memhubd.auth.identity import Identity, grants_beyond, lifetime_beyond, local_operator
from memhubd.auth.tokens import TokenRefused, TokenStore

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


def admin_of(*workspaces: str, roles: tuple[str, ...] = (), expires=None) -> Identity:
    return Identity(
        name="scoped",
        scopes=frozenset(ALL_SCOPES),
        workspaces=frozenset(workspaces),
        roles=frozenset(roles),
        expires=expires,
    )


# -- the subset rule -------------------------------------------------------------------------


def test_grants_within_the_holders_own_are_not_beyond() -> None:
    holder = admin_of("docs", "web", roles=("dev",))
    assert grants_beyond(holder, ["read:summary"], ["docs"], ["dev"]) == []
    assert grants_beyond(holder, ALL_SCOPES, ["docs", "web"], []) == []


def test_a_star_is_only_within_a_star() -> None:
    holder = admin_of("docs", roles=("dev",))
    assert grants_beyond(holder, [], ["*"], []) == ["workspaces *"]
    assert grants_beyond(holder, [], ["docs"], ["*"]) == ["roles *"]
    assert grants_beyond(local_operator(), ALL_SCOPES, ["*"], ["*"]) == []


def test_every_kind_beyond_is_named() -> None:
    holder = Identity(name="r", scopes=frozenset({"admin"}), workspaces=frozenset({"docs"}))
    problems = grants_beyond(holder, ["admin", "review"], ["docs", "web"], ["security"])
    assert problems == ["scopes review", "workspaces web", "roles security"]


def test_a_short_lived_holder_cannot_grant_a_longer_life() -> None:
    holder = admin_of("*", expires=NOW + dt.timedelta(hours=1))
    assert lifetime_beyond(holder, NOW + dt.timedelta(minutes=30)) is None
    assert "2026-12-01T13:00:00Z" in str(lifetime_beyond(holder, None))
    assert lifetime_beyond(holder, NOW + dt.timedelta(hours=2)) is not None
    assert lifetime_beyond(admin_of("*"), None) is None


# -- the store -------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    return TokenStore(tmp_path / "state")


def test_store_refuses_an_issuer_the_all_shorthand_it_does_not_cover(store: TokenStore) -> None:
    reader = Identity(name="r", scopes=frozenset({"admin", "read:summary"}))
    with pytest.raises(TokenRefused, match="review"):
        store.create("x", "all", workspaces="*", issuer=reader)
    assert store.get("x") is None


def test_store_refuses_an_issuer_an_unbounded_token_when_its_own_expires(
    store: TokenStore,
) -> None:
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    with pytest.raises(TokenRefused, match="lifetime"):
        store.create("x", "read:summary", workspaces="*", issuer=admin_of("*", expires=later))
    record, _ = store.create(
        "y", "read:summary", workspaces="*", expires="30m", issuer=admin_of("*", expires=later)
    )
    assert record.expires is not None


def test_expiring_tokens_give_identities_that_know_their_expiry(store: TokenStore) -> None:
    _, secret = store.create("x", "read:summary", expires="1h")
    identity = store.verify(secret)
    assert identity is not None and identity.expires is not None


def test_revoke_by_a_narrower_holder_is_refused_and_keeps_the_token(store: TokenStore) -> None:
    store.create("wide", "all", workspaces="*", roles="*")
    with pytest.raises(TokenRefused):
        store.revoke("wide", by=admin_of("docs"))
    assert store.get("wide") is not None
    assert store.revoke("wide", by=local_operator())


def test_a_record_is_within_a_holder_holding_all_its_grants(store: TokenStore) -> None:
    narrow, _ = store.create("narrow", "read:summary", workspaces="docs")
    wide, _ = store.create("wide", "read:summary", workspaces="*")
    assert narrow.within(admin_of("docs")) and not wide.within(admin_of("docs"))


def test_bootstrap_registration_is_audited_without_the_secret(store: TokenStore) -> None:
    secret = "mh_boot_" + "x" * 40
    assert store.bootstrap_from_env({"MEMHUB_BOOTSTRAP_TOKEN": secret}) is not None
    (entry,) = store.audit.entries()
    assert (entry["action"], entry["outcome"], entry["via"]) == ("token.create", "ok", "startup")
    assert secret not in store.audit.path.read_text()


# -- the audit file --------------------------------------------------------------------------


def test_audit_appends_one_private_json_line_per_action(tmp_path: Path) -> None:
    audit = AdminAudit(tmp_path / "state")
    audit.record("token.revoke", identity="admin", via="api", outcome="ok", token={"name": "x"})
    audit.record("workspace.add", identity="ops", via="api", outcome="refused", path=None)
    lines = audit.path.read_text().splitlines()
    assert [json.loads(line)["action"] for line in lines] == ["token.revoke", "workspace.add"]
    assert "path" not in json.loads(lines[1])  # None details are left out
    assert json.loads(lines[0])["ts"].endswith("Z")
    assert os.stat(audit.path).st_mode & 0o777 == 0o600
    assert os.stat(audit.path.parent).st_mode & 0o777 == 0o700


def test_audit_ends_a_torn_line_before_appending(tmp_path: Path) -> None:
    audit = AdminAudit(tmp_path)
    audit.path.parent.mkdir()
    audit.path.write_bytes(b'{"action": "token.cre')
    audit.record("token.list", identity="admin", via="api", outcome="ok")
    assert [entry["action"] for entry in audit.entries()] == ["token.list"]


def test_audit_narrows_a_widened_file_mode_and_refuses_a_symlink(tmp_path: Path) -> None:
    audit = AdminAudit(tmp_path)
    audit.path.parent.mkdir()
    audit.path.write_text("")
    audit.path.chmod(0o644)
    audit.record("token.list", identity="admin", via="api", outcome="ok")
    assert os.stat(audit.path).st_mode & 0o777 == 0o600

    elsewhere = tmp_path / "elsewhere.jsonl"
    audit.path.unlink()
    audit.path.symlink_to(elsewhere)
    with pytest.raises(OSError):
        audit.record("token.list", identity="admin", via="api", outcome="ok")
    assert not elsewhere.exists()
