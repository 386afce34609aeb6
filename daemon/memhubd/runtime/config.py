"""Daemon configuration: built-in defaults, then a TOML file, then command-line flags.

Turns text into a frozen `DaemonConfig` or a `ConfigError` naming the source and
the key; unknown keys are errors so that a typo is never silently ignored. It must
not bind sockets, create directories or read workspaces.
"""

from __future__ import annotations

import argparse
import difflib
import grp
import ipaddress
import os
import re
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from memhub_protocol import paths
from memhub_protocol.models import _WORKSPACE_NAME, MAX_WORKSPACE_NAME
from memhub_protocol.recall import NotRegular, read_regular

CONFIG_ENV = "MEMHUB_CONFIG"
STATE_DIR_ENV = paths.STATE_DIR_ENV
FLAGS_SOURCE = "command line"
LOG_FORMATS = ("auto", "json", "console")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
# A config file is a few KiB: a bound keeps a wrong path (a device, a log) from taking
# the start's memory.
MAX_CONFIG_BYTES = 1024 * 1024
# sockaddr_un.sun_path holds 108 bytes on Linux, one of them the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107


class ConfigError(ValueError):
    """A configuration value is missing, malformed or unknown; the message names where."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Size and time bounds on what one request may ask of the daemon."""

    max_body_bytes: int = 1024 * 1024
    max_query_chars: int = 65536
    max_result_bytes: int = 8 * 1024 * 1024
    regex_timeout_ms: int = 100
    max_workspaces: int = 64
    max_proposal_bytes: int = 65536
    # Pending proposals one identity may have in one workspace: each is a file that every
    # list reads, so an agent proposing in a loop must not grow them without bound.
    max_pending_proposals: int = 500
    max_header_bytes: int = 32768
    max_headers: int = 100
    read_timeout_s: int = 10
    keep_alive_timeout_s: int = 5
    # An answer the client stops reading is dropped after this long: until then the
    # connection holds what is left of it in memory.
    write_timeout_s: int = 30
    # Answers kept for repeated queries of one snapshot (LRU by encoded size).
    response_cache_bytes: int = 64 * 1024 * 1024
    # Open `/v1/events` streams: each holds a connection (a file descriptor) for as
    # long as its client keeps it, so their number is bounded, per token and in all.
    max_event_streams: int = 256
    max_event_streams_per_token: int = 8


@dataclass(frozen=True, slots=True)
class WatchConfig:
    """How workspace changes are noticed: events, batching and the periodic re-scan."""

    debounce_ms: int = 200
    rescan_interval_s: float = 30.0  # 0 disables the periodic re-scan
    force_polling: bool = False
    # Editor saves: a file that goes missing or empty keeps its declarations this long;
    # changed bytes are served once unchanged this long. 0 turns either off.
    vanish_grace_ms: int = 1000
    settle_ms: int = 100


@dataclass(frozen=True, slots=True)
class McpConfig:
    """The MCP endpoint: whether it is served and which extra Host names it accepts."""

    enabled: bool = True
    allowed_hosts: tuple[str, ...] = ()
    fast_path: bool = True


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Recall: the embedder (`embedder = "none"` for BM25 only), ingest bounds, dedup."""

    embedder: str = "static"
    embedder_model: str = ""
    embedder_url: str = ""
    embedder_dimension: int = 0
    embedder_api_key_env: str = ""
    embedder_timeout_s: float = 30.0
    max_file_bytes: int = 16 * 1024 * 1024
    near_duplicate: float = 0.95
    lock_timeout_s: float = 5.0
    watch: dict[str, tuple[str, ...]] = field(default_factory=dict)  # workspace -> dirs


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    """Everything `memhubd serve` needs to know before it starts, already validated."""

    host: str = "127.0.0.1"
    port: int = 8377
    socket_path: str = ""  # "" = no Unix socket
    socket_mode: int = 0o600
    socket_group: str | None = None
    state_dir: str = ""
    workspaces: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    watch: WatchConfig = field(default_factory=WatchConfig)
    log_format: str = "auto"
    log_level: str = "info"
    mcp: McpConfig = field(default_factory=McpConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)

    @property
    def loopback_only(self) -> bool:
        """True when the TCP listener is reachable from this machine only."""
        return is_loopback_host(self.host)


def is_workspace_name(name: str) -> bool:
    """The protocol's rule (`WorkspaceAddRequest`), for every door: a name is a path part
    in the state directory, so one made only of dots (`.`, `..`) is refused."""
    return len(name) <= MAX_WORKSPACE_NAME and _WORKSPACE_NAME.fullmatch(name) is not None


WORKSPACE_NAME_RULE = "1-64 of A-Z a-z 0-9 _ . -, at least one letter or digit"


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a value came from, for error messages and relative paths."""

    source: str  # the config file as named by the caller, or FLAGS_SOURCE
    base_dir: str  # relative paths are resolved against this directory
    table: str = ""  # "limits", "watch", ... for nested keys

    def error(self, key: str, problem: str) -> ConfigError:
        prefix = f"[{self.table}] " if self.table else ""
        return ConfigError(f"{self.source}: {prefix}{key} {problem}")


