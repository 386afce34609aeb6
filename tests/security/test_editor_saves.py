"""Attack (careless, not malicious): an editor saves a `.mem` file in steps, and a reader
asks in between.

Each save pattern below rewrites the file holding the MUST rule against force-pushing
main, many times, while a checker polls the declaration list and `/check` throughout.
The checker must never see fewer declarations than the last good state, nor ALLOW for
the blocked action: a missing or empty file keeps its declarations for a grace period,
and bytes still being written are served only once they have settled. A deletion that
lasts is applied once the grace period is over.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LiveDaemon, copy_examples, start_daemon

WS = "team-coding"
BASE = f"/v1/workspaces/{WS}"
RULE = "teamcode.project_rule:git.no_force_push_main"
FORCE_PUSH = {
    "task": "Push the rebased branch to main",
    "candidate": "git push --force origin main",
    "scope": 'repository("tidewater")',
}
# Wider than the defaults (1 s, 100 ms): the writer, the checker and the daemon share one
# process and two cores, so a 20 ms pause in a save may stretch well past 100 ms.
GRACE_MS = 1500
SETTLE_MS = 400
PAUSE_S = 0.02  # between the steps of one save
RUN_S = 3.0  # per save pattern
PROBE = """
fact notes.save_probe_{n} {{
  claim: "Save number {n}."
  evidence {{ source: "test" quote: "save {n}" }}
}}
"""

Save = Callable[[Path, str, random.Random], None]


# --- the save patterns ----------------------------------------------------------------------


def _write_in_steps(handle, text: str, rng: random.Random) -> None:
    """Write `text` in two parts, cut where the first part still parses (fewer rules)."""
    cuts = [0] + [i for i in range(len(text)) if text.startswith("\nteamcode.", i)]
    cut = rng.choice(cuts)
    handle.write(text[:cut].encode())
    handle.flush()
    time.sleep(PAUSE_S)
    handle.write(text[cut:].encode())


def truncate_then_write(path: Path, text: str, rng: random.Random) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.flush()
        time.sleep(PAUSE_S)
        _write_in_steps(handle, text, rng)


def vim_rename_away(path: Path, text: str, rng: random.Random) -> None:
    backup = path.with_name(path.name + "~")
    os.rename(path, backup)
    time.sleep(PAUSE_S)
    with open(path, "wb") as handle:
        _write_in_steps(handle, text, rng)
    os.unlink(backup)


def delete_and_recreate(path: Path, text: str, rng: random.Random) -> None:
    path.unlink()
    time.sleep(PAUSE_S)
    with open(path, "wb") as handle:
        _write_in_steps(handle, text, rng)


def atomic_rename_over(path: Path, text: str, rng: random.Random) -> None:
    temporary = path.with_name(f".{path.name}.{rng.randrange(1 << 30)}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def emacs_style(path: Path, text: str, rng: random.Random) -> None:
    lock = path.with_name(".#" + path.name)
    autosave = path.with_name("#" + path.name + "#")
    backup = path.with_name(path.name + "~")
    os.symlink(f"user@host.{os.getpid()}:1", lock)  # emacs' lock: a link to nowhere
    autosave.write_text(text[: len(text) // 2], encoding="utf-8")
    os.replace(path, backup)  # the first save of a session renames the original away
    time.sleep(PAUSE_S)
    with open(path, "wb") as handle:
        _write_in_steps(handle, text, rng)
    autosave.unlink()
    lock.unlink()


PATTERNS: list[Save] = [
    truncate_then_write,
    vim_rename_away,
    delete_and_recreate,
    atomic_rename_over,
    emacs_style,
]


# --- the checker ----------------------------------------------------------------------------


def declaration_ids(client) -> set[str]:
    response = client.get(f"{BASE}/declarations?include_inactive=true&limit=500")
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()["items"]}


def force_push_verdict(client) -> str:
    response = client.post(f"{BASE}/check", json=FORCE_PUSH)
    assert response.status_code == 200, response.text
    return response.json()["verdict"]


class Checker(threading.Thread):
    """Polls the list and the gate until stopped; records every sample below `floor`."""

    def __init__(self, daemon: LiveDaemon, floor: int) -> None:
        super().__init__(name="save-checker", daemon=True)
        self.live = daemon
        self.floor = floor
        self.stop = threading.Event()
        self.samples = 0
        self.probes_seen: set[str] = set()
        self.failures: list[str] = []

    def run(self) -> None:
        with self.live.unix(self.live.admin_token) as client:
            while not self.stop.is_set():
                try:
                    ids = declaration_ids(client)
                    verdict = force_push_verdict(client)
                except Exception as error:  # reported, never lost in the thread
                    self.failures.append(f"request failed: {error!r}")
                    return
                self.samples += 1
                self.probes_seen.update(i for i in ids if "save_probe_" in i)
                if len(ids) < self.floor or RULE not in ids:
                    self.failures.append(f"served {len(ids)} declarations, last good {self.floor}")
                if verdict != "block":
                    self.failures.append(f"force push got {verdict!r}")


def wait_for(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


# --- tests ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saves_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("saves")
    workspaces = copy_examples(root / "ws", [WS])
    settings = {"watch.vanish_grace_ms": GRACE_MS, "watch.settle_ms": SETTLE_MS}
    with start_daemon(root, workspaces, **settings) as daemon:
        yield daemon


def settle_on(daemon: LiveDaemon, path: Path, text: str, probe: int) -> int:
    """Save `text` with probe `probe` atomically, wait until served; the declaration count."""
    atomic_rename_over(path, text + PROBE.format(n=probe), random.Random(probe))
    with daemon.unix(daemon.admin_token) as client:
        wait_for(lambda: f"fact:notes.save_probe_{probe}" in declaration_ids(client))
        return len(declaration_ids(client))


@pytest.mark.parametrize("save", PATTERNS, ids=lambda save: save.__name__)
def test_no_save_pattern_ever_serves_fewer_declarations_or_allows_a_blocked_action(
    saves_daemon: LiveDaemon, save: Save
) -> None:
    path = Path(saves_daemon.workspaces[WS]) / "rules.mem"
    original = path.read_text(encoding="utf-8").split("\nfact notes.save_probe_")[0]
    floor = settle_on(saves_daemon, path, original, 0)
    rng = random.Random(save.__name__)
    checker = Checker(saves_daemon, floor)
    checker.start()
    n = 0
    try:
        started = time.monotonic()
        while time.monotonic() - started < RUN_S and not checker.failures:
            n += 1
            save(path, original + PROBE.format(n=n), rng)
            if n % 4 == 0:  # now and then let a save settle, so that reloads do happen
                with saves_daemon.unix(saves_daemon.admin_token) as client:
                    probe = f"fact:notes.save_probe_{n}"
                    wait_for(lambda probe=probe: probe in declaration_ids(client))
            else:
                time.sleep(rng.uniform(0, SETTLE_MS / 1000))
        with saves_daemon.unix(saves_daemon.admin_token) as client:
            wait_for(lambda: f"fact:notes.save_probe_{n}" in declaration_ids(client))
    finally:
        checker.stop.set()
        checker.join(10)
    assert checker.failures == []
    assert checker.samples >= 20, "the checker hardly ran"
    assert len(checker.probes_seen) >= 2, "no save was served while the checker ran"


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_file_that_stays_deleted_or_empty_loses_its_declarations_after_the_grace(
    saves_daemon: LiveDaemon, how: str
) -> None:
    path = Path(saves_daemon.workspaces[WS]) / "rules.mem"
    original = path.read_text(encoding="utf-8").split("\nfact notes.save_probe_")[0]
    settle_on(saves_daemon, path, original, 0)
    with saves_daemon.unix(saves_daemon.admin_token) as client:
        if how == "deleted":
            path.unlink()
        else:
            path.write_bytes(b"")
        vanished_at = time.monotonic()
        # Well inside the grace period, the rule still binds.
        time.sleep(0.2)
        still = declaration_ids(client)
        verdict = force_push_verdict(client)
        if time.monotonic() - vanished_at < GRACE_MS / 1000 * 0.8:  # not when the host stalled
            assert RULE in still and verdict == "block"
        wait_for(lambda: RULE not in declaration_ids(client))
        assert time.monotonic() - vanished_at >= GRACE_MS / 1000 * 0.9
        assert force_push_verdict(client) == "allow"
        summary = client.get(BASE).json()
        assert summary["files"] == (4 if how == "deleted" else 5)

        settle_on(saves_daemon, path, original, 1)
        assert force_push_verdict(client) == "block"
