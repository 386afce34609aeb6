"""Identity and access: bearer tokens, identities with scopes/workspaces/roles, and the
`access_policy.readers` filter. Knows nothing of HTTP; the service asks, adapters answer.
"""

from memhubd.auth.access import (
    HIDDEN_MARKER,
    SourceSpan,
    is_visible,
    readers_of,
    redact_source,
    split_visible,
)
from memhubd.auth.commands import add_token_commands, default_state_dir
from memhubd.auth.identity import ANY, Identity, local_operator
from memhubd.auth.tokens import (
    BOOTSTRAP_ENV,
    BOOTSTRAP_FILE_ENV,
    BOOTSTRAP_NAME,
    TokenError,
    TokenRecord,
    TokenStore,
    parse_expiry,
)

__all__ = [
    "ANY",
    "BOOTSTRAP_ENV",
    "BOOTSTRAP_FILE_ENV",
    "BOOTSTRAP_NAME",
    "HIDDEN_MARKER",
    "Identity",
    "SourceSpan",
    "TokenError",
    "TokenRecord",
    "TokenStore",
    "add_token_commands",
    "default_state_dir",
    "is_visible",
    "local_operator",
    "parse_expiry",
    "readers_of",
    "redact_source",
    "split_visible",
]
