"""``diagnostics "*"``: run each project's own checker (basedpyright, tsc, cargo check…)."""

from __future__ import annotations

from pathlib import Path

import anyio
import attrs

import tether
from tether.text import TailBuffer
from tether_lsp.servers import ServerSpec
from tether_lsp.supervisor import LspSupervisor
from tether_lsp.trust import refusal, untrusted_args, untrusted_env

OUTPUT_CAP_BYTES = 24_000
#: roots checked per server at most; more are named as skipped, never dropped silently
ROOTS_CAP = 20


def plan_roots(supervisor: LspSupervisor, spec: ServerSpec) -> tuple[list[Path], list[str]]:
    """The roots ``spec``'s checker runs in, and a line for each root it skips and why: no
    project file the checker needs (``tsc`` without a ``tsconfig.json`` prints its help), inside
    a root checked already (a file is checked once), or past the cap."""
    found = supervisor.roots_in_workdir(spec, limit=ROOTS_CAP + 1)
    chosen: list[Path] = []
    skipped: list[str] = []
    shown = " ".join(spec.checker)
    for root in sorted(found[:ROOTS_CAP], key=lambda r: (len(r.parts), r)):
        where = supervisor.relative(root) or "."
        if spec.checker_needs and not any((root / n).exists() for n in spec.checker_needs):
            needs = " or ".join(spec.checker_needs)
            skipped.append(f"{where}: no {needs} there, which `{shown}` needs")
            continue
        outer = next((c for c in chosen if c in root.parents), None)
        outer = outer if spec.checker_covers_nested else None
        if outer is not None and _leaves_out(supervisor, spec, outer, root):
            # swr: the root tsconfig includes src/** only; test/ has a tsconfig of its own
            outer = None
        if outer is not None:
            skipped.append(
                f"{where}: inside {supervisor.relative(outer) or '.'}, whose `{shown}` run "
                "covers it (files that project excludes are not checked)"
            )
            continue
        chosen.append(root)
    if len(found) > ROOTS_CAP:
        skipped.append(
            f"roots past the first {ROOTS_CAP} found (workdir and two levels down): not checked"
        )
    return chosen, skipped


def _leaves_out(supervisor: LspSupervisor, spec: ServerSpec, outer: Path, nested: Path) -> bool:
    """The project at ``outer`` leaves ``nested``'s files out (its ``include``/``exclude``):
    its checker run does not cover them, so ``nested`` is checked on its own."""
    from tether.workdir.reading import Reader
    from tether_lsp.crosscheck import leaves_out_nested

    suffix = next(iter(spec.extensions), "")
    try:
        with Reader(supervisor.workdir) as reader:  # a tsconfig.json or pyproject.toml, small
            why = leaves_out_nested(spec.id, spec.project_config, outer, nested, suffix, reader)
    except (OSError, tether.ToolError):
        return False
    return why is not None


@attrs.define
class _Plan:
    """What ``diagnostics "*"`` runs, and what it says it did not."""

    targets: list[tuple[ServerSpec, Path]] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)
    #: servers that need no project: nothing to check
    without: list[str] = attrs.field(factory=list)
    #: servers unavailable on an untrusted workdir, with the reason
    refused: list[str] = attrs.field(factory=list)
    #: servers whose project is here but whose binary is not usable
    unusable: list[str] = attrs.field(factory=list)


async def run_checkers(supervisor: LspSupervisor) -> str:
    """The primary usable server of every language rooted in the workdir runs its checker, and
    so does every usable companion (diagnostics-only) server — once per file: in each root
    that has the checker's project file and is not inside another one checked. The answer
    names the roots checked and those skipped, with why."""
    plan = _Plan()
    for language in sorted({spec.language for spec in supervisor.specs.values()}):
        await _plan_language(supervisor, language, plan)
    plan.skipped += [f"not checked, no usable server — {line}" for line in plan.unusable]
    if not plan.targets:
        raise _nothing_to_check(plan)
    targets = plan.targets
    results = [await _run_one(supervisor, spec, root) for spec, root in targets]
    if not any(ran for ran, _ in results):
        raise tether.ToolError("\n\n".join(text for _, text in results))
    checked = ", ".join(f"{supervisor.relative(root) or '.'} ({spec.id})" for spec, root in targets)
    head = f"Checked {len(targets)} root{'s' if len(targets) != 1 else ''}: {checked}"
    if plan.skipped:
        head += "\nSkipped:\n" + "\n".join(f"  {line}" for line in plan.skipped)
    from tether_lsp.coverage import unchecked_files

    # what no checker run covers, said: "no findings" is only about the files checked
    head += "".join(f"\n{line}" for line in await unchecked_files(supervisor, targets))
    sections = [head] + [text for _, text in results] + plan.refused
    if plan.without:
        sections.append(f"(no project checker for {', '.join(plan.without)})")
    return "\n\n".join(sections)


