"""Where a served run's hovers wait: timestamps of each hover at every stage, 1 connection
against N, on one served run whose code is patched (wrapped, not changed) to note them.

Run by hand (not in CI): ``uv run python contrib/mcp-bridge/benchmarks/serve_trace.py
PATH/TO/click [N] [HOVERS]``. The served run is ``tether serve`` started through this file
(``--serve``), which wraps before it starts:

- ``received``: the session read the request's line off the socket (``_Session.dispatch``);
- ``started``: the call's task began (``_Session.serve``);
- ``sync_in`` / ``locked`` / ``refreshed`` / ``synced``: the query's document sync was asked
  for, took the documents' lock, finished the shared refresh, let the lock go;
- ``written``: the hover request was written to the language server (``RpcConnection``);
- ``read``: its answer was read by the connection's reader (``PendingRequests.resolve``);
- ``resumed``: the waiting call ran again (the request returned);
- ``answered``: the reply line was queued for the socket (``_Session.write``);
- ``sent``: the reply line was written to the socket (``_SocketOut.pump``);

and the client's own ``asked`` (before its request line was sent) and ``got`` (its reply line
parsed). All are ``time.perf_counter()`` (``CLOCK_MONOTONIC``: one clock for both processes).
It prints, for 1 connection and for N, the median and p90 of each stage's share of a hover,
and how many other hovers were between ``written`` and ``read`` at once (the server's
concurrency), and the time the documents' lock was held per hover.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

STAGES = [
    "asked",
    "received",
    "started",
    "sync_in",
    "locked",
    "refreshed",
    "synced",
    "written",
    "read",
    "resumed",
    "answered",
    "sent",
    "got",
]


# --- the served side (run with --serve) -------------------------------------------------------

_key: contextvars.ContextVar[tuple[int, Any] | None] = contextvars.ContextVar(
    "trace_key", default=None
)
_records: dict[tuple[int, Any], dict[str, float]] = {}
_by_rpc_id: dict[tuple[int, int], tuple[int, Any]] = {}


def _note(key: tuple[int, Any] | None, stage: str) -> None:
    if key is not None:
        _records.setdefault(key, {})[stage] = time.perf_counter()


def _patch() -> None:
    _patch_session()
    _patch_sync()
    _patch_rpc()


def _patch_session() -> None:
    """received, started, answered, sent: the session protocol's side."""
    from tether.cli import session as session_mod
    from tether.cli.serve import _SocketOut

    session_cls = session_mod._Session
    dispatch, serve, write = session_cls.dispatch, session_cls.serve, session_cls.write

    def traced_dispatch(self: Any, line: Any, tg: Any) -> None:
        now = time.perf_counter()
        try:
            request_id = json.loads(line).get("id")
        except (ValueError, AttributeError):
            request_id = None
        if request_id is not None:
            _records.setdefault((id(self.out), request_id), {})["received"] = now
        dispatch(self, line, tg)

    async def traced_serve(self: Any, request_id: Any, *args: Any) -> None:
        key = (id(self.out), request_id)
        _note(key, "started")
        _key.set(key)
        await serve(self, request_id, *args)

    def traced_write(self: Any, obj: Any) -> None:
        if isinstance(obj, dict) and "id" in obj:
            _note((id(self.out), obj["id"]), "answered")
        write(self, obj)

    session_cls.dispatch, session_cls.serve = traced_dispatch, traced_serve  # type: ignore[method-assign]
    session_cls.write = traced_write  # type: ignore[method-assign]

    async def traced_pump(self: Any, stream: Any) -> None:
        async with self._receive:
            async for line in self._receive:
                try:
                    await stream.send(line.encode("utf-8"))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return
                if line.startswith('{"id": '):
                    request_id = json.loads(line).get("id")
                    _note((id(self), request_id), "sent")

    _SocketOut.pump = traced_pump  # type: ignore[method-assign]


