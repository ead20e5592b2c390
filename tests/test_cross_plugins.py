"""What only shows with several families installed: one pipeline for every caller."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tether.testing import require_real
from tether_ask import Answer, CallbackPort

pytestmark = pytest.mark.anyio


class Person:
    """A harness whose UI answers approval cards from a script."""

    def __init__(self, *labels: str) -> None:
        self.labels = list(labels)
        self.cards: list = []

    async def show(self, card):
        self.cards.append(card)
        return Answer(choices=(self.labels.pop(0),))

    @tether.hookimpl
    def tether_resources(self, run):
        return {"question_port": CallbackPort(self.show, timeout_s=10)}


async def test_a_bridge_call_from_eval_meets_the_same_approval_card(tmp_path):
    person = Person("allow", "deny")
    config = {"core": {"approval": {"exec": "auto", "write": "ask"}}}
    async with tether.open_run(
        tmp_path, conversation_id="c", plugins=[person], config=config
    ) as run:
        code = (
            "first = tool('echo_write', {'path': 'a.txt', 'text': 'one'})\n"
            "try:\n"
            "    tool('echo_write', {'path': 'b.txt', 'text': 'two'})\n"
            "except ToolError as exc:\n"
            "    second = str(exc)\n"
            "print(first, '|', second)"
        )
        result = await run.call(
            "eval", {"code": code, "description": "write two files through the bridge"}
        )
        assert not result.is_error, result.text_content
        assert "wrote a.txt" in result.text_content and "denied" in result.text_content
    assert (tmp_path / "a.txt").read_text() == "one" and not (tmp_path / "b.txt").exists()
    assert [c.kind for c in person.cards] == ["approval", "approval"]


async def test_a_read_only_surface_cannot_reach_write_tools_through_any_door(tmp_path):
    async with tether.open_run(tmp_path, conversation_id="c", vibe=True) as run:
        plan = {s["name"]: s["tier"] for s in run.schemas("plan")}
        assert set(plan.values()) == {"read"}
        assert "eval" not in plan and "debug" not in plan and "vibe_list" in plan
        refused = await run.call(
            "eval", {"code": "1", "description": "one plus nothing at all"}, surface="plan"
        )
        assert refused.is_error and "not available on surface 'plan'" in refused.text_content


def test_the_cli_lists_every_family(tmp_path):
    tools = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tether.cli", "tools", "--vibe", "--workdir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    names = {t["name"] for t in tools}
    assert {"eval", "debug", "ask_user", "vibe_spawn", "read", "echo"} <= names


async def test_a_write_from_an_eval_cell_gets_its_new_diagnostics(tmp_path):
    """The diagnostics-on-write wrapper (lsp) applies to a host tool (files) called through the
    eval bridge: one pipeline, whoever calls."""
    server = "basedpyright-langserver"
    found = shutil.which(server) or shutil.which(server, path=str(Path(sys.executable).parent))
    require_real(found is not None, f"{server} (a real language server)")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (tmp_path / "ok.py").write_text("x = 1\n")
    config = {"core": {"approval": {"write": "auto", "exec": "auto"}}}
    async with tether.open_run(tmp_path, conversation_id="c", config=config) as run:
        warm = await run.call("lsp", {"action": "diagnostics", "file": "ok.py"})
        assert not warm.is_error, warm.text_content
        code = "print(tool('write', {'path': 'broken.py', 'content': 'print(undefined_name)\\n'}))"
        result = await run.call(
            "eval", {"code": code, "description": "write a file with an undefined name"}
        )
        assert not result.is_error, result.text_content
        assert "created broken.py" in result.text_content
        assert "broken.py:1:7 error [reportUndefinedVariable]" in result.text_content


async def test_resolve_accept_and_lsp_rename_get_new_diagnostics_by_default(tmp_path):
    """Diagnostics-on-write follows what a call wrote (result.written), not a list of tools: the
    core's apply records the files, so resolve and lsp_rename get diagnostics with no config."""
    server = "basedpyright-langserver"
    found = shutil.which(server) or shutil.which(server, path=str(Path(sys.executable).parent))
    require_real(found is not None, f"{server} (a real language server)")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    (tmp_path / "mod.py").write_text("def area(r):\n    return 3 * r * r\n\n\nprint(area(2))\n")
    config = {"core": {"approval": {"write": "auto"}}, "lsp": {"diagnostics_timeout_s": 30}}
    async with tether.open_run(tmp_path, conversation_id="c", config=config) as run:
        staged = await run.call(
            "ast_edit",
            {"pattern": "print($X)", "rewrite": "print(undefined_name + $X)", "path": "mod.py"},
        )
        assert not staged.is_error, staged.text_content
        accepted = await run.call(
            "resolve", {"edit_id": staged.meta["edit_id"], "action": "accept"}
        )
        assert not accepted.is_error, accepted.text_content
        assert accepted.written == (run.workdir / "mod.py",)
        assert "mod.py:5:7 error [reportUndefinedVariable]" in accepted.text_content
        renamed = await run.call(
            "lsp_rename", {"file": "mod.py", "line": 1, "symbol": "area", "new_name": "surface"}
        )
        assert not renamed.is_error, renamed.text_content
        assert renamed.written == (run.workdir / "mod.py",)
        # the undefined name was reported after resolve: the ledger does not repeat it
        assert "reportUndefinedVariable" not in renamed.text_content


def test_every_hook_and_hookspec_types_run_as_tether_run():
    """Issue 12, item 12: a hook's ``run`` is a ``tether.Run``, in every family's specs and in
    every installed plugin's implementations (the annotations resolve, under TYPE_CHECKING
    imports too)."""
    import inspect

    pm = tether.make_plugin_manager()
    functions = []
    for caller in pm.hook.__dict__.values():
        if not hasattr(caller, "get_hookimpls"):
            continue
        spec = caller.spec
        if spec is not None:
            functions.append((f"spec {caller.name}", spec.function))
        functions += [
            (f"{impl.plugin_name}.{caller.name}", impl.function) for impl in caller.get_hookimpls()
        ]
    with_run = [(where, fn) for where, fn in functions if "run" in inspect.signature(fn).parameters]
    assert len(with_run) >= 10, with_run
    wrong = {}
    for where, fn in with_run:
        module = sys.modules[fn.__module__]
        # names imported under TYPE_CHECKING only are not in the module: give the two spellings
        namespace = {**vars(module), "tether": tether, "Run": tether.Run}
        annotation = fn.__annotations__.get("run")
        hint = eval(annotation, namespace) if isinstance(annotation, str) else annotation
        if hint is not tether.Run:
            wrong[where] = hint
    assert not wrong, wrong
