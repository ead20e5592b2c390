"""Debug adapter specs (the built-ins and the base class third parties subclass) and the
call-time availability check: a root marker AND a command that resolves and runs."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import attrs

from tether.processes.availability import (
    CommandProbe,
    find_local_command,
    find_root,
    not_found,
    resolve_command,
)
from tether.workdir.paths import relative
from tether.workdir.reading import UnreadableFile, peek, read_outside

if TYPE_CHECKING:
    from tether import Run
    from tether_debug.breakpoints import HitCondition

#: Runs ``debugpy.adapter`` with TCP_QUICKACK/TCP_NODELAY on its sockets (see the file): without
#: it every request that reaches pydevd waits ~44 ms on a delayed ACK (debugpy#2054).
DEBUGPY_LAUNCHER = Path(__file__).parent / "launchers" / "debugpy_adapter.py"

#: What :meth:`DebugAdapter.resolve` receives: ``ok, why = await probe(argv)``.
Probe = CommandProbe
Transport = Literal["stdio", "tcp"]
AttachMode = Literal["none", "connect", "adapter"]

_NATIVE_MAGIC = (
    b"\x7fELF",
    b"\xcf\xfa\xed\xfe",  # Mach-O 64-bit
    b"\xce\xfa\xed\xfe",  # Mach-O 32-bit
    b"\xca\xfe\xba\xbe",  # Mach-O universal
)


@attrs.frozen
class Resolution:
    """What would run for an adapter here, or why nothing can.

    ``command`` is the adapter's argv (``{port}`` is replaced for TCP adapters) or None;
    ``detail`` says what runs, or why it cannot; ``launch_defaults`` are merged into every
    ``launch`` request (e.g. the interpreter the debuggee runs with)."""

    command: tuple[str, ...] | None
    detail: str
    launch_defaults: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Availability:
    """The answer to "can this adapter start here?"."""

    adapter: DebugAdapter
    root: Path | None
    resolution: Resolution
    markers: tuple[str, ...]
    #: no marker was found and the adapter needs none: ``root`` is only the working directory
    unmarked: bool = False

    @property
    def usable(self) -> bool:
        return self.root is not None and self.resolution.command is not None

    def explain(self, workdir: Path) -> str:
        """One line: what would run, or every reason it cannot."""
        problems = []
        if self.root is None:
            problems.append(f"no root marker ({', '.join(self.markers)}) found")
        if self.resolution.command is None:
            problems.append(self.resolution.detail)
        if problems:
            return "unusable: " + "; ".join(problems)
        where = relative(workdir, self.root) if self.root else "?"
        where = "the workdir" if where == "." else where
        if self.unmarked:
            return (
                f"usable: {self.resolution.detail}; no root marker ({', '.join(self.markers)}) "
                f"needed: it runs from {where}"
            )
        return f"usable: {self.resolution.detail}; root {where}"


class DebugAdapter:
    """A debug adapter tether can start. Subclass it and return instances from the
    ``tether_debug_adapters()`` hook.

    The class attributes cover most adapters; override the methods for anything smarter
    (another interpreter, extra launch fields, a different way to find the binary).
    """

    #: Unique id, used in ``adapters`` output and the tool's ``adapter`` field.
    id: ClassVar[str] = ""
    #: Candidate commands, tried in order: the first whose program resolves (the root's
    #: ``.venv/bin``, ``venv/bin``, ``node_modules/.bin``, then PATH) and whose probe
    #: (program + ``probe_args``) exits 0 is used. TCP adapters put ``{port}`` where the port goes.
    commands: ClassVar[tuple[tuple[str, ...], ...]] = ()
    probe_args: ClassVar[tuple[str, ...]] = ("--version",)
    #: Files that mark a project root this adapter serves (searched from the program's
    #: directory up to the workdir).
    root_markers: ClassVar[tuple[str, ...]] = ()
    #: "stdio": DAP over the adapter's stdin/stdout; "tcp": the adapter listens on ``{port}``.
    transport: ClassVar[Transport] = "stdio"
    #: Programs this adapter debugs, by suffix (see :meth:`matches_program`).
    program_suffixes: ClassVar[tuple[str, ...]] = ()
    #: How ``attach(port)`` works: "connect" = the client speaks DAP straight to the port (a
    #: process started with debugpy --listen or dlv --headless); "adapter" = start the adapter and
    #: pass the port in the attach request; "none" = unsupported.
    attach_mode: ClassVar[AttachMode] = "none"
    #: How to start a program so that ``attach`` can reach it (``{port}`` is filled in).
    attach_hint: ClassVar[str] = ""
    #: ``attach(pid)``: start the adapter and pass the pid in the attach request
    #: (:meth:`pid_attach_arguments`).
    attach_pid: ClassVar[bool] = False
    #: TCP adapters: a regular expression with a ``port`` group matched against the adapter's
    #: stdout. When set, ``{port}`` in the command becomes 0 (the OS picks a free port, bound by
    #: the adapter itself) and the port is read back from what the adapter prints; without it
    #: tether picks a free loopback port and passes it (a short window in which another process
    #: could take it).
    listen_pattern: ClassVar[str | None] = None
    #: The debuggee inherits the adapter's stdout/stderr (instead of its output arriving as DAP
    #: ``output`` events): TCP adapters only, whose stdio is not the DAP channel; what the adapter
    #: prints after its listen line goes to ``output``.
    program_output_on_stdio: ClassVar[bool] = False
    #: The launch argument naming where the adapter writes the program it builds; tether points
    #: it into a directory of the session's own, removed when the session ends.
    build_output_argument: ClassVar[str | None] = None
    #: Exception breakpoint filters enabled by default (those the adapter offers), so that an
    #: uncaught exception stops the program.
    exception_filters: ClassVar[tuple[str, ...]] = ()
    #: What the adapter debugs, for ``adapters`` output.
    kind: ClassVar[str] = ""
    #: The hit-condition operators :meth:`hit_condition` can express (for a refusal's text).
    hit_operators: ClassVar[tuple[str, ...]] = ("==", ">=", "<=", ">", "<", "%")
    #: The adapter debugs a program without any project file (lldb takes any executable with
    #: debug information): its root markers only choose the working directory, the workdir
    #: when none is found.
    markers_optional: ClassVar[bool] = False

    def frame_name(self, name: str) -> str:
        """A stack frame's function name as a person reads it (the adapter's, by default)."""
        return name

    def hit_condition(self, hit: HitCondition) -> str | None:
        """The ``hitCondition`` text that makes this adapter stop on the hits ``hit`` means
        (see ``HitCondition``), or None when it cannot. The default is the dialect debugpy and
        delve share: an explicit operator and the count (a bare number means ``==`` to both)."""
        return str(hit)

    def matches_program(self, program: Path) -> bool:
        """True if this adapter is the natural choice for ``program``."""
        return program.suffix in self.program_suffixes

    async def resolve(self, root: Path | None, probe: Probe) -> Resolution:
        """Find a command that runs here (first candidate that resolves and whose probe succeeds)."""
        reasons = []
        for candidate in self.commands:
            # exec tier: the call's own approval covers a project-local adapter
            exe = resolve_command(candidate[0], [root] if root else [], trust_local=True)
            if exe is None:
                reasons.append(not_found(candidate[0], trust_local=True))
                continue
            ok, why = await probe([exe, *self.probe_args])
            if ok:
                shown = " ".join(candidate)
                if self.listen_pattern:
                    shown = shown.replace("{port}", "0") + ", the OS picks the port"
                return Resolution((exe, *candidate[1:]), f"{shown} ({exe})")
            reasons.append(why)
        return Resolution(None, "; ".join(reasons) or "no command configured")

    def launch_arguments(
        self,
        program: Path,
        args: Sequence[str],
        cwd: Path,
        resolution: Resolution,
        breakpoint_files: Sequence[Path],
    ) -> dict[str, Any]:
        """The ``launch`` request's arguments."""
        return {
            "name": f"tether: {program.name}",
            "program": str(program),
            "args": list(args),
            "cwd": str(cwd),
            **resolution.launch_defaults,
        }

    def attach_arguments(
        self, host: str, port: int, resolution: Resolution | None
    ) -> dict[str, Any]:
        """The ``attach`` request's arguments for a process reachable at ``host:port``."""
        return {"name": f"tether: attach {host}:{port}"}

    def pid_attach_arguments(self, pid: int, resolution: Resolution) -> dict[str, Any]:
        """The ``attach`` request's arguments for the local process ``pid``."""
        return {"name": f"tether: attach pid {pid}"}

    def exit_code_from_console(self, text: str) -> int | None:
        """The program's exit code, from one ``console`` output event, for adapters that say it
        only there (no ``exited`` event); None otherwise."""
        return None

    def pid_attach_needs(self) -> str:
        """What attaching by pid needs of the machine, said when it fails ('' if nothing)."""
        return ""

    async def pid_attach_refusal(self, run: Run) -> str | None:
        """Why attaching by pid would fail here and harm the process on the way, found before
        the process is touched (None: nothing found). Nothing is checked by default."""
        return None

    def is_log_point_output(self, body: Mapping[str, Any]) -> bool:
        """Whether an ``output`` event's body is a log point's message rather than the program's
        own output. By default: one that names where it was produced (a source path and a line),
        as delve tags its log points."""
        source = body.get("source")
        return isinstance(source, Mapping) and bool(source.get("path")) and "line" in body

    def changed_source_requests(self, path: Path, loaded_lines: int) -> list[tuple[str, Any]]:
        """DAP requests sent once per session for a source file that changed since the program
        loaded it (``loaded_lines`` long), before its breakpoints, so the adapter places them by
        the code the program runs rather than by the file's text now. None by default: an
        adapter that checks lines against the program's own code (lldb, delve) needs nothing."""
        return []

    def ignores_library_code(self, start_arguments: Mapping[str, Any]) -> str | None:
        """Why a session started with ``start_arguments`` ignores breakpoints in library code
        (set there during the session, they would never stop), and how to get them honoured;
        None (the default) when it stops wherever it is told."""
        return None

    async def library_roots(self, run: Run, resolution: Resolution) -> list[LibraryRoot]:
        """Directories outside the workdir whose files the program loads (its interpreter's
        standard library and packages, a toolchain, a module cache): breakpoints may go there.
        Nothing is ever written there. None by default."""
        return []


