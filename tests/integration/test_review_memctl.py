"""memctl's review commands against a real daemon: propose, review list/show/diff/approve/
reject, `--json` on each, and exit codes 0 (done), 1 (refused) and 2 (unreachable)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
NATS = """fact tidewater.uses_nats {
  subject: Service.Tidewater
  claim: "Tidewater publishes shipment events to NATS JetStream."
  evidence { source: "chat" quote: "we publish to jetstream now" }
}
"""


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MEMHUB_URL", "MEMHUB_TOKEN", "MEMHUB_WORKSPACE", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("review-memctl")
    with start_daemon(root, copy_examples(root / "ws", [WS])) as live:
        live.add_token("agent-build", "write:candidate,read:summary")
        live.add_token("alice", "review,read:summary", roles=["*"])
        yield live


def memctl(
    daemon: LiveDaemon, token: str, *argv: str, stdin: str | None = None
) -> tuple[int, str, str]:
    secret = daemon.tokens[token]
    command = [sys.executable, "-m", "memctl", "--url", daemon.url, "--token", secret, "-w", WS]
    result = subprocess.run(
        [*command, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    return result.returncode, result.stdout, result.stderr


def proposal_id_of(out: str) -> str:
    return out.split()[1]


def test_propose_from_a_file_then_approve_reports_the_serving_generation(
    daemon: LiveDaemon, tmp_path: Path
) -> None:
    source = tmp_path / "nats.mem"
    source.write_text(NATS)

    code, out, err = memctl(daemon, "agent-build", "propose", str(source), "--reason", "chat")
    assert code == 0, err
    assert out.startswith("proposal p-") and "pending review: fact:tidewater.uses_nats" in out
    proposal_id = proposal_id_of(out)

    code, out, err = memctl(
        daemon, "alice", "review", "approve", proposal_id, "--into", "tools.mem"
    )
    assert code == 0, err
    assert out.startswith(f"approved {proposal_id}: fact:tidewater.uses_nats into tools.mem")
    assert "by alice; served at generation " in out
    assert (
        "# approved from proposal " + proposal_id
        in Path(daemon.workspaces[WS], "tools.mem").read_text()
    )


def test_propose_reads_stdin_and_states_what_it_supersedes(daemon: LiveDaemon) -> None:
    source = (
        "decision queue.kafka {\n  subject: Service.Tidewater\n"
        '  decision: "Move the shipment event queue to Kafka."\n'
        '  supersedes: "decision:queue.nats_jetstream"\n'
        '  evidence { source: "adr/0012.md" quote: "Kafka replays per tenant." }\n}\n'
    )
    code, out, err = memctl(
        daemon,
        "agent-build",
        "propose",
        "--supersedes",
        "decision:queue.nats_jetstream",
        "--json",
        stdin=source,
    )
    assert code == 0, err
    answer = json.loads(out)
    assert answer["status"] == "pending_review"
    assert answer["proposal"]["supersedes"] == "decision:queue.nats_jetstream"
    assert answer["proposal"]["client"] == "memctl"


def test_review_list_show_and_diff(daemon: LiveDaemon) -> None:
    source = NATS.replace("tidewater.uses_nats", "tidewater.listed")
    _code, out, _err = memctl(daemon, "agent-build", "propose", "-", stdin=source)
    proposal_id = proposal_id_of(out)

    code, listed, _ = memctl(daemon, "alice", "review", "list")
    assert code == 0
    assert any(
        line.startswith(proposal_id) and "fact:tidewater.listed" in line
        for line in listed.splitlines()
    )
    code, shown, _ = memctl(daemon, "alice", "review", "show", proposal_id, "--into", "bugs.mem")
    assert code == 0
    assert f"id: {proposal_id}" in shown and "proposer: agent-build" in shown
    assert "fact tidewater.listed {" in shown
    assert "validation against the workspace now: ok" in shown
    assert "+# approved from proposal " + proposal_id in shown
    code, diff, _ = memctl(daemon, "alice", "review", "diff", proposal_id, "--into", "bugs.mem")
    assert code == 0
    assert diff.startswith("--- a/bugs.mem\n+++ b/bugs.mem\n")
    assert "+fact tidewater.listed {" in diff
    code, as_json, _ = memctl(daemon, "alice", "review", "list", "--status", "all", "--json")
    assert code == 0 and proposal_id in {p["id"] for p in json.loads(as_json)["proposals"]}


def test_review_list_pages_with_limit_and_offset(daemon: LiveDaemon) -> None:
    # given three new proposals at the end of the queue
    for n in range(3):
        source = NATS.replace("tidewater.uses_nats", f"tidewater.paged_{n}")
        assert memctl(daemon, "agent-build", "propose", "-", stdin=source)[0] == 0
    code, as_json, _ = memctl(daemon, "alice", "review", "list", "--status", "all", "--json")
    assert code == 0
    ids = [p["id"] for p in json.loads(as_json)["proposals"]]
    total = len(ids)

    # when a page is asked for
    code, page, _ = memctl(
        daemon, "alice", "review", "list", "--status", "all", "--limit", "1",
        "--offset", str(total - 3),
    )  # fmt: skip
    code_last, last, _ = memctl(
        daemon, "alice", "review", "list", "--status", "all", "--offset", str(total - 1)
    )
    code_bad, _out, bad = memctl(daemon, "alice", "review", "list", "--offset", "-1")

    # then it shows that slice, where it is, and how to read on
    assert (code, code_last) == (0, 0)
    assert [line.split()[0] for line in page.splitlines()[1:2]] == [ids[-3]]
    assert page.rstrip().endswith(
        f"1 proposal(s) ({total - 2}-{total - 2} of {total}); the next with --offset {total - 2}"
    )
    assert ids[-1] in last and ids[-2] not in last
    assert last.rstrip().endswith(f"1 proposal(s) ({total}-{total} of {total})")
    assert code_bad == 2 and "--offset" in bad


def test_reject_records_the_reason(daemon: LiveDaemon) -> None:
    source = NATS.replace("tidewater.uses_nats", "tidewater.rejected")
    _code, out, _err = memctl(daemon, "agent-build", "propose", "-", stdin=source)
    proposal_id = proposal_id_of(out)

    code, out, _ = memctl(daemon, "alice", "review", "reject", proposal_id, "--reason", "hearsay")

    assert (code, out) == (0, f"rejected {proposal_id} by alice\n")
    code, out, _ = memctl(daemon, "alice", "review", "show", proposal_id, "--json")
    assert json.loads(out)["proposal"]["reject_reason"] == "hearsay"


def test_refused_proposal_exits_1_and_lists_every_error(daemon: LiveDaemon) -> None:
    # given an active fact with neither a known subject nor evidence
    source = 'fact lonely.claim {\n  subject: Nobody.Known\n  claim: "x"\n}\n'

    code, out, err = memctl(daemon, "agent-build", "propose", "-", stdin=source)

    assert (code, out) == (1, "")
    first, *more = err.splitlines()
    assert first.startswith("memctl: invalid: ")
    assert first.startswith("memctl: invalid: missing_evidence: active fact 'lonely.claim'")
    assert more == [
        "  error[unresolved_symbol] line 1: subject 'Nobody.Known' is not a declared symbol"
    ]


def test_decisions_need_the_review_scope_and_refusals_exit_1(daemon: LiveDaemon) -> None:
    _code, out, _err = memctl(
        daemon, "agent-build", "propose", "-", stdin=NATS.replace("uses_nats", "scoped")
    )
    proposal_id = proposal_id_of(out)

    code, _, err = memctl(
        daemon, "agent-build", "review", "approve", proposal_id, "--into", "x.mem"
    )
    assert code == 1 and err.startswith("memctl: forbidden: scope 'review' is required")
    code, out, err = memctl(
        daemon, "alice", "review", "approve", proposal_id, "--into", "../x.mem", "--json"
    )
    assert code == 1 and json.loads(out)["error"]["code"] == "invalid"
    code, _, err = memctl(daemon, "alice", "review", "show", "p-20260101-000000-abcdef")
    assert code == 1 and err.startswith("memctl: not_found: ")


def test_an_approval_during_a_stopped_git_merge_says_what_to_do(daemon: LiveDaemon) -> None:
    _code, out, _err = memctl(
        daemon, "agent-build", "propose", "-", stdin=NATS.replace("uses_nats", "mid_merge")
    )
    proposal_id = proposal_id_of(out)
    git_dir = Path(daemon.workspaces[WS]) / ".git"
    git_dir.mkdir(exist_ok=True)
    (git_dir / "MERGE_HEAD").write_text("0" * 40 + "\n")
    try:
        code, _, err = memctl(
            daemon, "alice", "review", "approve", proposal_id, "--into", "decisions.mem"
        )
    finally:
        (git_dir / "MERGE_HEAD").unlink()

    assert code == 1 and err.startswith("memctl: conflict: git_operation_in_progress: ")
    assert "git merge --continue" in err and "git merge --abort" in err
    code, _, _ = memctl(
        daemon, "alice", "review", "approve", proposal_id, "--into", "decisions.mem"
    )
    assert code == 0


def test_an_unreachable_daemon_exits_2(daemon: LiveDaemon, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memctl", "--url", f"unix://{tmp_path}/none.sock", "review", "list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("memctl: cannot reach memhubd at ")


HEADER_VERSIONING = """decision api.version_in_header_v2 {
  subject: Service.Tidewater
  decision: "Version the public API with a media type parameter, not a custom header."
  supersedes: "decision:api.version_in_header"
  evidence { source: "chat/#harbor-api" quote: "use the media type, not Accept-Version" }
}
"""


def test_a_correction_is_approved_where_suggested_and_marks_what_it_supersedes(
    daemon: LiveDaemon,
) -> None:
    code, out, err = memctl(
        daemon,
        "agent-build",
        "propose",
        "--supersedes",
        "decision:api.version_in_header",
        stdin=HEADER_VERSIONING,
    )
    assert code == 0, err
    proposal_id = proposal_id_of(out)
    assert out.endswith(f"memctl -w {WS} review approve {proposal_id} --into decisions.mem\n")

    # Without --into nothing is written; the reviewer is told which file fits.
    code, out, err = memctl(daemon, "alice", "review", "approve", proposal_id)
    assert (code, out) == (2, "")
    assert "--into decisions.mem" in err

    code, out, err = memctl(
        daemon, "alice", "review", "approve", proposal_id, "--into", "decisions.mem"
    )
    assert code == 0, err
    assert out.strip().endswith("marked superseded: decision:api.version_in_header")

    code, out, err = memctl(daemon, "alice", "--json", "lint")
    assert "unmarked_supersede_status" not in out, out
    code, out, _ = memctl(daemon, "alice", "--json", "list", "--all", "--type", "decision")
    statuses = {d["id"]: d["status"] for d in json.loads(out)["items"]}
    assert statuses["decision:api.version_in_header"] == "superseded"
    assert statuses["decision:api.version_in_header_v2"] == "active"


def test_review_show_names_the_suggested_target(daemon: LiveDaemon, tmp_path: Path) -> None:
    source = tmp_path / "nats2.mem"
    source.write_text(NATS.replace("tidewater.uses_nats", "tidewater.uses_nats_too"))
    code, out, err = memctl(daemon, "agent-build", "propose", str(source))
    assert code == 0, err

    code, out, err = memctl(daemon, "alice", "review", "show", proposal_id_of(out))
    assert code == 0, err
    assert "suggested target: --into " in out


SANDBOX_KEY_FIX = """teamcode.bug_pattern payments.sandbox_key_in_logs_v2 {
  subject: Service.Ledger
  scope: component("billing")
  claim: "The payment SDK no longer logs the sandbox key since version 4."
  fix: "Upgrade the SDK to version 4."
  relations { supersedes: "teamcode.bug_pattern:payments.sandbox_key_in_logs" }
  evidence { source: "chat/#payments" quote: "v4 stopped logging the key" }
}
"""


def test_superseding_a_declaration_hidden_from_the_reviewer_waits_for_one_who_reads_it(
    daemon: LiveDaemon,
) -> None:
    daemon.add_token("maintainer-bot", "write:candidate,read:summary", roles=["maintainer"])
    daemon.add_token("dev-reviewer", "review,read:summary", roles=["developer"])
    daemon.add_token("maintainer-reviewer", "review,read:summary", roles=["maintainer"])
    code, out, err = memctl(daemon, "maintainer-bot", "propose", stdin=SANDBOX_KEY_FIX)
    assert code == 0, err
    proposal = proposal_id_of(out)
    bugs = Path(daemon.workspaces[WS]) / "bugs.mem"
    before = bugs.read_text()

    # A reviewer who cannot read the superseded declaration cannot approve it, and is
    # not told what it holds
    code, out, err = memctl(
        daemon, "dev-reviewer", "--json", "review", "approve", proposal, "--into", "bugs.mem"
    )
    assert code == 1, (out, err)
    refused = json.loads(out)["error"]
    assert refused["detail"]["errors"][0]["code"] == "supersedes_hidden"
    assert "sandbox key" not in out and "debug level" not in out
    assert bugs.read_text() == before

    # One who reads it approves it; the mark is made and named
    code, out, err = memctl(
        daemon, "maintainer-reviewer", "--json", "review", "approve", proposal, "--into", "bugs.mem"
    )
    assert code == 0, err
    assert json.loads(out)["marked_superseded"] == [
        "teamcode.bug_pattern:payments.sandbox_key_in_logs"
    ]
    assert "payments.sandbox_key_in_logs {\n  status: superseded\n" in bugs.read_text()
