"""Which daemon, token and workspace memctl uses: flags > environment > client.toml > default.

Each setting is resolved on its own. This module reads files and the environment
only; it must not open connections (the last-resort workspace choice asks the daemon,
and that happens in `commands.py`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from memctl.transport import socket_url
from memhub_protocol import paths
from memhub_protocol.record import Record

ENV_URL = "MEMHUB_URL"
ENV_TOKEN = "MEMHUB_TOKEN"
ENV_WORKSPACE = "MEMHUB_WORKSPACE"
CONFIG_KEYS = ("url", "token", "workspace")


class ConfigError(ValueError):
    """client.toml cannot be read or holds something memctl does not understand."""


class Settings(Record):
    """The resolved settings, and where each came from (`flag`, `env`, a file path, `default`)."""

    __slots__ = ("url", "token", "workspace", "url_source", "token_source", "workspace_source")
    url: str
    token: str | None
    workspace: str | None
    url_source: str
    token_source: str | None
    workspace_source: str | None

    def __init__(
        self,
        url: str,
        token: str | None,
        workspace: str | None,
        url_source: str = "default",
        token_source: str | None = None,
        workspace_source: str | None = None,
    ) -> None:
        self._set(
            url=url,
            token=token,
            workspace=workspace,
            url_source=url_source,
            token_source=token_source,
            workspace_source=workspace_source,
        )


def home_dir(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def config_path(env: Mapping[str, str]) -> str:
    """`$XDG_CONFIG_HOME/memhub/client.toml`, else `~/.config/memhub/client.toml`."""
    base = env.get("XDG_CONFIG_HOME")
    root = base if base and os.path.isabs(base) else os.path.join(home_dir(env), ".config")
    return os.path.join(root, "memhub", "client.toml")


def default_socket_path(env: Mapping[str, str]) -> str:
    """The daemon's default socket: `$XDG_RUNTIME_DIR/memhub/memhubd.sock`, else
    `memhubd.sock` in its state dir (`$MEMHUB_STATE_DIR`, else ~/.local/share/memhub).

    The rule lives in memhub_protocol, which memhubd uses too.
    """
    return paths.default_socket_path(paths.default_state_dir(env), env)


def load_config_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """The `url`, `token` and `workspace` keys of a client.toml; {} when the file is absent."""
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror or error}") from error
    import tomllib  # here: most machines have no client.toml, and the parser costs ms

    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from error
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        known = ", ".join(CONFIG_KEYS)
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {known})")
    values: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(value, str):
            raise ConfigError(f"{path}: '{key}' must be a string")
        if value.strip():
            values[key] = value.strip()
    return values


def resolve_settings(
    *,
    url: str | None = None,
    token: str | None = None,
    workspace: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve each setting from the flags given here, then `env`, then client.toml."""
    env = os.environ if env is None else env
    path = config_path(env)
    layers: list[tuple[str, Mapping[str, str | None]]] = [
        ("flag", {"url": url, "token": token, "workspace": workspace}),
        (
            "env",
            {
                "url": env.get(ENV_URL),
                "token": env.get(ENV_TOKEN),
                "workspace": env.get(ENV_WORKSPACE),
            },
        ),
    ]
    found: dict[str, tuple[str, str]] = {}
    for source, values in layers:
        _take(found, source, values)
    if any(key not in found for key in CONFIG_KEYS):
        _take(found, str(path), load_config_file(path))
    chosen_url, url_source = found.get("url", (socket_url(default_socket_path(env)), "default"))
    chosen_token, token_source = found.get("token", (None, None))
    if chosen_token is not None:
        # Pasted as the header it goes in, or with a trailing newline from a file.
        chosen_token = chosen_token.strip()
        if chosen_token[:7].lower() == "bearer ":
            chosen_token = chosen_token[7:].strip()
    if chosen_token is not None and not _header_safe(chosen_token):
        where = {"flag": "--token", "env": ENV_TOKEN}.get(token_source or "", token_source)
        raise ConfigError(
            f"the token from {where} holds a line break, a control character or a character "
            "outside Latin-1: a token is one line of printable text (mh_…)"
        )
    chosen_workspace, workspace_source = found.get("workspace", (None, None))
    if chosen_workspace is not None and workspace_source == "env":
        _check_utf8(chosen_workspace, ENV_WORKSPACE)
    if url_source == "env":
        _check_utf8(chosen_url, ENV_URL)
    return Settings(
        url=chosen_url,
        token=chosen_token,
        workspace=chosen_workspace,
        url_source=url_source,
        token_source=token_source,
        workspace_source=workspace_source,
    )


def _check_utf8(value: str, variable: str) -> None:
    """An environment variable holding bytes that are not UTF-8 (Python keeps them as
    lone surrogates) is named, rather than taken for an argument."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{variable} is not valid UTF-8 text") from None


def _header_safe(value: str) -> bool:
    """Whether `value` can be sent as an HTTP header value as it is."""
    return all(" " <= char <= "\xff" and char != "\x7f" for char in value)


def _take(found: dict[str, tuple[str, str]], source: str, values: Mapping[str, str | None]) -> None:
    for key, value in values.items():
        # An empty value (MEMHUB_TOKEN= in a script) means "not set", not "empty token".
        if key not in found and value is not None and value.strip():
            found[key] = (value.strip(), source)
