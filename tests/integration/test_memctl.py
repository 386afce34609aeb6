"""memctl against a real memhubd: every command over TCP and the Unix socket, the same
text and exit codes as the offline `memhubd` commands on the same workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

WS = "team-coding"
BLOCKED = ("Push the rebased branch to main", "git push --force origin main")
ALLOWED = ("Push the reviewed branch to main", "git push origin main")


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "MEMHUB_URL",
        "MEMHUB_TOKEN",
        "MEMHUB_WORKSPACE",
        "MEMHUB_STATE_DIR",
        "XDG_CONFIG_HOME",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    # Subprocesses keep the in-process daemon's log lines out of the output compared.
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )


def memctl(*argv: str) -> tuple[int, str, str]:
    result = _run("-m", "memctl", *argv)
    return result.returncode, result.stdout, result.stderr


def offline(*argv: str) -> tuple[int, str]:
    result = _run("-m", "memhubd.cli", *argv)
    return result.returncode, result.stdout


def as_admin(daemon: Any) -> list[str]:
    return ["--url", daemon.url, "--token", daemon.admin_token]


# -- connection and identity ---------------------------------------------------------------


def test_status_over_tcp_lists_every_workspace(shared_daemon: Any) -> None:
    code, out, _ = memctl(*as_admin(shared_daemon), "status")
    assert code == 0
    for name in shared_daemon.workspaces:
        assert any(line.startswith(name + " ") for line in out.splitlines()), out


def test_the_socket_without_a_token_is_the_local_operator(shared_daemon: Any) -> None:
    code, out, _ = memctl("--url", shared_daemon.socket_url, "status", "--json")
    assert code == 0
    assert '"local": true' in out


def test_tcp_without_a_token_is_refused_with_a_hint(shared_daemon: Any) -> None:
    code, out, err = memctl("--url", shared_daemon.url, "status")
    assert (code, out) == (1, "")
    assert err.startswith("memctl: unauthorized: ")
    assert err.endswith("(pass --token or set MEMHUB_TOKEN)\n")


def test_an_unknown_token_is_refused_with_what_to_check(shared_daemon: Any) -> None:
    code, out, err = memctl("--url", shared_daemon.url, "--token", "mh_000000000000_x", "status")
    assert (code, out) == (1, "")
    assert "created in another state directory" in err and "memhubd token list" in err


def test_a_token_pasted_as_its_header_is_taken(shared_daemon: Any) -> None:
    secret = shared_daemon.admin_token
    for given in (f"Bearer {secret}", f"  {secret}\n", f"bearer {secret}"):
        code, out, err = memctl("--url", shared_daemon.url, "--token", given, "status", "--json")
        assert code == 0, (given, err)


def test_environment_settings_reach_the_daemon(
    shared_daemon: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHUB_URL", shared_daemon.url)
    monkeypatch.setenv("MEMHUB_TOKEN", shared_daemon.admin_token)
    monkeypatch.setenv("MEMHUB_WORKSPACE", WS)
    code, out, _ = memctl("files")
    assert code == 0 and "rules.mem" in out


def test_workspaces_over_the_socket_lists_the_example_workspaces(shared_daemon: Any) -> None:
    code, out, err = memctl("--url", shared_daemon.socket_url, "workspaces")
    assert code == 0, err
    assert sorted(line.split()[0] for line in out.splitlines()[1:]) == sorted(
        shared_daemon.workspaces
    )


# -- same answers as the offline commands --------------------------------------------------


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_query_matches_offline_memhubd(shared_daemon: Any, json_flag: list) -> None:
    path = shared_daemon.workspaces[WS]
    argv = ["-q", "deploy on friday", "--type", "teamcode.project_rule", *json_flag]
    code, out, _ = memctl("--url", shared_daemon.socket_url, "-w", WS, "query", *argv)
    assert code == 0
    assert out == offline("query", path, *argv)[1]


@pytest.mark.parametrize("command", ["map", "types"])
def test_map_and_types_match_offline_memhubd(shared_daemon: Any, command: str) -> None:
    path = shared_daemon.workspaces[WS]
    code, out, _ = memctl("--url", shared_daemon.socket_url, "-w", WS, command)
    assert code == 0
    assert out == offline(command, path)[1]


@pytest.mark.parametrize(("task", "candidate"), [BLOCKED, ALLOWED], ids=["block", "allow"])
def test_check_matches_offline_memhubd_text_and_exit_code(
    shared_daemon: Any, task: str, candidate: str
) -> None:
    path = shared_daemon.workspaces[WS]
    argv = ["-t", task, "-c", candidate, "--scope", 'repository("tidewater")']
    # Over the socket: the local operator holds every role, so no rule is hidden.
    got = memctl("--url", shared_daemon.socket_url, "-w", WS, "check", *argv)
    expected_code, expected_out = offline("check", path, *argv)
    assert got[:2] == (expected_code, expected_out)


@pytest.mark.parametrize("name", [WS, "broken"])  # a clean workspace and one with errors
def test_lint_counts_and_exit_code_match_offline_memhubd(shared_daemon: Any, name: str) -> None:
    code, out, _ = memctl("--url", shared_daemon.socket_url, "-w", name, "lint")
    expected_code, expected_out = offline("lint", shared_daemon.workspaces[name])
    assert code == expected_code
    assert out.splitlines()[-1] == expected_out.splitlines()[-1]


def test_explain_shows_a_declaration_and_an_unknown_id_exits_1(shared_daemon: Any) -> None:
    decl_id = "teamcode.project_rule:git.no_force_push_main"
    base = ["--url", shared_daemon.socket_url, "-w", WS, "explain"]
    code, out, _ = memctl(*base, decl_id)
    assert (code, out.splitlines()[0]) == (0, decl_id)
    code, out, err = memctl(*base, "rule:does.not.exist")
    assert (code, out) == (1, "")
    assert err == "memctl: not_found: declaration 'rule:does.not.exist' not found\n"


def test_list_files_and_cat_show_the_workspace_sources(shared_daemon: Any) -> None:
    base = ["--url", shared_daemon.socket_url, "-w", WS]
    code, out, _ = memctl(*base, "list", "--type", "teamcode.project_rule")
    assert code == 0
    assert "teamcode.project_rule:git.no_force_push_main  [active]" in out
    code, out, _ = memctl(*base, "files")
    assert code == 0 and "rules.mem" in out
    code, out, _ = memctl(*base, "cat", "rules.mem")
    assert code == 0
    assert out == (Path(shared_daemon.workspaces[WS]) / "rules.mem").read_text(encoding="utf-8")


def test_a_workspace_must_be_named_when_the_caller_has_several(shared_daemon: Any) -> None:
    code, _, err = memctl("--url", shared_daemon.socket_url, "map")
    assert code == 2
    assert err.startswith("memctl: several workspaces (")


# -- admin: tokens, workspaces, events -----------------------------------------------------


def test_a_token_made_by_memctl_works_until_revoked(live_daemon: Any) -> None:
    admin = ["--url", live_daemon.socket_url]
    code, out, _ = memctl(
        *admin, "token", "create", "reader", "--scopes", "read:summary", "--workspaces", WS
    )
    assert code == 0
    secret = out.splitlines()[-1]
    reader = ["--url", live_daemon.url, "--token", secret]
    # One granted workspace: memctl picks it without -w.
    assert memctl(*reader, "files")[0] == 0
    code, _, err = memctl(*reader, "query", "-q", "deploy")
    assert code == 1 and err.startswith("memctl: forbidden: ")
    assert "reader" in memctl(*admin, "token", "list")[1]
    assert memctl(*admin, "token", "revoke", "reader")[:2] == (0, "revoked token reader\n")
    code, _, err = memctl(*reader, "files")
    assert code == 1 and err.startswith("memctl: unauthorized: ")


def test_workspaces_can_be_added_and_removed(live_daemon: Any, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n.mem").write_text('module n\nfact tea { claim: "Tea at four." }\n', "utf-8")
    admin = ["--url", live_daemon.socket_url]
    assert memctl(*admin, "workspaces", "add", "notes", str(notes))[0] == 0
    code, out, _ = memctl(*admin, "-w", "notes", "list")
    assert code == 0 and "Tea at four." in out
    assert memctl(*admin, "workspaces", "remove", "notes")[0] == 0
    code, _, err = memctl(*admin, "-w", "notes", "files")
    assert code == 1 and err.startswith("memctl: workspace_not_found: ")


def test_a_workspace_the_list_cannot_forget_stays_served(live_daemon: Any, tmp_path: Path) -> None:
    # Given a workspace added at run time, then the state dir's list made unreadable
    notes = tmp_path / "kept-notes"
    notes.mkdir()
    (notes / "n.mem").write_text('module n\nfact tea { claim: "Tea at four." }\n', "utf-8")
    admin = ["--url", live_daemon.socket_url]
    assert memctl(*admin, "workspaces", "add", "kept-notes", str(notes))[0] == 0
    listing = Path(live_daemon.state_dir) / "workspaces.json"
    saved = listing.read_text()
    listing.write_text("{ not json")
    try:
        # When it is removed
        code, _, err = memctl(*admin, "workspaces", "remove", "kept-notes")
        # Then the removal fails, saying why, and the workspace is still served
        assert code == 2 and "could not be saved" in err and "still served" in err, err
        code, out, _ = memctl(*admin, "-w", "kept-notes", "list")
        assert code == 0 and "Tea at four." in out
    finally:
        listing.write_text(saved)
    assert memctl(*admin, "workspaces", "remove", "kept-notes")[0] == 0


def test_events_report_a_reload_after_an_edit(live_daemon: Any) -> None:
    follower = subprocess.Popen(
        [sys.executable, "-m", "memctl", "--url", live_daemon.socket_url, "events", "--count", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # memctl may take a while to start on a busy machine, and an edit made before its
    # stream opens is never sent to it: edit until it has seen one and exited.
    out = edit_until_it_exits(follower, Path(live_daemon.workspaces[WS]) / "rules.mem")
    event, _, data = out.strip().partition(" ")
    assert event and data.startswith("{")


def test_events_with_a_workspace_report_only_its_events(live_daemon: Any) -> None:
    follower = subprocess.Popen(
        [sys.executable, "-m", "memctl", "--url", live_daemon.socket_url, "-w", "writing"]
        + ["events", "--count", "1", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Edits of another workspace first, long enough for the stream to be open: none of
    # their events ends the follower.
    rules = Path(live_daemon.workspaces[WS]) / "rules.mem"
    for _ in range(6):
        touch(rules)
        time.sleep(0.5)
    if follower.poll() is not None:
        raise AssertionError(follower.communicate())
    notes = next(Path(live_daemon.workspaces["writing"]).glob("*.mem"))
    assert json.loads(edit_until_it_exits(follower, notes))["data"]["workspace"] == "writing"


def touch(path: Path) -> None:
    path.write_text(path.read_text("utf-8") + "\n# touched\n", "utf-8")


def edit_until_it_exits(follower: subprocess.Popen, path: Path) -> str:
    """Edit `path` every half second until `follower` (memctl events) exits; its output."""
    try:
        deadline = time.monotonic() + 30
        while follower.poll() is None and time.monotonic() < deadline:
            touch(path)
            time.sleep(0.5)
        out, err = follower.communicate(timeout=20)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    return out


# -- errors that say what the caller may do ------------------------------------------------


def test_a_workspace_without_a_grant_lists_the_granted_ones(shared_daemon: Any) -> None:
    secret = shared_daemon.add_token("writer-only", "read:summary", workspaces=["writing"])
    code, _, err = memctl("--url", shared_daemon.url, "--token", secret, "-w", WS, "map")
    assert code == 1
    # as for a workspace that does not exist: the name is not confirmed
    assert err.startswith(f"memctl: workspace_not_found: unknown workspace '{WS}'")
    assert err.endswith("; workspaces you may use: writing (choose one with -w NAME)\n")


def test_no_workspace_given_to_a_token_that_may_not_list_them_says_to_give_one(
    shared_daemon: Any,
) -> None:
    secret = shared_daemon.add_token("ingest-only", "write:recall", workspaces=["writing"])
    code, _, err = memctl(
        "--url", shared_daemon.url, "--token", secret, "recall", "delete", "drawer_writing_x_1"
    )
    assert code == 2, err  # a usage problem, as "several workspaces" is
    assert "needs read:summary" in err and "-w NAME" in err, err


def test_an_unknown_workspace_lists_the_existing_ones(shared_daemon: Any) -> None:
    code, _, err = memctl("--url", shared_daemon.socket_url, "-w", "team-codng", "map")
    assert code == 1
    assert err.startswith("memctl: workspace_not_found: ")
    names = ", ".join(sorted(shared_daemon.workspaces))
    assert err.endswith(f"; workspaces you may use: {names} (choose one with -w NAME)\n")


# -- memhubd's command line ----------------------------------------------------------------


def test_serve_refuses_a_workspace_that_is_not_a_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    command = ["serve", "--workspace", f"x={missing}", "--port", "0", "--socket", ""]
    result = subprocess.run(
        [sys.executable, "-m", "memhubd.cli", *command, "--state-dir", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"memhubd: workspace 'x': {missing} does not exist; ")


def test_bare_memhubd_prints_help_and_a_typo_gets_a_suggestion() -> None:
    code, out = offline()
    assert code == 0 and out.startswith("usage: memhubd")
    result = _run("-m", "memhubd.cli", "lnit", "examples/broken")
    assert result.returncode == 2
    assert "invalid choice: 'lnit' (did you mean 'lint'?" in result.stderr


def test_memhubd_into_a_closed_pipe_ends_without_a_traceback() -> None:
    # `true` exits before memhubd has started, so every write meets a closed pipe.
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        f"{sys.executable} -m memhubd.cli lint {root}/examples/broken | true",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == ""


def test_memhubd_completion_covers_its_commands() -> None:
    code, script = offline("completion", "bash")
    assert code == 0 and "complete -F _memhubd memhubd" in script
    program = (
        f"{script}\nCOMP_WORDS=(memhubd token ''); COMP_CWORD=2; _memhubd; echo ${{COMPREPLY[@]}}"
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["create", "list", "revoke"], done.stderr