@attrs.frozen
class LibraryRoot:
    """A directory of code the program loads from outside the workdir."""

    path: Path
    what: str  # "the standard library of /usr/bin/python3.11"


async def _command_lines(run: Run, argv: Sequence[str]) -> list[str]:
    """A short command's stdout lines; [] if it fails or runs out of time."""
    try:
        result = await run.run_command(argv, timeout_s=_ROOTS_TIMEOUT_S)
    except OSError:
        return []
    if result.returncode != 0:
        return []
    return result.stdout.decode("utf-8", "replace").splitlines()


_ROOTS_TIMEOUT_S = 15.0
_PTRACE_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")

# gdb sets a vector register of a process it started (`true`, stopped at its first
# instruction) and prints it back: what an inferior call, debugpy's injection, needs. gdb 13
# on a CPU with AMX cannot ("Couldn't write extended state status: Bad address"; gdb 14 knows
# that register layout), and the injection then corrupts the process it attached to (seen: a
# Python program died of an unknown errno 514).
_GDB_PROBE = (
    "-nx",
    "-batch",
    "-ex",
    "starti",
    "-ex",
    "set var $xmm0.v4_int32[0] = 7",
    "-ex",
    "print $xmm0.v4_int32[0]",
    "--args",
)
_GDB_PROBE_TIMEOUT_S = 30.0
_GDB_PRINTED = re.compile(r"^\$1 = (-?\d+)$", re.M)
# a gdb's verdict, by its path and modification time: probed once per process
_gdb_verdicts: dict[tuple[str, int], str | None] = {}


