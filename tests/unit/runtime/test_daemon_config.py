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


def test_a_workspace_or_watched_path_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    # A flag's bytes that are not UTF-8 reach Python as lone surrogates: the daemon would
    # serve such a directory under a name no cache key, log line or answer can hold.
    with pytest.raises(ConfigError, match="must be valid UTF-8 text"):
        parse_workspace_flag("w=/srv/caf\udce9")
    with pytest.raises(ConfigError, match="watch must be valid UTF-8 text"):
        load_config(
            None, {"workspaces": {"w": {"path": "/srv/w", "recall": {"watch": ["/x\udce9"]}}}}
        )
    assert parse_workspace_flag("w=/srv/café") == ("w", "/srv/café")


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


HTTP = {
    "recall.embedder": "http",
    "recall.embedder_url": "http://gpu:11434/api/embed",
    "recall.embedder_model": "nomic-embed-text",
    "recall.embedder_dimension": 768,
}


def test_an_http_embedder_takes_its_request_timeout_from_the_config(tmp_path: Path) -> None:
    from memhubd.service.recall import open_shelf

    assert load_config(None, HTTP).recall.embedder_timeout_s == 30.0
    config = load_config(None, {**HTTP, "recall.embedder_timeout_s": 2.5})
    shelf = open_shelf(tmp_path, config.recall)
    assert shelf.settings.embedder.timeout_s == 2.5  # type: ignore[attr-defined]
    shelf.close()


@pytest.mark.parametrize("value", [0, -1, 601, float("nan"), float("inf"), True, "5"])
def test_an_embedder_timeout_out_of_range_stops_the_start(value: object) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(None, {**HTTP, "recall.embedder_timeout_s": value})
    assert "[recall] embedder_timeout_s must be a number of seconds above 0" in str(refused.value)


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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('state_dir = "state\\u0000"', "state_dir must not contain a NUL byte"),
        ('socket_path = "s\\u0000.sock"', "socket_path must not contain a NUL byte"),
        ('socket_group = "daemon\\u0000"', "socket_group must not contain a NUL byte"),
        ('host = "127.0.0.1\\u0000"', "host must not contain a NUL byte"),
        ('[workspaces]\na = "ws\\u0000"', "[workspaces] a must not contain a NUL byte"),
        (
            '[workspaces]\na = { path = "ws", recall = { watch = ["/chats\\u0000"] } }',
            "[workspaces.a.recall] watch must not contain a NUL byte",
        ),
        ('[mcp]\nallowed_hosts = ["x\\u0000"]', "[mcp] allowed_hosts must not contain a NUL"),
        ('[recall]\nembedder_model = "m\\u0000"', "[recall] embedder_model must not contain"),
    ],
)
def test_a_nul_byte_in_a_path_or_name_is_refused_naming_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    """No path or name can hold one: the system calls would raise far from the key."""
    path = write_config(tmp_path, text)

    with pytest.raises(ConfigError) as raised:
        load_config(str(path), {})

    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[limits]\nregex_timeout_ms = 10000000000000",
            "regex_timeout_ms must be an integer between 1 and 600000",
        ),
        (
            "[limits]\nread_timeout_s = 86401",
            "read_timeout_s must be an integer between 1 and 86400",
        ),
        (
            "[limits]\nkeep_alive_timeout_s = 10000000000000",
            "keep_alive_timeout_s must be an integer between 1 and 86400",
        ),
        (
            "[limits]\nwrite_timeout_s = 10000000000000",
            "write_timeout_s must be an integer between 1 and 86400",
        ),
        ("[watch]\ndebounce_ms = 600001", "debounce_ms must be an integer between 1 and 600000"),
        (
            "[watch]\nrescan_interval_s = 1" + "0" * 400,
            "rescan_interval_s must be a number of seconds from 0",
        ),
        (
            "[watch]\nrescan_interval_s = inf",
            "rescan_interval_s must be a number of seconds from 0",
        ),
        (
            "[recall]\nlock_timeout_s = 1" + "0" * 400,
            "lock_timeout_s must be a number of seconds from 0 to 86400",
        ),
        (
            "[recall]\nmax_file_bytes = 1099511627776",
            "max_file_bytes must be an integer between 1 and 1073741824",
        ),
    ],
)
def test_times_and_read_sizes_have_an_upper_bound(tmp_path: Path, text: str, message: str) -> None:
    """Above it a value overflows what it is handed to (select's timeout: every check
    answered 500) or cannot even be turned into a number of seconds."""
    path = write_config(tmp_path, text)

    with pytest.raises(ConfigError) as raised:
        load_config(str(path), {})

    assert message in str(raised.value)


def test_the_upper_bounds_themselves_are_taken(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "[limits]\nregex_timeout_ms = 600000\nread_timeout_s = 86400\n"
        "[watch]\ndebounce_ms = 600000\nrescan_interval_s = 86400\n"
        "[recall]\nlock_timeout_s = 86400.0\nmax_file_bytes = 1073741824\n",
    )

    config = load_config(str(path), {})

    assert config.limits.regex_timeout_ms == 600000
    assert config.recall.max_file_bytes == 1073741824


def test_a_config_path_that_is_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "memhub.toml"
    os.mkfifo(fifo)

    with pytest.raises(ConfigError) as raised:
        load_config(str(fifo), {})

    assert str(raised.value).startswith(f"{fifo}: cannot read config file: not a regular file")


def test_a_device_as_config_path_is_refused_without_reading_it() -> None:
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config("/dev/zero", {})


def test_a_config_file_over_a_mebibyte_is_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, "# " + "x" * (1024 * 1024) + "\n")

    with pytest.raises(ConfigError, match=r"larger than 1048576 bytes"):
        load_config(str(path), {})


