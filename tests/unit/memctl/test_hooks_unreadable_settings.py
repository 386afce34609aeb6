"""`memctl hooks install|uninstall` on a settings file it cannot read as a JSON object
(bytes that are not UTF-8, text that is not JSON, a directory): the `local` error, exit
2, one error envelope on stdout with --json, and the file left as it was. A Codex
config.toml that cannot be read does not stop an install."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctl.cli import main

UNREADABLE = {
    "latin-1": b'{"model": "caf\xe9"}\n',
    "not json": b'{"model": \n',
    "not an object": b"[1, 2]\n",
}


@pytest.fixture(autouse=True)
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    for name in ("MEMHUB_URL", "MEMHUB_TOKEN", "MEMHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    return home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["--json", "hooks", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, out: str, err: str, path: Path) -> None:
    assert code == 2
    envelope = json.loads(out)  # one envelope, nothing else on stdout
    assert envelope["error"]["code"] == "local"
    assert str(path) in envelope["error"]["message"]
    assert err.startswith(f"memctl: {path}") and "Traceback" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("action", ["install", "uninstall"])
@pytest.mark.parametrize("agent", ["--claude-code", "--codex"])
@pytest.mark.parametrize("content", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_settings_file_that_cannot_be_read_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str, agent: str, content: bytes
) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    extra = ["--memctl", "memctl"] if action == "install" else []
    code, out, err = run(capsys, action, agent, "--settings", str(path), *extra)
    assert_refused(code, out, err, path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "settings.json"]


def test_a_settings_file_that_is_not_utf8_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(UNREADABLE["latin-1"])
    _code, out, _err = run(capsys, "install", "--claude-code", "--settings", str(path))
    assert "is not UTF-8 text" in json.loads(out)["error"]["message"]


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_a_directory_given_as_the_settings_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    folder = tmp_path / "settings.d"
    folder.mkdir()
    code, out, err = run(capsys, action, "--codex", "--settings", str(folder))
    assert_refused(code, out, err, folder)
    assert json.loads(out)["error"]["message"] == f"{folder} is a directory, not a settings file"
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("config", [b"[features]\nnote = 'caf\xe9'\n", b"[features\n"])
def test_a_codex_config_that_cannot_be_read_does_not_stop_the_install(
    tmp_path: Path, fake_home: Path, capsys: pytest.CaptureFixture[str], config: bytes
) -> None:
    (fake_home / ".codex").mkdir()
    (fake_home / ".codex" / "config.toml").write_bytes(config)
    path = tmp_path / "hooks.json"
    code, out, err = run(capsys, "install", "--codex", "--settings", str(path))
    assert code == 0, err
    assert json.loads(out)["changed"] is True
    assert "UserPromptSubmit" in json.loads(path.read_text())["hooks"]
