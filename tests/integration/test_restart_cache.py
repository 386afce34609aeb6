"""A restarted daemon serves from its persisted parse cache: same answers as the first
run, files edited while it was down served as edited, a damaged cache ignored."""

from __future__ import annotations

import marshal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memhubd.auth.tokens import TokenStore
from memhubd.runtime.cache import SNAPSHOT_FORMAT, ParseCache
from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

BENCH = Path(__file__).resolve().parents[2] / "bench"

WS = "team-coding"
EXTRA = (
    '\nfact restart.extra { claim: "Added while the daemon was down: deploy on fridays." '
    'evidence { source: "t" quote: "q" } }\n'
)


def served(daemon: LiveDaemon) -> dict[str, Any]:
    with daemon.http(daemon.admin_token) as client:
        query = client.post(f"/v1/workspaces/{WS}/query", json={"query": "force push main deploy"})
        check = client.post(
            f"/v1/workspaces/{WS}/check",
            json={"task": "push main", "candidate": "git push --force origin main"},
        )
        lint = client.get(f"/v1/workspaces/{WS}/lint")
    assert query.status_code == check.status_code == lint.status_code == 200
    return {"query": query.json(), "check": check.json(), "lint": lint.json()}


# A check's guard regexes share one time budget (limits.regex_timeout_ms); on a loaded
# machine a guard past it is judged needs_review. Comparing two daemons' checks byte for
# byte needs every guard decided, so the workload test gives them a budget it never meets.
UNHURRIED = {"limits.regex_timeout_ms": 60_000}


def restart(workdir: Path, workspaces: dict[str, str], **settings: Any) -> Any:
    """start_daemon again on the same state dir (it registers its own admin token)."""
    TokenStore(workdir / "state").revoke("admin")
    return start_daemon(workdir, workspaces, **settings)


def saved_entries(state: Path, at_least: int) -> list[Path]:
    """The cache is written off the request path: wait until it holds the workspace."""
    deadline = time.monotonic() + 30
    while True:
        found = sorted((state / "parse-cache").glob("*/*.entry"))
        if len(found) >= at_least or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def saved_snapshots(state: Path) -> list[Path]:
    """The consolidated snapshot file is written right after the entries: wait for it."""
    deadline = time.monotonic() + 30
    while not (found := sorted((state / "parse-cache").glob("*/snapshot"))):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return found