def _integer(value: Any, key: str, where: _Where, low: int, high: int | None = None) -> int:
    valid = isinstance(value, int) and not isinstance(value, bool)
    if valid and value >= low and (high is None or value <= high):
        return value
    if low == 1 and high is None:
        raise where.error(key, f"must be a positive integer, got {value!r}")
    raise where.error(key, f"must be an integer between {low} and {high}, got {value!r}")


def _positive(value: Any, key: str, where: _Where) -> int:
    return _integer(value, key, where, 1)


def _boolean(value: Any, key: str, where: _Where) -> bool:
    if not isinstance(value, bool):
        raise where.error(key, f"must be true or false, got {value!r}")
    return value


def _text(value: Any, key: str, where: _Where) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.error(key, f"must be a non-empty string, got {value!r}")
    return _without_nul(value, key, where).strip()


def _optional_text(value: Any, key: str, where: _Where) -> str:
    """A string; empty (the default) means unset."""
    if not isinstance(value, str):
        raise where.error(key, f'must be a string ("" for none), got {value!r}')
    return _without_nul(value, key, where).strip()


def _without_nul(value: str, key: str, where: _Where) -> str:
    # No path, name, host or URL can hold one; the system calls would raise ValueError
    # later, far from the key (a watched directory's task, a socket's bind).
    if "\x00" in value:
        raise where.error(key, f"must not contain a NUL byte, got {value!r}")
    return value


def _choice(choices: tuple[str, ...]) -> Callable[[Any, str, _Where], str]:
    def check(value: Any, key: str, where: _Where) -> str:
        if not isinstance(value, str) or value.lower() not in choices:
            raise where.error(key, f"must be one of {', '.join(choices)}; got {value!r}")
        return value.lower()

    return check


def _path(value: Any, key: str, where: _Where) -> str:
    text = _text(value, key, where)
    return os.path.normpath(os.path.join(where.base_dir, os.path.expanduser(text)))


def _port(value: Any, key: str, where: _Where) -> int:
    return _integer(value, key, where, 0, 65535)


def _socket_path(value: Any, key: str, where: _Where) -> str:
    if value == "":
        return ""
    path = _path(value, key, where)
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH_BYTES:
        raise where.error(
            key, f"is {size} bytes long; Unix sockets allow {MAX_SOCKET_PATH_BYTES}: {path}"
        )
    return path


def _socket_mode(value: Any, key: str, where: _Where) -> int:
    mode = value
    if isinstance(value, str):
        digits = value.strip().lower().removeprefix("0o")
        mode = int(digits, 8) if re.fullmatch(r"[0-7]{1,4}", digits) else None
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o777:
        shown = (
            oct(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)
        )
        raise where.error(key, f'must be an octal file mode such as 0o600 or "0660"; got {shown}')
    if mode & 0o007:
        # The socket grants admin to whoever can connect to it.
        raise where.error(key, f"must not give access to other users (got {oct(mode)})")
    return mode


def _socket_group(value: Any, key: str, where: _Where) -> str | None:
    name = _text(value, key, where)
    try:
        grp.getgrnam(name)
    except KeyError:
        raise where.error(key, f"names no group on this system: {name!r}") from None
    return name


def _hosts(value: Any, key: str, where: _Where) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise where.error(key, f"must be a list of host names, got {value!r}")
    return tuple(_host(item, key, where) for item in value)