async def _gdb_cannot_write_registers(run: Run) -> str | None:
    """Why the gdb on PATH cannot write a process's registers, in its own words; None when it
    can, or when the probe says nothing sure (no gdb, no ptrace: said after an attach fails)."""
    gdb, true = shutil.which("gdb"), shutil.which("true")
    if gdb is None or true is None:
        return None
    try:
        key = (gdb, os.stat(gdb).st_mtime_ns)
    except OSError:
        return None
    if key not in _gdb_verdicts:
        try:
            result = await run.run_command([gdb, *_GDB_PROBE, true], timeout_s=_GDB_PROBE_TIMEOUT_S)
        except OSError:
            return None
        out = result.stdout.decode("utf-8", "replace") + "\n" + result.stderr
        printed = _GDB_PRINTED.search(out)
        verdict = None
        if printed is not None and printed.group(1) != "7":
            said = [line.strip() for line in out.splitlines() if "ouldn't write" in line]
            verdict = said[0] if said else f"it printed {printed.group(1)} where it had set 7"
        _gdb_verdicts[key] = verdict
    why = _gdb_verdicts[key]
    if why is None:
        return None
    return (
        f"the gdb on PATH ({gdb}) cannot write a process's registers on this machine: set to 7, "
        f"a vector register of a process it started read back otherwise ({why[:200]}); "
        "debugpy's injection through it would leave the process corrupted. gdb 14 or newer "
        "writes them (it knows the register state of CPUs with AMX): put one first on PATH "
        "(a prebuilt one: pip install gdb-for-pwndbg, whose bin directory holds gdb), or start "
        "the program under debugpy (python -m debugpy --listen PORT prog.py) and attach by port"
    )


