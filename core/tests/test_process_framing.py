"""Child processes (group, stderr tail, tree kill) and Content-Length framing."""

from __future__ import annotations

import sys

import anyio
import pytest

from tether.processes.managed import descendants, is_alive, spawn
from tether.text import TailBuffer, cap, clock, duration, plural, timestamp, truncate
from tether.wire.framing import FramedReader, FramedWriter, FramingError, PendingRequests

pytestmark = pytest.mark.anyio

ECHO_FRAMES = r"""
import sys
data = sys.stdin.buffer
out = sys.stdout.buffer
while True:
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        ch = data.read(1)
        if not ch:
            sys.exit(0)
        header += ch
    n = int(header.split(b":")[1].split(b"\r\n")[0])
    body = data.read(n)
    sys.stderr.write("got %d bytes\n" % n)
    sys.stderr.flush()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()
"""


async def test_framed_round_trip_with_a_real_process():
    async with anyio.create_task_group() as tg:
        proc = await spawn([sys.executable, "-c", ECHO_FRAMES], task_group=tg)
        reader, writer = FramedReader(proc.stdout), FramedWriter(proc.stdin)
        messages = [{"id": i, "text": "é" * i} for i in range(20)]
        for m in messages:
            await writer.write(m)
        assert [await reader.read() for _ in messages] == messages
        big = {"blob": "x" * 300_000}
        await writer.write(big)
        assert await reader.read() == big
        await proc.terminate()
        assert "got" in proc.stderr_tail.text()
        tg.cancel_scope.cancel()


class _Counted:
    """A real stream (a process's stdin), counting the sends made on it."""

    def __init__(self, stream: object) -> None:
        self.stream, self.sends = stream, 0

    async def send(self, item: bytes) -> None:
        self.sends += 1
        await self.stream.send(item)  # type: ignore[attr-defined]


@pytest.mark.parametrize("writers", [2, 8])
async def test_a_free_write_lock_hands_the_frame_over_in_the_writers_first_step(writers):
    """Taking the writer's lock when it is free does not yield: a frame is handed to the stream
    before any other task runs, and writers that came together are not each queued behind one
    trip round the event loop for nothing (a language server's 8 concurrent hovers were)."""
    async with anyio.create_task_group() as tg:
        proc = await spawn([sys.executable, "-c", ECHO_FRAMES], task_group=tg)
        counted = _Counted(proc.stdin)
        writer, reader = FramedWriter(counted), FramedReader(proc.stdout)  # type: ignore[arg-type]
        seen: list[int] = []

        async def look() -> None:  # runs after the writers' first steps
            seen.append(counted.sends)

        async with anyio.create_task_group() as writing:
            for i in range(writers):
                writing.start_soon(writer.write, {"id": i})
            writing.start_soon(look)
        assert seen == [1], seen  # the first writer's frame was handed over at once
        assert sorted(m["id"] for m in [await reader.read() for _ in range(writers)]) == list(
            range(writers)
        )
        await proc.terminate()
        tg.cancel_scope.cancel()


async def test_reader_rejects_garbage():
    send, receive = anyio.create_memory_object_stream[bytes](10)
    from anyio.streams.stapled import StapledObjectStream  # noqa: F401 - documents intent

    class Bytes:
        async def receive(self, max_bytes=65536):
            return await receive.receive()

    await send.send(b"Content-Length: x\r\n\r\n{}")
    with pytest.raises(FramingError, match="bad Content-Length"):
        await FramedReader(Bytes()).read()
    await send.send(b"Content-Length: 2\r\n\r\nno")
    with pytest.raises(FramingError, match="not JSON"):
        await FramedReader(Bytes()).read()


