"""`memhubd token create|list|revoke`: the secret shown once, JSON output, and
refusals as one line on stderr with exit status 2."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from memhubd.auth import TokenStore, add_token_commands


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="memhubd")
    add_token_commands(parser.add_subparsers())
    args = parser.parse_args(["token", *argv])
    return args.handler(args)


@pytest.fixture
def state(tmp_path: Path) -> str:
    return str(tmp_path / "state")


def test_create_prints_the_secret_alone_on_stdout_and_the_rest_on_stderr(
    state: str, capsys
) -> None:
    assert run("create", "alice", "--scopes", "read:search", "--state-dir", state) == 0
    captured = capsys.readouterr()
    secret = captured.out.removesuffix("\n")
    assert "\n" not in secret and secret.startswith("mh_")
    assert "created token 'alice'" in captured.err
    assert "will not be shown again" in captured.err
    assert secret not in captured.err
    identity = TokenStore(Path(state)).verify(secret)
    assert identity is not None and identity.name == "alice"


def test_create_json_includes_the_token_and_the_grants(state: str, capsys) -> None:
    code = run(
        "create", "ci", "--scopes", "read:summary,read:search", "--workspaces", "docs",
        "--roles", "developer", "--expires", "30d", "--state-dir", state, "--json",
    )  # fmt: skip
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["name"] == "ci"
    assert payload["scopes"] == ["read:summary", "read:search"]
    assert payload["workspaces"] == ["docs"] and payload["roles"] == ["developer"]
    assert payload["expires"] is not None
    identity = TokenStore(Path(state)).verify(payload["token"])
    assert identity is not None and identity.can_use("docs") and not identity.can_use("web")


def test_list_shows_tokens_but_never_secrets_or_hashes(state: str, capsys) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state, "--json")
    secret = json.loads(capsys.readouterr().out)["token"]
    assert run("list", "--state-dir", state, "--json") == 0
    listed = capsys.readouterr().out
    assert [item["name"] for item in json.loads(listed)["tokens"]] == ["alice"]
    assert json.loads(listed)["tokens"][0]["expired"] is False
    assert run("list", "--state-dir", state) == 0
    text = capsys.readouterr().out
    assert text.startswith("alice: scopes review;")
    record = TokenStore(Path(state)).get("alice")
    for shown in (listed, text):
        assert secret not in shown and record.secret_hash not in shown


def test_list_of_an_empty_store_says_so_and_where(state: str, capsys) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state)
    run("revoke", "alice", "--state-dir", state)
    capsys.readouterr()
    assert run("list", "--state-dir", state) == 0
    assert capsys.readouterr().out == f"no tokens in {state}\n"


def test_revoke_removes_the_token(state: str, capsys) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state, "--json")
    secret = json.loads(capsys.readouterr().out)["token"]
    assert run("revoke", "alice", "--state-dir", state, "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"revoked": "alice"}
    assert TokenStore(Path(state)).verify(secret) is None


def test_state_dir_defaults_to_the_environment(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MEMHUB_STATE_DIR", str(tmp_path / "from-env"))
    assert run("create", "alice", "--scopes", "all") == 0
    assert TokenStore(tmp_path / "from-env").get("alice") is not None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["create", "alice", "--scopes", "read:all"], "unknown scope(s): read:all"),
        (["create", "alice", "--scopes", "review", "--expires", "2001-01-01"], "not in the future"),
        (["create", "bad name", "--scopes", "review"], "bad token name"),
        (["revoke", "ghost"], "no token named 'ghost'"),
    ],
)
def test_refusals_are_one_line_on_stderr_with_exit_2(state: str, capsys, argv, message) -> None:
    assert run(*argv, "--state-dir", state) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("memhubd token: error: ") and message in captured.err


def test_duplicate_create_is_refused(state: str, capsys) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state)
    capsys.readouterr()
    assert run("create", "alice", "--scopes", "admin", "--state-dir", state) == 2
    assert "already exists: revoke it first (memhubd token revoke" in capsys.readouterr().err


def test_an_unusable_state_dir_is_an_error_not_a_traceback(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert run("create", "alice", "--scopes", "review", "--state-dir", str(blocker / "x")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_create_and_revoke_are_audited_with_the_operator_and_never_the_secret(
    state: str, capsys
) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state, "--json")
    secret = json.loads(capsys.readouterr().out)["token"]
    run("revoke", "alice", "--state-dir", state)
    run("revoke", "ghost", "--state-dir", state)
    audit = Path(state) / "audit" / "admin.jsonl"
    entries = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(e["action"], e["outcome"]) for e in entries] == [
        ("token.create", "ok"),
        ("token.revoke", "ok"),
        ("token.revoke", "refused"),
    ]
    assert all(e["via"] == "cli" and e["identity"] and e["ts"].endswith("Z") for e in entries)
    assert entries[0]["token"]["name"] == "alice" and entries[0]["token"]["scopes"] == ["review"]
    assert secret not in audit.read_text()
    assert TokenStore(Path(state)).get("alice") is None
    assert audit.stat().st_mode & 0o777 == 0o600


def test_the_state_dirs_warning_never_joins_the_secret_on_stdout(tmp_path: Path) -> None:
    # Given a state dir others may read (made with the usual umask before the first run)
    import os
    import subprocess
    import sys

    state = tmp_path / "open-state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    # When a token is created as the quickstart does, its stdout captured
    command = [
        sys.executable,
        "-m",
        "memhubd",
        "token",
        "create",
        "bot",
        "--scopes",
        "read:summary",
    ]
    env = {**os.environ, "MEMHUB_STATE_DIR": str(state)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    # Then stdout is the secret alone, and the warning is on stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("mh_"), done.stdout
    assert "state_dir_not_private" in done.stderr


@pytest.mark.parametrize("name", ["local-operator", "environment", "bootstrap"])
def test_the_names_the_audit_reserves_cannot_be_created(state: str, capsys, name: str) -> None:
    assert run("create", name, "--scopes", "review", "--state-dir", state) == 2
    assert "is reserved" in capsys.readouterr().err
    assert TokenStore(Path(state)).get(name) is None


@pytest.mark.parametrize("expires", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_an_expiry_past_the_year_9999_is_a_refusal_not_a_traceback(
    state: str, capsys, expires: str
) -> None:
    argv = ("create", "late", "--scopes", "review", "--state-dir", state, "--expires", expires)
    assert run(*argv) == 2
    assert "outside the years 1 to 9999" in capsys.readouterr().err
    entries = (Path(state) / "audit" / "admin.jsonl").read_text().splitlines()
    assert json.loads(entries[-1])["outcome"] == "refused"


def test_a_secret_typed_as_a_name_never_reaches_the_audit(state: str, capsys) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state, "--json")
    secret = json.loads(capsys.readouterr().out)["token"]
    assert run("revoke", secret, "--state-dir", state) == 2  # the secret, not the name
    audit = (Path(state) / "audit" / "admin.jsonl").read_text()
    assert secret not in audit and "[REDACTED]" in audit


def test_a_broken_token_file_is_audited_as_a_failure_by_create_and_revoke(
    state: str, capsys
) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state)
    (Path(state) / "tokens.json").write_text("{ not json")
    assert run("create", "bob", "--scopes", "review,read:search", "--state-dir", state) == 2
    assert run("revoke", "alice", "--state-dir", state) == 2
    entries = [
        json.loads(line)
        for line in (Path(state) / "audit" / "admin.jsonl").read_text().splitlines()
    ]
    assert [(e["action"], e["outcome"]) for e in entries[-2:]] == [
        ("token.create", "failed"),
        ("token.revoke", "failed"),
    ]
    assert entries[-2]["token"]["scopes"] == ["review", "read:search"]  # lists, as the API's


def test_a_secret_cannot_become_a_tokens_name(state: str, capsys) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state, "--json")
    secret = json.loads(capsys.readouterr().out)["token"]
    assert run("create", secret, "--scopes", "review", "--state-dir", state) == 2
    err = capsys.readouterr().err
    assert "may not look like a secret" in err and secret not in err
    assert [r.name for r in TokenStore(Path(state)).list()] == ["alice"]


def test_an_open_state_dir_is_warned_about_once_per_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every token write opens the state directory again: one warning is enough, and
    another comes only when its mode changes."""
    from types import SimpleNamespace

    from memhubd.auth.tokens import TokenStore
    from memhubd.runtime import state as state_module

    # A recording logger of its own: structlog's capture misses a logger another test
    # of the same process already used (loggers are cached on first use).
    logs: list[tuple[str, dict[str, object]]] = []
    recorder = SimpleNamespace(
        warning=lambda event, **fields: logs.append((event, fields)),
        info=lambda *_a, **_kw: None,
        debug=lambda *_a, **_kw: None,
    )
    monkeypatch.setattr(state_module, "log", recorder)
    state = tmp_path / "open-state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    store = TokenStore(state)
    for n in range(5):
        store.create(f"bot{n}", "read:summary")
    store.revoke("bot0")
    state.chmod(0o750)
    store.create("later", "read:summary")
    warned = [fields["mode"] for event, fields in logs if event == "state_dir_not_private"]
    assert warned == ["0o755", "0o750"]


