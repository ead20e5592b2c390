"""A served run (``tether serve``) side by side with what a client would do without it.

Run by hand (not in CI): ``uv run python contrib/mcp-bridge/benchmarks/serve.py PATH/TO/click
[N] [--no-memory]`` (a checkout of pallets/click). Prints, in one run on one machine:

- ``lsp hover`` on ``echo`` in ``src/click/utils.py``: a warm ``tether call --attach`` end to end
  (a new process each time: the installed ``tether`` command, which makes the call without
  importing the library, and the full command line, ``python -m tether.cli``, as it was before),
  a bare LSP client's warm hover (basedpyright, the same server), and a cold ``tether call`` (a
  fresh run: the server's start included);
- N concurrent connections (half ``plan``, half ``default``) on one run: p50 hover latency
  beside one connection's (rounds of each alternated, so both see the same load), the CPU the
  served run's event loop spends per hover (its main thread's, from ``/proc``), the clients'
  own CPU per hover (all N are tasks of this process), and how many basedpyright processes
  serve them; beside them, a bare LSP client's hovers, one at a time and N at once (what the
  server alone makes of N concurrent requests);
- memory: the served run's process tree with N connections, against N separate one-run
  processes (``tether session``, one run each, as N ``tether mcp`` are) that each answered a hover;
- ``ast_grep`` on a generated 300-file project: ``tether call --attach`` against the ast-grep CLI
  (its first call, which starts the workers and parses, then warm calls).

``--no-memory`` skips the N separate runs (N language servers at once: minutes on two cores).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from tether.processes.managed import descendants

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "plugins" / "lsp" / "benchmarks"))
from bench_lsp import BareClient, open_document

HOVER = {"action": "hover", "file": "src/click/utils.py", "line": 252, "symbol": "echo"}
PATTERN = "def $F($$$A): $$$B"
TETHER = [sys.executable, "-m", "tether"]
#: the installed command (its console script), as a shell or a skill runs it
COMMAND = [str(Path(sys.executable).parent / "tether")]
#: the full command line, as the console script was before it made attached calls itself
FULL_CLI = [sys.executable, "-m", "tether.cli"]


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms (p90 {quantile(values, 0.9) * 1000:.0f})"


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

    async def hover(self) -> tuple[float, dict[str, Any]]:
        self.ids += 1
        started = time.perf_counter()
        request = {"id": self.ids, "tool": "lsp", "args": HOVER}
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


async def clients(path: Path, n: int, rounds: int) -> list[float]:
    conns = [await Conn.open(path, "plan" if i % 2 else "default") for i in range(n)]
    times: list[float] = []

    async def run(conn: Conn) -> None:
        for _ in range(rounds):
            elapsed, reply = await conn.hover()
            assert not reply["is_error"], reply
            times.append(elapsed)

    async with anyio.create_task_group() as tg:
        for conn in conns:
            tg.start_soon(run, conn)
    for conn in conns:
        await conn.stream.aclose()
    return times


async def bare_hover(workdir: Path, rounds: int, n: int = 1) -> list[float]:
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
        times: list[float] = []

        async def asker() -> None:
            for _ in range(rounds):
                started = time.perf_counter()
                await client.request("textDocument/hover", params)
                times.append(time.perf_counter() - started)

        async with anyio.create_task_group() as tg:  # n clients, each one hover at a time
            for _ in range(n):
                tg.start_soon(asker)
    return times


def concurrency(proc: subprocess.Popen[str], sock: Path, n: int, rounds: int = 40) -> None:
    """1 and ``n`` connections' hovers, in alternated halves; per hover: latency, the served
    run's loop CPU and this process's (the clients') CPU."""
    times: dict[int, list[float]] = {1: [], n: []}
    loop = dict.fromkeys(times, 0.0)
    client = dict.fromkeys(times, 0.0)
    servers: dict[int, set[int]] = {k: set() for k in times}
    for _ in range(2):
        for k in times:
            loop_before, client_before = loop_cpu(proc.pid), time.process_time()
            times[k] += anyio.run(clients, sock, k, rounds // 2)
            loop[k] += loop_cpu(proc.pid) - loop_before
            client[k] += time.process_time() - client_before
            servers[k] |= pids_in_tree(proc.pid, "basedpyright")
    for k, label in (
        (1, "1 connection"),
        (n, f"{n} connections ({n // 2} plan, {n - n // 2} default)"),
    ):
        hovers = len(times[k])
        print(
            f"{label}: hover {ms(times[k])}; per hover the served run's loop "
            f"{loop[k] / hovers * 1000:.2f} ms CPU, the clients' {client[k] / hovers * 1000:.2f} ms"
        )
    ratio = statistics.median(times[n]) / statistics.median(times[1])
    print(f"p50 of {n} connections / p50 of 1: {ratio:.1f}")
    print(
        f"basedpyright processes in the served run's tree (a Python shim and node per server): "
        f"{len(servers[1])} after 1 connection's rounds, {len(servers[n])} after {n}'s, "
        f"the same ones: {servers[1] == servers[n]}"
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


def astgrep_side_by_side(env: dict[str, str]) -> None:
    """`tether call --attach ast_grep` on a generated 300-file project beside the ast-grep CLI."""
    project = generated_project(Path(tempfile.mkdtemp(prefix="gen300-")))
    grep_proc, _ = serve(project, env)
    args = {"pattern": PATTERN, "language": "python", "max_results": 10}
    grep_flags = ("--workdir", str(project), "--attach")
    first = call(env, "ast_grep", args, *grep_flags, command=COMMAND)  # its cache warm
    print(f"ast_grep on 300 files, the first `tether call --attach`: {first * 1000:.0f} ms")
    ours, theirs = [], []
    sg = shutil.which("ast-grep") or str(Path(sys.executable).parent / "ast-grep")
    for _ in range(10):
        ours.append(call(env, "ast_grep", args, *grep_flags, command=COMMAND))
        started = time.perf_counter()
        subprocess.run(
            [sg, "run", "-p", PATTERN, "-l", "python", str(project)],
            capture_output=True,
            check=True,
        )
        theirs.append(time.perf_counter() - started)
    print(f"ast_grep on 300 files: `tether call --attach` {ms(ours)}; ast-grep CLI {ms(theirs)}")
    grep_proc.terminate()
    grep_proc.wait(60)


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--no-memory"]
    click = Path(argv[0]).resolve()
    n = int(argv[1]) if len(argv) > 1 else 8
    runtime = Path(tempfile.mkdtemp(prefix="tether-rt-"))
    runtime.chmod(0o700)
    env = {**os.environ, "TETHER_RUNTIME_DIR": str(runtime)}
    print(f"load before: {os.getloadavg()[0]:.1f} (2 cores)")

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
    print(f"bare LSP hover (basedpyright, warm): {ms(anyio.run(bare_hover, click, 50))}")
    bare_n = anyio.run(bare_hover, click, 40, n)
    print(f"bare LSP hovers, {n} at once (each of {n} tasks one at a time): {ms(bare_n)}")

    concurrency(proc, sock, n)
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

    astgrep_side_by_side(env)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