def _host(value: Any, key: str, where: _Where) -> str:
    """`host` or `host:port`, as a Host header carries it: a URL would never match one."""
    host = _text(value, key, where)
    if "/" in host or "@" in host or any(c.isspace() for c in host):
        netloc = urllib.parse.urlsplit(host).netloc.rpartition("@")[2]
        hint = f'; write "{netloc}"' if netloc else ""
        raise where.error(
            key, f"items are host names (host or host:port), not URLs: got {host!r}{hint}"
        )
    return host


# Upper bounds of times and sizes: far above any sensible setting, and far below where
# a value overflows what it is handed to (select's and a lock's timeout, a read's size).
MAX_MILLISECONDS = 600_000  # 10 minutes
MAX_SECONDS = 86_400  # a day
MAX_FILE_BYTES = 1024 * 1024 * 1024  # 1 GiB


def _milliseconds(value: Any, key: str, where: _Where) -> int:
    return _integer(value, key, where, 0, MAX_MILLISECONDS)


def _positive_milliseconds(value: Any, key: str, where: _Where) -> int:
    return _integer(value, key, where, 1, MAX_MILLISECONDS)


def _positive_seconds(value: Any, key: str, where: _Where) -> int:
    return _integer(value, key, where, 1, MAX_SECONDS)


def _seconds(value: Any, key: str, where: _Where) -> float:
    return _seconds_within(value, key, where, "0")


# The longest an http embedder's request may take: an endpoint that hangs holds each
# write (and a query each 30 s) this long before it is given up.
MAX_EMBEDDER_TIMEOUT_S = 600.0


def _embedder_timeout(value: Any, key: str, where: _Where) -> float:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not (number and 0 < value <= MAX_EMBEDDER_TIMEOUT_S):
        raise where.error(
            key,
            f"must be a number of seconds above 0, at most {MAX_EMBEDDER_TIMEOUT_S:g}, "
            f"got {value!r}",
        )
    return float(value)


def _rescan_interval(value: Any, key: str, where: _Where) -> float:
    return _seconds_within(value, key, where, "0 (disables)")


def _seconds_within(value: Any, key: str, where: _Where, low: str) -> float:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not (number and 0 <= value <= MAX_SECONDS):
        raise where.error(
            key, f"must be a number of seconds from {low} to {MAX_SECONDS}, got {value!r}"
        )
    return float(value)


# [limits] keys with an upper bound; the others are sizes and counts only compared.
_LIMITS_BOUNDED: dict[str, Callable[[Any, str, _Where], Any]] = {
    "regex_timeout_ms": _positive_milliseconds,
    "read_timeout_s": _positive_seconds,
    "keep_alive_timeout_s": _positive_seconds,
    "write_timeout_s": _positive_seconds,
}


# key -> checker, per table; the checkers' order is the documentation's order.
_Checker = Callable[[Any, str, _Where], Any]
_TOP: dict[str, _Checker] = {
    "host": _text,
    "port": _port,
    "socket_path": _socket_path,
    "socket_mode": _socket_mode,
    "socket_group": _socket_group,
    "state_dir": _path,
    "log_format": _choice(LOG_FORMATS),
    "log_level": _choice(LOG_LEVELS),
}
_TABLES: dict[str, dict[str, _Checker]] = {
    "limits": {f.name: _LIMITS_BOUNDED.get(f.name, _positive) for f in fields(Limits)},
    "watch": {
        "debounce_ms": _positive_milliseconds,
        "rescan_interval_s": _rescan_interval,
        "force_polling": _boolean,
        "vanish_grace_ms": _milliseconds,
        "settle_ms": _milliseconds,
    },
    "mcp": {"enabled": _boolean, "allowed_hosts": _hosts, "fast_path": _boolean},
    "recall": {
        "embedder": _choice(("static", "onnx", "http", "none")),
        "embedder_model": _optional_text,
        "embedder_url": _optional_text,
        "embedder_dimension": lambda v, k, w: _integer(v, k, w, 0, 65536),
        "embedder_api_key_env": _optional_text,
        "embedder_timeout_s": _embedder_timeout,
        "max_file_bytes": lambda v, k, w: _integer(v, k, w, 1, MAX_FILE_BYTES),
        "near_duplicate": lambda v, k, w: _fraction(v, k, w),
        "lock_timeout_s": _seconds,
    },
}


