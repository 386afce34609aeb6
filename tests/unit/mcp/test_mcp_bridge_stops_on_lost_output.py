"""The stdio bridge stops when a reply cannot be written: it reads no more of stdin,
sends nothing more to the daemon, and raises the write's error for memctl to report;
it never reports it as an internal error and carries on."""

from __future__ import annotations

import errno
import io
import os
import threading

import pytest

from memctl.mcp_bridge import run_bridge

URL = "http://127.0.0.1:1"  # never reached: a line that is not JSON is answered here
NOT_JSON = b"{nope\n"


class LostOutput(io.RawIOBase):
    """A stdout whose every write fails with `error`, counting the attempts."""

    def __init__(self, error: OSError) -> None:
        self.error = error
        self.attempts = 0

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        self.attempts += 1
        raise self.error


@pytest.mark.parametrize(
    "error",
    [BrokenPipeError(errno.EPIPE, "Broken pipe"), OSError(errno.ENOSPC, "No space left")],
    ids=["reader gone", "disk full"],
)
def test_a_lost_output_ends_the_relay_and_raises_its_error(error: OSError) -> None:
    stdout, stderr = LostOutput(error), io.StringIO()
    stdin = io.BytesIO(NOT_JSON * 50)
    with pytest.raises(type(error)):
        run_bridge(URL, None, stdin=stdin, stdout=stdout, stderr=stderr)  # type: ignore[arg-type]
    assert stdout.attempts < 50  # the lines after the failure were not relayed
    assert "internal error" not in stderr.getvalue()


def test_a_lost_output_ends_the_relay_while_stdin_stays_open() -> None:
    reader, writer = os.pipe()
    stdout, stderr = LostOutput(BrokenPipeError(errno.EPIPE, "Broken pipe")), io.StringIO()
    outcome: list[BaseException | int] = []

    def relay() -> None:
        with open(reader, "rb", buffering=0) as stdin:
            try:
                code = run_bridge(URL, None, stdin=stdin, stdout=stdout, stderr=stderr)  # type: ignore[arg-type]
                outcome.append(code)
            except BaseException as raised:  # noqa: BLE001 - the outcome is the test's
                outcome.append(raised)

    thread = threading.Thread(target=relay, daemon=True)
    thread.start()
    try:
        os.write(writer, NOT_JSON)
        thread.join(timeout=20)
        assert not thread.is_alive(), "the bridge kept reading stdin after its output was lost"
    finally:
        os.close(writer)  # lets a bridge still reading see the end of its input
        thread.join(timeout=20)
    assert len(outcome) == 1 and isinstance(outcome[0], BrokenPipeError)
    assert stderr.getvalue() == ""
