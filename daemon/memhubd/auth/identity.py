"""Identity: who is calling, with which scopes, on which workspaces, in which roles.

A plain value built by the token store (or for the local operator); it grants
nothing by itself: the service asks it questions before acting.
"""

from __future__ import annotations

from dataclasses import dataclass

from memhub_protocol.scopes import ALL_SCOPES

ANY = "*"  # in `workspaces`: every workspace; in `roles`: sees every declaration

LOCAL_OPERATOR_NAME = "local-operator"


@dataclass(frozen=True, slots=True)
class Identity:
    """A caller. `local` marks the operator on the Unix socket (no token needed)."""

    name: str
    scopes: frozenset[str]
    workspaces: frozenset[str] = frozenset({ANY})
    roles: frozenset[str] = frozenset()
    local: bool = False

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def can_use(self, workspace: str) -> bool:
        return ANY in self.workspaces or workspace in self.workspaces

    @property
    def sees_everything(self) -> bool:
        """True when access policies never hide anything from this caller."""
        return ANY in self.roles


def local_operator() -> Identity:
    """The Unix-socket operator: every scope, every workspace, every declaration."""
    return Identity(
        name=LOCAL_OPERATOR_NAME,
        scopes=frozenset(ALL_SCOPES),
        workspaces=frozenset({ANY}),
        roles=frozenset({ANY}),
        local=True,
    )
