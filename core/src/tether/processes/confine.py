"""Write confinement: a program started for a read-tier call can write only in the run's own
directory, whatever its configuration (or the checkout's) tells it to write.

One mechanism for every family: ``run.spawn(argv, confine=True)`` on a workdir the harness does
not trust. What confines, in order of preference:

- **Landlock** (Linux 5.13+, the kernel's own unprivileged sandbox): a bare interpreter runs
  :mod:`tether.processes._landlock_exec`, which denies every write outside the run's directory (and
  ``/dev/null``, ``/dev/zero``, ``/dev/full``) and then ``exec``s the program; its descendants
  inherit the restriction. Reading and executing are untouched.
- **bubblewrap** (``bwrap``), where Landlock is missing: the root filesystem is mounted
  read-only in a new mount namespace, with a fresh ``/dev`` and ``/proc`` and the run's
  directory bound writable.
- **none**: the program writes wherever its (pinned) configuration says; only the declared pins
  (each program's ``Untrusted.writes`` closure) hold.

Either way the program's ``TMPDIR`` and ``XDG_CACHE_HOME`` point into the run's directory, so the
temporary files and caches a program writes on its own land there instead of failing.
``TETHER_CONFINEMENT=landlock|bwrap|none`` (the harness's environment) picks one (tests,
measurements); an unavailable choice falls to ``none`` and says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

#: where the harness picks the confinement (``landlock``, ``bwrap``, ``none``)
CHOICE_ENV = "TETHER_CONFINEMENT"
_LAUNCHER = str(Path(__file__).with_name("_landlock_exec.py"))

#: what a confined program may still write outside the run's directory, in words
_DEVICES = "/dev/null, /dev/zero, /dev/full"


@attrs.frozen
class Confinement:
    """The confinement in force on this machine."""

    #: "landlock", "bwrap" or "none"
    kind: str
    #: the Landlock ABI version (kind "landlock")
    abi: int = 0
    #: why a preferred kind is not in force ("" when it is)
    reason: str = ""

    def describe(self) -> str:
        """One line for ``status``: what confines, and what is left open."""
        if self.kind == "landlock":
            return (
                f"landlock ABI {self.abi}: programs started for read-tier calls write only in "
                f"the run's own directory and {_DEVICES}; left open: reading, and the network"
            )
        if self.kind == "bwrap":
            return (
                "bwrap"
                + (f" (no Landlock: {self.reason})" if self.reason else "")
                + ": programs started for read-tier calls see the filesystem read-only except "
                "the run's own directory and a private /dev; left open: reading, and the network"
            )
        return (
            f"none ({self.reason or 'neither Landlock nor bwrap here'}): left open: any write "
            "the program's pinned configuration does not name; only each program's declared "
            "pins (docs/threat-model.md) hold"
        )


def landlock_abi() -> tuple[int, str]:
    """The kernel's Landlock ABI version (0 when it has none) and, at 0, why."""
    if not sys.platform.startswith("linux"):
        return 0, "not Linux"
    import ctypes
    import errno

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    found = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if found > 0:
        return int(found), ""
    code = ctypes.get_errno()
    if code == errno.EOPNOTSUPP:
        return 0, "the kernel has Landlock built in but not enabled (lsm=landlock at boot)"
    if code == errno.ENOSYS:
        return 0, f"the kernel ({os.uname().release}) has no Landlock"
    return 0, f"Landlock probe failed: {os.strerror(code)}"


def _bwrap_works() -> tuple[str | None, str]:
    found = shutil.which("bwrap")
    if found is None:
        return None, "bwrap is not installed"
    try:
        done = subprocess.run(
            [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"bwrap cannot run: {error}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip()[:200]
        return None, f"bwrap cannot make a namespace here: {why}"
    return found, ""


_detected: dict[str, tuple[Confinement, str | None]] = {}


def detect() -> Confinement:
    """The confinement in force (probed once per process and choice)."""
    return _detect()[0]


def _detect() -> tuple[Confinement, str | None]:
    choice = os.environ.get(CHOICE_ENV, "").strip().lower()
    if choice in _detected:
        return _detected[choice]
    reasons: list[str] = []
    found: tuple[Confinement, str | None] | None = None
    if choice == "none":
        found = Confinement("none", reason=f"{CHOICE_ENV}=none"), None
    if found is None and choice in ("", "landlock"):
        abi, why = landlock_abi()
        if abi:
            found = Confinement("landlock", abi=abi), None
        else:
            reasons.append(why)
    if found is None and choice in ("", "bwrap"):
        bwrap, why = _bwrap_works()
        if bwrap is not None:
            found = Confinement("bwrap", reason="; ".join(reasons)), bwrap
        else:
            reasons.append(why)
    if found is None:
        if choice not in ("", "landlock", "bwrap"):
            reasons.append(f"{CHOICE_ENV}={choice!r} is not landlock, bwrap or none")
        found = Confinement("none", reason="; ".join(reasons)), None
    _detected[choice] = found
    return found


def confined_env(directory: Path) -> dict[str, str]:
    """The environment that sends a program's own temporary files and caches into
    ``directory`` (made here)."""
    tmp, cache = directory / "tmp", directory / "cache"
    for path in (tmp, cache):
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {"TMPDIR": str(tmp), "XDG_CACHE_HOME": str(cache)}


def wrap(
    argv: Sequence[str], directory: Path, env: Mapping[str, str] | None
) -> tuple[list[str], dict[str, str]]:
    """``argv`` and ``env`` that start the program so that it writes only in ``directory``
    (with the confinement :func:`detect` finds; unchanged but for the environment with none).
    A program that is not found raises ``FileNotFoundError`` here, as an unconfined start
    would."""
    full = {**(env or {}), **confined_env(directory)}
    program = argv[0]
    if os.sep not in program:
        search = full.get("PATH", os.environ.get("PATH", os.defpath))
        resolved = shutil.which(program, path=search)
        if resolved is None:
            raise FileNotFoundError(2, f"No such file or directory: {program!r}")
        program = resolved
    elif not os.access(program, os.X_OK):
        raise FileNotFoundError(2, f"No such file or directory: {program!r}")
    confinement, bwrap = _detect()
    rest = [program, *argv[1:]]
    if confinement.kind == "landlock":
        launcher = [sys.executable, "-I", "-S", _LAUNCHER, "--abi", str(confinement.abi)]
        return [*launcher, "--write", str(directory), "--", *rest], full
    if confinement.kind == "bwrap" and bwrap is not None:
        sandbox = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        sandbox += ["--bind", str(directory), str(directory), "--die-with-parent", "--"]
        return [*sandbox, *rest], full
    return rest, full


__all__ = ["CHOICE_ENV", "Confinement", "confined_env", "detect", "landlock_abi", "wrap"]