def _ptrace_needs(how: str) -> str:
    """What attaching by pid through ptrace needs here, and what this machine has."""
    gdb = shutil.which("gdb")
    head = peek(_PTRACE_SCOPE, 64)
    scope = head.decode("ascii", "replace").strip() if head is not None else None
    have = [f"gdb: {gdb}" if gdb else "gdb: not on PATH (apt-get install gdb)"]
    if scope is not None:
        meaning = {
            "0": "any process of the same user",
            "1": "only descendants, unless root or CAP_SYS_PTRACE",
            "2": "only root or CAP_SYS_PTRACE",
            "3": "no process at all",
        }.get(scope, "unknown")
        have.append(f"{_PTRACE_SCOPE} is {scope} ({meaning})")
    return (
        f"{how}: it needs gdb on PATH and permission to ptrace the process (the same user and "
        f"kernel.yama.ptrace_scope 0, or root / CAP_SYS_PTRACE); here: {'; '.join(have)}"
    )


_PYTHON_ROOTS = (
    "import site, sys, sysconfig\n"
    "paths = sysconfig.get_paths()\n"
    "print('the standard library', paths['stdlib'])\n"
    "print('the standard library', paths['platstdlib'])\n"
    "print('installed packages', paths['purelib'])\n"
    "print('installed packages', paths['platlib'])\n"
    "for p in site.getsitepackages(): print('installed packages', p)\n"
)


