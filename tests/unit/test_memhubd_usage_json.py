"""memhubd's usage errors with `--json`: memhub's own commands put the error envelope
on stdout beside argparse's lines on stderr; memdsl's commands print nothing on stdout,
as memdsl does."""

from __future__ import annotations

import json

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
