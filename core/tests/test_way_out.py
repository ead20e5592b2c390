"""A refusal names the rule that refused, and every way out it offers works.

Generated over tier flags (``--approve``) x the tier's entry x the tool's entry x the action's
entry (and the workdir's file tightening each of them): each call runs through the CLI's own
layering (``run_config``: ``--config FILE``, ``--approve``, the workdir's ``tether.toml``) and a
real run; when it is refused, each way out the refusal offers is applied and the call must run.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest

import tether
from tether.cli import run_config
from tether.gate import Step, fixes

pytestmark = pytest.mark.anyio

FLAGS = (None, "read", "write", "exec")
ENTRIES = (None, "auto", "ask", "deny")
# the workdir's file tightening one entry (it may tighten, never add or loosen)
WORKDIR = (None, ("write",), ("tools", "write"), ("actions", "write", "save"))


@attrs.frozen
class Args:
    op: Literal["save", "peek"] = tether.arg(description="what to do")


async def handler(call: tether.CallContext, args: Args) -> str:
    return f"did {args.op}"


class WriteTool:
    """A write-tier tool named like the tier (tether-files' ``write`` is one), with actions."""

    @tether.hookimpl
    def tether_tools(self, run: tether.Run) -> list[tether.ToolSpec]:
        actions = tether.Actions("op", {"save": (), "peek": ()})
        return [tether.ToolSpec("write", "write", Args, handler, "writes", actions=actions)]


def toml(table: dict[str, Any]) -> str:
    """The [core.approval] tables of ``table`` as TOML (values are plain strings)."""
    lines = []
    approval = table.get("core", {}).get("approval", {})
    tiers = {k: v for k, v in approval.items() if isinstance(v, str)}
    if tiers:
        lines.append("[core.approval]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in tiers.items()]
    if approval.get("tools"):
        lines.append("[core.approval.tools]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in approval["tools"].items()]
    for tool, entries in approval.get("actions", {}).items():
        lines.append(f"[core.approval.actions.{tool}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in entries.items()]
    return "\n".join(lines) + "\n"


def put(table: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    node = table.setdefault("core", {}).setdefault("approval", {})
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def drop(table: dict[str, Any], path: tuple[str, ...]) -> None:
    node = table["core"]["approval"]
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]


@attrs.define
class Setup:
    flag: str | None
    harness: dict[str, Any]
    workdir: dict[str, Any]

    def apply(self, fix: tuple[Step, ...]) -> Setup:
        changed = Setup(
            self.flag, json.loads(json.dumps(self.harness)), json.loads(json.dumps(self.workdir))
        )
        for step in fix:
            if step.kind == "approve":
                changed.flag = step.path[0]
            elif step.kind == "harness":
                put(changed.harness, step.path, "auto")
            else:
                drop(changed.workdir, step.path)
        return changed


async def call(root: Path, setup: Setup, op: str = "save") -> tuple[tether.ToolResult, tether.Run]:
    """One call of ``write`` through the CLI's layering, on a real run (no approver)."""
    root.mkdir(exist_ok=True)
    harness_file = root / "harness.toml"
    harness_file.write_text(toml(setup.harness))
    workdir = root / "wd"
    workdir.mkdir(exist_ok=True)
    (workdir / "tether.toml").write_text(toml(setup.workdir))
    ns = argparse.Namespace(workdir=str(workdir), config=harness_file, approve=setup.flag)
    _, config, workdir_config = run_config(ns)
    async with tether.open_run(
        workdir,
        entry_points=False,
        plugins=[WriteTool()],
        config=config,
        workdir_config=workdir_config,
    ) as run:
        return await run.call("write", {"op": op}), run


def setups() -> list[tuple[str | None, str | None, str | None, str | None, tuple[str, ...] | None]]:
    combos = list(itertools.product(FLAGS, ENTRIES, ENTRIES, ENTRIES, [None]))
    # the workdir's file over a smaller grid: harness entries present (auto) or not
    combos += [
        (flag, tier, tool, action, tight)
        for flag, tier, tool, action, tight in itertools.product(
            (None, "write"), (None, "auto"), (None, "auto"), (None, "auto"), WORKDIR[1:]
        )
    ]
    return combos


@pytest.mark.parametrize(
    ("flag", "tier", "tool", "action", "tight"),
    setups(),
    ids=lambda v: "-" if v is None else "/".join(v) if isinstance(v, tuple) else v,
)
async def test_the_way_out_is_the_rule_that_refused(
    tmp_path: Path,
    flag: str | None,
    tier: str | None,
    tool: str | None,
    action: str | None,
    tight: tuple[str, ...] | None,
) -> None:
    setup = Setup(flag, {}, {})
    for path, value in ((("write",), tier), (("tools", "write"), tool)):
        if value is not None:
            put(setup.harness, path, value)
    if action is not None:
        put(setup.harness, ("actions", "write", "save"), action)
    if tight is not None:
        put(setup.workdir, tight, "ask")
    result, run = await call(tmp_path / "0", setup)
    if not result.is_error:
        return
    text = result.text_content
    assert "refused" in text, text
    found = fixes("write", "write", "save", run.gate.policy, run.gate.sources)
    assert found, f"a refusal with no way out: {text}"
    offered_flag = any(step.kind == "approve" for fix in found for step in fix)
    assert ("--approve" in text.split("To let it run")[-1]) == offered_flag, text
    if any(step.kind == "harness" for fix in found for step in fix):
        assert f"--config {tmp_path / '0' / 'harness.toml'}" in text, "names the harness's file"
    if any(step.kind == "workdir" for fix in found for step in fix):
        assert str(tmp_path / "0" / "wd" / "tether.toml") in text, "names the workdir's file"
    for n, fix in enumerate(found, start=1):
        fixed, _ = await call(tmp_path / str(n), setup.apply(fix))
        assert not fixed.is_error, (
            f"the way out {fix} did not let it run:\n{text}\n{fixed.text_content}"
        )


async def test_approve_exec_with_a_tool_entry_names_the_entry_and_its_file(tmp_path: Path) -> None:
    """The day's case: `--approve exec`, `[core.approval.tools] write = "ask"`, nobody there."""
    setup = Setup("exec", {}, {})
    put(setup.harness, ("tools", "write"), "ask")
    result, _ = await call(tmp_path, setup, op="peek")
    text = result.text_content
    assert result.is_error
    assert "`[core.approval.tools] write` decided" in text, text
    assert f'`[core.approval.tools] write = "auto"` in --config {tmp_path / "harness.toml"}' in text
    assert '`[core.approval.actions.write] peek = "auto"`' in text
    assert "--approve write" not in text and '[core.approval] write = "auto"' not in text