class Debugpy(DebugAdapter):
    id = "debugpy"
    kind = "Python (.py)"
    root_markers = ("pyproject.toml", "setup.py", "requirements.txt")
    program_suffixes = (".py",)
    attach_mode = "connect"
    attach_hint = "python -m debugpy --listen {port} --wait-for-client prog.py"
    # by pid, debugpy's adapter injects its debug server into the process with gdb
    attach_pid = True
    exception_filters = ("uncaught",)

    async def resolve(self, root: Path | None, probe: Probe) -> Resolution:
        # The debuggee runs with the project's own interpreter when it has one: a PATH python is
        # a different environment, and debugging from it fails in ways that read like broken code.
        # Only a venv's: node_modules/.bin holds no Python environment.
        local = find_local_command("python", [root], (".venv/bin", "venv/bin")) if root else None
        project = Path(local) if local else None
        path_python = shutil.which("python3")
        debuggee = project or (Path(path_python) if path_python else Path(sys.executable))
        tried = []
        for python in _unique(
            [project, Path(sys.executable), Path(path_python) if path_python else None]
        ):
            ok, _ = await probe([str(python), "-c", "import debugpy"])
            if ok:
                source = (
                    "the project's venv"
                    if project
                    else "python3 on PATH"
                    if path_python
                    else "tether's interpreter"
                )
                return Resolution(
                    (str(python), str(DEBUGPY_LAUNCHER)),
                    f"debugpy's adapter ({python}, through tether's socket-option launcher); "
                    f"the program runs with {debuggee} ({source})",
                    {"python": [str(debuggee)]},
                )
            tried.append(str(python))
        return Resolution(
            None,
            f"debugpy is not importable from {', '.join(tried)} (install it next to tether: pip install 'tether-debug[debugpy]', or into the project's venv)",
        )

    def launch_arguments(
        self,
        program: Path,
        args: Sequence[str],
        cwd: Path,
        resolution: Resolution,
        breakpoint_files: Sequence[Path],
    ) -> dict[str, Any]:
        return {
            **super().launch_arguments(program, args, cwd, resolution, breakpoint_files),
            "type": "python",
            "request": "launch",
            # integratedTerminal makes debugpy send runInTerminal before `initialized`
            "console": "internalConsole",
            "redirectOutput": True,
            # justMyCode silently ignores breakpoints in installed packages and the standard
            # library (debugpy#354): off when a breakpoint is in a library root
            "justMyCode": not any(
                "site-packages" in p.parts or not p.is_relative_to(cwd) for p in breakpoint_files
            ),
            "subProcess": False,
        }

    def pid_attach_arguments(self, pid: int, resolution: Resolution) -> dict[str, Any]:
        return {
            **super().pid_attach_arguments(pid, resolution),
            "type": "python",
            "request": "attach",
            "processId": pid,
            "justMyCode": True,
            "subProcess": False,
        }

    def pid_attach_needs(self) -> str:
        return _ptrace_needs("debugpy injects its debug server into the process with gdb")

    async def pid_attach_refusal(self, run: Run) -> str | None:
        return await _gdb_cannot_write_registers(run)

    def ignores_library_code(self, start_arguments: Mapping[str, Any]) -> str | None:
        if not start_arguments.get("justMyCode"):
            return None
        return (
            "debugpy was started with justMyCode on (no breakpoint was in library code when it "
            "started), and then ignores every breakpoint in library code. They are kept: the "
            "next launch sends them and starts debugpy with justMyCode off."
        )

    def changed_source_requests(self, path: Path, loaded_lines: int) -> list[tuple[str, Any]]:
        # pydevd checks a breakpoint's line against the file on disk and moves a line that holds
        # no code there to the code line before it: once the file changed, that is other code of
        # the running program. A source map of the file onto itself, line for line, is pydevd's
        # own way to skip that check (the lines sent are already the running text's)
        whole = {"line": 1, "endLine": max(1, loaded_lines), "runtimeLine": 1}
        source = {"path": str(path)}
        return [
            (
                "setPydevdSourceMap",
                {"source": source, "pydevdSourceMaps": [{**whole, "runtimeSource": source}]},
            )
        ]

    def is_log_point_output(self, body: Mapping[str, Any]) -> bool:
        # pydevd tags a log point's message with a source (empty); the program's output has none
        return "source" in body and body.get("category") == "stdout"

    async def library_roots(self, run: Run, resolution: Resolution) -> list[LibraryRoot]:
        # the debuggee's own interpreter: its standard library and installed packages
        python = (resolution.launch_defaults.get("python") or [None])[0]
        if not python:
            return []
        roots = []
        for line in await _command_lines(run, [str(python), "-c", _PYTHON_ROOTS]):
            what, _, path = line.rpartition(" ")
            if path:
                roots.append(LibraryRoot(Path(path), f"{what} of {python}"))
        return roots

    def attach_arguments(
        self, host: str, port: int, resolution: Resolution | None
    ) -> dict[str, Any]:
        return {
            **super().attach_arguments(host, port, resolution),
            "type": "python",
            "request": "attach",
            "connect": {"host": host, "port": port},
            "justMyCode": True,
            "subProcess": False,
        }