def _unknown(key: str, known: list[str], where: _Where) -> ConfigError:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return where.error(repr(key), f"is not a configuration key{hint}")


def _check_table(raw: Any, checks: dict[str, _Checker], where: _Where) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where.source}: [{where.table}] must be a table, got {raw!r}")
    checked = {}
    for key, value in raw.items():
        if key not in checks:
            raise _unknown(key, list(checks), where)
        if value is not None:
            checked[key] = checks[key](value, key, where)
    return checked


def _fraction(value: Any, key: str, where: _Where) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise where.error(key, f"must be a number above 0 and at most 1, got {value!r}")
    return float(value)


def _workspace_table(name: str, table: Mapping[str, Any], where: _Where) -> Any:
    """The path of a workspace written as a table; its other keys are checked here."""
    for key, value in table.items():
        if key == "recall":
            if not isinstance(value, Mapping):
                raise where.error(repr(name), "recall table takes only watch = [...]")
            for extra in sorted(set(value) - {"watch"}):
                table_where = replace(where, table=f"workspaces.{name}.recall")
                raise _unknown(extra, ["watch"], table_where)
        elif key != "path":
            raise _unknown(key, ["path", "recall"], replace(where, table=f"workspaces.{name}"))
    if "path" not in table:
        raise where.error(repr(name), "needs a path")
    return table["path"]


def _recall_watch(raw: Any, where: _Where) -> dict[str, tuple[str, ...]]:
    """Transcript directories to watch, by workspace, from `NAME = {recall = {watch}}`."""
    watched: dict[str, tuple[str, ...]] = {}
    for name, value in raw.items() if isinstance(raw, Mapping) else ():
        dirs = value.get("recall", {}).get("watch") if isinstance(value, Mapping) else None
        if dirs is None:
            continue
        if not isinstance(dirs, list) or not all(isinstance(d, str) and d for d in dirs):
            raise where.error(repr(name), "recall watch must be a list of directories")
        table_where = replace(where, table=f"workspaces.{name}.recall")
        watched[name] = tuple(_served_path(d, "watch", table_where) for d in dirs)
        # A watched file is cited as `<directory's name>/<path below it>`: two
        # directories of one name would cite different files alike and replace each
        # other's drawers.
        names: dict[str, str] = {}
        for directory in watched[name]:
            base = os.path.basename(os.path.normpath(directory))
            if base in names and names[base] != directory:
                raise where.error(
                    repr(name),
                    f"recall watch names two directories called {base!r} ({names[base]} and "
                    f"{directory}): their files would be cited alike; watch their parent "
                    "instead, or give one another name (a symbolic link)",
                )
            names[base] = directory
    return watched


def _check_workspaces(raw: Any, where: _Where) -> dict[str, str]:
    where = replace(where, table="workspaces")
    if not isinstance(raw, Mapping):
        raise ConfigError(f'{where.source}: [workspaces] must be a table of NAME = "PATH"')
    checked = {}
    for name, path in raw.items():
        if not is_workspace_name(name):
            raise where.error(repr(name), f"is not a valid workspace name ({WORKSPACE_NAME_RULE})")
        if isinstance(path, Mapping):  # NAME = { path = "...", recall = { watch = [...] } }
            path = _workspace_table(name, path, where)
        checked[name] = _served_path(path, name, where)
    return checked


def _served_path(value: Any, key: str, where: _Where) -> str:
    """A workspace's or watched directory's path: one whose name is not UTF-8 (given
    by a flag) is refused, since the daemon names what it serves and caches by text and
    no JSON answer can carry it."""
    path = _path(value, key, where)
    if not path.isascii():
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise where.error(
                key, f"must be valid UTF-8 text (rename the directory), got {path!r}"
            ) from None
    return path


