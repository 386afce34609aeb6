"""`[recall]` and per-workspace `recall.watch` configuration: parsed, and typos refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhubd.runtime.config import ConfigError, load_config


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "memhub.toml"
    path.write_text(text)
    return str(path)


def test_recall_settings_and_watched_directories_are_read(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            '[workspaces]\nplain = "a"\n'
            '[workspaces.billing]\npath = "b"\nrecall = { watch = ["sessions", "/abs/codex"] }\n'
            '[recall]\nembedder = "none"\nnear_duplicate = 0.9\n',
        )
    )
    assert config.workspaces == {"plain": str(tmp_path / "a"), "billing": str(tmp_path / "b")}
    assert config.recall.watch == {"billing": (str(tmp_path / "sessions"), "/abs/codex")}
    assert (config.recall.embedder, config.recall.near_duplicate) == ("none", 0.9)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[recall]\nembeder = "static"\n', "did you mean 'embedder'"),
        ("[recall]\nnear_duplicate = 1.5\n", "at most 1"),
        ('[workspaces.w]\npath = "x"\nrecal = { watch = [] }\n', "not a configuration key"),
        ('[workspaces.w]\npath = "x"\nrecall = { wach = [] }\n', "'wach' is not a configuration key"),
        ('[workspaces.w]\nrecall = { watch = ["d"] }\n', "needs a path"),
    ],
)
def test_typos_in_recall_configuration_are_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text))
