"""docs/cowork.md's hooks section names the exit code `memctl hooks install` gives when it
leaves a settings file alone: the code each refusal really exits with."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memctl.cli import main

COWORK_MD = Path(__file__).resolve().parents[3] / "docs" / "cowork.md"


def install_section() -> str:
    """The text under "Hooks: `memctl hooks install`", to its next heading."""
    text = COWORK_MD.read_text(encoding="utf-8")
    start = text.index("## Hooks: `memctl hooks install`")
    return text[start : text.index("\n#", start + 1)]


def stated_exit_codes() -> set[int]:
    return {int(code) for code in re.findall(r"\bexits? (\d)\b", install_section())}


@pytest.fixture(autouse=True)
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)


@pytest.mark.parametrize(
    "settings",
    ["not json", "[]", json.dumps({"hooks": {"UserPromptSubmit": {}}})],
    ids=["invalid-json", "not-an-object", "hooks-of-the-wrong-shape"],
)
def test_the_refusals_exit_with_the_code_the_doc_states(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: str
) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    path.write_text(settings)

    code = main(["hooks", "install", "--claude-code", "--project", str(project)])
    capsys.readouterr()

    assert path.read_text() == settings
    assert stated_exit_codes() == {code}