def _check(raw: Mapping[str, Any], where: _Where) -> dict[str, Any]:
    """Validate one source's values; nested tables stay dicts of only the keys given."""
    checked: dict[str, Any] = {}
    known = [*_TOP, "workspaces", *_TABLES]
    for key, value in raw.items():
        if value is None:
            continue
        if key in _TOP:
            checked[key] = _TOP[key](value, key, where)
        elif key == "workspaces":
            checked[key] = _check_workspaces(value, where)
            checked["recall_watch"] = _recall_watch(value, where)
        elif key in _TABLES:
            checked[key] = _check_table(value, _TABLES[key], replace(where, table=key))
        else:
            raise _unknown(key, known, where)
    return checked


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _nest_dotted(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`{"limits.max_body_bytes": 5}` -> `{"limits": {"max_body_bytes": 5}}`."""
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        table, dot, name = key.partition(".")
        if dot:
            nested.setdefault(table, {})[name] = value
        elif isinstance(value, Mapping) and isinstance(nested.get(key), dict):
            nested[key].update(value)
        else:
            nested[key] = dict(value) if isinstance(value, Mapping) else value
    return nested


# --------------------------------------------------------------------------- loading


def read_config_file(path: str) -> dict[str, Any]:
    """The validated values a TOML file sets (only those; defaults are applied later)."""
    try:
        # Judged on the open file, opened without waiting: a FIFO would block the start
        # until a writer came, a device (/dev/zero) would be read without end.
        data = read_regular(path, MAX_CONFIG_BYTES, follow=True)
    except NotRegular as error:
        raise ConfigError(
            f"{path}: cannot read config file: {error.reason} "
            f"(a config file is a regular file of at most {MAX_CONFIG_BYTES} bytes)"
        ) from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config file: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (line {line})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    base_dir = os.path.dirname(os.path.abspath(path))
    return _check(raw, _Where(source=path, base_dir=base_dir))


def default_state_dir() -> str:
    return paths.default_state_dir()


def default_socket_path(state_dir: str) -> str:
    """`$XDG_RUNTIME_DIR/memhub/memhubd.sock`, else the socket sits in the state dir."""
    return paths.default_socket_path(state_dir)


def load_config(
    path: str | None = None, overrides: Mapping[str, Any] | None = None
) -> DaemonConfig:
    """Defaults, then the TOML file (`path`, else `$MEMHUB_CONFIG`), then `overrides`.

    `overrides` uses the file's key names (`{"port": 9000}`, `{"workspaces": {...}}`,
    `{"limits": {...}}` or `{"limits.max_body_bytes": ...}`); None values are ignored,
    so an argparse namespace's unset flags can be passed straight through. Relative
    paths in the file are relative to the file's directory, those in overrides to
    the current directory. Workspaces from both sources are merged by name.
    """
    if path is None:
        path = os.environ.get(CONFIG_ENV, "").strip() or None
    values: dict[str, Any] = read_config_file(path) if path else {}
    if overrides:
        flags = _check(_nest_dotted(overrides), _Where(FLAGS_SOURCE, os.getcwd()))
        values = _merge(values, flags)
    return _build(values, path or FLAGS_SOURCE)


def _build(values: dict[str, Any], source: str) -> DaemonConfig:
    state_dir = values.get("state_dir") or default_state_dir()
    socket_path = values.get("socket_path")
    if socket_path is None:
        socket_path = _socket_path(
            default_socket_path(state_dir), "socket_path", _Where(source, "/")
        )
    limits = Limits(**values.get("limits", {}))
    workspaces = values.get("workspaces", {})
    if len(workspaces) > limits.max_workspaces:
        raise ConfigError(
            f"{source}: {len(workspaces)} workspaces configured, "
            f"more than [limits] max_workspaces = {limits.max_workspaces}"
        )
    _check_embedder(values.get("recall", {}), _Where(source, "/", "recall"))
    scalars = {key: values[key] for key in _TOP if key in values}
    return DaemonConfig(
        **{**scalars, "state_dir": state_dir, "socket_path": socket_path},
        workspaces=dict(workspaces),
        limits=limits,
        watch=WatchConfig(**values.get("watch", {})),
        mcp=McpConfig(**values.get("mcp", {})),
        recall=RecallConfig(**values.get("recall", {}), watch=values.get("recall_watch", {})),
    )


# The [recall] keys each embedder reads; one set for another embedder is refused, as
# an unknown key is: it would be ignored (`none`), or refused only at the first ingest.
_EMBEDDER_KEYS = {
    "static": ("embedder_model", "embedder_dimension"),
    "onnx": ("embedder_dimension",),
    "http": (
        "embedder_url",
        "embedder_model",
        "embedder_dimension",
        "embedder_api_key_env",
        "embedder_timeout_s",
    ),
    "none": (),
}


def _check_embedder(recall: Mapping[str, Any], where: _Where) -> None:
    """What the chosen embedder cannot run without, refused at start: a missing one
    would leave recall on BM25 alone, told only by a warning at the first ingest."""
    embedder = recall.get("embedder", "static")  # RecallConfig's default
    for key in _EMBEDDER_KEYS["http"]:  # every embedder key is one of http's
        if recall.get(key) and key not in _EMBEDDER_KEYS[embedder]:
            users = [name for name, keys in _EMBEDDER_KEYS.items() if key in keys]
            raise where.error(
                key,
                f'is not used by embedder = "{embedder}" (only by '
                f"{' and '.join(repr(u) for u in users)}); remove it, or choose that embedder",
            )
    if embedder != "http":
        return
    # Not echoed: a URL may carry a password.
    try:
        parts = urllib.parse.urlsplit(str(recall.get("embedder_url", "")))
        usable = parts.scheme in ("http", "https") and bool(parts.netloc)
        parts.port  # noqa: B018 - raises on a port that is no number in range
    except ValueError:  # e.g. an unclosed IPv6 bracket
        usable = False
    if not usable:
        raise where.error(
            "embedder_url", 'must be the endpoint\'s http(s) URL for embedder = "http"'
        )
    if not recall.get("embedder_model"):
        raise where.error("embedder_model", 'must name the model for embedder = "http"')
    if not recall.get("embedder_dimension"):
        raise where.error(
            "embedder_dimension", 'must give the model\'s dimension for embedder = "http"'
        )


def parse_workspace_flag(text: str) -> tuple[str, str]:
    """`NAME=PATH` from `--workspace` -> (name, absolute path)."""
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise ConfigError(f"--workspace expects NAME=PATH, got {text!r}")
    checked = _check_workspaces({name.strip(): path}, _Where(FLAGS_SOURCE, os.getcwd()))
    return next(iter(checked.items()))


# --------------------------------------------------------------------------- flags


def _workspace_argument(text: str) -> tuple[str, str]:
    try:
        return parse_workspace_flag(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The `memhubd serve` flags that override configuration keys (all default to unset)."""
    parser.add_argument(
        "--config", metavar="FILE", help=f"TOML config file (default: ${CONFIG_ENV})"
    )
    parser.add_argument("--host", help="TCP address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="TCP port (default 8377; 0 = any free port)")
    parser.add_argument(
        "--socket", dest="socket_path", metavar="PATH", help='Unix socket path ("" = no socket)'
    )
    parser.add_argument(
        "--state-dir", metavar="DIR", help=f"state directory (default ${STATE_DIR_ENV})"
    )
    parser.add_argument(
        "--workspace",
        dest="workspaces",
        action="append",
        type=_workspace_argument,
        metavar="NAME=PATH",
        help="serve a workspace (repeatable; adds to the config file's, or replaces an entry's path)",
    )
    parser.add_argument("--log-format", choices=LOG_FORMATS, help="log output (default auto)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, help="log level (default info)")
    parser.add_argument(
        "--force-polling",
        action="store_const",
        const=True,
        help="poll for file changes instead of relying on kernel events",
    )


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The configuration overrides set by `add_serve_arguments` flags (unset ones omitted)."""
    overrides: dict[str, Any] = {
        key: getattr(args, key, None)
        for key in ("host", "port", "socket_path", "state_dir", "log_format", "log_level")
    }
    if getattr(args, "workspaces", None):
        overrides["workspaces"] = _workspace_flags(args.workspaces)
    if getattr(args, "force_polling", None):
        overrides["watch.force_polling"] = True
    return {key: value for key, value in overrides.items() if value is not None}


def _workspace_flags(given: list[tuple[str, str]]) -> dict[str, str]:
    """`--workspace` flags by name; a name given twice is refused (else one is dropped)."""
    workspaces: dict[str, str] = {}
    for name, path in given:
        if name in workspaces:
            raise ConfigError(
                f"--workspace {name} is given twice ({workspaces[name]} and {path}); "
                "give each name once"
            )
        workspaces[name] = path
    return workspaces


def config_from_args(args: argparse.Namespace) -> DaemonConfig:
    return load_config(getattr(args, "config", None), overrides_from_args(args))
