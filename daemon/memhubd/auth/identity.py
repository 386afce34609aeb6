"""Identity: who is calling, with which scopes, on which workspaces, in which roles.

A plain value built by the token store (or for the local operator); it grants
nothing by itself: the service asks it questions before acting. The subset rule
of token administration (`grants_beyond`) lives here because it is a question
about two sets of grants, not about files or requests.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from memhub_protocol.scopes import ALL_SCOPES

ANY = "*"  # in `workspaces`: every workspace; in `roles`: sees every declaration

LOCAL_OPERATOR_NAME = "local-operator"


@dataclass(frozen=True, slots=True)
class Identity:
    """A caller. `local` marks the operator on the Unix socket (no token needed);
    `expires` is when the caller's token stops working (None: never)."""

    name: str
    scopes: frozenset[str]
    workspaces: frozenset[str] = frozenset({ANY})
    roles: frozenset[str] = frozenset()
    local: bool = False
    expires: dt.datetime | None = None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def can_use(self, workspace: str) -> bool:
        return ANY in self.workspaces or workspace in self.workspaces

    @property
    def sees_everything(self) -> bool:
        """True when access policies never hide anything from this caller."""
        return ANY in self.roles

    @property
    def manages_all_workspaces(self) -> bool:
        """Granted `*`: may add and remove workspaces and manage every token."""
        return ANY in self.workspaces


def _beyond(held: frozenset[str], wanted: Iterable[str]) -> list[str]:
    """The items of `wanted` not covered by `held`; `*` is covered only by `*`."""
    if ANY in held:
        return []
    return sorted({item for item in wanted if item not in held})


def grants_beyond(
    holder: Identity, scopes: Iterable[str], workspaces: Iterable[str], roles: Iterable[str]
) -> list[str]:
    """What of the given grants `holder` does not hold itself, one phrase per kind;
    empty when they are all within its own (the subset rule).

    Scopes are compared after `all` was expanded, so they are plain sets. A
    workspace or role `*` is only within a holder that has `*` itself.
    """
    problems: list[str] = []
    extra_scopes = sorted(set(scopes) - holder.scopes)
    if extra_scopes:
        problems.append(f"scopes {', '.join(extra_scopes)}")
    extra_workspaces = _beyond(holder.workspaces, workspaces)
    if extra_workspaces:
        problems.append(f"workspaces {', '.join(extra_workspaces)}")
    extra_roles = _beyond(holder.roles, roles)
    if extra_roles:
        problems.append(f"roles {', '.join(extra_roles)}")
    return problems


def lifetime_beyond(holder: Identity, expires: dt.datetime | None) -> str | None:
    """Why a token ending at `expires` (None: never) outlives `holder`'s own token, or None.

    A short-lived token must not mint a longer-lived one: that would extend its
    own reach past the moment its issuer chose.
    """
    if holder.expires is None or (expires is not None and expires <= holder.expires):
        return None
    until = holder.expires.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"a lifetime beyond {until} (when the caller's own token expires)"


def local_operator() -> Identity:
    """The Unix-socket operator: every scope, every workspace, every declaration."""
    return Identity(
        name=LOCAL_OPERATOR_NAME,
        scopes=frozenset(ALL_SCOPES),
        workspaces=frozenset({ANY}),
        roles=frozenset({ANY}),
        local=True,
    )
