"""Access at the edges: the probes, /metrics and the event stream tell each caller
only what its token allows, and a stream does not outlive its token.

* `/readyz` without a token says ready or not, and names no workspace;
* `/metrics` shows series of the caller's workspaces only, and declaration counts
  only to a caller who sees every declaration;
* an open `/v1/events` stream ends when its token is revoked, and every stream
  ends cleanly (event `closed`) when the daemon stops.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.integration.conftest import copy_examples, start_daemon

WAIT = 30.0  # seconds: an upper bound for a missing event, never an expectation of speed
EOF = ("<eof>", {})


# -- readiness -------------------------------------------------------------------------------


def unavailable_workspace(root: Path) -> str:
    """A workspace that never loads: its manifest is not JSON."""
    root.mkdir()
    (root / "memdsl.json").write_text("{not json")
    return str(root)


def test_readyz_without_a_token_names_no_workspace(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", ["writing"])
    workspaces["secret-project"] = unavailable_workspace(tmp_path / "secret-project")
    with start_daemon(tmp_path, workspaces) as daemon:
        daemon.add_token("writer", "read:summary", workspaces=["writing"])
        with daemon.http() as anonymous:
            bare = anonymous.get("/readyz")
        with daemon.http("mh_unknown_000000000000000000000000") as stranger:
            forged = stranger.get("/readyz")
        with daemon.http(daemon.tokens["writer"]) as writer:
            scoped = writer.get("/readyz").json()
        with daemon.http(daemon.admin_token) as admin:
            full = admin.get("/readyz").json()
    assert bare.status_code == 200 and bare.json() == {"status": "ready"}
    assert forged.json() == {"status": "ready"}
    assert "secret-project" not in bare.text
    assert scoped == {"status": "ready", "loading": [], "unavailable": []}
    assert full["unavailable"] == ["secret-project"]


# -- metrics ---------------------------------------------------------------------------------


def test_metrics_show_only_the_callers_workspaces(shared_daemon: Any) -> None:
    secret = shared_daemon.tokens.get("metrics-writing") or shared_daemon.add_token(
        "metrics-writing", "read:summary", workspaces=["writing"]
    )
    with shared_daemon.http(secret) as client:
        scoped = client.get("/metrics")
    with shared_daemon.http(shared_daemon.admin_token) as client:
        full = client.get("/metrics").text
    assert scoped.status_code == 200
    assert 'memhub_generation{workspace="writing"}' in scoped.text
    others = [name for name in shared_daemon.workspaces if name != "writing"]
    for name in others:
        assert f'workspace="{name}"' not in scoped.text
        assert f'memhub_generation{{workspace="{name}"}}' in full
    # Request counts are by route over every workspace: only one granted them all sees them
    assert "memhub_requests_total" not in scoped.text
    assert "memhub_request_duration_seconds" not in scoped.text
    assert "memhub_requests_total" in full and "memhub_request_duration_seconds" in full


def test_metrics_count_declarations_only_for_a_caller_who_sees_them_all(
    shared_daemon: Any,
) -> None:
    # A count would include declarations the caller's roles hide from it.
    secret = shared_daemon.tokens.get("metrics-roleless") or shared_daemon.add_token(
        "metrics-roleless", "read:summary"
    )
    with shared_daemon.http(secret) as client:
        roleless = client.get("/metrics").text
    with shared_daemon.http(shared_daemon.admin_token) as client:
        full = client.get("/metrics").text
    assert "memhub_declarations" not in roleless
    assert 'memhub_declarations{workspace="team-coding"}' in full


# -- the event stream ------------------------------------------------------------------------


class EventStream:
    """`/v1/events` read in a thread: frames (event name, data) and comments, in order."""

    def __init__(self, client: httpx.Client) -> None:
        self.frames: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self._client = client
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        name, data = "", ""
        try:
            with self._client.stream("GET", "/v1/events") as response:
                for line in response.iter_lines():
                    if line.startswith(":"):
                        self.frames.put(("comment", {"text": line[1:].strip()}))
                    elif line.startswith("event:"):
                        name = line.split(":", 1)[1].strip()
                    elif line.startswith("data:"):
                        data = line.split(":", 1)[1].strip()
                    elif not line and name:
                        self.frames.put((name, json.loads(data)))
                        name, data = "", ""
            self.frames.put(EOF)
        except httpx.HTTPError as error:
            self.frames.put(("<error>", {"error": repr(error)}))

    def next(self, skip_comments: bool = True) -> tuple[str, dict[str, Any]]:
        while True:
            frame = self.frames.get(timeout=WAIT)
            if not (skip_comments and frame[0] == "comment"):
                return frame

    def next_named(self, name: str) -> dict[str, Any]:
        """The data of the next `name` event; earlier events are skipped."""
        while True:
            frame = self.next()
            if frame[0] == name:
                return frame[1]
            assert frame[0] not in ("closed", "<eof>", "<error>"), frame

    def wait_connected(self) -> None:
        assert self.next(skip_comments=False) == ("comment", {"text": "connected"})

    def join(self) -> None:
        self._thread.join(WAIT)


def add_workspace(daemon: Any, name: str, root: Path) -> None:
    root.mkdir()
    with daemon.http(daemon.admin_token) as admin:
        assert admin.post("/v1/workspaces", json={"name": name, "path": str(root)}).is_success


def test_event_stream_ends_when_its_token_is_revoked(live_daemon: Any, tmp_path: Path) -> None:
    secret = live_daemon.add_token("listener", "read:summary")
    with live_daemon.http(secret, timeout=WAIT) as client:
        stream = EventStream(client)
        stream.wait_connected()
        add_workspace(live_daemon, "before", tmp_path / "before")
        assert stream.next_named("workspace_added")["workspace"] == "before"
        assert stream.next_named("reloaded")["workspace"] == "before"  # its first load

        with live_daemon.http(live_daemon.admin_token) as admin:
            assert admin.delete("/v1/tokens/listener").is_success
        add_workspace(live_daemon, "after", tmp_path / "after")

        name, data = stream.next()
        assert name == "closed" and "revoked" in data["reason"]
        assert stream.next() == EOF
        stream.join()


def test_events_carry_an_rfc3339_time_beside_the_unix_time(
    live_daemon: Any, tmp_path: Path
) -> None:
    with live_daemon.http(live_daemon.admin_token, timeout=WAIT) as client:
        stream = EventStream(client)
        stream.wait_connected()
        add_workspace(live_daemon, "timed", tmp_path / "timed")
        data = stream.next_named("workspace_added")
    moment = dt.datetime.fromisoformat(data["time"])
    assert data["time"].endswith("Z") and moment.tzinfo is not None
    assert abs(moment.timestamp() - data["at"]) < 0.001


def test_a_workspace_added_is_announced_before_its_first_load(
    live_daemon: Any, tmp_path: Path
) -> None:
    root = tmp_path / "announced"
    root.mkdir()
    (root / "a.mem").write_text('fact notes.one {\n  text: "one"\n}\n')
    with live_daemon.http(live_daemon.admin_token, timeout=WAIT) as client:
        stream = EventStream(client)
        stream.wait_connected()
        with live_daemon.http(live_daemon.admin_token) as admin:
            added = admin.post("/v1/workspaces", json={"name": "announced", "path": str(root)})
            assert added.is_success, added.text
        names = []
        while "reloaded" not in names:
            name, data = stream.next()
            assert name not in ("closed", "<eof>", "<error>"), (name, data)
            if isinstance(data, dict) and data.get("workspace") == "announced":
                names.append(name)
    assert names[0] == "workspace_added", names


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def errors_logged() -> Iterator[list[logging.LogRecord]]:
    handler = _Errors()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)


def test_stopping_the_daemon_closes_event_streams_without_errors(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", ["writing"])
    with errors_logged() as errors, start_daemon(tmp_path, workspaces) as daemon:
        clients = [daemon.http(daemon.admin_token, timeout=WAIT) for _ in range(2)]
        streams = [EventStream(client) for client in clients]
        for stream in streams:
            stream.wait_connected()
        assert daemon.stop is not None and daemon.thread is not None
        daemon.stop.set()
        daemon.thread.join(WAIT)
        for stream in streams:
            name, data = stream.next()
            assert name == "closed" and "stopping" in data["reason"]
            assert stream.next() == EOF
        for client in clients:
            client.close()
    assert not daemon.errors
    # Before: the streams held the shutdown to its timeout, then were cancelled with
    # CancelledError tracebacks logged at error level.
    assert [record.getMessage() for record in errors] == []


def test_event_streams_are_bounded_per_token_and_in_all(tmp_path: Path) -> None:
    workspaces = copy_examples(tmp_path / "ws", ["writing"])
    limits = {"limits.max_event_streams_per_token": 2, "limits.max_event_streams": 3}
    with start_daemon(tmp_path, workspaces, **limits) as daemon, contextlib.ExitStack() as held:
        other = daemon.add_token("other-listener", "read:summary")

        def open_stream(secret: str) -> httpx.Response:
            client = held.enter_context(daemon.http(secret, timeout=WAIT))
            response = held.enter_context(client.stream("GET", "/v1/events"))
            if response.status_code != 200:
                response.read()  # the refusal's body (a stream stays open, unread)
            return response

        # A token holds at most 2 streams
        first, second = (open_stream(daemon.admin_token) for _ in range(2))
        third = open_stream(daemon.admin_token)
        assert (first.status_code, second.status_code, third.status_code) == (200, 200, 429)
        assert third.json()["error"]["code"] == "too_many"
        # and the daemon 3 in all: another token gets the last one, then no more
        assert open_stream(other).status_code == 200
        refused = open_stream(other)
        assert refused.status_code == 429 and "3 in all" in refused.json()["error"]["message"]
        # A closed stream gives its slot back
        first.close()
        deadline = time.monotonic() + WAIT
        while (again := open_stream(other)).status_code == 429 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert again.status_code == 200
