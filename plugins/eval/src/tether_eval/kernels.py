"""What an interpreter looks like to the eval tool, and what a plugin registers to add one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

from tether.processes.managed import ManagedProcess
from tether_eval.output import CellOutput

#: Answers one bridge request ``(tool name, args)`` with a JSON result
#: ``{"is_error": bool, "content": [...], "meta": {...}}``.
Bridge = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

#: ``run.spawn`` (or a stand-in with the same signature).
Spawn = Callable[..., Awaitable[ManagedProcess]]


class KernelDied(Exception):
    """The interpreter process exited; ``stderr_tail`` is the end of what it wrote."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


class KernelStartError(Exception):
    """The interpreter could not be started (missing program, crash at start, start timeout)."""


@runtime_checkable
class Enclosure(Protocol):
    """Where a kernel runs when the conversation has a sandbox (from ``tether_eval_enclosure``).

    ``wrap`` returns the command that runs ``argv`` inside the enclosure. ``reachable`` lists the
    paths the kernel must be able to read and write there: the workdir and the directory of
    its IPC sockets; ``readable`` the paths it must be able to read: its interpreter's
    installation and import path, the kernel script. The environment ``env`` is passed to the
    wrapping command unchanged.
    """

    name: str

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        reachable: Sequence[Path],
        readable: Sequence[Path],
    ) -> list[str]: ...


@attrs.frozen
class KernelContext:
    """Everything a kernel needs to start for one run."""

    spawn: Spawn
    workdir: Path
    enclosure: Enclosure | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    start_timeout_s: float = 60.0
    settings: Mapping[str, Any] = attrs.field(factory=dict)

    def command(
        self,
        argv: Sequence[str],
        reachable: Sequence[Path] = (),
        readable: Sequence[Path] = (),
    ) -> list[str]:
        """``argv`` wrapped by the enclosure when there is one (see :class:`Enclosure`)."""
        if self.enclosure is None:
            return list(argv)
        return self.enclosure.wrap(
            list(argv),
            cwd=self.workdir,
            env=self.env,
            reachable=[self.workdir, *reachable],
            readable=_unique(readable),
        )


def _unique(paths: Sequence[Path]) -> list[Path]:
    seen: dict[str, Path] = {}
    for path in paths:
        seen.setdefault(str(path), path)
    return list(seen.values())


class Kernel(Protocol):
    """A live interpreter whose state persists between cells."""

    language: str

    @property
    def alive(self) -> bool: ...

    def stderr_tail(self) -> str: ...

    async def execute(
        self, code: str, *, output: CellOutput, bridge: Bridge, idle_budget_s: float
    ) -> None:
        """Run one cell, writing into ``output``; set ``output.error`` when the cell raised,
        ``output.interrupted`` when the idle budget ran out. Raise :class:`KernelDied` if the
        interpreter exited."""

    async def aclose(self) -> None:
        """Stop the interpreter and remove every file it left (sockets, connection file)."""


class ProcessKernel:
    """What the built-in kernels share: one child process of the run behind them."""

    _process: ManagedProcess
    _closed: bool

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return not self._closed and self._process.returncode is None

    def stderr_tail(self) -> str:
        return self._process.stderr_tail.text()


@attrs.frozen
class KernelSpec:
    """A language the eval tool can run; returned (in a list) by ``tether_eval_kernels``.

    ``start`` gets a :class:`KernelContext` and returns a started :class:`Kernel`;
    ``available(settings)`` says whether it can start here, with the reason when it cannot
    (checked at call time; ``settings`` are the ``[eval]`` options such as ``python``/``node``).
    """

    language: str
    start: Callable[[KernelContext], Awaitable[Kernel]]
    description: str = ""
    available: Callable[[Mapping[str, Any]], tuple[bool, str]] = lambda settings: (True, "")
