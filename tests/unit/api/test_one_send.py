"""A response head is held until its body is written, and then both go out in one write;
nothing is ever lost or reordered: a head alone leaves at the end of the loop's step,
a close writes it first, and a long body is not copied to join it."""

from __future__ import annotations

import asyncio

from memhubd.api.connection import OneSendTransport

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"


class Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info:{name}"


def run(steps) -> Recorder:  # noqa: ANN001
    async def main() -> Recorder:
        recorder = Recorder()
        transport = OneSendTransport(recorder, asyncio.get_running_loop())  # type: ignore[arg-type]
        await steps(transport, recorder)
        return recorder

    return asyncio.run(main())


def test_a_head_and_its_body_leave_in_one_write() -> None:
    async def steps(transport: OneSendTransport, recorder: Recorder) -> None:
        transport.write(HEAD)
        transport.write(b"hello")
        await asyncio.sleep(0)

    assert run(steps).writes == [HEAD + b"hello"]


def test_a_head_alone_leaves_at_the_end_of_the_step() -> None:
    async def steps(transport: OneSendTransport, recorder: Recorder) -> None:
        transport.write(HEAD)
        assert recorder.writes == []
        await asyncio.sleep(0)
        assert recorder.writes == [HEAD]
        transport.write(b"later")

    assert run(steps).writes == [HEAD, b"later"]


def test_a_close_writes_the_held_head_first() -> None:
    async def steps(transport: OneSendTransport, recorder: Recorder) -> None:
        transport.write(HEAD)
        transport.close()
        await asyncio.sleep(0)

    recorder = run(steps)
    assert recorder.writes == [HEAD]
    assert recorder.closed


def test_a_long_body_is_written_after_the_head_not_joined() -> None:
    body = b"x" * (OneSendTransport.JOIN_MAX_BYTES + 1)

    async def steps(transport: OneSendTransport, recorder: Recorder) -> None:
        transport.write(HEAD)
        transport.write(body)

    assert run(steps).writes == [HEAD, body]


def test_other_writes_and_calls_pass_through() -> None:
    async def steps(transport: OneSendTransport, recorder: Recorder) -> None:
        transport.write(b"chunk")
        assert recorder.writes == [b"chunk"]
        assert transport.get_extra_info("peername") == "info:peername"
        assert not transport.is_closing()

    run(steps)
