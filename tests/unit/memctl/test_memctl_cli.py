"""memctl's command line: argument parsing, output, exit codes, and the daemon-down path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from memctl_fakes import Canned, FakeDaemon

from memctl.cli import build_parser, main

pytestmark = pytest.mark.usefixtures("no_client_config")

WS = "/v1/workspaces/team"
ONE_WORKSPACE = Canned({"workspaces": [{"name": "team", "status": "ready"}]})
COMMANDS = [
    ["status"],
    ["workspaces"],
    ["workspaces", "add"],
    ["workspaces", "remove"],
    ["map"],
    ["types"],
    ["list"],
    ["query"],
    ["explain"],
    ["check"],
    ["lint"],
    ["files"],
    ["cat"],
    ["events"],
    ["token"],
    ["token", "create"],
    ["token", "list"],
    ["token", "revoke"],
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([*command, "--help"])
    assert caught.value.code == 0
    assert "usage: memctl " + " ".join(command) in capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "seconds"),
    [(["cowork", "drain"], "DRAIN_TIMEOUT"), (["hooks", "session-end"], "SESSION_END_TIMEOUT")],
)
def test_a_command_with_its_own_timeout_says_so_in_its_help(
    command: list[str], seconds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import memctl.cowork
    import memctl.hooks

    value = getattr(memctl.cowork, seconds, None) or getattr(memctl.hooks, seconds)
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    assert f"--timeout defaults to {value:g} seconds here" in capsys.readouterr().out


def test_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("memctl ")


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "-w", "team", "--url", "http://h:1", "map"],
        ["map", "--json", "-w", "team", "--url", "http://h:1"],
        ["--json", "map", "--workspace", "team", "--url", "http://h:1"],
    ],
)
def test_global_options_work_before_and_after_the_command(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.json, args.workspace, args.url) == (True, "team", "http://h:1")


def test_options_not_given_stay_unset_so_config_can_fill_them() -> None:
    args = build_parser().parse_args(["map"])
    assert not hasattr(args, "url") and not hasattr(args, "json")


def test_query_takes_repeatable_types_and_a_positional_text() -> None:
    args = build_parser().parse_args(["query", "deploy", "--type", "rule", "--kind", "fact"])
    assert (args.query_text, args.query, args.types, args.limit) == (
        "deploy",
        None,
        ["rule", "fact"],
        8,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "-t", "task"],
        ["check", "-t", "task", "-c", "x", "--candidate-file", "f"],
        ["check", "-c", "x"],
        ["token", "create", "ci", "--scopes", "read:everything"],
        ["token", "create", "ci"],
        ["events", "--count", "0"],
        ["list", "--limit", "many"],
        ["--timeout", "0", "status"],
    ],
)
def test_bad_arguments_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_token_scopes_are_validated_and_all_expands() -> None:
    args = build_parser().parse_args(["token", "create", "ci", "--scopes", "all", "--roles", "a,b"])
    assert "admin" in args.scopes and len(args.scopes) == 6
    assert args.roles == ("a", "b")


# -- the daemon is down ----------------------------------------------------------------------


def test_a_closed_port_gives_one_line_and_exit_2(
    closed_port_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--url", closed_port_url, "status")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"memctl: cannot reach memhubd at {closed_port_url} (connection refused)")


def test_the_default_socket_missing_gives_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-w", "team", "map")
    assert code == 2
    socket = tmp_path / "run" / "memhub" / "memhubd.sock"
    assert err == (
        f"memctl: cannot reach memhubd at unix://{socket} (no such socket); "
        "is the daemon running? (make run / memhubd serve)\n"
    )


def test_a_down_daemon_never_shows_a_traceback_from_python_m_memctl(short_tmp: str) -> None:
    url = f"unix://{short_tmp}/nothing.sock"
    env = {**os.environ, "MEMHUB_URL": url}
    result = subprocess.run(
        [sys.executable, "-m", "memctl", "query", "-w", "team", "-q", "x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"memctl: cannot reach memhubd at {url} (no such socket); "
        "is the daemon running? (make run / memhubd serve)"
    ]


def test_a_bad_url_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--url", "ftp://x", "status")
    assert code == 2
    assert err.startswith("memctl: unsupported daemon url 'ftp://x'")


def test_a_malformed_url_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--url", "http://[::1", "status")
    assert code == 2
    assert err.splitlines() == ["memctl: daemon url 'http://[::1' is malformed: Invalid IPv6 URL"]


@pytest.mark.parametrize("url", ["http://a..b:8377", "http://" + "a" * 70 + ".example:8377"])
def test_a_url_with_an_invalid_host_name_is_a_usage_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    for given in (["--url", url], []):
        monkeypatch.setenv("MEMHUB_URL", url)
        code, out, err = run(capsys, *given, "--json", "status")
        assert code == 2
        assert err == f"memctl: daemon url {url!r} has an invalid host name\n"
        assert json.loads(out)["error"]["code"] == "usage"


def test_a_url_with_a_password_is_refused_without_echoing_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "http://user:pw_SECRET@127.0.0.1:9"
    code, out, err = run(capsys, "--url", url, "status", "--json")
    assert code == 2
    assert "pw_SECRET" not in out + err
    assert "must not carry a user or password" in err
    assert json.loads(out)["error"]["code"] == "usage"  # as every bad --url


@pytest.mark.parametrize("token", ["mh_a\nb", "mh_a\rb", "mh_\x00", "mh_\u20ac"])
def test_a_token_that_cannot_be_a_header_is_one_line_and_exit_2(
    token: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--url", "http://127.0.0.1:9", "--token", token, "status")
    assert code == 2
    assert err.splitlines() == [
        "memctl: the token from --token holds a line break, a control character or a "
        "character outside Latin-1: a token is one line of printable text (mh_…)"
    ]


def test_client_toml_is_used_when_no_flag_or_env_is_set(
    tmp_path: Path, fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "home" / ".config" / "memhub" / "client.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'url = "{fake_daemon.url}"\ntoken = "t0k"\n', encoding="utf-8")
    fake_daemon.on("GET", "/v1/status", Canned({"version": "9"}))
    code, out, _ = run(capsys, "status")
    assert (code, out) == (0, "version: 9\n")
    assert fake_daemon.seen[0].headers["authorization"] == "Bearer t0k"


# -- answers and exit codes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "exit_code"), [("ALLOW", 0), ("BLOCK", 1), ("NEEDS_REVIEW", 2)]
)
def test_check_prints_the_text_and_exits_by_verdict(
    verdict: str, exit_code: int, fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    text = f"VERDICT: {verdict}\n\nAPPLICABLE MUST\n- (none)"
    fake_daemon.on("POST", WS + "/check", Canned(text))
    code, out, _ = run(
        capsys, "--url", fake_daemon.url, "-w", "team", "check", "-t", "t", "-c", "c"
    )
    assert (code, out) == (exit_code, text + "\n")


def test_check_json_exits_by_the_json_verdict(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("POST", WS + "/check", Canned({"verdict": "block", "violations": []}))
    argv = ["--url", fake_daemon.url, "check", "-w", "team", "-t", "t", "-c", "c", "--json"]
    code, out, _ = run(capsys, *argv)
    assert code == 1
    assert out == '{\n  "verdict": "block",\n  "violations": []\n}\n'


def test_check_reads_the_candidate_file_and_sends_exceptions(
    tmp_path: Path, fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = tmp_path / "draft.txt"
    draft.write_text("git push --force\n", encoding="utf-8")
    fake_daemon.on("POST", WS + "/check", Canned("VERDICT: ALLOW"))
    argv = ["--url", fake_daemon.url, "-w", "team", "check", "-t", "push"]
    code, _, _ = run(capsys, *argv, "--candidate-file", str(draft), "--exception", "hotfix")
    assert code == 0
    body = fake_daemon.seen[0].body
    assert (body["candidate"], body["exceptions"]) == ("git push --force\n", ["hotfix"])


def test_check_with_an_empty_candidate_fails_before_asking_the_daemon(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--url", fake_daemon.url, "-w", "t", "check", "-t", "x", "-c", " ")
    assert (code, err) == (2, "memctl: task and candidate must both be non-empty\n")
    assert fake_daemon.seen == []


@pytest.mark.parametrize(
    ("errors", "warnings", "strict", "exit_code"),
    [(0, 0, False, 0), (1, 0, False, 1), (0, 2, False, 0), (0, 2, True, 1)],
)
def test_lint_exit_code_follows_memdsl(
    errors: int,
    warnings: int,
    strict: bool,
    exit_code: int,
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
) -> None:
    payload = {"ok": errors == 0, "declarations": 4, "errors": errors, "warnings": warnings}
    fake_daemon.on("GET", WS + "/lint", Canned({**payload, "diagnostics": []}))
    argv = ["--url", fake_daemon.url, "-w", "team", "lint", *(["--strict"] if strict else [])]
    code, out, _ = run(capsys, *argv)
    assert code == exit_code
    assert out.endswith(f"4 declarations, {errors} error(s), {warnings} warning(s)\n")


def test_explain_of_an_unknown_id_prints_the_error_and_exits_1(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    error = {"code": "not_found", "message": "declaration 'rule:nope' not found", "detail": {}}
    fake_daemon.on("GET", WS + "/declarations/rule:nope", Canned({"error": error}, status=404))
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "team", "explain", "rule:nope")
    assert (code, out) == (1, "")
    assert err == "memctl: not_found: declaration 'rule:nope' not found\n"


def test_a_server_failure_exits_2_and_json_mode_prints_the_envelope(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    error = {"code": "internal", "message": "boom", "detail": {}}
    fake_daemon.on("GET", WS + "/map", Canned({"error": error}, status=500))
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "team", "map", "--json")
    assert code == 2
    assert '"code": "internal"' in out
    assert err == "memctl: internal: boom\n"


def test_unauthorized_without_a_token_hints_at_how_to_give_one(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    error = {"code": "unauthorized", "message": "missing bearer token", "detail": {}}
    fake_daemon.on("GET", "/v1/status", Canned({"error": error}, status=401))
    code, _, err = run(capsys, "--url", fake_daemon.url, "status")
    assert code == 1
    assert err == (
        "memctl: unauthorized: missing bearer token (pass --token or set MEMHUB_TOKEN)\n"
    )


def test_query_text_comes_from_the_positional_and_types_are_sent(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("POST", WS + "/query", Canned("MUST\n- (none)\n"))
    argv = ["--url", fake_daemon.url, "-w", "team", "query", "deploy on friday", "--type", "rule"]
    code, out, _ = run(capsys, *argv)
    assert (code, out) == (0, "MUST\n- (none)\n")
    body = fake_daemon.seen[0].body
    assert (body["query"], body["types"], body["limit"]) == ("deploy on friday", ["rule"], 8)


def test_query_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--url", "http://h:1", "-w", "t", "query", "a", "-q", "b")
    assert code == 2
    assert "give the query once" in err


# -- workspace choice ------------------------------------------------------------------------


def test_the_only_workspace_of_the_caller_is_used_when_none_is_named(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", "/v1/workspaces", ONE_WORKSPACE)
    fake_daemon.on("GET", WS + "/types", Canned("rule  role=constraint"))
    code, out, _ = run(capsys, "--url", fake_daemon.url, "types")
    assert (code, out) == (0, "rule  role=constraint\n")
    assert [seen.path for seen in fake_daemon.seen] == ["/v1/workspaces", WS + "/types"]


def test_several_workspaces_and_none_named_is_an_error_listing_them(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    both = {"workspaces": [{"name": "team"}, {"name": "writing"}]}
    fake_daemon.on("GET", "/v1/workspaces", Canned(both))
    code, _, err = run(capsys, "--url", fake_daemon.url, "map")
    assert code == 2
    assert err == (
        "memctl: several workspaces (team, writing); choose one with -w NAME or MEMHUB_WORKSPACE\n"
    )


def test_memhub_workspace_env_names_the_workspace(
    monkeypatch: pytest.MonkeyPatch, fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMHUB_WORKSPACE", "team")
    monkeypatch.setenv("MEMHUB_URL", fake_daemon.url)
    fake_daemon.on("GET", WS + "/map", Canned("team map"))
    assert run(capsys, "map") == (0, "team map\n", "")


# -- the other commands ----------------------------------------------------------------------


def test_list_maps_all_to_include_inactive(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", WS + "/declarations", Canned({"total": 0, "items": []}))
    code, out, _ = run(capsys, "--url", fake_daemon.url, "-w", "team", "list", "--all")
    assert (code, out) == (0, "0 declaration(s)\n")
    assert fake_daemon.seen[0].query["include_inactive"] == ["true"]


def test_cat_prints_the_raw_file_and_also_accepts_the_listed_path(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", WS + "/files", Canned({"files": [{"file_id": "f7", "path": "a/r.mem"}]}))
    served = {"file_id": "f7", "content": "module r\nrule x {}", "stale": False}
    fake_daemon.on("GET", WS + "/files/f7", Canned(served))
    base = ["--url", fake_daemon.url, "-w", "team", "cat"]
    assert run(capsys, *base, "f7") == (0, "module r\nrule x {}", "")
    assert run(capsys, *base, "a/r.mem") == (0, "module r\nrule x {}", "")
    code, _, err = run(capsys, *base, "other.mem")
    assert code == 1 and err.startswith("memctl: not_found:")


def test_cat_says_on_stderr_that_a_file_does_not_load(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = {"file_id": "f7", "content": "rule x {", "stale": True}
    fake_daemon.on("GET", WS + "/files/f7", Canned(stale))
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "team", "cat", "f7")
    assert (code, out) == (0, "rule x {")
    assert err == "memctl: warning: f7 does not load now; run `memctl lint` for why\n"


def test_cat_json_asks_the_daemon_for_its_file_object(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", WS + "/files/f7", Canned({"file_id": "f7", "content": "x"}))
    code, out, _ = run(capsys, "--url", fake_daemon.url, "-w", "team", "cat", "f7", "--json")
    assert (code, out) == (0, '{\n  "file_id": "f7",\n  "content": "x"\n}\n')
    assert fake_daemon.seen[0].headers["accept"] == "application/json"


def test_events_stop_after_count(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = "event: reload\ndata: {}\n\nevent: reload\ndata: {}\n\nevent: health\ndata: {}\n\n"
    fake_daemon.on("GET", "/v1/events", Canned(stream, content_type="text/event-stream"))
    assert run(capsys, "--url", fake_daemon.url, "events", "--count", "2") == (
        0,
        "reload {}\nreload {}\n",
        "",
    )


def test_workspaces_add_sends_an_absolute_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    fake_daemon.on("POST", "/v1/workspaces", Canned({"name": "notes"}, status=201))
    code, out, _ = run(capsys, "--url", fake_daemon.url, "workspaces", "add", "notes", "ws")
    assert (code, out) == (0, f"added workspace notes ({tmp_path / 'ws'})\n")
    assert fake_daemon.seen[0].body == {"name": "notes", "path": str(tmp_path / "ws")}


def test_token_create_shows_the_secret_once_and_revoke_names_the_token(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    created = {"name": "ci", "token": "mh_secret", "scopes": ["read:search"]}
    fake_daemon.on("POST", "/v1/tokens", Canned(created, status=201))
    fake_daemon.on("DELETE", "/v1/tokens/ci", Canned({"revoked": "ci"}))
    argv = ["--url", fake_daemon.url, "token", "create", "ci", "--scopes", "read:search"]
    code, out, err = run(capsys, *argv, "--workspaces", "team")
    assert code == 0
    assert out.splitlines()[-1] == "mh_secret"
    assert "not shown again" in err
    assert fake_daemon.seen[0].body["workspaces"] == ["team"]
    assert run(capsys, *argv)[0] == 0
    assert fake_daemon.seen[1].body["workspaces"] == ["*"]  # not given: every workspace
    assert run(capsys, "--url", fake_daemon.url, "token", "revoke", "ci") == (
        0,
        "revoked token ci\n",
        "",
    )


# -- the import rule -------------------------------------------------------------------------


def test_memctl_never_imports_the_daemon_or_its_web_stack() -> None:
    probe = (
        "import sys, memctl.cli\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'memhubd', 'starlette', 'uvicorn'})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True
    )
    assert result.stdout.strip() == ""


def test_events_of_a_workspace_the_token_may_not_use_are_refused_not_awaited(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = {
        "error": {
            "code": "not_found",
            "message": "unknown workspace 'nope'",
            "detail": {"workspace": "nope", "available": ["team"]},
        }
    }
    fake_daemon.on("GET", "/v1/workspaces/nope", Canned(unknown, status=404))
    fake_daemon.on("GET", "/v1/events", Canned("", content_type="text/event-stream"))
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "nope", "events")
    assert (code, out) == (1, "")
    assert err.startswith("memctl: not_found: unknown workspace 'nope'") and "team" in err
    assert [seen.path for seen in fake_daemon.seen] == ["/v1/workspaces/nope"]
