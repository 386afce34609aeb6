"""Hot reload: edits become visible by generation, broken saves never lose
memory, and readers never see a half-built state."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from tests.integration.conftest import copy_examples, start_daemon

NEW_FACT = """
fact notes.reload_probe_{n} {{
  claim: "Reload probe number {n}."
  evidence {{ source: "test" quote: "probe {n}" }}
}}
"""


def wait_for(predicate, timeout: float = 15.0, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def summary(client, name: str) -> dict:
    return client.get(f"/v1/workspaces/{name}").json()


def ids_of(client, name: str) -> set[str]:
    items = client.get(f"/v1/workspaces/{name}/declarations?include_inactive=true&limit=500")
    return {item["id"] for item in items.json()["items"]}


def test_an_edit_becomes_visible_at_a_new_generation(live_daemon) -> None:
    root = Path(live_daemon.workspaces["writing"])
    with live_daemon.unix() as client:
        before = summary(client, "writing")["generation"]
        (root / "probe.mem").write_text(NEW_FACT.format(n=1), encoding="utf-8")
        after = wait_for(lambda: (s := summary(client, "writing"))["generation"] > before and s)
        assert "fact:notes.reload_probe_1" in ids_of(client, "writing")
        assert after["health"] == "healthy"


def test_an_atomic_rename_save_is_picked_up(live_daemon) -> None:
    root = Path(live_daemon.workspaces["writing"])
    target = root / "voice.mem"
    with live_daemon.unix() as client:
        before = summary(client, "writing")["generation"]
        temporary = root / ".voice.mem.tmp"
        temporary.write_text(
            target.read_text(encoding="utf-8") + NEW_FACT.format(n=2), encoding="utf-8"
        )
        os.replace(temporary, target)
        wait_for(lambda: summary(client, "writing")["generation"] > before)
        assert "fact:notes.reload_probe_2" in ids_of(client, "writing")


def test_a_broken_save_keeps_the_last_good_declarations_and_degrades(live_daemon) -> None:
    root = Path(live_daemon.workspaces["writing"])
    target = root / "voice.mem"
    good = target.read_text(encoding="utf-8")
    with live_daemon.unix() as client:
        served = ids_of(client, "writing")
        target.write_text(good + '\nfact broken {\n  claim: "half a save', encoding="utf-8")
        degraded = wait_for(lambda: (s := summary(client, "writing"))["health"] == "degraded" and s)
        problem = degraded["problems"][0]
        assert problem["kind"] == "parse_error" and problem["file"] == str(target)
        assert problem["message"] == "unterminated string" and problem["line"] > 0
        assert ids_of(client, "writing") == served
        lint = client.get("/v1/workspaces/writing/lint").json()
        assert lint["source_problems"][0]["file"] == str(target)

        target.write_text(good, encoding="utf-8")
        wait_for(lambda: summary(client, "writing")["health"] == "healthy")
        assert ids_of(client, "writing") == served


def test_a_deleted_and_recreated_directory_keeps_serving_then_reloads(live_daemon) -> None:
    root = Path(live_daemon.workspaces["writing"])
    backup = root.parent / "writing-backup"
    shutil.copytree(root, backup)
    with live_daemon.unix() as client:
        served = ids_of(client, "writing")
        shutil.rmtree(root)
        wait_for(lambda: summary(client, "writing")["health"] == "degraded")
        assert ids_of(client, "writing") == served
        shutil.copytree(backup, root)
        (root / "probe.mem").write_text(NEW_FACT.format(n=3), encoding="utf-8")
        wait_for(lambda: "fact:notes.reload_probe_3" in ids_of(client, "writing"), timeout=30)
        wait_for(lambda: summary(client, "writing")["health"] == "healthy")


def test_readers_during_a_reload_storm_see_whole_generations(tmp_path: Path) -> None:
    # Each generation adds exactly one declaration to a file the storm rewrites,
    # so a consistent answer has generation-dependent, gap-free probe ids.
    workspaces = copy_examples(tmp_path / "ws", ["writing"])
    root = Path(workspaces["writing"])
    storm = root / "storm.mem"
    storm.write_text("", encoding="utf-8")
    with start_daemon(tmp_path, workspaces) as daemon:
        stop = threading.Event()
        failures: list[str] = []

        def read() -> None:
            with daemon.unix() as client:
                while not stop.is_set():
                    ids = ids_of(client, "writing")
                    probes = sorted(int(i.rsplit("_", 1)[1]) for i in ids if "reload_probe_" in i)
                    if probes != list(range(1, len(probes) + 1)):
                        failures.append(f"inconsistent probes {probes}")

        readers = [threading.Thread(target=read) for _ in range(3)]
        for reader in readers:
            reader.start()
        text = ""
        for n in range(1, 31):
            text += NEW_FACT.format(n=n)
            temporary = root / ".storm.tmp"
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, storm)
            time.sleep(0.02)
        with daemon.unix() as client:
            wait_for(lambda: "fact:notes.reload_probe_30" in ids_of(client, "writing"))
        stop.set()
        for reader in readers:
            reader.join()
        assert failures == []


def test_a_broken_schema_keeps_the_last_good_types_until_it_is_fixed(live_daemon) -> None:
    root = Path(live_daemon.workspaces["team-coding"])
    schema = root / "teamcode.memschema.json"
    good = schema.read_text(encoding="utf-8")
    with live_daemon.unix() as client:
        served = ids_of(client, "team-coding")
        types_before = client.get("/v1/workspaces/team-coding/types").json()["types"]
        schema.write_text(good.replace("{", "{{", 1), encoding="utf-8")
        degraded = wait_for(
            lambda: (s := summary(client, "team-coding"))["health"] == "degraded" and s
        )
        assert degraded["problems"][0]["kind"] == "schema_error"
        assert ids_of(client, "team-coding") == served
        assert client.get("/v1/workspaces/team-coding/types").json()["types"] == types_before
        schema.write_text(good, encoding="utf-8")
        wait_for(lambda: summary(client, "team-coding")["health"] == "healthy")
        assert ids_of(client, "team-coding") == served