def test_list_and_revoke_on_a_state_dir_without_tokens_name_it_and_create_nothing(
    tmp_path: Path, capsys
) -> None:
    # given a state directory that is not there (a typo, or not the daemon's)
    typo = tmp_path / "typo"
    hint = f"{typo} (which holds no tokens.json: is --state-dir / MEMHUB_STATE_DIR the daemon's?)"
    # when a token is revoked there, then the refusal names the directory searched
    assert run("revoke", "leaked-bot", "--state-dir", str(typo)) == 2
    assert capsys.readouterr().err == (
        f"memhubd token: error: no token named 'leaked-bot' in {hint}\n"
    )
    # and a list says where it found none
    assert run("list", "--state-dir", str(typo)) == 0
    assert capsys.readouterr().out == f"no tokens in {hint}\n"
    assert run("list", "--state-dir", str(typo), "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"tokens": [], "warning": f"no tokens in {hint}"}
    # and neither made the directory
    assert not typo.exists()


def test_revoke_of_an_unknown_name_names_the_state_dir(state: str, capsys) -> None:
    run("create", "alice", "--scopes", "review", "--state-dir", state)
    capsys.readouterr()
    assert run("revoke", "ghost", "--state-dir", state) == 2
    assert capsys.readouterr().err == (
        f"memhubd token: error: no token named 'ghost' in {Path(state).absolute()}\n"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["create", "caf\udce9", "--scopes", "read:summary"],
        ["create", "ok", "--scopes", "read:summary", "--roles", "r\udce9"],
        ["create", "ok", "--scopes", "read:summary", "--workspaces", "w\udce9"],
    ],
)
def test_an_argument_that_is_not_utf8_is_refused_and_audited(
    state: str, capsys, argv: list[str]
) -> None:
    # Bytes that are not UTF-8 on the command line reach Python as lone surrogates.
    assert run(*argv, "--state-dir", state, "--json") == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["code"] == "invalid"
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    (entry,) = TokenStore(Path(state)).audit.entries()
    assert entry["outcome"] == "refused" and "\\udce9" in json.dumps(entry["token"])


def test_list_marks_a_token_made_before_its_name_was_reserved(state: str, capsys) -> None:
    run("create", "watcher", "--scopes", "write:recall", "--state-dir", state, "--json")
    run("create", "alice", "--scopes", "review", "--state-dir", state, "--json")
    capsys.readouterr()
    path = Path(state) / "tokens.json"
    path.write_text(path.read_text().replace('"watcher"', '"recall-watcher"'))
    assert run("list", "--state-dir", state, "--json") == 0
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)["tokens"]}
    assert listed["recall-watcher"]["name_reserved"] is True
    assert listed["alice"]["name_reserved"] is False
    assert run("list", "--state-dir", state) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("recall-watcher (REFUSED: its name is reserved") for line in lines)
    assert any(line.startswith("alice: scopes review;") for line in lines)