def test_a_symlinked_config_file_is_read() -> None:
    link = Path("linked.toml")
    write_config(Path("real"), "port = 1234")
    link.symlink_to("real/memhub.toml")

    assert load_config(str(link), {}).port == 1234


@pytest.mark.parametrize("name", [".", "..", "...", "-", "_.-"])
def test_workspace_names_without_a_letter_or_digit_are_refused(tmp_path: Path, name: str) -> None:
    """The API refuses them; from the file they became `.` and `..` in state-dir paths."""
    path = write_config(tmp_path, f"[workspaces]\n'{name}' = '/srv/x'")

    with pytest.raises(ConfigError, match="is not a valid workspace name .*letter or digit"):
        load_config(str(path), {})
    with pytest.raises(ConfigError, match="is not a valid workspace name"):
        parse_workspace_flag(f"{name}=/srv/x")


def test_the_run_time_workspace_list_refuses_a_name_of_dots(tmp_path: Path) -> None:
    from memhubd.runtime.state import StateDir

    membership = StateDir(tmp_path / "state").workspace_list()

    with pytest.raises(ValueError, match="letter or digit"):
        membership.add("..", str(tmp_path))
    assert membership.add("a.b", str(tmp_path))


def test_the_same_workspace_flag_name_twice_is_refused(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    args = parser.parse_args(["--workspace", "team=a", "--workspace", "team=b"])

    with pytest.raises(ConfigError, match="--workspace team is given twice"):
        config_from_args(args)


def test_a_workspace_flag_replaces_the_path_and_keeps_the_files_recall_watch(
    tmp_path: Path,
) -> None:
    """The flag can only say a path; the recall store, and so its watch, belong to the name."""
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    config_file = write_config(
        tmp_path, '[workspaces]\nteam = { path = "a", recall = { watch = ["chats"] } }'
    )

    config = config_from_args(
        parser.parse_args(["--config", str(config_file), "--workspace", "team=b"])
    )

    assert config.workspaces == {"team": str(tmp_path / "b")}
    assert config.recall.watch == {"team": (str(tmp_path / "chats"),)}


@pytest.mark.parametrize(
    ("item", "hint"),
    [
        ("https://memhub.example.org", 'write "memhub.example.org"'),
        ("http://memhub.example.org:8377/mcp", 'write "memhub.example.org:8377"'),
        ("memhub.example.org/mcp", "not URLs"),
        ("memhub example", "not URLs"),
    ],
)
def test_allowed_hosts_written_as_urls_are_refused_with_the_host_to_write(
    tmp_path: Path, item: str, hint: str
) -> None:
    """A URL never equals a Host header: the origin would be refused for ever."""
    path = write_config(tmp_path, f'[mcp]\nallowed_hosts = ["{item}"]')

    with pytest.raises(ConfigError) as raised:
        load_config(str(path), {})

    assert "[mcp] allowed_hosts items are host names (host or host:port)" in str(raised.value)
    assert hint in str(raised.value)


def test_allowed_hosts_take_names_with_ports_and_addresses(tmp_path: Path) -> None:
    hosts = ["memhub.example.org", "memhub.example.org:8377", "[fd00::1]:8377", "10.0.0.2"]
    path = write_config(tmp_path, f"[mcp]\nallowed_hosts = {hosts!r}".replace("'", '"'))

    assert load_config(str(path), {}).mcp.allowed_hosts == tuple(hosts)


@pytest.mark.parametrize(
    ("embedder", "key", "value"),
    [
        ("none", "embedder_url", '"http://127.0.0.1:11434/api/embed"'),
        ("none", "embedder_model", '"nomic-embed-text"'),
        ("none", "embedder_dimension", "384"),
        ("static", "embedder_url", '"http://127.0.0.1:11434/api/embed"'),
        ("static", "embedder_api_key_env", '"KEY"'),
        ("onnx", "embedder_model", '"/srv/models/x"'),
        ("static", "embedder_timeout_s", "5"),
    ],
)
def test_embedder_keys_the_chosen_embedder_does_not_use_are_refused(
    tmp_path: Path, embedder: str, key: str, value: str
) -> None:
    path = write_config(tmp_path, f'[recall]\nembedder = "{embedder}"\n{key} = {value}')

    with pytest.raises(ConfigError) as raised:
        load_config(str(path), {})

    assert f'[recall] {key} is not used by embedder = "{embedder}"' in str(raised.value)


def test_embedder_keys_left_empty_are_unset_for_any_embedder(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        '[recall]\nembedder = "none"\nembedder_url = ""\nembedder_model = ""\n'
        'embedder_dimension = 0\nembedder_api_key_env = ""',
    )

    assert load_config(str(path), {}).recall.embedder == "none"
    assert load_config(None, {"recall.embedder_model": "/srv/m"}).recall.embedder_model == "/srv/m"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('state_dir = "state\\u0000"', "state_dir must not contain a NUL byte"),
        ('socket_group = "daemon\\u0000"', "socket_group must not contain a NUL byte"),
    ],
)
def test_memhubd_serve_refuses_a_nul_byte_in_one_line(tmp_path: Path, text: str, said: str) -> None:
    import subprocess
    import sys

    config = write_config(tmp_path, text)
    serve = [sys.executable, "-m", "memhubd", "serve", "--config", str(config), "--port", "0"]
    env = {**os.environ, "MEMHUB_STATE_DIR": str(tmp_path / "state")}

    done = subprocess.run(serve, env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"memhubd: {config}: ")
    assert said in done.stderr and "Traceback" not in done.stderr
