"""memctl helps a user who typed something incomplete or wrong: help for a bare command,
"did you mean", clear option errors, the workspaces they may use, where to approve,
shell completion, and a quiet end when the reader of its output goes away."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest
from memctl_fakes import Canned, FakeDaemon

from memctl.cli import main

pytestmark = pytest.mark.usefixtures("no_client_config")

PID = "p-20261201-101010-abcdef"
PROPOSAL = f"/v1/workspaces/team/proposals/{PID}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def envelope(code: str, message: str, **detail: object) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "detail": detail}}


# -- parsing -------------------------------------------------------------------------------


def test_bare_memctl_prints_help_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert (code, err) == (0, "")
    assert out.startswith("usage: memctl")
    assert "review" in out and "completion" in out


def test_a_command_without_its_action_shows_that_commands_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "review")
    assert code == 2
    assert "usage: memctl review" in err
    for action in ("list", "show", "diff", "approve", "reject"):
        assert action in err
    assert err.endswith("choose one of the commands above\n")


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["stauts"], "'status'"),
        (["reveiw", "list"], "'review'"),
        (["review", "aprove"], "'approve'"),
    ],
)
def test_a_misspelt_command_gets_a_suggestion(
    argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert f"did you mean {suggestion}?" in err


def test_a_misspelt_choice_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "review", "list", "--status", "pendng")
    assert code == 2 and "did you mean 'pending'?" in err


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["kg", "query", "--entity", "a"], "memctl kg query"),
        (["-w", "team", "status", "--entity", "a"], "memctl status"),
        (["recall", "search", "x", "--entity", "a"], "memctl recall search"),
    ],
)
def test_an_unknown_option_is_told_with_its_commands_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], command: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"usage: {command} ")
    assert err.rstrip().endswith(f"{command}: error: unrecognized arguments: --entity a")


def test_parsed_arguments_carry_nothing_of_the_parsing() -> None:
    from memctl.cli import build_parser

    args = build_parser().parse_args(["kg", "query", "--subject", "a"])
    assert not [name for name in vars(args) if name.startswith("_")]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "expected a number of seconds, got 'abc'"),
        ("0", "must be a finite number above 0, not 0"),
        ("nan", "must be a finite number above 0, not nan"),
    ],
)
def test_a_bad_timeout_is_explained_without_internal_names(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--timeout", value, "status")
    assert code == 2
    assert message in err and "_positive" not in err


def test_a_bad_count_is_explained(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "events", "--count", "many")
    assert code == 2 and "expected a whole number, got 'many'" in err


# -- errors that name what is possible -----------------------------------------------------


def test_an_unknown_workspace_lists_the_ones_the_caller_may_use(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    body = envelope(
        "workspace_not_found", "no workspace 'tem'", workspace="tem", available=["team", "writing"]
    )
    fake_daemon.on("GET", "/v1/workspaces/tem/map", Canned(body, status=404))
    code, _, err = run(capsys, "--url", fake_daemon.url, "-w", "tem", "map")
    assert code == 1
    assert err == (
        "memctl: workspace_not_found: no workspace 'tem'; "
        "workspaces you may use: team, writing (choose one with -w NAME)\n"
    )


def test_a_forbidden_workspace_says_when_none_is_granted(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    body = envelope("forbidden", "no grant for 'team'", available=[])
    fake_daemon.on("GET", "/v1/workspaces/team/map", Canned(body, status=403))
    code, _, err = run(capsys, "--url", fake_daemon.url, "-w", "team", "map")
    assert code == 1
    assert err.endswith("; this caller may use no workspace\n")


# -- review --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["cowork", "push", "--to", "bob", "-"],
        ["diary", "write", "LESSON", "-"],
        ["fact-check", "-"],
        ["recall", "compress", "-"],
        ["propose", "-"],
    ],
)
def test_stdin_that_is_not_utf8_is_one_line_and_nothing_is_sent(
    fake_daemon: FakeDaemon,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    # Given bytes on stdin that are not UTF-8, decoded by the text stream as it
    # would be in a UTF-8 locale (the bad bytes kept as lone surrogates)
    piped = io.TextIOWrapper(io.BytesIO(b"\xff\xfe not text"), "utf-8", "surrogateescape")
    monkeypatch.setattr(sys, "stdin", piped)
    # When a command reads its text from stdin
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "team", *argv)
    # Then it says so in one line, exits 2 and sends nothing
    assert (code, out) == (2, "")
    assert err.startswith("memctl: cannot read standard input: 'utf-8' codec can't decode")
    assert len(err.splitlines()) == 1
    assert fake_daemon.seen == []


def test_approve_without_into_suggests_a_file_and_writes_nothing(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = {"proposal": {"id": PID, "status": "pending"}, "suggested_into": "decisions.mem"}
    fake_daemon.on("GET", PROPOSAL, Canned(shown))
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "team", "review", "approve", PID)
    assert (code, out) == (2, "")
    assert "review approve needs --into FILE" in err
    assert f"suggested: memctl -w team review approve {PID} --into decisions.mem" in err
    assert [seen.method for seen in fake_daemon.seen] == ["GET"]


def test_approve_without_into_of_a_decided_proposal_says_it_is_decided(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = {"proposal": {"id": PID, "status": "approved"}, "suggested_into": None}
    fake_daemon.on("GET", PROPOSAL, Canned(shown))
    code, out, err = run(capsys, "--url", fake_daemon.url, "-w", "team", "review", "approve", PID)
    assert (code, out) == (1, "")
    assert err == f"memctl: proposal {PID} is already approved: nothing to approve\n"
    assert [seen.method for seen in fake_daemon.seen] == ["GET"]


def test_approve_without_into_and_no_suggestion_still_says_what_is_missing(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_daemon.on("GET", PROPOSAL, Canned({"proposal": {"id": PID}, "suggested_into": None}))
    code, _, err = run(capsys, "--url", fake_daemon.url, "-w", "team", "review", "approve", PID)
    assert code == 2
    assert err == (
        "memctl: review approve needs --into FILE (a .mem file, relative to the workspace root)\n"
    )


def test_propose_names_the_suggested_target_in_the_reviewers_command(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    answer = {"proposal_id": PID, "declaration_id": "fact:x", "suggested_into": "facts.mem"}
    fake_daemon.on("POST", "/v1/workspaces/team/proposals", Canned(answer, status=201))
    source = os.path.join(str(tmp_path), "x.mem")
    with open(source, "w", encoding="utf-8") as handle:
        handle.write('fact x { claim: "y" }\n')
    code, out, _ = run(capsys, "--url", fake_daemon.url, "-w", "team", "propose", source)
    assert code == 0
    assert out.endswith(f"memctl review approve {PID} --into facts.mem\n")


def test_an_approval_says_what_it_marked_superseded(
    fake_daemon: FakeDaemon, capsys: pytest.CaptureFixture[str]
) -> None:
    decision = {
        "status": "approved",
        "proposal_id": PID,
        "declaration_id": "fact:db.v2",
        "file_id": "base.mem",
        "decided_by": "alice",
        "served_generation": 3,
        "marked_superseded": ["fact:db"],
    }
    fake_daemon.on("POST", PROPOSAL + "/approve", Canned(decision))
    argv = ["-w", "team", "review", "approve", PID, "--into", "base.mem"]
    code, out, _ = run(capsys, "--url", fake_daemon.url, *argv)
    assert code == 0
    assert out == (
        f"approved {PID}: fact:db.v2 into base.mem by alice; served at generation 3; "
        "marked superseded: fact:db\n"
    )


# -- shell completion ----------------------------------------------------------------------


def completions(line: str) -> list[str]:
    """What bash completes for `line` (the last word is the one being completed)."""
    script = subprocess.run(
        [sys.executable, "-m", "memctl", "completion", "bash"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    words = line.split(" ")
    program = (
        f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)}); "
        f"COMP_CWORD={len(words) - 1}; _memctl; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_follows_the_command_tree() -> None:
    assert completions("memctl rev") == ["review"]
    assert completions("memctl review ") == ["list", "show", "diff", "approve", "reject"]
    assert completions("memctl -w team review list --st") == ["--status"]
    assert completions("memctl review list --status ") == ["pending", "approved", "rejected", "all"]
    assert "status" in completions("memctl --url http://h:1 ")  # an option's value is skipped


def test_zsh_and_fish_scripts_are_generated_from_the_same_tree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, zsh, _ = run(capsys, "completion", "zsh")
    assert code == 0 and zsh.startswith("autoload -U +X bashcompinit && bashcompinit\n")
    assert "complete -F _memctl memctl" in zsh
    code, fish, _ = run(capsys, "completion", "fish")
    assert code == 0
    assert (
        "complete -c memctl -n \"_memctl_at 'memctl review'\" -a 'list show diff approve reject'"
        in fish
    )
    assert (
        "complete -c memctl -n \"_memctl_at 'memctl review list'\" -l status -x -a 'pending approved rejected all'"
        in fish
    )


def test_completion_needs_no_daemon(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--url", "http://127.0.0.1:1", "completion", "bash")
    assert (code, err) == (0, "")
    assert out.startswith("# memctl completion for bash")


def test_completion_json_carries_the_same_script(capsys: pytest.CaptureFixture[str]) -> None:
    _code, script, _ = run(capsys, "completion", "fish")
    code, out, _ = run(capsys, "completion", "fish", "--json")
    assert code == 0 and json.loads(out) == {"shell": "fish", "script": script}
    # --json before the command, as every other command takes it
    code, out, _ = run(capsys, "--json", "completion", "fish")
    assert code == 0 and json.loads(out) == {"shell": "fish", "script": script}


# -- a closed pipe -------------------------------------------------------------------------


def test_a_reader_that_goes_away_gets_no_traceback() -> None:
    # `true` exits before memctl has started, so memctl writes into a closed pipe.
    done = subprocess.run(
        f"{sys.executable} -m memctl completion fish | true; echo ${{PIPESTATUS[0]}}",
        shell=True,
        executable="bash",
        capture_output=True,
        text=True,
    )
    assert done.stdout == "1\n"
    assert done.stderr == ""


def _script(shell: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memctl", "completion", shell],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_runs_through_bashcompinit(tmp_path: object) -> None:
    script = os.path.join(str(tmp_path), "memctl.zsh")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(_script("zsh"))
    # What _bash_complete sets up before it calls compgen -F (zsh filters by prefix later).
    program = f"""
autoload -U +X compinit && compinit -u -d {tmp_path}/zcompdump
source {script}
words=(memctl review list --status ''); CURRENT=5
COMP_WORDS=("${{words[@]}}"); COMP_CWORD=4
compgen -F _memctl -- ''
"""
    done = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True)
    assert done.stdout.split() == ["pending", "approved", "rejected", "all"], done.stderr


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completion_follows_the_command_tree(tmp_path: object) -> None:
    script = os.path.join(str(tmp_path), "memctl.fish")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(_script("fish"))
    program = f"source {script}; complete -C 'memctl review '; complete -C 'memctl rev'"
    done = subprocess.run(["fish", "-c", program], capture_output=True, text=True)
    lines = [line.split("\t")[0] for line in done.stdout.splitlines()]
    assert lines == ["approve", "diff", "list", "reject", "show", "review"], done.stderr
