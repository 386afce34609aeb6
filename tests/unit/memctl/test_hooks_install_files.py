"""`memctl hooks install` and `uninstall` write into the user's settings file as it is:
through a symlink, with its mode and owner, never over a read-only file; the user's
original is kept once as `<file>.bak`, and uninstall takes out exactly what install
put in. The installed commands hold their option values as one word each."""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from memctl.cli import build_parser, main

ORIGINAL = {
    "model": "opus",
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo mine"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./g.sh"}]}],
    },
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


def hooks(
    capsys: pytest.CaptureFixture[str], *argv: str, memctl: str | None = "memctl"
) -> tuple[int, str, str]:
    extra = ("--memctl", memctl) if memctl and argv[0] == "install" else ()
    code = main(["hooks", *argv, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def project_with(tmp_path: Path, settings: dict[str, Any]) -> tuple[Path, Path]:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    path.write_text(json.dumps(settings, indent=4))
    return project, path


def commands(settings: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for group in settings["hooks"][event] for h in group["hooks"]]


# -- the commands ------------------------------------------------------------------------


def test_a_workspace_starting_with_a_dash_stays_the_value_of_its_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with(tmp_path, {})
    url = "http://127.0.0.1:8765/?a=b c"
    code, _, err = hooks(
        capsys, "install", "--claude-code", "--project", str(project), "--workspace=-dash",
        "--url", url,
    )  # fmt: skip
    assert code == 0, err
    settings = json.loads(path.read_text())
    for command in commands(settings, "UserPromptSubmit") + commands(settings, "SessionEnd"):
        args = build_parser().parse_args(shlex.split(command)[1:])
        assert (args.workspace, args.url) == ("-dash", url)


# -- writing into the file -----------------------------------------------------------------


def test_a_symlinked_settings_file_is_written_through_and_stays_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "settings.json"
    target.write_text(json.dumps(ORIGINAL))
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    link = project / ".claude" / "settings.json"
    link.symlink_to(os.path.relpath(target, link.parent))

    code, _, err = hooks(capsys, "install", "--claude-code", "--project", str(project))

    assert code == 0, err
    assert link.is_symlink() and link.resolve() == target
    assert "memctl cowork drain --format plain" in commands(
        json.loads(target.read_text()), "UserPromptSubmit"
    )
    assert json.loads((dotfiles / "settings.json.bak").read_text()) == ORIGINAL


def test_a_read_only_settings_file_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with(tmp_path, ORIGINAL)
    path.chmod(0o444)
    before = path.read_bytes()

    code, out, err = hooks(capsys, "install", "--claude-code", "--project", str(project))

    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "not writable" in err
    assert path.read_bytes() == before and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert not path.with_name("settings.json.bak").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another owner needs root")
def test_the_settings_file_keeps_its_owner_and_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with(tmp_path, ORIGINAL)
    os.chown(path, 4242, 4343)
    path.chmod(0o640)

    code, _, err = hooks(capsys, "install", "--claude-code", "--project", str(project))

    assert code == 0, err
    status = path.stat()
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (4242, 4343, 0o640)


def test_the_users_original_is_kept_once_in_a_private_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with(tmp_path, ORIGINAL)
    original = path.read_bytes()
    path.chmod(0o644)
    backup = path.with_name("settings.json.bak")

    first = hooks(capsys, "install", "--claude-code", "--project", str(project), "-w", "alpha")
    second = hooks(capsys, "install", "--claude-code", "--project", str(project), "-w", "beta")

    assert first[0] == 0 and second[0] == 0
    assert "--workspace=beta" in path.read_text()
    assert backup.read_bytes() == original
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert "original" in first[1] and str(backup) not in second[1]


# -- uninstall -------------------------------------------------------------------------------


def test_uninstall_takes_out_exactly_what_install_put_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with(tmp_path, ORIGINAL)
    assert hooks(capsys, "install", "--claude-code", "--project", str(project))[0] == 0
    settings = json.loads(path.read_text())
    # a memctl hook under an event install does not use is the user's own
    settings["hooks"]["PreToolUse"][0]["hooks"].append(
        {"type": "command", "command": "memctl cowork drain"}
    )
    path.write_text(json.dumps(settings))

    code, out, err = hooks(
        capsys, "uninstall", "--claude-code", "--project", str(project), "--json"
    )

    assert code == 0, err
    assert out.startswith('{\n  "file": ')  # indented by two, as every --json answer
    assert json.loads(out) == {
        "file": str(path.absolute()),
        "changed": True,
        "events": ["UserPromptSubmit", "SessionEnd"],
    }
    after = json.loads(path.read_text())
    assert after["hooks"]["UserPromptSubmit"] == ORIGINAL["hooks"]["UserPromptSubmit"]
    assert "SessionEnd" not in after["hooks"]
    assert commands(after, "PreToolUse") == ["./g.sh", "memctl cowork drain"]
    written = path.read_bytes()

    again = hooks(capsys, "uninstall", "--claude-code", "--project", str(project), "--json")
    assert json.loads(again[1])["changed"] is False and path.read_bytes() == written


def test_uninstall_drops_the_hooks_key_it_leaves_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with(tmp_path, {"model": "opus"})
    assert hooks(capsys, "install", "--claude-code", "--project", str(project))[0] == 0

    assert hooks(capsys, "uninstall", "--claude-code", "--project", str(project))[0] == 0

    assert json.loads(path.read_text()) == {"model": "opus"}


# -- targets and output --------------------------------------------------------------------


def test_codex_with_a_project_writes_the_projects_hooks_json(
    tmp_path: Path, fake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "repo"
    project.mkdir()

    code, _, err = hooks(capsys, "install", "--codex", "--project", str(project))

    assert code == 0, err
    written = json.loads((project / ".codex" / "hooks.json").read_text())
    assert set(written["hooks"]) == {"UserPromptSubmit", "Stop"}
    assert not (fake_home / ".codex").exists()


def test_install_json_names_the_file_whether_it_changed_and_the_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with(tmp_path, {})
    argv = ("install", "--claude-code", "--project", str(project), "--json")

    first, second = hooks(capsys, *argv), hooks(capsys, *argv)

    expected = {"file": str(path.absolute()), "events": ["UserPromptSubmit", "SessionEnd"]}
    assert json.loads(first[1]) == {**expected, "changed": True}
    assert json.loads(second[1]) == {**expected, "changed": False}


def test_a_project_that_does_not_exist_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo" / "projet"

    code, _, err = hooks(capsys, "install", "--claude-code", "--project", str(missing))

    assert code == 2 and "no such directory" in err
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize(
    ("features", "warned"),
    [
        ("hooks = true\ncodex_hooks = false\n", False),
        ("codex_hooks = false\n", True),
        ("hooks = false\ncodex_hooks = true\n", True),
        ("codex_hooks = true\n", False),
    ],
)
def test_codex_warns_only_when_hooks_are_effectively_off(
    features: str, warned: bool, fake_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fake_home / ".codex").mkdir()
    (fake_home / ".codex" / "config.toml").write_text("[features]\n" + features)

    code, _, err = hooks(capsys, "install", "--codex")

    assert code == 0, err
    assert ("turned off" in err) is warned
