"""Bearer tokens: create, list, revoke and verify, persisted in `<state_dir>/tokens.json`.

Secrets are shown once and never stored: the file keeps only their SHA-256,
compared in constant time. Secrets never reach a log line, a repr or the audit.
Creating and revoking on someone's behalf applies the subset rule: a caller
only creates or revokes tokens whose grants are within its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from memhub_protocol.scopes import ALL_SCOPES, parse_scopes
from memhub_protocol.times import EXPIRY_DURATION, parse_iso
from memhubd.auth.audit import AdminAudit
from memhubd.auth.identity import ANY, Identity, grants_beyond, lifetime_beyond
from memhubd.runtime.state import StateDir, file_lock, write_file_atomic

log = structlog.get_logger(__name__)

FILE_FORMAT = "memhub.tokens.v1"
BOOTSTRAP_NAME = "bootstrap"
# The identity recall's directory watcher writes drawers as: a token of that name would
# be the writer of every watched drawer (delete them, give them homes, act in the
# watcher's name in the audit).
WATCHER_NAME = "recall-watcher"
# Identities the admin audit records for the Unix socket's operator, a bootstrap
# registration and the bootstrap token, and the watcher's: never names of tokens
# created by hand.
RESERVED_NAMES = frozenset({"local-operator", "environment", BOOTSTRAP_NAME, WATCHER_NAME})
# Of those, the ones no stored token may ever carry (`bootstrap` is the bootstrap
# token's own): such a token, made before they were reserved, is refused.
IMPOSTOR_NAMES = RESERVED_NAMES - {BOOTSTRAP_NAME}
# A keyword where a partner is named (cowork's peek: whoever else acted last), so no
# partner of that name could be peeked. One made before is kept and named as any other.
KEYWORD_NAMES = frozenset({"auto"})
_SECRET_SHAPE = re.compile(r"mh_[0-9a-f]{12}_")
BOOTSTRAP_ENV = "MEMHUB_BOOTSTRAP_TOKEN"
BOOTSTRAP_FILE_ENV = "MEMHUB_BOOTSTRAP_TOKEN_FILE"
BOOTSTRAP_MIN_LENGTH = 32

_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_GRANT = re.compile(r"[A-Za-z0-9_.@*:-]{1,128}")  # workspace and role names
# mh_<public id>_<random>; the id never contains "_", the random part may.
_SECRET = re.compile(r"mh_([A-Za-z0-9]{1,32})_([A-Za-z0-9_-]{16,256})")
_MAX_SECRET_LENGTH = 512  # longer input is refused before hashing
_DURATION_UNITS = {"d": "days", "h": "hours", "m": "minutes"}

# (device, inode, size, mtime, ctime): inode and ctime are in it because an atomic
# replace can keep the size and, on a coarse clock, the mtime while the content changes.
FileSignature = tuple[int, int, int, int, int]


class TokenError(ValueError):
    """A token operation was refused (bad name, scope, expiry, secret, or a broken file)."""


class TokenFileError(TokenError):
    """The token file exists but cannot be read or understood (the message names it)."""

    @property
    def remedy(self) -> str:
        """What the operator should do about it."""
        return "check the state directory's permissions and disk"


class TokenFileDamaged(TokenFileError):
    """The token file was read but is not a token file memhub can understand."""

    @property
    def remedy(self) -> str:
        return "restore it from a backup, or move it aside"


class TokenRefused(TokenError):
    """The caller may not create or revoke this token: its grants exceed the caller's."""


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_signature(path: Path | int) -> FileSignature | None:
    """The signature of a path or open descriptor; None when the file does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# Verified secrets kept per store (a few callers' tokens; cleared when full): a request
# then costs a stat of the token file, not a hash and a new Identity.
_VERIFIED_SECRETS = 256


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def token_id_of(secret: str) -> str | None:
    """The public id inside a `mh_<id>_<random>` secret, or None for any other shape."""
    match = _SECRET.fullmatch(secret)
    return match.group(1) if match else None


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """One stored token. `token_id` is None for a bootstrap secret given in a free shape."""

    name: str
    token_id: str | None
    secret_hash: str = field(repr=False)
    scopes: tuple[str, ...]
    workspaces: tuple[str, ...]
    roles: tuple[str, ...]
    created: str
    expires: str | None = None

    @property
    def expires_at(self) -> dt.datetime | None:
        return None if self.expires is None else dt.datetime.fromisoformat(self.expires)

    def is_expired(self, now: dt.datetime) -> bool:
        expires = self.expires_at
        return expires is not None and now >= expires

    def identity(self) -> Identity:
        return Identity(
            name=self.name,
            scopes=frozenset(self.scopes),
            workspaces=frozenset(self.workspaces),
            roles=frozenset(self.roles),
            expires=self.expires_at,
        )

    def within(self, holder: Identity) -> bool:
        """True when every grant of this token is also `holder`'s: `holder` may manage it."""
        return not grants_beyond(holder, self.scopes, self.workspaces, self.roles)

    def as_dict(self) -> dict[str, Any]:
        """Public view: everything but the hash."""
        return {
            "name": self.name,
            "id": self.token_id,
            "scopes": list(self.scopes),
            "workspaces": list(self.workspaces),
            "roles": list(self.roles),
            "created": self.created,
            "expires": self.expires,
        }

    def _stored(self) -> dict[str, Any]:
        return {**self.as_dict(), "sha256": self.secret_hash}


