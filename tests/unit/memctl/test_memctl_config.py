"""Where memctl's url, token and workspace come from: flags > environment >
client.toml > the local socket; each setting on its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from memctl.config import (
    ConfigError,
    config_path,
    default_socket_path,
    load_config_file,
    resolve_settings,
)


def _write_config(home: Path, text: str, xdg: Path | None = None) -> Path:
    path = (xdg or home / ".config") / "memhub" / "client.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_without_anything_set_memctl_uses_the_socket_under_xdg_runtime_dir(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": "/run/user/1000"}
    settings = resolve_settings(env=env)
    assert settings.url == "unix:///run/user/1000/memhub/memhubd.sock"
    assert settings.url_source == "default"
    assert settings.token is None
    assert settings.workspace is None


def test_without_xdg_runtime_dir_the_socket_is_in_the_state_dir(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert default_socket_path(env) == str(tmp_path / ".local/share/memhub/memhubd.sock")
    assert resolve_settings(env=env).url == f"unix://{tmp_path}/.local/share/memhub/memhubd.sock"


def test_without_xdg_runtime_dir_a_daemon_state_dir_holds_the_socket(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "MEMHUB_STATE_DIR": "/var/lib/memhub"}
    assert default_socket_path(env) == "/var/lib/memhub/memhubd.sock"
    env["XDG_RUNTIME_DIR"] = "/run/user/7"
    assert default_socket_path(env) == "/run/user/7/memhub/memhubd.sock"


def test_config_file_fills_in_what_flags_and_environment_leave_open(tmp_path: Path) -> None:
    path = _write_config(
        tmp_path, 'url = "http://10.0.0.5:8377"\ntoken = "from-file"\nworkspace = "team"\n'
    )
    settings = resolve_settings(env={"HOME": str(tmp_path)})
    assert (settings.url, settings.token, settings.workspace) == (
        "http://10.0.0.5:8377",
        "from-file",
        "team",
    )
    assert settings.url_source == settings.token_source == str(path)


def test_environment_beats_the_config_file_setting_by_setting(tmp_path: Path) -> None:
    _write_config(tmp_path, 'url = "http://file:1"\ntoken = "file"\nworkspace = "file-ws"\n')
    env = {"HOME": str(tmp_path), "MEMHUB_TOKEN": "env-token", "MEMHUB_WORKSPACE": "env-ws"}
    settings = resolve_settings(env=env)
    assert settings.url == "http://file:1"
    assert (settings.token, settings.token_source) == ("env-token", "env")
    assert settings.workspace == "env-ws"


def test_flags_beat_environment_and_config_file(tmp_path: Path) -> None:
    _write_config(tmp_path, 'url = "http://file:1"\ntoken = "file"\nworkspace = "file-ws"\n')
    env = {"HOME": str(tmp_path), "MEMHUB_URL": "http://env:2", "MEMHUB_WORKSPACE": "env-ws"}
    settings = resolve_settings(url="http://flag:3", workspace="flag-ws", env=env)
    assert (settings.url, settings.url_source) == ("http://flag:3", "flag")
    assert settings.workspace == "flag-ws"
    assert settings.token == "file"


def test_empty_environment_values_count_as_unset(tmp_path: Path) -> None:
    _write_config(tmp_path, 'token = "file"\n')
    settings = resolve_settings(env={"HOME": str(tmp_path), "MEMHUB_TOKEN": ""})
    assert settings.token == "file"


def test_config_file_lives_under_xdg_config_home_when_set(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    _write_config(tmp_path, 'workspace = "home-config"\n')
    path = _write_config(tmp_path, 'workspace = "xdg-config"\n', xdg=xdg)
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(xdg)}
    assert config_path(env) == str(path)
    assert resolve_settings(env=env).workspace == "xdg-config"


def test_a_missing_config_file_is_no_config(tmp_path: Path) -> None:
    assert load_config_file(tmp_path / "absent.toml") == {}


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("url = ", "not valid TOML"),
        ('server = "x"\n', "unknown key"),
        ("token = 42\n", "must be a string"),
    ],
)
def test_a_broken_config_file_is_reported_with_its_path(
    tmp_path: Path, text: str, complaint: str
) -> None:
    path = _write_config(tmp_path, text)
    with pytest.raises(ConfigError, match=complaint) as caught:
        resolve_settings(env={"HOME": str(tmp_path)})
    assert str(path) in str(caught.value)