def test_a_restart_serves_identical_answers_from_the_cache(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    sources = sorted(Path(workspaces[WS]).rglob("*.mem"))
    with start_daemon(tmp_path, workspaces) as first:
        before = served(first)
        entries = saved_entries(first.state_dir, len(sources))
    assert len(entries) == len(sources)

    with restart(tmp_path, workspaces) as second:
        assert served(second) == before

    # Edited while down: served as edited, the same as a daemon without any cache.
    with sources[0].open("a", encoding="utf-8") as handle:
        handle.write(EXTRA)
    with restart(tmp_path, workspaces) as third:
        after = served(third)
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    with start_daemon(fresh_dir, workspaces) as fresh:
        assert after == served(fresh)
    assert after != before


def test_a_damaged_cache_is_ignored(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    sources = sorted(Path(workspaces[WS]).rglob("*.mem"))
    with start_daemon(tmp_path, workspaces) as first:
        before = served(first)
        entries = saved_entries(first.state_dir, len(sources))
        snapshots = saved_snapshots(first.state_dir)
    assert len(snapshots) == 1
    for entry in entries + snapshots:
        data = bytearray(entry.read_bytes())
        data[-1] ^= 0xFF
        entry.write_bytes(bytes(data))

    with restart(tmp_path, workspaces) as second:
        assert served(second) == before


GUARD = """
boundary restart.no_force_push {
  rule: "Never force push to main after a restart."
  scope: global
  force: hard
  guard {
    deny_any: ["force push to main"]
  }
}
"""


def test_a_stop_saves_what_it_served_so_a_file_broken_while_down_keeps_its_rules(
    tmp_path: Path,
) -> None:
    workspaces = copy_examples(tmp_path / "ws", [WS])
    source = Path(workspaces[WS]) / "rules.mem"
    with start_daemon(tmp_path, workspaces) as first:
        saved_snapshots(first.state_dir)  # the first run's snapshot file is written
        # A rule added while it runs, within the minutes the snapshot file waits
        source.write_text(source.read_text(encoding="utf-8") + GUARD, encoding="utf-8")
        deadline = time.monotonic() + 30
        while "restart.no_force_push" not in str(served(first)["check"]):
            assert time.monotonic() < deadline, "the edit was never served"
            time.sleep(0.2)
    # The file breaks while the daemon is down
    source.write_text(source.read_text(encoding="utf-8") + 'fact broken { claim: "\n')
    with restart(tmp_path, workspaces) as second, second.http(second.admin_token) as client:
        check = client.post(
            f"/v1/workspaces/{WS}/check",
            json={"task": "push", "candidate": "force push to main"},
        ).json()
        status = client.get(f"/v1/workspaces/{WS}").json()
    # Its last good version, the rule added included, is what is served
    assert check["verdict"] == "block", check
    assert "restart.no_force_push" in str(check)
    assert status["health"] == "degraded"


def synthetic_workspace(target: Path) -> tuple[dict[str, str], list[Any], list[Any]]:
    """A small workspace of the benchmarks' generator, with its query and check workload."""
    sys.path.insert(0, str(BENCH))
    try:
        import synth
    finally:
        sys.path.remove(str(BENCH))
    synth.generate(600, 3, target)
    workload = synth.SynthWorkspace(600, 3, target)
    return {"synth": str(target / "workspace")}, workload.queries(), workload.checks()


def workload_answers(daemon: LiveDaemon, queries: list[Any], checks: list[Any]) -> list[bytes]:
    """The bytes of every workload query and check, as the daemon serves them."""
    out = []
    with daemon.http(daemon.admin_token, timeout=60) as client:
        for body in queries:
            answer = client.post("/v1/workspaces/synth/query", json=body)
            assert answer.status_code == 200
            out.append(answer.content)
        for body in checks:
            answer = client.post("/v1/workspaces/synth/check", json=body)
            assert answer.status_code == 200
            out.append(answer.content)
    return out


def restores_of_the_saved_index(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records each composed index a start restores (the daemon runs in this process)."""
    from memhubd.index import persist

    restored: list[int] = []
    restore = persist.restore_index

    def counted(data: Any, segments: Any) -> Any:
        restored.append(1)
        return restore(data, segments)

    monkeypatch.setattr(persist, "restore_index", counted)
    return restored


def test_a_warm_started_daemon_answers_the_workload_as_a_cold_started_one(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspaces, queries, checks = synthetic_workspace(tmp_path / "synth")
    # Given a daemon started without any cache, that saved one
    with start_daemon(tmp_path, workspaces, **UNHURRIED) as cold:
        expected = workload_answers(cold, queries, checks)
        snapshots = saved_snapshots(cold.state_dir)
    assert len(snapshots) == 1
    saved = snapshots[0].read_bytes()

    # When it starts again from that cache (its composed index restored, not composed),
    # it serves every answer byte for byte
    restored = restores_of_the_saved_index(monkeypatch)
    with restart(tmp_path, workspaces, **UNHURRIED) as warm:
        assert workload_answers(warm, queries, checks) == expected
    assert restored == [1]

    # And so it does after a file changed while it was down (the saved index updated),
    # as a daemon started without any cache does
    source = sorted(Path(workspaces["synth"]).rglob("*.mem"))[1]
    with source.open("a", encoding="utf-8") as handle:
        handle.write(EXTRA)
    with restart(tmp_path, workspaces, **UNHURRIED) as edited:
        after_edit = workload_answers(edited, queries, checks)
    assert restored == [1, 1]
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    with start_daemon(fresh_dir, workspaces, **UNHURRIED) as fresh:
        assert after_edit == workload_answers(fresh, queries, checks)
    source.write_text(source.read_text(encoding="utf-8").replace(EXTRA, ""), encoding="utf-8")

    # And a snapshot file it cannot trust is ignored with a log line, answers unchanged
    other = ParseCache(tmp_path / "other-state")  # another daemon's secret
    damaged = {
        "tampered": saved[:-1] + bytes([saved[-1] ^ 1]),
        "foreign": b"".join(other._seal(saved[38:], b"MHSS", SNAPSHOT_FORMAT)),  # noqa: SLF001
        "older format": b"".join(
            ParseCache(tmp_path / "state" / "parse-cache")._seal(  # noqa: SLF001
                marshal.dumps((workspaces["synth"], "types", ())), b"MHSS", SNAPSHOT_FORMAT - 1
            )
        ),
    }
    expected_lines = {
        "tampered": "parse cache snapshot refused (corrupt or foreign)",
        "foreign": "parse cache snapshot refused (corrupt or foreign)",
        "older format": "parse cache snapshot refused (another format version)",
    }
    sample = (queries[:20], checks[:20])
    for kind, data in damaged.items():
        capfd.readouterr()
        caplog.clear()
        snapshots[0].write_bytes(data)
        with restart(tmp_path, workspaces, **UNHURRIED) as again:
            served_again = workload_answers(again, *sample)
            logged = capfd.readouterr()
        first_checks = len(queries)
        assert served_again == expected[:20] + expected[first_checks : first_checks + 20], kind
        # (where the line goes depends on how logging is set up)
        assert expected_lines[kind] in logged.out + logged.err + caplog.text, kind


def saved_view_roles(state: Path) -> list[tuple[str, ...]]:
    """The role sets whose views the snapshot file holds, once it holds any (it is
    written off the request path, after the start's warm step made them)."""
    from memhubd.runtime.cache import read_snapshot_payload

    cache = ParseCache(state / "parse-cache")
    deadline = time.monotonic() + 30
    while True:
        for file in (state / "parse-cache").glob("*/snapshot"):
            payload = cache._open(file.read_bytes(), b"MHSS", SNAPSHOT_FORMAT)  # noqa: SLF001
            views = read_snapshot_payload(payload)[4] if payload is not None else ()
            if views or time.monotonic() > deadline:
                return [view[0] for view in views]
        if time.monotonic() > deadline:
            return []
        time.sleep(0.1)


def test_a_role_limited_tokens_view_is_restored_and_answers_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspaces, queries, checks = synthetic_workspace(tmp_path / "synth")
    # Given a token without roles, stored before the first start: its view is made by
    # the start's warm step and saved with the snapshot file
    _record, agent = TokenStore(tmp_path / "state").create("agent", "all", roles=[])
    with start_daemon(tmp_path, workspaces, **UNHURRIED) as cold:
        cold.admin_token = agent
        expected = workload_answers(cold, queries, checks)
        assert saved_view_roles(cold.state_dir) == [()]

    # When the daemon starts again (a new process: no earlier view of any role set),
    # that view's index is restored, not composed, and the token is answered byte for
    # byte as before
    from collections import OrderedDict

    from memhubd.service import access

    monkeypatch.setattr(access, "_EARLIER", OrderedDict())
    restored = restores_of_the_saved_index(monkeypatch)
    from memhubd.runtime.snapshot import Snapshot

    dropped: list[Snapshot] = []
    drop = Snapshot.drop_saved_views

    def dropping(snapshot: Snapshot) -> None:
        dropped.append(snapshot)
        drop(snapshot)

    monkeypatch.setattr(Snapshot, "drop_saved_views", dropping)
    with restart(tmp_path, workspaces, **UNHURRIED) as warm:
        warm.admin_token = agent
        assert workload_answers(warm, queries, checks) == expected
    assert restored == [1, 1]  # the whole index, then the view's
    # And the start's warm step let go of what it restored the view from
    assert dropped and not dropped[0]._saved_views  # noqa: SLF001