# ---- validation ----------------------------------------------------------


def parse_expiry(text: str, now: dt.datetime) -> dt.datetime:
    """`30d` / `12h` / `90m` from now, or an ISO date (midnight UTC) or datetime
    (naive means UTC). Refuses a moment that is not in the future."""
    text = text.strip()
    duration = EXPIRY_DURATION.fullmatch(text)
    try:
        if duration:
            amount, unit = duration.groups()
            moment = now + dt.timedelta(**{_DURATION_UNITS[unit]: int(amount)})
        else:
            moment = parse_iso(text)
        moment = moment.astimezone(dt.UTC).replace(microsecond=0)
    except ValueError:
        raise TokenError(
            f"bad expiry {text!r}: use a duration like 30d, 12h, 90m or an ISO date/datetime"
        ) from None
    except OverflowError:  # past the year 9999 in UTC, or before the year 1
        raise TokenError(f"expiry {text!r} is outside the years 1 to 9999 (UTC)") from None
    if moment <= now:
        raise TokenError(f"expiry {text!r} ({_iso(moment)}) is not in the future")
    return moment


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise TokenError(f"bad token name {name!r}: use 1-64 of A-Z a-z 0-9 _ . @ -")
    return name


def _scopes(scopes: str | Iterable[str]) -> tuple[str, ...]:
    text = scopes if isinstance(scopes, str) else ",".join(scopes)
    try:
        parsed = parse_scopes(text)
    except ValueError as error:
        raise TokenError(str(error)) from None
    if not parsed:
        raise TokenError(f"a token needs at least one scope; known: {', '.join(ALL_SCOPES)}, all")
    return parsed


def _grants(what: str, items: str | Iterable[str]) -> tuple[str, ...]:
    values = items.split(",") if isinstance(items, str) else list(items)
    cleaned = sorted({str(item).strip() for item in values if str(item).strip()})
    for item in cleaned:
        if not _GRANT.fullmatch(item):
            raise TokenError(f"bad {what} name {item!r}")
    return tuple(cleaned)


