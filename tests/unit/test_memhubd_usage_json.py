"""memhubd's usage errors with `--json`: memhub's own commands put the error envelope
on stdout beside argparse's lines on stderr; memdsl's commands print nothing on stdout,
as memdsl does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memhubd.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["lint", "--json"], "the following arguments are required: PATH"),
        (["explain", "--json", "x"], "the following arguments are required: id"),
        (["token", "list", "--json", "--bogus"], "unrecognized arguments: --bogus"),
        (["completion", "--json", "tcsh"], "argument shell: invalid choice: 'tcsh'"),
    ],
)
def test_own_commands_answer_a_usage_error_in_json(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    error = json.loads(out)["error"]
    assert error["code"] == "usage" and error["message"].startswith(message)
    assert "usage: memhubd" in err


@pytest.mark.parametrize("command", ["map", "query", "types", "check"])
def test_memdsls_commands_print_nothing_on_stdout(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, "--json", "--bogus"])
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "usage: memhubd" in err


def test_json_after_the_separator_is_an_argument(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["lint", "--bogus", "--", "--json"])
    assert capsys.readouterr().out == ""


# Values of no form `--expires` takes (a duration like 30d, or an ISO date/datetime).
BAD_EXPIRIES = ["garbage", "", " ", "yesterday", "5y", "30x", "2027-13-01", "30d\udce9"]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("expires", BAD_EXPIRIES)
def test_token_create_with_an_expiry_of_no_known_form_is_a_usage_error(
    expires: str,
    as_json: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a state directory that does not exist yet
    monkeypatch.setenv("MEMHUB_STATE_DIR", str(tmp_path / "env-state"))
    state = tmp_path / "state"
    # When a token is asked for with an expiry of no form it takes
    argv = ["token", "create", "ci", "--scopes", "all", "--expires", expires]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--state-dir", str(state), *(["--json"] if as_json else [])])
    # Then it is argparse's usage error naming the option and the forms it takes
    assert stop.value.code == 2
    out, err = capsys.readouterr()
    told = "argument --expires: expected a duration like 30d, 12h or 90m, or an ISO date"
    assert "usage: memhubd token create" in err and "Traceback" not in err
    assert f"memhubd token create: error: {told}" in err
    if as_json:  # and with --json the usage envelope, alone
        error = json.loads(out)["error"]
        assert error["code"] == "usage" and error["message"].startswith(told)
    else:
        assert out == ""
    # And nothing is created, written or audited
    assert not state.exists() and not (tmp_path / "env-state").exists()


def test_token_create_with_a_past_expiry_is_still_the_stores_refusal_and_audited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    code = main(["token", "create", "ci", "--scopes", "all", "--expires", "2001-01-01",
                 "--state-dir", str(state), "--json"])  # fmt: skip
    assert code == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "invalid"
    audit = (state / "audit" / "admin.jsonl").read_text().splitlines()
    assert [json.loads(line)["outcome"] for line in audit] == ["refused"]
    assert not (state / "tokens.json").exists()