class Lldb(DebugAdapter):
    id = "lldb"
    kind = "native executables (ELF/Mach-O, built with -g)"
    # LLVM 18 renamed lldb-vscode to lldb-dap; Debian 12 ships lldb-vscode-14.
    commands = (("lldb-dap",), ("lldb-vscode",), ("lldb-vscode-14",))
    probe_args = ("--help",)
    # any ELF/Mach-O with debug information (Makefile, meson, autotools, a bare `cc -g`): the
    # markers only choose the working directory
    root_markers: ClassVar[tuple[str, ...]] = ("Cargo.toml", "CMakeLists.txt")
    markers_optional = True
    attach_mode = "adapter"
    attach_hint = "lldb-server gdbserver 127.0.0.1:{port} ./prog"
    attach_pid = True
    hit_operators = (">=", ">")

    def frame_name(self, name: str) -> str:
        # lldb 14 leaves Rust's legacy symbols half decoded (the escapes and the hash stay)
        return demangle_rust(name)

    def hit_condition(self, hit: HitCondition) -> str | None:
        # lldb-vscode reads only a bare number N, as an ignore count of N - 1: it stops on every
        # hit from the Nth on, and silently ignores any other text
        if hit.op == ">=":
            return str(hit.count)
        if hit.op == ">":
            return str(hit.count + 1)
        return None

    def matches_program(self, program: Path) -> bool:
        return _is_native(program)

    def launch_arguments(
        self,
        program: Path,
        args: Sequence[str],
        cwd: Path,
        resolution: Resolution,
        breakpoint_files: Sequence[Path],
    ) -> dict[str, Any]:
        return {
            **super().launch_arguments(program, args, cwd, resolution, breakpoint_files),
            "stopOnEntry": False,
        }

    def attach_arguments(
        self, host: str, port: int, resolution: Resolution | None
    ) -> dict[str, Any]:
        # a gdb-remote stub (lldb-server gdbserver, gdbserver, qemu -g) listening on the port
        return {
            **super().attach_arguments(host, port, resolution),
            "attachCommands": [f"gdb-remote {host}:{port}"],
        }

    def pid_attach_arguments(self, pid: int, resolution: Resolution) -> dict[str, Any]:
        return {**super().pid_attach_arguments(pid, resolution), "pid": pid}


_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_RUST_ESCAPE = re.compile(r"\$(SP|BP|RF|LT|GT|LP|RP|C|u[0-9a-fA-F]{1,6})\$")
_RUST_ESCAPES = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")"}
_RUST_ESCAPES["C"] = ","


def demangle_rust(name: str) -> str:
    """A Rust legacy symbol path as rustc-demangle's alternate form writes it (``$LT$`` → ``<``,
    ``$u20$`` → a space, ``..`` → ``::``, no ``::h…`` hash); any other name unchanged."""
    hashed = _RUST_HASH.search(name)
    if hashed is None and _RUST_ESCAPE.search(name) is None:
        return name
    if hashed is not None:
        name = name[: hashed.start()]

    def unescape(found: re.Match[str]) -> str:
        code = found.group(1)
        if code.startswith("u"):
            return chr(int(code[1:], 16))
        return _RUST_ESCAPES[code]

    parts = [part[1:] if part.startswith("_$") else part for part in name.split("::")]
    return _RUST_ESCAPE.sub(unescape, "::".join(parts).replace("..", "::"))


class Rust(Lldb):
    """Rust binaries (``cargo build``) through lldb's DAP adapter: the same adapter as C, chosen
    for a program rustc built so that ``adapters`` and a missing install say what Rust needs."""

    id = "rust"
    kind = "Rust binaries (cargo build; through lldb)"
    root_markers = ("Cargo.toml",)

    def matches_program(self, program: Path) -> bool:
        return _is_native(program) and (
            any((parent / "Cargo.toml").is_file() for parent in program.parents)
            or _built_by_rustc(program)
        )

    async def resolve(self, root: Path | None, probe: Probe) -> Resolution:
        found = await super().resolve(root, probe)
        if found.command is not None:
            return found
        return Resolution(
            None,
            f"{found.detail} (lldb's DAP adapter: apt-get install lldb-14; to build the program: "
            "apt-get install cargo, or rustup)",
        )