def _patch_sync() -> None:
    """sync_in, locked, refreshed, synced: the query's document sync."""
    from tether_lsp import sync

    sync_for_query = sync.DocumentSync.sync_for_query
    refresh = sync.DocumentSync._refresh

    class NotingLock:
        """The documents' lock, noting when the current hover took it."""

        def __init__(self, lock: anyio.Lock) -> None:
            self.lock = lock

        async def __aenter__(self) -> None:
            await self.lock.acquire()
            _note(_key.get(), "locked")

        async def __aexit__(self, *exc: object) -> None:
            self.lock.release()

        def locked(self) -> bool:
            return self.lock.locked()

    init = sync.DocumentSync.__init__

    def traced_init(self: Any, client: Any) -> None:
        init(self, client)
        self.lock = NotingLock(self.lock)

    async def traced_sync_for_query(self: Any, path: Path) -> Any:
        _note(_key.get(), "sync_in")
        try:
            return await sync_for_query(self, path)
        finally:
            _note(_key.get(), "synced")

    sync.DocumentSync.__init__ = traced_init  # type: ignore[method-assign]

    async def traced_refresh(self: Any) -> bool:
        try:
            return await refresh(self)
        finally:
            _note(_key.get(), "refreshed")

    sync.DocumentSync.sync_for_query = traced_sync_for_query  # type: ignore[method-assign]
    sync.DocumentSync._refresh = traced_refresh  # type: ignore[method-assign]


def _patch_rpc() -> None:
    """written, read, resumed: the request to the language server."""
    from tether.wire.framing import PendingRequests
    from tether_lsp import rpc

    send_request, request = rpc.RpcConnection._send_request, rpc.RpcConnection.request

    async def traced_send_request(self: Any, method: str, params: Any) -> int:
        request_id = await send_request(self, method, params)
        key = _key.get()
        if method == "textDocument/hover" and key is not None:
            _note(key, "written")
            _by_rpc_id[(id(self._pending), request_id)] = key
        return request_id

    async def traced_request(self: Any, method: str, params: Any, **kw: Any) -> Any:
        try:
            return await request(self, method, params, **kw)
        finally:
            if method == "textDocument/hover":
                _note(_key.get(), "resumed")

    rpc.RpcConnection._send_request = traced_send_request  # type: ignore[method-assign]
    rpc.RpcConnection.request = traced_request  # type: ignore[method-assign]

    resolve = PendingRequests.resolve

    def traced_resolve(self: Any, request_id: Any, message: Any) -> bool:
        key = _by_rpc_id.pop((id(self), request_id), None)
        _note(key, "read")
        return resolve(self, request_id, message)

    PendingRequests.resolve = traced_resolve  # type: ignore[method-assign]


def _serve_traced(out: str, argv: list[str]) -> int:
    import signal

    _patch()
    from tether.cli import main

    def dump(*_: Any) -> None:
        rows = [{"conn": k[0], "id": k[1], **v} for k, v in _records.items()]
        Path(out + ".tmp").write_text(json.dumps(rows))
        os.replace(out + ".tmp", out)

    signal.signal(signal.SIGUSR1, dump)
    return main(argv)


# --- the clients -------------------------------------------------------------------------------

_id_bases = iter(range(1_000_000, 1 << 40, 1_000_000))


async def _clients(sock: Path, n: int, hovers: int) -> list[dict[str, float]]:
    """``n`` connections (half plan), each one hover at a time; per hover asked/got times and
    its (connection index, request id)."""
    from serve import Conn

    conns = [await Conn.open(sock, "plan" if i % 2 else "default") for i in range(n)]
    for index, conn in enumerate(conns):  # ids unique over the whole trace
        conn.ids = next(_id_bases) + index * 100_000
    rows: list[dict[str, Any]] = []

    async def run(index: int, conn: Conn) -> None:
        for _ in range(hovers):
            asked = time.perf_counter()
            elapsed, reply = await conn.hover()
            assert not reply["is_error"], reply
            rows.append({"client": index, "id": conn.ids, "asked": asked, "got": asked + elapsed})

    async with anyio.create_task_group() as tg:
        for index, conn in enumerate(conns):
            tg.start_soon(run, index, conn)
    for conn in conns:
        await conn.stream.aclose()
    return rows