# ---- the file ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Contents:
    """What the token file said when it had `signature`."""

    signature: FileSignature | None
    records: tuple[TokenRecord, ...] = ()
    # Hashes of revoked bootstrap secrets: the environment must not bring them back.
    retired_bootstrap: frozenset[str] = frozenset()
    by_id: Mapping[str | None, tuple[TokenRecord, ...]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, signature: FileSignature | None, records: Iterable[TokenRecord], retired: Iterable[str]
    ) -> _Contents:
        records = tuple(records)
        by_id: dict[str | None, tuple[TokenRecord, ...]] = {}
        for record in records:
            by_id[record.token_id] = (*by_id.get(record.token_id, ()), record)
        return cls(signature, records, frozenset(retired), by_id)

    def find(self, name: str) -> TokenRecord | None:
        return next((record for record in self.records if record.name == name), None)

    def encode(self) -> bytes:
        data = {
            "format": FILE_FORMAT,
            "tokens": [record._stored() for record in self.records],
            "retired_bootstrap": sorted(self.retired_bootstrap),
        }
        return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def _decode(path: Path, raw: bytes, signature: FileSignature | None) -> _Contents:
    try:
        data = json.loads(raw)
        if data.get("format") != FILE_FORMAT:
            raise ValueError(f"format is not {FILE_FORMAT}")
        records = [
            TokenRecord(
                name=str(item["name"]),
                token_id=item["id"],
                secret_hash=str(item["sha256"]),
                scopes=tuple(item["scopes"]),
                workspaces=tuple(item["workspaces"]),
                roles=tuple(item["roles"]),
                created=str(item["created"]),
                expires=item["expires"],
            )
            for item in data["tokens"]
        ]
        retired = [str(digest) for digest in data.get("retired_bootstrap", [])]
        for record in records:
            _check_stored(record)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise TokenFileDamaged(f"{path}: unreadable token file ({error})") from None
    return _Contents.of(signature, records, retired)


def _check_stored(record: TokenRecord) -> None:
    # A hand-edited file must fail here, not later inside verify().
    if len(record.secret_hash) != 64:
        raise ValueError(f"token {record.name!r} has no valid sha256")
    expires = record.expires_at
    if expires is not None and expires.tzinfo is None:
        raise ValueError(f"token {record.name!r} expires without a time zone")


# ---- the store -----------------------------------------------------------