class Delve(DebugAdapter):
    id = "delve"
    kind = "Go (.go)"
    # dlv speaks DAP over TCP only; port 0: the OS picks one and dlv prints it
    commands = (("dlv", "dap", "--listen", "127.0.0.1:{port}"),)
    probe_args = ("version",)
    root_markers = ("go.mod",)
    transport = "tcp"
    listen_pattern = r"DAP server listening at: \S+:(?P<port>\d+)"
    # delve 1.20 (Debian 12) has no outputMode: the program writes to dlv's own stdout/stderr
    program_output_on_stdio = True
    build_output_argument = "output"
    program_suffixes = (".go",)
    attach_mode = "connect"
    # --continue: without it the program waits at its entry, with no goroutine to list yet
    attach_hint = "dlv debug --headless --continue --accept-multiclient --listen 127.0.0.1:{port}"
    attach_pid = True

    def launch_arguments(
        self,
        program: Path,
        args: Sequence[str],
        cwd: Path,
        resolution: Resolution,
        breakpoint_files: Sequence[Path],
    ) -> dict[str, Any]:
        return {
            **super().launch_arguments(program, args, cwd, resolution, breakpoint_files),
            # the package the file belongs to, not the file alone (a file builds without its
            # siblings); a built Go executable (adapter "delve") runs as it is
            "program": str(program.parent if program.suffix == ".go" else program),
            "mode": "exec" if _is_native(program) else "debug",
            # delve >= 1.21: the program's output as DAP output events (1.20 ignores it)
            "outputMode": "remote",
        }

    def attach_arguments(
        self, host: str, port: int, resolution: Resolution | None
    ) -> dict[str, Any]:
        return {**super().attach_arguments(host, port, resolution), "mode": "remote"}

    def pid_attach_arguments(self, pid: int, resolution: Resolution) -> dict[str, Any]:
        return {
            **super().pid_attach_arguments(pid, resolution),
            "mode": "local",
            "processId": pid,
        }

    async def library_roots(self, run: Run, resolution: Resolution) -> list[LibraryRoot]:
        # the Go toolchain's standard library and the module cache the build reads
        names = ("the Go standard library (GOROOT)", "the Go module cache (GOMODCACHE)")
        lines = await _command_lines(run, ["go", "env", "GOROOT", "GOMODCACHE"])
        return [LibraryRoot(Path(p), what) for what, p in zip(names, lines, strict=False) if p]

    def exit_code_from_console(self, text: str) -> int | None:
        # delve 1.20 sends no `exited` event; it says "Process 1234 has exited with status 2"
        found = re.search(r"Process \d+ has exited with status (-?\d+)", text)
        return int(found.group(1)) if found else None


class Dart(DebugAdapter):
    id = "dart"
    kind = "Dart (.dart)"
    commands = (("dart", "debug_adapter"),)
    root_markers = ("pubspec.yaml",)
    program_suffixes = (".dart",)


# Rust before lldb: a Rust binary is native too, and the first adapter that matches is chosen
BUILTIN_ADAPTERS: tuple[type[DebugAdapter], ...] = (Dart, Debugpy, Rust, Lldb, Delve)


async def availability(
    adapter: DebugAdapter, workdir: Path, start: Path, probe: Probe
) -> Availability:
    """Check an adapter at call time: root marker ∩ a command that resolves and runs."""
    root = find_root(start, adapter.root_markers, workdir)
    unmarked = root is None and adapter.markers_optional
    if unmarked:
        root = workdir
    resolution = await adapter.resolve(root or workdir, probe)
    return Availability(adapter, root, resolution, adapter.root_markers, unmarked)


def _is_native(path: Path) -> bool:
    """An ELF or Mach-O executable, by its first bytes."""
    return peek(path, 4) in _NATIVE_MAGIC  # None (not a regular file) is not native


def _built_by_rustc(path: Path) -> bool:
    """rustc names itself in the ``.comment`` section of what it links ("rustc version 1.x")."""
    try:  # a program may sit outside the workdir: the non-blocking, capped outside read
        return b"rustc version " in read_outside(path, field="program", max_bytes=512 << 20)
    except UnreadableFile:
        return False


def _unique(paths: Sequence[Path | None]) -> list[Path]:
    seen: list[Path] = []
    for path in paths:
        if path is not None and path not in seen:
            seen.append(path)
    return seen