async def _plan_language(supervisor: LspSupervisor, language: str, plan: _Plan) -> None:
    """Into ``plan``: the roots ``language``'s primary usable server and its usable companions
    check, and the servers that cannot (refused, unusable, needing no project)."""
    primary_found = False
    for spec in supervisor.candidates(language):
        if primary_found and not spec.companion:
            continue
        roots = supervisor.roots_in_workdir(spec, limit=1)
        if not roots:
            continue
        probe = await supervisor.probe(spec, roots[0])
        if not probe.ok:
            if supervisor.refusal(spec) is not None:
                plan.refused.append(probe.detail)  # unavailable here: say so, not "no server"
            elif not spec.companion:
                # a project of this language with no usable server (a rustup stub for
                # rust-analyzer): not checked, and said, whether or not the next one runs
                plan.unusable.append(f"{spec.id}: {probe.detail}")
            continue
        if spec.checker:
            chosen, passed = plan_roots(supervisor, spec)
            plan.targets += [(spec, root) for root in chosen]
            plan.skipped += [f"{spec.id} skipped {line}" for line in passed]
        elif spec.root_markers:  # a server that needs no project has no project to check
            plan.without.append(spec.id)
        primary_found = primary_found or not spec.companion


def _nothing_to_check(plan: _Plan) -> tether.ToolError:
    """The error when no root is checked, saying why."""
    if plan.unusable:
        return tether.ToolError(
            "no project checker: no usable server for the workdir's projects:\n  "
            + "\n  ".join(plan.refused + plan.unusable)
        )
    if plan.refused:
        return tether.ToolError("no project checker:\n  " + "\n  ".join(plan.refused))
    reasons = "".join(f"\n  {line}" for line in plan.skipped)
    if plan.without or plan.skipped:
        named = (
            f"the server(s) for this checkout ({', '.join(plan.without)}) name none"
            if plan.without
            else "no root has the project file its checker needs"
        )
        return tether.ToolError(
            f"no project checker: {named}; ask `diagnostics` for one file instead{reasons}"
        )
    return tether.ToolError(
        "no project checker: no usable language server has a root marker in the workdir "
        "(see `lsp status`)"
    )


async def _run_one(supervisor: LspSupervisor, spec: ServerSpec, root: Path) -> tuple[bool, str]:
    """(whether the checker ran, what it said)."""
    binary = supervisor.resolve_binary(spec.checker[0], root)
    where = supervisor.relative(root) or "."
    shown = " ".join(spec.checker)
    why = refusal(spec.checker_untrusted, f"`{shown}` (checker of {spec.id})", supervisor.run)
    if why is not None:
        return False, f"in {where}: {why}"
    if binary is None:
        return False, f"`{shown}` in {where}: `{spec.checker[0]}` not found (checker of {spec.id})"
    process = await supervisor.run.spawn(
        [binary, *spec.checker[1:], *untrusted_args(spec.checker_untrusted, supervisor.run)],
        cwd=root,
        env=untrusted_env(spec.checker_untrusted, supervisor.run) or None,
        stdin=False,
        stdout=True,
        confine=True,  # on an untrusted workdir it writes only in the run's directory
    )
    output = TailBuffer(OUTPUT_CAP_BYTES)
    timeout = supervisor.config.checker_timeout_s
    code: int | None = None
    with anyio.move_on_after(timeout):
        async for chunk in process.stdout:
            output.write(chunk)
        code = await process.wait()
    if code is None:
        await process.terminate(grace_s=0.5)
        return False, f"`{shown}` in {where} did not finish within {timeout:g} s and was stopped"
    # checkers print absolute paths; relative ones are shorter and match the other actions
    text = output.render().strip().replace(f"{supervisor.workdir}/", "")
    errors = process.stderr_tail.text().strip()
    head = f"`{shown}` in {where} (checker of {spec.id}) exited {code}"
    if not text and not errors:
        return True, head + (": no findings" if code == 0 else " with no output")
    return True, f"{head}:\n{text or errors}"
