"""The sanitised launch: what a child of a run is started with when the harness does not trust
the workdir (``run.trust_workdir`` false), so that configuration a checkout carries runs no code.

Every child starts through :meth:`tether.processes.owner.ProcessOwner.spawn`, which applies the profile of
its program (the core's table below: git, the rustup proxies, go) on an untrusted workdir. What a
contributed program (a language server, its checker) lets the workdir run is declared on its spec
with :class:`Untrusted`; one that declares nothing is treated as unsafe there. The table in
words, for every program tether may start, is ``docs/threat-model.md``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

#: how the harness says "run it anyway", in every refusal
ALLOW = "allow with --trust-workdir / open_run(trust_workdir=True)"


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


def _strings(value: Sequence[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class Untrusted:
    """What a program does with a workdir the harness does not trust, as its contributor
    declares it (``ServerSpec.untrusted``, ``ServerSpec.checker_untrusted``).

    ``risk``: how a checkout can make it run code ("" when nothing it reads does). ``closed_by``:
    the switch tether passes that closes it ("" with a risk: nothing does, and the program is
    unavailable on an untrusted workdir).

    ``writes``: how a checkout can make it *write* — each setting that names a path (a cache,
    a baseline, build info, an index, a log, an output), "" when none does, None when the
    contributor did not say. ``writes_closed_by``: the switch that pins those writes into the
    run's own directory or turns them off ("" with a route: nothing does, and the program is
    unavailable on an untrusted workdir). Beyond the declared routes, a program the lsp family
    starts there can write only in the run's directory (:mod:`tether.processes.confine`).

    ``args``/``env``/``settings`` are the switches of both: argv appended, environment added,
    settings given (a language server's), on an untrusted workdir only; ``{python}`` in them is
    an interpreter outside the workdir, ``{rundir}`` the run's own directory.
    """

    risk: str = ""
    closed_by: str = ""
    args: tuple[str, ...] = attrs.field(converter=_strings, default=())
    env: Mapping[str, str] = attrs.field(converter=_frozen, factory=dict)
    settings: Mapping[str, Any] = attrs.field(converter=_frozen, factory=dict)
    writes: str | None = None
    writes_closed_by: str = ""
    #: arguments added only where no confinement holds (neither Landlock nor bwrap): a write
    #: the confinement would deny (the program keeping its data in memory) is turned off
    unconfined_args: tuple[str, ...] = attrs.field(converter=_strings, default=())

    @property
    def usable(self) -> bool:
        """Whether it may run on an untrusted workdir (nothing to close, or closed)."""
        runs = not self.risk or bool(self.closed_by)
        return runs and (not self.writes or bool(self.writes_closed_by))

    def refusal(self, what: str) -> str | None:
        """Why ``what`` cannot run on an untrusted workdir, or None when it can."""
        if self.usable:
            return None
        if self.risk and not self.closed_by:
            why = self.risk
        else:
            why = f"{self.writes}, and nothing pins that write"
        return f"{what} is unavailable on an untrusted workdir: {why}; {ALLOW}"


#: a program with nothing in the workdir that makes it run code or write
SAFE = Untrusted(writes="")
#: what a spec that declares nothing is taken to be
UNDECLARED = Untrusted(
    risk="its spec declares nothing about what the workdir can make it run (`untrusted`)"
)


def declared(value: Untrusted | None) -> Untrusted:
    """A spec's declaration; nothing declared is unsafe."""
    return UNDECLARED if value is None else value


# --- the core's table: programs the families start by name ---------------------------------

#: runs ``argv`` (a short command outside the profiles) and returns (exit code, stdout); None
#: when it cannot start or runs out of time
Probe = Callable[[Sequence[str], Path], Awaitable[tuple[int, bytes] | None]]


@attrs.frozen
class LaunchProfile:
    """How one program is started on an untrusted workdir: arguments put right after the
    program, environment added, and ``prepare`` — which may add to the environment and returns
    a reason to refuse the launch, or None (it gets the program as started, the environment,
    the working directory and a way to run short commands)."""

    programs: frozenset[str]
    risk: str
    closed_by: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(converter=_frozen, factory=dict)
    prepare: Callable[[str, dict[str, str], Path, Probe], Awaitable[str | None]] | None = None


# git: configuration keys that name a program git runs have fixed names (set harmless here) or
# names the repository chooses (filter.<driver>.smudge, diff.<driver>.textconv…): the
# repository's own config may then hold only keys known to run nothing.
_GIT_OVERRIDES = (
    "safe.bareRepository=explicit",  # a bare-repository-shaped directory is not discovered
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.sshCommand=false",
    "core.pager=cat",
    "core.editor=false",
    "core.askPass=",
    "credential.helper=",
    "protocol.allow=never",  # no transport (ext::, file://, ssh) from any command
    "diff.external=",
)
_GIT_HARMLESS = re.compile(
    r"^(core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase"
    r"|precomposeunicode|symlinks|autocrlf|eol|safecrlf|quotepath|worktree|sparsecheckout"
    r"|sparsecheckoutcone|untrackedcache|splitindex|commitgraph|multipackindex|compression"
    r"|abbrev|excludesfile|attributesfile|checkstat|trustctime|filesreflocktimeout)"
    r"|extensions\.(worktreeconfig|objectformat|refstorage)"
    r"|remote\.[^\n]*\.(url|pushurl|fetch|tagopt|prune|mirror)"
    r"|branch\.[^\n]*\.(remote|merge|rebase|description|pushremote)"
    r"|submodule\.[^\n]*\.(url|active|branch)"
    r"|user\.(name|email)|init\.defaultbranch|gc\.(auto|autodetach|autopacklimit)"
    r"|pull\.(rebase|ff)|push\.(default|autosetupremote)|fetch\.prune|index\.version"
    r"|feature\.manyfiles|lfs\.repositoryformatversion)$",
    re.IGNORECASE,
)
_git_verdicts: dict[tuple[str, int, int, int], str | None] = {}


async def _git_repository_config(
    git: str, env: dict[str, str], cwd: Path, probe: Probe
) -> str | None:
    found = await probe(
        [git, *_git_args(), "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
        cwd,
    )
    if found is None or found[0] != 0:
        return None  # not in a repository: the command itself will say so
    for directory in dict.fromkeys(found[1].decode("utf-8", "surrogateescape").split("\n")):
        for name in ("config", "config.worktree"):
            path = Path(directory) / name if directory else None
            if path is None:
                continue
            try:
                st = path.stat()
            except OSError:
                continue
            key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
            if key not in _git_verdicts:
                _git_verdicts[key] = await _git_config_verdict(git, path, probe)
            if _git_verdicts[key] is not None:
                return _git_verdicts[key]
    return None


async def _git_config_verdict(git: str, path: Path, probe: Probe) -> str | None:
    listed = await probe(
        [git, "config", "--no-includes", "--file", str(path), "--list", "--name-only", "-z"],
        Path("/"),
    )
    if listed is None or listed[0] != 0:
        return f"git will not run here: its repository configuration {path} cannot be read"
    for name in listed[1].decode("utf-8", "surrogateescape").split("\0"):
        if name and not _GIT_HARMLESS.match(name):
            return (
                f"git will not run here: the repository configuration {path} sets `{name}`, "
                "and on an untrusted workdir tether runs git only on a repository whose "
                "configuration sets nothing that can name a program to run; " + ALLOW
            )
    return None


def _git_args() -> tuple[str, ...]:
    return tuple(arg for pair in _GIT_OVERRIDES for arg in ("-c", pair))


_rustup_default: list[str | None] = []


async def _pin_rustup(program: str, env: dict[str, str], cwd: Path, probe: Probe) -> str | None:
    if env.get("RUSTUP_TOOLCHAIN") or os.environ.get("RUSTUP_TOOLCHAIN"):
        return None  # the harness pinned it already
    if shutil.which("rustup") is None:
        return None  # not a rustup proxy: no toolchain file is read
    if not _rustup_default:
        # the harness's own default, asked outside the workdir (a toolchain file there is not read)
        done = await probe(["rustup", "default"], Path("/"))
        words = done[1].decode("utf-8", "replace").split() if done and done[0] == 0 else []
        _rustup_default.append(words[0] if words else None)
    toolchain = _rustup_default[0]
    if toolchain is None:
        return (
            "rustup has no default toolchain, so the workdir's rust-toolchain.toml would choose "
            f"what runs; set one (`rustup default stable`) or {ALLOW}"
        )
    env["RUSTUP_TOOLCHAIN"] = toolchain
    return None


RUSTUP_PROXIES = frozenset(
    {"cargo", "rustc", "rustdoc", "rustfmt", "cargo-fmt", "cargo-clippy", "clippy-driver",
     "rust-analyzer", "rust-gdb", "rust-lldb", "rls", "rustup"}
)  # fmt: skip

#: the core's table: every program the families start by name
PROFILES: tuple[LaunchProfile, ...] = (
    LaunchProfile(
        programs=frozenset({"git"}),
        risk=(
            "the repository configuration it finds (the workdir's .git/config, a bare-repository-"
            "shaped workdir or vendor/ directory) names programs: core.fsmonitor, hooks, "
            "filter/diff/merge drivers, core.sshCommand, core.pager, credential helpers"
        ),
        closed_by=(
            "-c " + " -c ".join(_GIT_OVERRIDES) + "; and a repository whose own configuration "
            "sets any key outside a list of keys that run nothing is refused"
        ),
        args=_git_args(),
        prepare=_git_repository_config,
    ),
    LaunchProfile(
        programs=RUSTUP_PROXIES,
        risk=(
            "a rustup proxy runs the toolchain the workdir's rust-toolchain(.toml) names, "
            "including `[toolchain] path` inside the workdir"
        ),
        closed_by="RUSTUP_TOOLCHAIN pinned to the harness's `rustup default`",
        prepare=_pin_rustup,
    ),
    LaunchProfile(
        programs=frozenset({"go", "gopls"}),
        risk="a `toolchain` line in go.mod/go.work makes go download and run that toolchain",
        closed_by="GOTOOLCHAIN=local",
        env={"GOTOOLCHAIN": "local"},
    ),
)
_BY_PROGRAM = {name: profile for profile in PROFILES for name in profile.programs}


def profile_for(program: str) -> LaunchProfile | None:
    """The core's profile for ``program`` (a name or a path), or None."""
    return _BY_PROGRAM.get(os.path.basename(program))


class LaunchRefused(OSError):
    """A program that cannot be made safe on an untrusted workdir (an ``OSError``: to a caller
    it is a program that cannot start here, with the reason and how to allow it)."""


async def sanitise(
    argv: Sequence[str], env: Mapping[str, str] | None, cwd: Path, probe: Probe
) -> tuple[list[str], dict[str, str] | None]:
    """``argv`` and ``env`` as they start on an untrusted workdir; raises
    :class:`LaunchRefused` when the program's profile refuses."""
    profile = profile_for(argv[0]) if argv else None
    if profile is None:
        return list(argv), None if env is None else dict(env)
    full = dict(env or {})
    full.update(profile.env)
    if profile.prepare is not None:
        refusal = await profile.prepare(argv[0], full, cwd, probe)
        if refusal is not None:
            raise LaunchRefused(refusal)
    return [argv[0], *profile.args, *argv[1:]], full


__all__ = [
    "ALLOW",
    "PROFILES",
    "SAFE",
    "UNDECLARED",
    "LaunchProfile",
    "LaunchRefused",
    "Untrusted",
    "declared",
    "profile_for",
    "sanitise",
]
