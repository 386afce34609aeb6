"""The greeting `memhubd serve` prints: its token command works as printed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from memhubd.server import DaemonInfo, print_banner

INFO = DaemonInfo("http://127.0.0.1:8765", "/run/m.sock", 8765, ("team-coding",))


def token_line(state_dir: str | None) -> str:
    out = io.StringIO()
    print_banner(INFO, out, state_dir)
    (line,) = [x for x in out.getvalue().splitlines() if x.lstrip().startswith("token")]
    return line


def test_the_token_command_names_a_state_dir_it_would_not_find_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMHUB_STATE_DIR", raising=False)
    chosen = tmp_path / "my state"
    assert token_line(str(chosen)).endswith(f"--state-dir '{chosen}'")


def test_the_default_state_dir_is_not_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHUB_STATE_DIR", str(tmp_path))
    assert token_line(str(tmp_path)).endswith("--scopes read:summary,read:search")
    assert token_line(None).endswith("--scopes read:summary,read:search")
