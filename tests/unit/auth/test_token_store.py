"""TokenStore: secrets shown once and stored as hashes, expiry, revocation, names,
cross-process safety, external changes and the bootstrap token."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from memhub_protocol.scopes import ALL_SCOPES
from memhubd.auth import (
    BOOTSTRAP_ENV,
    BOOTSTRAP_FILE_ENV,
    BOOTSTRAP_NAME,
    TokenError,
    TokenStore,
    parse_expiry,
)

START = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)
STRONG_SECRET = "mh_boot01_" + "S" * 43


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: dt.datetime = START) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def store(state_dir: Path) -> TokenStore:
    return TokenStore(state_dir, clock=Clock())


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---- secrets and the file ------------------------------------------------


def test_secret_is_stored_only_as_its_hash(store: TokenStore, state_dir: Path) -> None:
    record, secret = store.create("alice", "read:search")
    on_disk = (state_dir / "tokens.json").read_text()
    random_part = secret.split("_", 2)[2]
    assert secret not in on_disk
    assert random_part not in on_disk
    assert sha256(secret) in on_disk
    assert record.secret_hash == sha256(secret)


def test_secret_has_a_public_id_and_a_long_random_part(store: TokenStore) -> None:
    record, secret = store.create("alice", "read:search")
    prefix, token_id, random_part = secret.split("_", 2)
    assert prefix == "mh"
    assert token_id == record.token_id
    assert len(random_part) >= 43
    _, second = store.create("bob", "read:search")
    assert second != secret


def test_token_file_lock_and_new_state_dir_are_private(store: TokenStore, state_dir: Path) -> None:
    old_umask = os.umask(0)  # the most permissive umask must not widen the modes
    try:
        store.create("alice", "read:search")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(state_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(state_dir / "tokens.json").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state_dir / "tokens.lock").st_mode) == 0o600


def test_writes_leave_no_temporary_files(store: TokenStore, state_dir: Path) -> None:
    store.create("alice", "read:search")
    store.create("bob", "review")
    store.revoke("alice")
    files = sorted(path.name for path in state_dir.iterdir() if path.is_file())
    assert files == ["tokens.json", "tokens.lock"]


def test_repr_and_public_dict_never_show_the_hash(store: TokenStore) -> None:
    record, secret = store.create("alice", "read:search")
    for shown in (repr(record), str(record), repr(store.list()), str(record.as_dict())):
        assert record.secret_hash not in shown
        assert secret not in shown
    assert "sha256" not in record.as_dict()


# ---- verify --------------------------------------------------------------


def test_verify_returns_the_identity_with_its_grants(store: TokenStore) -> None:
    _, secret = store.create("alice", "read:search,review", workspaces="docs,web", roles="dev")
    identity = store.verify(secret)
    assert identity is not None
    assert identity.name == "alice"
    assert identity.scopes == frozenset({"read:search", "review"})
    assert identity.can_use("docs") and not identity.can_use("ops")
    assert identity.roles == frozenset({"dev"})
    assert not identity.local


def test_verify_compares_hashes_in_constant_time(
    store: TokenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    record, secret = store.create("alice", "read:search")
    seen: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert store.verify(secret) is not None
    assert seen == [(sha256(secret), record.secret_hash)]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"),  # right id, wrong random part
        lambda s: "mh_ffffffffffff_" + s.split("_", 2)[2],  # unknown id
        lambda s: "",
        lambda s: "mh_",
        lambda s: "mh__" + "x" * 43,
        lambda s: s + " ",
        lambda s: "Bearer " + s,
        lambda s: s.replace("mh_", "mh\u00e9", 1),
        lambda s: s + "x" * 1000,
    ],
    ids=[
        "wrong-random",
        "unknown-id",
        "empty",
        "prefix",
        "no-id",
        "space",
        "bearer",
        "non-ascii",
        "huge",
    ],
)
def test_verify_rejects_unknown_and_malformed_secrets(store: TokenStore, mangle) -> None:
    _, secret = store.create("alice", "read:search")
    assert store.verify(mangle(secret)) is None


def test_expired_token_stops_verifying(state_dir: Path) -> None:
    clock = Clock()
    store = TokenStore(state_dir, clock=clock)
    record, secret = store.create("temp", "read:search", expires="1h")
    assert record.expires == "2026-03-01T13:00:00Z"
    clock.now = START + dt.timedelta(minutes=59)
    assert store.verify(secret) is not None
    clock.now = START + dt.timedelta(hours=1)
    assert store.verify(secret) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", "2026-03-31T12:00:00+00:00"),
        ("12h", "2026-03-02T00:00:00+00:00"),
        ("90m", "2026-03-01T13:30:00+00:00"),
        ("2026-04-01", "2026-04-01T00:00:00+00:00"),
        ("2026-04-01T10:00:00", "2026-04-01T10:00:00+00:00"),
        ("2026-04-01T10:00:00+02:00", "2026-04-01T08:00:00+00:00"),
        ("2026-04-01T10:00:00Z", "2026-04-01T10:00:00+00:00"),
    ],
)
def test_expiry_accepts_durations_and_iso_moments_in_utc(text: str, expected: str) -> None:
    assert parse_expiry(text, START).isoformat() == expected


@pytest.mark.parametrize("text", ["0d", "2026-03-01", "2020-01-01T00:00:00Z", "soon", "5w", "-1d"])
def test_expiry_in_the_past_or_unreadable_is_refused(store: TokenStore, text: str) -> None:
    with pytest.raises(TokenError):
        store.create("alice", "read:search", expires=text)
    assert store.list() == []


# ---- create / revoke rules -----------------------------------------------


def test_revoked_token_stops_verifying_and_disappears(store: TokenStore) -> None:
    _, secret = store.create("alice", "read:search")
    store.create("bob", "read:search")
    assert store.revoke("alice") is True
    assert store.verify(secret) is None
    assert [record.name for record in store.list()] == ["bob"]
    assert store.revoke("alice") is False


def test_duplicate_name_is_refused_with_a_clear_message(store: TokenStore) -> None:
    store.create("alice", "read:search")
    with pytest.raises(TokenError, match="'alice' already exists"):
        store.create("alice", "admin")
    assert len(store) == 1


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "caf\u00e9", "a/b", "a,b"])
def test_bad_names_are_refused(store: TokenStore, name: str) -> None:
    with pytest.raises(TokenError, match="bad token name"):
        store.create(name, "read:search")


def test_names_may_use_the_allowed_punctuation(store: TokenStore) -> None:
    record, _ = store.create("ci-bot_2.main@team", "read:search")
    assert record.name == "ci-bot_2.main@team"


@pytest.mark.parametrize("scopes", ["read:everything", "", "read:search,root"])
def test_unknown_or_missing_scopes_are_refused(store: TokenStore, scopes: str) -> None:
    with pytest.raises(TokenError):
        store.create("alice", scopes)
    assert not store.has_tokens()


def test_all_scopes_and_list_arguments_are_accepted(store: TokenStore) -> None:
    record, _ = store.create("ops", "all", workspaces=["docs"], roles=["*"])
    assert record.scopes == ALL_SCOPES
    assert record.workspaces == ("docs",)
    assert record.roles == ("*",)


def test_a_token_needs_a_workspace(store: TokenStore) -> None:
    with pytest.raises(TokenError, match="workspace"):
        store.create("alice", "read:search", workspaces="")


# ---- other processes and other store instances ---------------------------


def _create_many(state_dir: str, prefix: str, count: int, start, queue) -> None:
    store = TokenStore(Path(state_dir))
    start.wait()
    queue.put([store.create(f"{prefix}{i}", "read:search")[1] for i in range(count)])


def test_concurrent_creates_from_two_processes_all_land(state_dir: Path) -> None:
    context = multiprocessing.get_context("fork")
    start, queue = context.Event(), context.Queue()
    workers = [
        context.Process(target=_create_many, args=(str(state_dir), prefix, 15, start, queue))
        for prefix in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    start.set()
    secrets = queue.get(timeout=30) + queue.get(timeout=30)
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    store = TokenStore(state_dir)
    assert len(store) == 30
    assert all(store.verify(secret) is not None for secret in secrets)


def test_running_store_sees_tokens_created_and_revoked_elsewhere(state_dir: Path) -> None:
    daemon = TokenStore(state_dir)
    assert not daemon.has_tokens()
    record, secret = TokenStore(state_dir).create("alice", "read:search")
    identity = daemon.verify(secret)
    assert identity is not None and identity.name == "alice"
    TokenStore(state_dir).revoke("alice")
    assert daemon.verify(secret) is None
    assert daemon.list() == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: "{ not json",
        lambda text: text.replace('"format"', '"fmt"'),
        lambda text: text.replace('"expires": null', '"expires": "2030-01-01T00:00:00"'),
        lambda text: text.replace('"expires": null', '"expires": "someday"'),
        lambda text: text.replace('"sha256": "', '"sha256": "x'),
    ],
    ids=["not-json", "no-format", "naive-expiry", "bad-expiry", "bad-hash"],
)
def test_a_damaged_token_file_fails_closed(store: TokenStore, state_dir: Path, damage) -> None:
    _, secret = store.create("alice", "read:search")
    path = state_dir / "tokens.json"
    path.write_text(damage(path.read_text()))
    assert store.verify(secret) is None
    with pytest.raises(TokenError, match="unreadable token file"):
        store.list()


# ---- bootstrap -----------------------------------------------------------


def test_bootstrap_registers_the_given_secret_as_an_admin_token(store: TokenStore) -> None:
    record = store.bootstrap_from_env({BOOTSTRAP_ENV: STRONG_SECRET})
    assert record is not None and record.name == BOOTSTRAP_NAME
    identity = store.verify(STRONG_SECRET)
    assert identity is not None and identity.has_scope("admin")
    assert identity.can_use("anything") and identity.sees_everything
    assert STRONG_SECRET not in store.path.read_text()


def test_bootstrap_reads_a_secret_file_with_a_trailing_newline(
    store: TokenStore, tmp_path: Path
) -> None:
    secret = "free-shaped-secret-of-enough-length-0123456789"
    secret_file = tmp_path / "bootstrap.secret"
    secret_file.write_text(secret + "\n")
    assert store.bootstrap_from_env({BOOTSTRAP_FILE_ENV: str(secret_file)}) is not None
    assert store.verify(secret) is not None
    assert store.verify(secret[:-1] + "X") is None


def test_a_bootstrap_file_that_never_ends_is_refused_after_a_few_hundred_bytes(
    store: TokenStore,
) -> None:
    # /dev/zero was read whole: all of the start's memory, then a MemoryError.
    with pytest.raises(TokenError, match="far longer than a secret"):
        store.bootstrap_from_env({BOOTSTRAP_FILE_ENV: "/dev/zero"})
    assert not store.has_tokens()


def test_bootstrap_keeps_an_existing_bootstrap_token(store: TokenStore) -> None:
    store.bootstrap_from_env({BOOTSTRAP_ENV: STRONG_SECRET})
    other = "mh_boot02_" + "T" * 43
    assert store.bootstrap_from_env({BOOTSTRAP_ENV: other}) is None
    assert store.verify(STRONG_SECRET) is not None
    assert store.verify(other) is None


def test_bootstrap_does_not_bring_back_a_revoked_secret(store: TokenStore) -> None:
    store.bootstrap_from_env({BOOTSTRAP_ENV: STRONG_SECRET})
    store.revoke(BOOTSTRAP_NAME)
    assert store.bootstrap_from_env({BOOTSTRAP_ENV: STRONG_SECRET}) is None
    assert store.verify(STRONG_SECRET) is None
    rotated = "mh_boot03_" + "R" * 43
    assert store.bootstrap_from_env({BOOTSTRAP_ENV: rotated}) is not None


def test_bootstrap_without_environment_does_nothing(store: TokenStore, state_dir: Path) -> None:
    assert store.bootstrap_from_env({}) is None
    assert not state_dir.exists()


@pytest.mark.parametrize(
    "environ",
    [
        {BOOTSTRAP_ENV: "short"},
        {BOOTSTRAP_ENV: "has spaces but is long enough to pass the length"},
        {BOOTSTRAP_ENV: STRONG_SECRET, BOOTSTRAP_FILE_ENV: "/dev/null"},
        {BOOTSTRAP_FILE_ENV: "/nonexistent/bootstrap.secret"},
    ],
    ids=["weak", "spaces", "both", "missing-file"],
)
def test_bootstrap_refuses_weak_or_ambiguous_secrets(store: TokenStore, environ) -> None:
    with pytest.raises(TokenError):
        store.bootstrap_from_env(environ)
    assert not store.has_tokens()


@pytest.mark.parametrize("reserved", ["local-operator", "environment", "recall-watcher"])
def test_a_stored_token_named_as_the_operator_is_refused_until_revoked(
    store: TokenStore, state_dir: Path, reserved: str
) -> None:
    # Given a token file written before those names were reserved: a token renamed so
    _, secret = store.create("impostor", "admin")
    _, kept = store.create("ci-bot", "read:search")
    path = state_dir / "tokens.json"
    path.write_text(path.read_text().replace('"impostor"', f'"{reserved}"'))
    # Then it is listed (so that it can be revoked) and named, but never verifies,
    # while the other tokens still do
    assert reserved in [record.name for record in store.list()]
    assert store.impostors() == [reserved]
    assert store.verify(secret) is None
    assert store.verify(kept) is not None
    assert store.revoke(reserved) is True
    assert store.impostors() == []


def test_no_token_may_be_named_as_the_recall_watcher(store: TokenStore) -> None:
    # Every watched drawer is written as the watcher: a token of that name would be
    # their writer (and delete them without review or admin)
    with pytest.raises(TokenError, match="'recall-watcher' is reserved"):
        store.create("recall-watcher", "read:search,write:recall")
    assert store.get("recall-watcher") is None


def test_the_bootstrap_token_keeps_verifying(state_dir: Path) -> None:
    store = TokenStore(state_dir, clock=Clock())
    secret = "s" * 40
    assert store.bootstrap_from_env({"MEMHUB_BOOTSTRAP_TOKEN": secret}) is not None
    assert store.verify(secret) is not None
    assert store.impostors() == []


@pytest.mark.parametrize("reserved", ["local-operator", "recall-watcher"])
def test_a_start_names_each_token_refused_for_its_name(
    store: TokenStore, state_dir: Path, monkeypatch: pytest.MonkeyPatch, reserved: str
) -> None:
    import memhubd.server as server

    store.create("impostor", "admin")
    path = state_dir / "tokens.json"
    path.write_text(path.read_text().replace('"impostor"', f'"{reserved}"'))
    # The module's own logger, recorded: structlog's capture_logs misses a logger that
    # an earlier test of the same process already bound and cached.
    logs: list[dict[str, object]] = []

    class Recorder:
        def warning(self, event: str, **fields: object) -> None:
            logs.append({"event": event, **fields})

    monkeypatch.setattr(server, "log", Recorder())
    server.check_tokens_readable(store)
    [warning] = [entry for entry in logs if entry["event"] == "token refused: its name is reserved"]
    assert warning["token"] == reserved and "revoke" in warning["reason"]
    # Its reason names what holds the name.
    held_by = "recall watcher" if reserved == "recall-watcher" else "admin audit"
    assert held_by in warning["reason"]
