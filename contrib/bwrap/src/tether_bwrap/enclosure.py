"""The bubblewrap enclosure: the host read-only, a private /tmp, the workdir read-write."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

import tether


@attrs.frozen
class BwrapConfig:
    """The ``[bwrap]`` table."""

    #: Run eval kernels inside bubblewrap (a harness can also pass ``BwrapPlugin()``).
    enabled: bool = False
    #: Let the kernel reach the network (``%pip install`` from an index needs it).
    network: bool = False
    #: Host paths mounted read-only (the interpreters, their libraries).
    read_only: tuple[str, ...] = ("/",)
    #: Extra host paths mounted read-write besides the workdir.
    read_write: tuple[str, ...] = ()
    #: The bubblewrap program.
    program: str = "bwrap"


class BwrapEnclosure:
    """Wraps a kernel command in ``bwrap``: it may write to the workdir (and the paths it must
    reach, such as its socket directory) and nowhere else on the host."""

    name = "bwrap"

    def __init__(self, config: BwrapConfig = BwrapConfig()) -> None:
        program = shutil.which(config.program)
        if program is None:
            raise tether.ToolError(
                f"the bwrap enclosure is enabled but {config.program!r} was not found; "
                "kernels are not started outside it (install bubblewrap, or disable [bwrap])"
            )
        self.program = program
        self.config = config

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        reachable: Sequence[Path],
        readable: Sequence[Path] = (),
    ) -> list[str]:
        command = [self.program, "--die-with-parent", "--unshare-all"]
        if self.config.network:
            command.append("--share-net")
        for path in self.config.read_only:
            command += ["--ro-bind", path, path]
        # A private /tmp and home: scratch files of the kernel never reach the host.
        command += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        command += ["--dir", "/tmp/home", "--setenv", "HOME", "/tmp/home"]
        # What the interpreter needs to read may live under the /tmp just hidden (a venv there).
        for readable_path in readable:
            real = os.path.realpath(readable_path)
            command += ["--ro-bind-try", real, real]
        for path in [*map(str, reachable), *self.config.read_write]:
            resolved = os.path.realpath(path)
            command += ["--bind", resolved, resolved]
        command += ["--chdir", str(cwd), "--", *argv]
        return command