class TokenStore:
    """The tokens of one state directory, shared safely by the daemon and offline commands.

    Reads re-check the file's signature (one stat) so a token created or revoked by
    another process counts at once; writes lock, re-read, change and replace the file.
    Administrative actions are audited by callers, who know who asked for them
    (`audit`, the admin audit of the same state directory).
    """

    def __init__(
        self, state_dir: Path | str, *, clock: Callable[[], dt.datetime] = utc_now
    ) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / "tokens.json"
        self.lock_path = self.state_dir / "tokens.lock"
        self._clock = clock
        self._mutex = threading.Lock()
        self._contents = _Contents(signature=None)
        # Secrets verified against the contents now read: (contents, record, identity).
        # A changed file is new contents, so a revocation still takes effect at once.
        self._verified: dict[str, tuple[_Contents, TokenRecord, Identity]] = {}
        self.audit = AdminAudit(self.state_dir)

    # ---- reading ---------------------------------------------------------

    def _read(self) -> _Contents:
        """The file's contents, re-read only when its signature changed since last time."""
        with self._mutex:
            if file_signature(self.path) == self._contents.signature:
                return self._contents
            try:
                with open(self.path, "rb") as handle:
                    # The signature of what is actually read, not of what was stat'ed before.
                    signature = file_signature(handle.fileno())
                    contents = _decode(self.path, handle.read(), signature)
            except FileNotFoundError:
                contents = _Contents(signature=None)
            except OSError as error:  # unreadable (permissions, an I/O error)
                raise TokenFileError(
                    f"{self.path}: unreadable token file ({error.strerror or error})"
                ) from None
            self._contents = contents
            return contents

    def list(self) -> list[TokenRecord]:
        return list(self._read().records)

    def get(self, name: str) -> TokenRecord | None:
        return self._read().find(name)

    def __len__(self) -> int:
        return len(self._read().records)

    def has_tokens(self) -> bool:
        return len(self) > 0

    def verify(self, secret: str) -> Identity | None:
        """The identity behind `secret`; None if unknown, malformed, revoked or expired."""
        if not isinstance(secret, str) or not 0 < len(secret) <= _MAX_SECRET_LENGTH:
            return None
        if not secret.isascii():
            return None
        try:
            contents = self._read()
        except (TokenError, OSError) as error:
            # Fail closed: no token is valid while the file cannot be read.
            log.error("token_file_unreadable", path=str(self.path), error=str(error))
            return None
        known = self._verified.get(secret)
        if known is not None and known[0] is contents:
            found, identity = known[1], known[2]
        else:
            digest = _hash(secret)
            matched = None
            for record in contents.by_id.get(token_id_of(secret), ()):
                if hmac.compare_digest(digest, record.secret_hash):
                    matched = record
            if matched is None:
                return None
            found, identity = matched, matched.identity()
            if len(self._verified) >= _VERIFIED_SECRETS:
                self._verified.clear()
            self._verified[secret] = (contents, found, identity)
        if found.is_expired(self._clock()) or found.name in IMPOSTOR_NAMES:
            return None
        return identity

    def impostors(self) -> list[str]:
        """Stored tokens named as the audit names the operator or the environment, or
        as the recall watcher (made before those names were reserved): `verify` refuses
        them."""
        return sorted({r.name for r in self._read().records if r.name in IMPOSTOR_NAMES})

    # ---- writing ---------------------------------------------------------

    def create(
        self,
        name: str,
        scopes: str | Iterable[str],
        workspaces: str | Iterable[str] = (ANY,),
        roles: str | Iterable[str] = (),
        expires: str | None = None,
        *,
        issuer: Identity | None = None,
    ) -> tuple[TokenRecord, str]:
        """Register a new token; returns its record and the secret, which exists nowhere else.

        With an `issuer` (a caller of the API), raises TokenRefused unless every grant
        of the new token, after `all` is expanded, is the issuer's own and it expires
        no later than the issuer's token. None is the operator on the state directory.
        """
        if isinstance(name, str) and name in RESERVED_NAMES:
            # The names the admin audit gives the socket's operator and the bootstrap's
            # registration, and the watcher's: a token called so would pass for them.
            raise TokenError(f"token name {name!r} is reserved; choose another")
        if isinstance(name, str) and name in KEYWORD_NAMES:
            raise TokenError(
                f"token name {name!r} is reserved (a peek at 'auto' is at whoever else acted "
                "last); choose another"
            )
        if isinstance(name, str) and _SECRET_SHAPE.match(name):
            # A secret pasted as a name would be shown by every token list (and is kept
            # out of the audit): refused, and never echoed.
            raise TokenError("a token name may not look like a secret (mh_<id>_...)")
        secret = f"mh_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"
        record = self._new_record(name, secret, scopes, workspaces, roles, expires)
        if issuer is not None:
            _check_issuer(issuer, record)
        self._add(record)
        return record, secret

    def revoke(self, name: str, *, by: Identity | None = None) -> bool:
        """Remove the token called `name`; False if there is none. With `by`, raises
        TokenRefused when that token has grants `by` does not hold (a scoped admin
        cannot revoke a wider admin)."""
        with self._locked() as contents:
            record = contents.find(name)
            if record is None:
                return False
            if by is not None and not record.within(by):
                raise TokenRefused(
                    f"token {name!r} has grants beyond those of {by.name!r}; "
                    "only a token holding all of them may revoke it"
                )
            retired = set(contents.retired_bootstrap)
            if name == BOOTSTRAP_NAME:
                retired.add(record.secret_hash)
            self._write([other for other in contents.records if other.name != name], retired)
        return True

    def bootstrap_from_env(self, environ: Mapping[str, str] | None = None) -> TokenRecord | None:
        """Register the secret in $MEMHUB_BOOTSTRAP_TOKEN (or the file named by
        $MEMHUB_BOOTSTRAP_TOKEN_FILE) as the admin token `bootstrap`, unless a token of
        that name exists or that very secret was revoked before. Returns the new record."""
        secret = _bootstrap_secret(os.environ if environ is None else environ)
        if secret is None:
            return None
        from memhubd.runtime.logging import remember_secret  # not for token commands

        remember_secret(secret)
        everything = (ANY,)
        record = self._new_record(BOOTSTRAP_NAME, secret, ALL_SCOPES, everything, everything, None)
        with self._locked() as contents:
            existing = contents.find(BOOTSTRAP_NAME)
            if existing is not None:
                if existing.secret_hash != record.secret_hash:
                    log.warning(
                        "bootstrap_secret_not_registered",
                        token=BOOTSTRAP_NAME,
                        reason="a token of that name exists; revoke it to bootstrap again",
                    )
                return None
            if record.secret_hash in contents.retired_bootstrap:
                log.warning("bootstrap_secret_revoked_before", token=BOOTSTRAP_NAME)
                return None
            self._write((*contents.records, record), contents.retired_bootstrap)
        try:
            self.audit.record(
                "token.create",
                identity="environment",
                via="startup",
                outcome="ok",
                token=record.as_dict(),
            )
        except OSError as error:
            # The token is registered; a missing audit line must not stop the daemon.
            log.error("admin_audit_write_failed", path=str(self.audit.path), error=str(error))
        return record

    def _new_record(
        self,
        name: str,
        secret: str,
        scopes: str | Iterable[str],
        workspaces: str | Iterable[str],
        roles: str | Iterable[str],
        expires: str | None,
    ) -> TokenRecord:
        now = self._clock()
        granted = _grants("workspace", workspaces)
        if not granted:
            raise TokenError("a token needs at least one workspace (or * for all)")
        return TokenRecord(
            name=_check_name(name),
            token_id=token_id_of(secret),
            secret_hash=_hash(secret),
            scopes=_scopes(scopes),
            workspaces=granted,
            roles=_grants("role", roles),
            created=_iso(now),
            expires=None if expires is None else _iso(parse_expiry(expires, now)),
        )

    def _add(self, record: TokenRecord) -> None:
        with self._locked() as contents:
            if contents.find(record.name) is not None:
                raise TokenError(
                    f"a token named {record.name!r} already exists: revoke it first "
                    f"(memhubd token revoke {record.name}) or choose another name"
                )
            self._write((*contents.records, record), contents.retired_bootstrap)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[_Contents]:
        """The current contents, with the file lock held for a read-modify-write."""
        StateDir(self.state_dir)  # creates the directory, mode 0700, if it is missing
        with file_lock(self.lock_path):
            yield self._read()

    def _write(self, records: Iterable[TokenRecord], retired: Iterable[str]) -> None:
        # Only called inside _locked(), so no other writer can slip in between.
        contents = _Contents.of(None, records, retired)
        write_file_atomic(self.path, contents.encode())
        with self._mutex:
            self._contents = dataclasses.replace(contents, signature=file_signature(self.path))


