"""A served run (``tether serve``) side by side with what a client would do without it.

Run by hand (not in CI): ``uv run python contrib/mcp-bridge/benchmarks/serve.py PATH/TO/click
[N] [--no-memory]`` (a checkout of pallets/click), or ``... serve.py --astgrep-only [--rounds R]
[--servers S] [--against DIR]`` for the ast_grep part alone (``--against``: another commit's
worktree, e.g. ``git worktree add /tmp/old COMMIT``, served beside this one with its sources
first on ``PYTHONPATH``, every call interleaved). Prints, in one run on one machine:

- ``lsp hover`` on ``echo`` in ``src/click/utils.py``: a warm ``tether call --attach`` end to end
  (a new process each time: the installed ``tether`` command, which makes the call without
  importing the library, and the full command line, ``python -m tether.cli``, as it was before),
  a bare LSP client's warm hover (basedpyright, the same server), and a cold ``tether call`` (a
  fresh run: the server's start included);
- N concurrent connections (half ``plan``, half ``default``) on one run: p50 hover latency
  beside one connection's (rounds of each alternated, so both see the same load), the CPU the
  served run's event loop spends per hover (its main thread's, from ``/proc``), the clients'
  own CPU per hover (all N are tasks of this process), and how many basedpyright processes
  serve them; beside them, a bare LSP client's hovers in the same shape (1 client, and N
  clients each asking its next hover when its last is answered, on one connection; halves
  alternated): what the server alone makes of N concurrent requests; both twice: every client
  asking the same hover (identical queries in flight together share one server request), then
  each its own (the names of the file's first N functions: nothing to share); and each of
  these again with every client pausing 0–40 ms between its hovers (an agent's own time
  between calls, far shorter than a model's), where the closed loop is the worst case: a
  single event loop serves N clients that never pause one after another; and the same closed
  loop with the ``echo`` tool, which does nothing (the floor of any tool);
- memory: the served run's process tree with N connections, against N separate one-run
  processes (``tether session``, one run each, as N ``tether mcp`` are) that each answered a hover;
- ``ast_grep`` on a generated 300-file project (6,000 matches): ``tether call --attach``
  against the ast-grep CLI, R interleaved rounds of: the same call again (warm), a pattern the
  run has not been asked yet (its trees parsed, its matches not), and the CLI; then the first
  call after ``serve`` is ready, on S fresh servers (the rounds begin once the served runs'
  language servers have finished indexing the project: their CPU under 2 % for a second). Wall time (median, p90) and CPU time: the
  calling process's (the ``tether`` command, or the CLI with its threads), and the served run's
  process and its search workers' during the call (not the language servers it starts).

``--no-memory`` skips the N separate runs (N language servers at once: minutes on two cores).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from tether.processes.managed import descendants

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins" / "lsp" / "benchmarks"))
from bench_lsp import BareClient, open_document

HOVER = {"action": "hover", "file": "src/click/utils.py", "line": 252, "symbol": "echo"}
PATTERN = "def $F($$$A): $$$B"
#: an agent's mean time between two calls of its own, for the rows that are not a closed loop
THINK_MS = 20.0
TETHER = [sys.executable, "-m", "tether"]
#: the installed command (its console script), as a shell or a skill runs it
COMMAND = [str(Path(sys.executable).parent / "tether")]
#: the full command line, as the console script was before it made attached calls itself
FULL_CLI = [sys.executable, "-m", "tether.cli"]


def ms(values: list[float], digits: int = 0) -> str:
    median, p90 = statistics.median(values) * 1000, quantile(values, 0.9) * 1000
    return f"{median:.{digits}f} ms (p90 {p90:.{digits}f})"


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def loop_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s main thread (a served run's event loop), from ``/proc``."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_tree(pid: int) -> int:
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def pids_in_tree(pid: int, needle: str) -> set[int]:
    found = set()
    for p in descendants(pid):
        try:
            if needle in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace"):
                found.add(p)
        except OSError:
            continue
    return found


def serve(workdir: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [*TETHER, "serve", "--workdir", str(workdir)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    return proc, Path(json.loads(proc.stdout.readline())["socket"])


def call(
    env: dict[str, str], tool: str, args: dict[str, Any], *flags: str, command: list[str] = TETHER
) -> float:
    started = time.perf_counter()
    out = subprocess.run(
        [*command, "call", tool, json.dumps(args), *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    elapsed = time.perf_counter() - started
    reply = json.loads(out.stdout)
    assert not reply["is_error"], reply
    return elapsed


class Conn:
    def __init__(self, stream: Any, reader: Any) -> None:
        self.stream, self.reader, self.ids = stream, reader, 0

    @classmethod
    async def open(cls, path: Path, surface: str) -> Conn:
        from tether.wire.framing import LineReader

        stream = await anyio.connect_unix(path)
        conn = cls(stream, LineReader(stream, max_line_bytes=1 << 26))
        await stream.send(json.dumps({"attach": {"surface": surface}}).encode() + b"\n")
        await conn.reader.receive_line()
        return conn

    async def hover(
        self, args: dict[str, Any] = HOVER, tool: str = "lsp"
    ) -> tuple[float, dict[str, Any]]:
        self.ids += 1
        started = time.perf_counter()
        request = {"id": self.ids, "tool": tool, "args": args}
        await self.stream.send(json.dumps(request).encode() + b"\n")
        while True:
            reply = json.loads(await self.reader.receive_line())
            if reply.get("id") == self.ids:
                return time.perf_counter() - started, reply


async def warm_up(path: Path) -> None:
    conn = await Conn.open(path, "plan")
    for _ in range(300):
        _, reply = await conn.hover()
        text = reply["content"][0]["text"]
        if not reply["is_error"] and "ask again" not in text and "echo" in text:
            break
        await anyio.sleep(0.5)
    await conn.stream.aclose()


def distinct_hovers(workdir: Path, n: int) -> list[dict[str, Any]]:
    """``n`` different hovers in HOVER's file: the names of its first ``n`` functions, each
    where it is defined."""
    lines = (workdir / str(HOVER["file"])).read_text().splitlines()
    found = [
        {**HOVER, "line": i, "symbol": line.split("def ", 1)[1].split("(", 1)[0]}
        for i, line in enumerate(lines, 1)
        if line.startswith("def ")
    ]
    assert len(found) >= n, found
    return found[:n]


async def clients(
    path: Path,
    n: int,
    rounds: int,
    hovers: list[dict[str, Any]] | None = None,
    think_ms: float = 0.0,
    tool: str = "lsp",
) -> list[float]:
    """``n`` connections, each asking its hover (``hovers[i]``, else all HOVER) ``rounds``
    times, its next when its last is answered — at once, or after a pause drawn between 0 and
    twice ``think_ms`` (an agent's own time between two calls). With ``tool`` "echo", each
    call is the echo tool's instead (``hovers`` then its arguments)."""
    conns = [await Conn.open(path, "plan" if i % 2 else "default") for i in range(n)]
    times: list[float] = []
    pauses = random.Random(n)

    async def run(conn: Conn, args: dict[str, Any]) -> None:
        for _ in range(rounds):
            if think_ms:
                await anyio.sleep(pauses.uniform(0, 2 * think_ms) / 1000)
            elapsed, reply = await conn.hover(args, tool)
            assert not reply["is_error"], reply
            times.append(elapsed)

    async with anyio.create_task_group() as tg:
        for i, conn in enumerate(conns):
            tg.start_soon(run, conn, hovers[i] if hovers else HOVER)
    for conn in conns:
        await conn.stream.aclose()
    return times


@contextlib.asynccontextmanager
async def bare_server(workdir: Path) -> AsyncIterator[BareHovers]:
    """basedpyright through the bare LSP client (:class:`bench_lsp.BareClient`), the hover's
    document open and a first hover answered: the floor a served run's hovers stand on."""
    from tether_lsp import BUILTIN_SERVERS

    spec = next(spec for spec in BUILTIN_SERVERS if spec.id == "basedpyright")
    argv = [shutil.which("basedpyright-langserver") or "basedpyright-langserver", "--stdio"]
    target = workdir / HOVER["file"]
    text = target.read_text()
    line_text = text.splitlines()[HOVER["line"] - 1]
    params = {
        "textDocument": {"uri": target.as_uri()},
        "position": {"line": HOVER["line"] - 1, "character": line_text.index("echo")},
    }
    async with BareClient(argv, workdir, dict(spec.settings)) as client:
        await client.initialize(spec.initialization_options)
        await open_document(client, target.as_uri(), "python", text)
        for _ in range(100):
            if await client.request("textDocument/hover", params):
                break
            await anyio.sleep(0.2)
        hovers = BareHovers(client, params)
        await hovers.run(n=8, rounds=5)  # warmed up as the served runs are
        await hovers.run(n=8, rounds=5, distinct=True)
        yield hovers


class BareHovers:
    """Hovers of the bare client, in the same shape as :func:`clients`: ``n`` clients, each
    asking its next hover when its last one is answered (a closed loop), on one connection
    to the server as a served run has."""

    def __init__(self, client: BareClient, params: dict[str, Any]) -> None:
        self.client, self.params = client, params
        target = Path(params["textDocument"]["uri"].removeprefix("file://"))
        lines = target.read_text().splitlines()
        self.distinct = [
            {
                **params,
                "position": {
                    "line": h["line"] - 1,
                    "character": lines[h["line"] - 1].index(h["symbol"]),
                },
            }
            for h in distinct_hovers(target.parents[2], 8)
        ]

    async def run(self, n: int, rounds: int, distinct: bool = False) -> list[float]:
        """With ``distinct``, asker ``i`` asks :func:`distinct_hovers`' ``i``-th."""
        times: list[float] = []

        async def asker(params: dict[str, Any]) -> None:
            for _ in range(rounds):
                started = time.perf_counter()
                assert await self.client.request("textDocument/hover", params)
                times.append(time.perf_counter() - started)

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(asker, self.distinct[i] if distinct else self.params)
        return times


async def bare_floor(
    workdir: Path, n: int, rounds: int = 40, distinct: bool = False
) -> dict[int, list[float]]:
    """The bare client's hovers, 1 at a time against ``n`` in flight, in alternated halves
    (as :func:`concurrency` takes a served run's); with ``distinct``, different hovers."""
    times: dict[int, list[float]] = {1: [], n: []}
    async with bare_server(workdir) as bare:
        for _ in range(2):
            for k in times:
                times[k] += await bare.run(k, rounds // 2, distinct)
    return times


def concurrency(
    proc: subprocess.Popen[str],
    sock: Path,
    n: int,
    rounds: int = 40,
    hovers: list[dict[str, Any]] | None = None,
    think_ms: float = 0.0,
) -> None:
    """1 and ``n`` connections' hovers, in alternated halves; per hover: latency, the served
    run's loop CPU and this process's (the clients') CPU. With ``hovers``, connection ``i``
    asks ``hovers[i]`` (and the 1 connection, in turn, each of them); ``think_ms``: see
    :func:`clients`."""
    times: dict[int, list[float]] = {1: [], n: []}
    loop = dict.fromkeys(times, 0.0)
    client = dict.fromkeys(times, 0.0)
    servers: dict[int, set[int]] = {k: set() for k in times}
    for _ in range(2):
        for k in times:
            loop_before, client_before = loop_cpu(proc.pid), time.process_time()
            if hovers and k == 1:
                for args in hovers:
                    times[k] += anyio.run(
                        clients, sock, 1, max(1, rounds // 2 // n), [args], think_ms
                    )
            else:
                times[k] += anyio.run(clients, sock, k, rounds // 2, hovers, think_ms)
            loop[k] += loop_cpu(proc.pid) - loop_before
            client[k] += time.process_time() - client_before
            servers[k] |= pids_in_tree(proc.pid, "basedpyright")
    for k, label in (
        (1, "1 connection"),
        (n, f"{n} connections ({n // 2} plan, {n - n // 2} default)"),
    ):
        count = len(times[k])
        print(
            f"{label}: hover {ms(times[k])}; per hover the served run's loop "
            f"{loop[k] / count * 1000:.2f} ms CPU, the clients' {client[k] / count * 1000:.2f} ms"
        )
    ratio = statistics.median(times[n]) / statistics.median(times[1])
    print(f"p50 of {n} connections / p50 of 1: {ratio:.1f}")
    print(
        f"basedpyright processes in the served run's tree (a Python shim and node per server): "
        f"{len(servers[1])} after 1 connection's rounds, {len(servers[n])} after {n}'s, "
        f"the same ones: {servers[1] == servers[n]}"
    )


def shapes(proc: subprocess.Popen[str], sock: Path, click: Path, n: int, distinct: bool) -> None:
    """``n`` clients asking the same hover (or, ``distinct``, each its own): the bare server
    alone, then the served run, back to back and with pauses."""
    what = "different hovers (a function name each)" if distinct else "the same hover"
    print(f"-- {n} clients asking {what}:")
    bare = anyio.run(bare_floor, click, n, 40, distinct)
    print(f"bare LSP hover (basedpyright, warm), 1 client, {len(bare[1])}: {ms(bare[1])}")
    print(
        f"bare LSP hovers, {n} clients each one at a time ({len(bare[n])}, halves "
        f"alternated with the 1 client's): {ms(bare[n])}; ratio "
        f"{statistics.median(bare[n]) / statistics.median(bare[1]):.1f}"
    )
    hovers = distinct_hovers(click, n) if distinct else None
    concurrency(proc, sock, n, hovers=hovers)
    print(f"the same, each client pausing 0–{2 * THINK_MS:.0f} ms between its hovers:")
    concurrency(proc, sock, n, hovers=hovers, think_ms=THINK_MS)


def echo_floor(sock: Path, n: int, rounds: int = 40) -> None:
    """The same closed loop with the echo tool (the session protocol and the call pipeline,
    no work): what one event loop makes of ``n`` clients that never pause, whatever the tool."""
    times: dict[int, list[float]] = {1: [], n: []}
    for _ in range(3):
        for k in times:
            times[k] += anyio.run(clients, sock, k, rounds, [{"message": "hi"}] * k, 0.0, "echo")
    ratio = statistics.median(times[n]) / statistics.median(times[1])
    print(
        f"the echo tool, back to back: 1 connection {ms(times[1], 2)}, {n} connections "
        f"{ms(times[n], 2)}; ratio {ratio:.1f}"
    )


def session_with_hover(workdir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*TETHER, "session", "--workdir", str(workdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"id": 1, "tool": "lsp", "args": HOVER}) + "\n")
    proc.stdin.flush()
    return proc


def wait_reply(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line).get("id") == 1:
            return


def generated_project(root: Path, files: int = 300) -> Path:
    (root / "pyproject.toml").write_text('[project]\nname = "gen"\nversion = "0"\n')
    for i in range(files):
        body = "\n\n".join(
            f"def f{i}_{j}(a, b=1):\n    x = a + b\n    return x * {j}" for j in range(20)
        )
        (root / f"m{i:03}.py").write_text(body + "\n")
    return root


#: patterns asked once each, on a run whose trees are parsed: matching without reuse
FRESH_PATTERNS = [
    "def $F($A, $B): $$$C",
    "def $F($$$A):\n    $X = $Y\n    return $Z",
    "$X = $A + $B",
    "return $X * $Y",
    "def $F($A, b=1): $$$B",
    "$A + $B",
    "$X * $Y",
    "return $X",
    "def $F($$$A): return $X * $N",
    "x = $A + b",
    "def $F(a, $$$A): $$$B",
    "$X = a + $Y",
]


def settle(pid: int, timeout_s: float = 120.0) -> float:
    """Wait until the served run's whole tree (its language servers indexing the project
    included) used under 2 % of a core for a second; how long that took."""
    started = time.perf_counter()
    ticks = os.sysconf("SC_CLK_TCK")

    def tree_cpu() -> float:
        total = 0
        for p in [pid, *descendants(pid)]:
            try:
                fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / ticks

    while time.perf_counter() - started < timeout_s:
        before = tree_cpu()
        time.sleep(1.0)
        if tree_cpu() - before < 0.02:
            break
    return time.perf_counter() - started


def selective(i: int) -> str:
    """A pattern with a rare literal (one function's name: one match), new for each round."""
    return f"def f{(37 * i) % 300}_{i % 20}($$$A): $$$B"


def everywhere(i: int) -> str:
    """`PATTERN` with a metavariable named anew for each round: another search (no answer or
    result of an earlier one applies), the same 6,000 matches."""
    return f"def $F{i}($$$A): $$$B"


def run_cpu_s(pid: int) -> float:
    """CPU time (user + system) of the run's process `pid` and its search workers (its
    descendants forked from it, with its command line: not the language servers it warms)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        own = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return 0.0
    for p in [pid, *descendants(pid)]:
        try:
            if Path(f"/proc/{p}/cmdline").read_bytes() != own:
                continue
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / ticks


def child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Timed:
    """Wall and CPU times of repeated commands: the command's own (with its threads and
    children) and the served run's tree's while it ran."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.served_cpu: list[float] = []

    def run(self, argv: list[str], env: dict[str, str], served: int | None) -> bytes:
        before_tree = run_cpu_s(served) if served else 0.0
        before = child_cpu_s()
        started = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, env=env, timeout=300, check=True)
        self.wall.append(time.perf_counter() - started)
        self.cpu.append(child_cpu_s() - before)
        if served:
            self.served_cpu.append(run_cpu_s(served) - before_tree)
        return out.stdout

    def line(self, what: str) -> str:
        text = f"{what}: wall {ms(self.wall)}, its CPU {ms(self.cpu)}"
        if self.served_cpu:
            text += f", the run's and its workers' CPU {ms(self.served_cpu)}"
        return text + f" [{len(self.wall)} runs]"


def tether_grep(
    env: dict[str, str],
    project: Path,
    pattern: str,
    timed: Timed,
    served: int,
    path: str | None = None,
    max_results: int | None = 10,
) -> Any:
    """The call's meta; ``max_results`` None: the tool's default (50)."""
    args: dict[str, Any] = {"pattern": pattern, "language": "python"}
    if max_results is not None:
        args["max_results"] = max_results
    if path is not None:
        args["path"] = path
    argv = [*COMMAND, "call", "ast_grep", json.dumps(args), "--workdir", str(project), "--attach"]
    reply = json.loads(timed.run(argv, env, served))
    assert not reply["is_error"], reply
    return reply["meta"]


def cli_matches(sg: str, project: Path, pattern: str) -> int:
    out = subprocess.run(
        [sg, "run", "-p", pattern, "-l", "python", "--json=stream", str(project)],
        capture_output=True,
    )
    assert out.returncode in (0, 1), out.stderr  # 1: no match
    return len(out.stdout.splitlines())


def against_env(env: dict[str, str], checkout: Path) -> dict[str, str]:
    """The environment of a server (and its `tether` command) running `checkout`'s sources
    (another commit's worktree) first on the path, with its own runtime directory."""
    runtime = Path(tempfile.mkdtemp(prefix="tether-rt-"))
    runtime.chmod(0o700)
    paths = [str(checkout / "core" / "src")]
    paths += [str(p) for p in sorted((checkout / "plugins").glob("*/src"))]
    paths += [str(p) for p in sorted((checkout / "contrib").glob("*/src"))]
    return {**env, "TETHER_RUNTIME_DIR": str(runtime), "PYTHONPATH": os.pathsep.join(paths)}


class Side:
    """One tether (this checkout's, or the one `--against` names) on its own served run."""

    def __init__(self, label: str, env: dict[str, str]) -> None:
        self.label, self.env = label, env
        self.first, self.warm, self.fresh = Timed(), Timed(), Timed()
        self.selective, self.floor, self.everywhere = Timed(), Timed(), Timed()
        self.proc: subprocess.Popen[str] | None = None

    def start(self, project: Path) -> None:
        self.proc, _ = serve(project, self.env)
        meta = tether_grep(self.env, project, PATTERN, self.first, self.proc.pid)
        parsed = meta.get("files_parsed", "?")
        took = self.first.wall[-1] * 1000
        print(f"{self.label}: first call after ready {took:.0f} ms, {parsed} files parsed")

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(60)

    def grep(self, project: Path, pattern: str, timed: Timed, max_results: int | None = 10) -> Any:
        assert self.proc is not None
        return tether_grep(self.env, project, pattern, timed, self.proc.pid, None, max_results)

    def report(self) -> None:
        what = f"  `tether call --attach` ({self.label})"
        print(self.first.line(f"{what}, the first call after `serve` is ready"))
        print(self.warm.line(f"{what}, the same call again (warm)"))
        print(self.fresh.line(f"{what}, a pattern not asked before (trees warm)"))
        print(self.selective.line(f"{what}, a selective pattern not asked before (1 match)"))
        print(
            self.everywhere.line(
                f"{what}, an all-matching pattern not asked before (6,000 matches), the "
                "tool's default max_results"
            )
        )
        print(
            self.floor.line(f"{what}, a pattern not found in one file (the attached call's floor)")
        )


def astgrep_side_by_side(
    env: dict[str, str], rounds: int = 10, servers: int = 1, against: Path | None = None
) -> None:
    """`tether call --attach ast_grep` on a generated 300-file project beside the ast-grep CLI
    (and beside another commit's tether, `against`): every measurement interleaved."""
    project = generated_project(Path(tempfile.mkdtemp(prefix="gen300-")))
    sg = shutil.which("ast-grep") or str(Path(sys.executable).parent / "ast-grep")
    sides = [Side("this", env)]
    if against is not None:
        sides.append(Side(f"before: {against}", against_env(env, against)))
    cli, cli_selective, cli_everywhere = Timed(), Timed(), Timed()
    for n in range(servers):
        for side in sides:
            side.start(project)
            if n < servers - 1:
                side.stop()
    expected = cli_matches(sg, project, PATTERN)
    for side in sides:
        assert side.proc is not None
        print(f"{side.label}: its language servers settled after {settle(side.proc.pid):.1f} s")
    for i in range(rounds):
        for side in sides:
            meta = side.grep(project, PATTERN, side.warm)
            assert meta["total"] == expected and meta.get("files_parsed", 0) == 0, meta
            if i < len(FRESH_PATTERNS):
                meta = side.grep(project, FRESH_PATTERNS[i], side.fresh)
                assert meta.get("files_parsed", 0) == meta.get("files_reused", 0) == 0, meta
            assert side.proc is not None
            tether_grep(side.env, project, "nowhere($A)", side.floor, side.proc.pid, "m000.py")
            meta = side.grep(project, selective(i), side.selective, None)
            assert meta["total"] == 1, meta
            meta = side.grep(project, everywhere(i), side.everywhere, None)
            assert meta["total"] == expected and meta.get("files_reused", 0) == 0, meta
        cli.run([sg, "run", "-p", PATTERN, "-l", "python", str(project)], env, None)
        cli_selective.run([sg, "run", "-p", selective(i), "-l", "python", str(project)], env, None)
        cli_everywhere.run(
            [sg, "run", "-p", everywhere(i), "-l", "python", str(project)], env, None
        )
    print(f"ast_grep `{PATTERN}` on 300 generated files, {expected} matches (the CLI's too):")
    for side in sides:
        side.report()
    print(cli.line("  ast-grep CLI (`ast-grep run -p ... -l python DIR`)"))
    print(cli_selective.line("  ast-grep CLI, the selective patterns"))
    print(cli_everywhere.line("  ast-grep CLI, the all-matching patterns named anew"))
    for pattern in FRESH_PATTERNS[: min(rounds, len(FRESH_PATTERNS))]:  # the same matches?
        meta = sides[0].grep(project, pattern, Timed())
        theirs = cli_matches(sg, project, pattern)
        same = "same" if meta["total"] == theirs else "DIFFERENT"
        print(f"  matches of `{pattern!r}`: tether {meta['total']}, the CLI {theirs} ({same})")
    for side in sides:
        side.stop()


def _option(argv: list[str], name: str, default: int) -> int:
    if name not in argv:
        return default
    at = argv.index(name)
    value = int(argv[at + 1])
    del argv[at : at + 2]
    return value


def main() -> None:
    argv = [a for a in sys.argv[1:] if a not in ("--no-memory", "--astgrep-only")]
    rounds = _option(argv, "--rounds", 10)
    servers = _option(argv, "--servers", 1)
    against = None
    if "--against" in argv:
        at = argv.index("--against")
        against = Path(argv[at + 1]).resolve()
        del argv[at : at + 2]
    runtime = Path(tempfile.mkdtemp(prefix="tether-rt-"))
    runtime.chmod(0o700)
    env = {**os.environ, "TETHER_RUNTIME_DIR": str(runtime)}
    print(f"load before: {os.getloadavg()[0]:.1f} (2 cores)")
    if "--astgrep-only" in sys.argv:
        astgrep_side_by_side(env, rounds, servers, against)
        print(f"load after: {os.getloadavg()[0]:.1f}")
        return
    click = Path(argv[0]).resolve()
    n = int(argv[1]) if len(argv) > 1 else 8

    started = time.perf_counter()
    cold = [call(env, "lsp", HOVER, "--workdir", str(click), command=COMMAND)]
    print(f"cold `tether call lsp hover` (fresh run): {cold[0] * 1000:.0f} ms")

    proc, sock = serve(click, env)
    print(f"serve ready after {time.perf_counter() - started - cold[0]:.2f} s")
    anyio.run(warm_up, sock)
    attach = ("--workdir", str(click), "--attach")
    lean, full = [], []
    for _ in range(20):  # alternated, so both see the same load
        lean.append(call(env, "lsp", HOVER, *attach, command=COMMAND))
        full.append(call(env, "lsp", HOVER, *attach, command=FULL_CLI))
    print(f"warm `tether call --attach lsp hover` end to end (the tether command): {ms(lean)}")
    print(f"the same through the full command line (python -m tether.cli): {ms(full)}")
    for distinct in (False, True):
        shapes(proc, sock, click, n, distinct)
    echo_floor(sock, n)
    print(f"served run's tree RSS: {rss_tree(proc.pid) / 2**20:.0f} MiB")

    if "--no-memory" not in sys.argv:
        sessions = [session_with_hover(click) for _ in range(n)]
        for s in sessions:
            wait_reply(s)
        total = sum(rss_tree(s.pid) for s in sessions)
        print(f"{n} separate one-run processes (each answered a hover): {total / 2**20:.0f} MiB")
        for s in sessions:
            assert s.stdin is not None
            s.stdin.close()
            s.wait(120)
    proc.terminate()
    proc.wait(60)

    astgrep_side_by_side(env, rounds, servers, against)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
