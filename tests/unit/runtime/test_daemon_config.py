"""DaemonConfig: defaults, the TOML file, flag overrides, and the errors for bad values."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from memhubd.runtime.config import (
    ConfigError,
    DaemonConfig,
    Limits,
    add_serve_arguments,
    config_from_args,
    load_config,
    parse_workspace_flag,
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MEMHUB_CONFIG", "MEMHUB_STATE_DIR", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def write_config(directory: Path, text: str, name: str = "memhub.toml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file_or_flags(tmp_path: Path) -> None:
    config = load_config(None, {})

    state_dir = str(tmp_path / "home" / ".local" / "share" / "memhub")
    assert config.host == "127.0.0.1" and config.port == 8377
    assert config.state_dir == state_dir
    assert config.socket_path == os.path.join(state_dir, "memhubd.sock")
    assert config.socket_mode == 0o600 and config.socket_group is None
    assert config.workspaces == {}
    assert config.limits == Limits(1 << 20, 65536, 8 << 20, 100, 64)
    assert (config.watch.debounce_ms, config.watch.rescan_interval_s) == (200, 30.0)
    assert config.watch.force_polling is False
    assert (config.log_format, config.log_level) == ("auto", "info")
    assert config.mcp.enabled is True and config.mcp.allowed_hosts == ()
    assert config.loopback_only


def test_environment_sets_default_state_dir_and_runtime_socket(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMHUB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))

    config = load_config(None, {})

    assert config.state_dir == str(tmp_path / "state")
    assert config.socket_path == str(tmp_path / "run" / "memhub" / "memhubd.sock")


def test_file_values_resolve_paths_against_the_file_directory(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / "etc",
        """
        host = "0.0.0.0"
        port = 9000
        socket_path = "run/memhubd.sock"
        socket_mode = "0660"
        state_dir = "../state"
        log_format = "JSON"

        [workspaces]
        team = "../ws/team"
        home = "~/notes"

        [limits]
        max_body_bytes = 2048

        [watch]
        rescan_interval_s = 0
        force_polling = true

        [mcp]
        allowed_hosts = ["memhub.internal"]
        """,
    )

    config = load_config(str(path), {})

    assert (config.host, config.port, config.loopback_only) == ("0.0.0.0", 9000, False)
    assert config.socket_path == str(tmp_path / "etc" / "run" / "memhubd.sock")
    assert config.socket_mode == 0o660
    assert config.state_dir == str(tmp_path / "state")
    assert config.log_format == "json"
    assert config.workspaces == {
        "team": str(tmp_path / "ws" / "team"),
        "home": str(tmp_path / "home" / "notes"),
    }
    assert config.limits.max_body_bytes == 2048 and config.limits.max_workspaces == 64
    assert config.watch.rescan_interval_s == 0.0 and config.watch.force_polling is True
    assert config.mcp.allowed_hosts == ("memhub.internal",)


def test_socket_defaults_into_the_configured_state_dir(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'state_dir = "st"')

    config = load_config(str(path), {})

    assert config.socket_path == str(tmp_path / "st" / "memhubd.sock")


def test_empty_socket_path_disables_the_socket(tmp_path: Path) -> None:
    config = load_config(str(write_config(tmp_path, 'socket_path = ""')), {})

    assert config.socket_path == ""


def test_flags_override_the_file_and_merge_workspaces(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / "etc",
        'port = 9000\nlog_level = "debug"\n[workspaces]\na = "/srv/a"\nb = "/srv/b"\n',
    )

    config = load_config(
        str(path),
        {
            "port": 9100,
            "log_level": None,  # an unset flag changes nothing
            "workspaces": {"b": "mine/b", "c": "/srv/c"},
            "limits.max_workspaces": 3,
        },
    )

    assert config.port == 9100 and config.log_level == "debug"
    assert config.workspaces == {"a": "/srv/a", "b": str(tmp_path / "mine" / "b"), "c": "/srv/c"}
    assert config.limits.max_workspaces == 3


def test_config_file_named_by_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMHUB_CONFIG", str(write_config(tmp_path, "port = 1234")))

    assert load_config(None, {}).port == 1234
    assert load_config(str(write_config(tmp_path, "port = 4321", "other.toml")), {}).port == 4321


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[limits]\nmax_body_bytes = 0", "[limits] max_body_bytes must be a positive integer"),
        ("[limits]\nmax_body_bytes = true", "[limits] max_body_bytes must be a positive integer"),
        ("port = 70000", "port must be an integer between 0 and 65535"),
        ('port = "8377"', "port must be an integer between 0 and 65535"),
        ("prot = 1", "'prot' is not a configuration key (did you mean 'port'?)"),
        ("[watch]\ndebounce = 5", "[watch] 'debounce' is not a configuration key"),
        ("[limit]\nx = 1", "'limit' is not a configuration key (did you mean 'limits'?)"),
        ('log_format = "xml"', "log_format must be one of auto, json, console"),
        ('log_level = "loud"', "log_level must be one of debug, info"),
        ('socket_mode = "0666"', "socket_mode must not give access to other users"),
        ('socket_mode = "rw"', "socket_mode must be an octal file mode"),
        ('socket_group = "no-such-group-memhub"', "socket_group names no group"),
        ('host = ""', "host must be a non-empty string"),
        (
            "[workspaces]\n'bad name' = '/x'",
            "[workspaces] 'bad name' is not a valid workspace name",
        ),
        ("[workspaces]\nok = 3", "[workspaces] ok must be a non-empty string"),
        ("workspaces = 3", "[workspaces] must be a table"),
        ("[watch]\nrescan_interval_s = -1", "[watch] rescan_interval_s must be a number"),
        ("[mcp]\nallowed_hosts = 'x'", "[mcp] allowed_hosts must be a list of host names"),
        ("port = = 1", "invalid TOML"),
    ],
)
def test_bad_values_name_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write_config(tmp_path, text)

    with pytest.raises(ConfigError) as raised:
        load_config(str(path), {})

    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


def test_a_config_file_that_is_not_utf8_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "memhub.toml"
    path.write_bytes(b'host = "127.0.0.1"\n# caf\xe9\nport = 1\n')
    with pytest.raises(ConfigError) as raised:
        load_config(str(path), {})
    assert str(raised.value) == f"{path}: invalid TOML: not UTF-8 (line 2)"


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(str(tmp_path / "absent.toml"), {})


def test_bad_override_names_the_command_line() -> None:
    with pytest.raises(ConfigError, match=r"^command line: port must be an integer"):
        load_config(None, {"port": -1})


def test_too_many_workspaces_is_an_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[limits]\nmax_workspaces = 1\n[workspaces]\na = '/a'\nb = '/b'")

    with pytest.raises(ConfigError, match="2 workspaces configured, more than"):
        load_config(str(path), {})


def test_overlong_socket_path_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, f'socket_path = "/{"s" * 120}.sock"')

    with pytest.raises(ConfigError, match="Unix sockets allow 107"):
        load_config(str(path), {})


def test_workspace_flag_parses_name_and_absolute_path(tmp_path: Path) -> None:
    assert parse_workspace_flag("team=ws/team") == ("team", str(tmp_path / "ws" / "team"))
    assert parse_workspace_flag("a=b=c") == ("a", str(tmp_path / "b=c"))
    for bad in ("team", "=path", "team=", "bad name=/x"):
        with pytest.raises(ConfigError):
            parse_workspace_flag(bad)


def test_serve_flags_become_overrides(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    config_file = write_config(tmp_path, "port = 9000\n[workspaces]\na = '/srv/a'")

    args = parser.parse_args(
        ["--config", str(config_file), "--host", "::1", "--socket", "", "--workspace", "b=ws"]
        + ["--force-polling", "--log-level", "debug"]
    )
    config = config_from_args(args)

    assert (config.host, config.port, config.socket_path) == ("::1", 9000, "")
    assert config.loopback_only
    assert config.workspaces == {"a": "/srv/a", "b": str(tmp_path / "ws")}
    assert config.watch.force_polling and config.log_level == "debug"


def test_serve_flag_errors_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="memhubd serve")
    add_serve_arguments(parser)

    with pytest.raises(SystemExit):
        parser.parse_args(["--workspace", "no-equals-sign"])

    assert "--workspace expects NAME=PATH" in capsys.readouterr().err


def test_config_is_immutable() -> None:
    config = DaemonConfig()

    with pytest.raises(AttributeError):
        config.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({}, "embedder_url"),
        ({"recall.embedder_url": "ollama:11434"}, "embedder_url"),
        ({"recall.embedder_url": "http://u:secret@[::1/api/embed"}, "embedder_url"),
        ({"recall.embedder_url": "http://gpu:99999/api/embed"}, "embedder_url"),
        ({"recall.embedder_url": "http://u:secret@gpu:11434/api/embed"}, "embedder_model"),
        (
            {"recall.embedder_url": "http://gpu:11434/api/embed", "recall.embedder_model": "m"},
            "embedder_dimension",
        ),
    ],
)
def test_an_http_embedder_without_what_it_needs_stops_the_start(
    given: dict[str, object], named: str
) -> None:
    """Else recall would run on BM25 alone, told only by a warning at the first ingest."""
    with pytest.raises(ConfigError) as refused:
        load_config(None, {"recall.embedder": "http", **given})
    assert f"[recall] {named} " in str(refused.value)
    assert "secret" not in str(refused.value)


def test_an_http_embedder_with_its_url_model_and_dimension_is_taken() -> None:
    config = load_config(
        None,
        {
            "recall.embedder": "http",
            "recall.embedder_url": "http://gpu:11434/api/embed",
            "recall.embedder_model": "nomic-embed-text",
            "recall.embedder_dimension": 768,
        },
    )
    assert config.recall.embedder_dimension == 768


def test_config_errors_name_the_key_and_show_the_value(tmp_path: Path) -> None:
    config = tmp_path / "memhub.toml"
    config.write_text('[workspaces]\nteam = { path = "ws", recall = { wach = [] } }\n')
    with pytest.raises(ConfigError, match=r"\[workspaces\.team\.recall\] 'wach' .*'watch'"):
        load_config(str(config))
    with pytest.raises(ConfigError, match=r"socket_mode must be an octal .*got 0o1600"):
        load_config(None, {"socket_mode": 0o1600})


def test_a_host_that_is_no_address_names_the_setting(tmp_path: Path) -> None:
    import subprocess
    import sys

    state = tmp_path / "state"
    env = {**os.environ, "MEMHUB_STATE_DIR": str(state)}
    made = [sys.executable, "-m", "memhubd", "token", "create", "t", "--scopes", "read:summary"]
    assert subprocess.run(made, env=env, capture_output=True, timeout=60).returncode == 0
    serve = [sys.executable, "-m", "memhubd", "serve", "--host", "bogus host", "--port", "0"]
    serve += ["--socket", str(tmp_path / "s.sock"), "--workspace", f"w={tmp_path}"]
    done = subprocess.run(serve, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "cannot listen on host 'bogus host' (host, or --host)" in done.stderr