def _joined(
    client_rows: list[dict[str, Any]], served: list[dict[str, Any]]
) -> list[dict[str, float]]:
    """Each client hover with the served run's stages of the same request (its id is unique
    over the trace)."""
    by_id = {row["id"]: row for row in served}
    return [
        {**by_id[row["id"]], "asked": row["asked"], "got": row["got"], "part": row["part"]}
        for row in client_rows
        if row["id"] in by_id
    ]


def _report(label: str, hovers: list[dict[str, float]]) -> None:
    for hover in hovers:
        if "sync_in" in hover and "locked" not in hover:  # refreshed on the loop, no lock
            hover["locked"] = hover["sync_in"]
            hover["quick"] = 1
        # a query that took another's refresh as its own ran none
        if "locked" in hover and "refreshed" not in hover:
            hover["refreshed"] = hover["locked"]
            hover["shared"] = 1
    complete = [h for h in hovers if all(s in h for s in STAGES)]
    total = [h["got"] - h["asked"] for h in complete]
    shared = sum(1 for h in complete if h.get("shared"))
    quick = sum(1 for h in complete if h.get("quick"))
    print(
        f"{label}: {len(complete)} hovers traced ({quick} refreshed without the lock, "
        f"{shared} took a refresh begun after they came as their own), total {_ms(total)}"
    )
    for before, after in itertools.pairwise(STAGES):
        share = [h[after] - h[before] for h in complete]
        print(f"  {before:>9} -> {after:<9} {_ms(share)}")
    spans = [(h["written"], h["read"]) for h in complete]
    overlaps = [sum(1 for a, b in spans if a < end and b > start) - 1 for start, end in spans]
    print(f"  other hovers at the server at once (written..read overlapping): {_stats(overlaps)}")
    held = [h["synced"] - h["locked"] for h in complete]
    wall = 0.0
    for part in {h["part"] for h in complete}:  # each alternated half's own wall time
        mine = [h for h in complete if h["part"] == part]
        wall += max(h["got"] for h in mine) - min(h["asked"] for h in mine)
    print(
        f"  documents' lock held per hover: {_ms(held)}; held {sum(held) / wall:.0%} of the "
        "phase's wall time"
    )


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(values) * 1000:7.2f} ms (p90 {p90 * 1000:6.2f})"


def _stats(values: list[int]) -> str:
    ordered = sorted(values)
    return f"median {statistics.median(ordered):.1f}, max {ordered[-1]}" if ordered else "-"


def main() -> None:
    if sys.argv[1] == "--serve":
        sys.exit(_serve_traced(sys.argv[2], sys.argv[3:]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from serve import warm_up

    click = Path(sys.argv[1]).resolve()
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    hovers = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    runtime = Path(tempfile.mkdtemp(prefix="tether-rt-"))
    runtime.chmod(0o700)
    out = runtime / "trace.json"
    env = {**os.environ, "TETHER_RUNTIME_DIR": str(runtime)}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(out), "serve", "--workdir", str(click)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        sock = Path(json.loads(proc.stdout.readline())["socket"])
        anyio.run(warm_up, sock)
        anyio.run(_clients, sock, n, 5)
        print(f"load {os.getloadavg()[0]:.1f} (2 cores)")
        phases: dict[int, list[dict[str, Any]]] = {1: [], n: []}
        for half in range(2):  # alternated halves, as serve.py's rounds
            for k in phases:
                rows = anyio.run(_clients, sock, k, hovers * n // k // 2)
                phases[k] += [{**row, "part": half} for row in rows]
        proc.send_signal(10)  # SIGUSR1: the served side writes its records
        for _ in range(100):
            if out.exists():
                break
            time.sleep(0.1)
        time.sleep(0.5)
        served = json.loads(out.read_text())
        for k, rows in phases.items():
            _report(f"{k} connection{'s' if k > 1 else ''}", _joined(rows, served))
        print(f"load {os.getloadavg()[0]:.1f}")
    finally:
        proc.terminate()
        proc.wait(60)


if __name__ == "__main__":
    main()