def _check_issuer(issuer: Identity, record: TokenRecord) -> None:
    problems = grants_beyond(issuer, record.scopes, record.workspaces, record.roles)
    lifetime = lifetime_beyond(issuer, record.expires_at)
    if lifetime is not None:
        problems.append(lifetime)
    if problems:
        raise TokenRefused(
            f"token {issuer.name!r} cannot grant {'; '.join(problems)}: "
            "a token can only receive grants its creator holds"
        )


def _bootstrap_secret(environ: Mapping[str, str]) -> str | None:
    value, path = environ.get(BOOTSTRAP_ENV), environ.get(BOOTSTRAP_FILE_ENV)
    if value and path:
        raise TokenError(f"set only one of {BOOTSTRAP_ENV} and {BOOTSTRAP_FILE_ENV}")
    if path:
        try:
            # A secret is short: reading at most a little past the longest one keeps a
            # wrong path (/dev/zero, a large file) from taking the start's memory.
            with open(path, "rb") as handle:
                raw = handle.read(_MAX_SECRET_LENGTH + 64)
            if len(raw) > _MAX_SECRET_LENGTH + 63:
                raise TokenError(f"{BOOTSTRAP_FILE_ENV}: {path} is far longer than a secret")
            value = raw.decode("ascii")
        except OSError as error:
            raise TokenError(
                f"{BOOTSTRAP_FILE_ENV}: cannot read {path}: {error.strerror}"
            ) from None
        except UnicodeDecodeError:
            # The decoder's message would quote a byte of the secret.
            raise TokenError(f"{BOOTSTRAP_FILE_ENV}: {path} is not ASCII") from None
        if not value.strip():
            raise TokenError(f"{BOOTSTRAP_FILE_ENV}: {path} is empty")
    if not value:
        return None
    secret = value.strip()
    plausible = token_id_of(secret) is not None or len(secret) >= BOOTSTRAP_MIN_LENGTH
    printable = secret.isascii() and secret.isprintable() and not any(c.isspace() for c in secret)
    if not (plausible and printable and len(secret) <= _MAX_SECRET_LENGTH):
        raise TokenError(
            f"the bootstrap secret must look like mh_<id>_<random> or be at least "
            f"{BOOTSTRAP_MIN_LENGTH} printable ASCII characters without spaces"
        )
    return secret