async def test_pending_requests():
    pending = PendingRequests()
    pending.register(1)
    pending.register(2)

    async def answer():
        await anyio.sleep(0.01)
        pending.resolve(1, {"result": "ok"})
        pending.fail_all(ConnectionError("peer died"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer)
        assert await pending.wait(1, 1) == {"result": "ok"}
        with pytest.raises(ConnectionError, match="peer died"):
            await pending.wait(2, 1)
    pending.register(3)
    with pytest.raises(TimeoutError):
        await pending.wait(3, 0.05)
    assert len(pending) == 0


async def test_terminate_kills_the_whole_tree_even_setsid_children():
    async with anyio.create_task_group() as tg:
        proc = await spawn(
            ["sh", "-c", "sleep 300 & setsid sleep 301 & trap '' TERM; sleep 302"],
            task_group=tg,
            stdin=False,
        )
        for _ in range(100):
            if len(descendants(proc.pid)) >= 3:
                break
            await anyio.sleep(0.02)
        tree = descendants(proc.pid) | {proc.pid}
        with anyio.fail_after(5):
            await proc.terminate(grace_s=0.3)  # the shell ignores TERM: SIGKILL after the grace
        assert not [p for p in tree if is_alive(p)]
        tg.cancel_scope.cancel()


async def test_spawn_of_a_missing_program_raises():
    async with anyio.create_task_group() as tg:
        with pytest.raises(FileNotFoundError):
            await spawn(["no-such-program-tether"], task_group=tg)
        tg.cancel_scope.cancel()


def test_tail_buffer_cap_truncate():
    tail = TailBuffer(10)
    tail.write(b"0123456789abc")
    assert tail.text() == "3456789abc" and tail.dropped == 3
    assert tail.render().startswith("[… 3 earlier bytes dropped]")
    tail = TailBuffer(8)
    tail.write("abcd")
    assert tail.since(0) == ("abcd", 0)
    cursor = tail.total
    tail.write("efghijkl")  # 12 written, the first 4 dropped
    assert tail.since(cursor) == ("efghijkl", 0)
    assert tail.since(0) == ("efghijkl", 4)
    assert tail.since(tail.total) == ("", 0)
    shown, note = cap(list(range(312)), 50)
    assert len(shown) == 50 and note == "50 of 312 shown"
    assert cap([1, 2], 50) == ([1, 2], None)
    assert cap(list(range(80)), 50, "workers")[1] == "50 of 80 workers shown"
    assert truncate("abcdef", 3) == "abc… (3 more characters)"


def test_one_wording_for_counts_durations_and_clocks():
    assert [plural(1, "file"), plural(3, "file"), plural(2, "match")] == [
        "1 file",
        "3 files",
        "2 matches",
    ]
    assert plural(2, "child", "children") == "2 children"
    assert [duration(s) for s in (0.42, 3, 12.4, 119, 125, 300, 3780, 7200)] == [
        "0.4 s",
        "3 s",
        "12 s",
        "119 s",
        "2 min 5 s",
        "5 min",
        "1 h 3 min",
        "2 h",
    ]
    assert clock(0) == "00:00:00 UTC"
    # JSON gets ISO 8601, in the same zone, whatever TZ the process runs in
    assert timestamp(1_796_125_389.7) == "2026-12-01T11:43:09+00:00"


async def test_terminate_reaches_the_group_after_its_leader_exited():
    """A leader that started a background job and exited: the job left its tree but not its group."""
    async with anyio.create_task_group() as tg:
        proc = await spawn(
            ["sh", "-c", "sleep 300 & sleep 301 & exit 0"], task_group=tg, stdin=False
        )
        await proc.wait()
        from tether.processes.managed import group_members

        stragglers = group_members(proc.pid)
        assert len(stragglers) == 2
        await proc.terminate(grace_s=0.3)
        assert not [p for p in stragglers if is_alive(p)]
        tg.cancel_scope.cancel()


async def test_pending_request_waited_for_by_several_callers_outlives_the_one_that_leaves():
    """A request several callers wait for stays pending until it is answered or its last
    caller stops waiting: one caller timing out leaves the others their answer."""
    pending = PendingRequests()
    pending.register(7)
    answers: list[object] = []

    async def patient() -> None:
        answers.append(await pending.wait(7, 5))

    async with anyio.create_task_group() as tg:
        tg.start_soon(patient)
        tg.start_soon(patient)
        await anyio.sleep(0.01)
        assert pending.waiting(7) == 2
        with pytest.raises(TimeoutError):
            await pending.wait(7, 0.02)  # a third caller gives up first
        assert 7 in pending and pending.waiting(7) == 2
        pending.register(7)  # registering again keeps the callers' waiter
        assert pending.resolve(7, {"result": "shared"})
    assert answers == [{"result": "shared"}] * 2
    assert 7 not in pending and pending.waiting(7) == 0

    pending.register(8)
    with pytest.raises(TimeoutError):
        await pending.wait(8, 0.01)  # its only caller left: nothing waits for it any more
    assert 8 not in pending
