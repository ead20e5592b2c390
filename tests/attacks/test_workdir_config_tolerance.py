"""A workdir file the harness did not choose never stops a run, and may only tighten (issue 22,
section 5). Generated: every key of every family's table × {invalid TOML, wrong type, unknown
key, loosening value} × {pyproject.toml, tether.toml}: the run opens, the table is the
harness's, the file is reported, and the ``edit`` that fixes the file works."""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import anyio
import attrs
import pytest

import tether
import tether_files.hooks
from tether.config import CoreConfig, load_workdir_config
from tether_ask.config import AskConfig
from tether_astgrep.config import AstgrepConfig
from tether_debug.config import DebugConfig
from tether_eval.config import EvalConfig
from tether_lsp.config import LspConfig
from tether_vibe.config import VibeConfig

TABLES: dict[str, type] = {
    "core": CoreConfig,
    "lsp": LspConfig,
    "astgrep": AstgrepConfig,
    "debug": DebugConfig,
    "eval": EvalConfig,
    "ask": AskConfig,
    "vibe": VibeConfig,
}
VARIANTS = ["invalid TOML", "wrong type", "unknown key", "loosening value"]
FILES = ["pyproject.toml", "tether.toml"]
HARNESS = {"core": {"approval": {"write": "auto"}}}


def keys() -> list[tuple[str, tuple[str, ...], Any]]:
    """(table, key path, type) of every configuration key, nested tables' keys included."""
    found = []

    def walk(table: str, cls: type, path: tuple[str, ...]) -> None:
        hints = typing.get_type_hints(cls)
        for field in attrs.fields(cls):
            tp = hints[field.name]
            if attrs.has(tp):
                walk(table, tp, (*path, field.name))
            else:
                found.append((table, (*path, field.name), tp))

    for table, cls in TABLES.items():
        walk(table, cls, ())
    return found


def _toml(value: Any) -> str:
    return json.dumps(value)  # JSON scalars and arrays are TOML too


def wrong_value(tp: Any) -> Any:
    """A value of the wrong type for ``tp``."""
    origin = get_origin(tp)
    if tp in (int, float) or (origin is typing.Union and int in get_args(tp)):
        return "not a number"
    if tp is bool:
        return "maybe"
    return 12345  # strings, literals, lists and tables refuse a number


def loosening_value(table: str, path: tuple[str, ...], tp: Any, field: Any, default: Any) -> Any:
    """A value that would widen what the checkout may do: a larger or zero timeout or cap,
    the loosest policy or tier, or any value at all of a harness-only key."""
    if get_origin(tp) is Literal:
        options = get_args(tp)
        order = field.metadata.get("tether_workdir_order")
        return order[0] if order else options[-1] if options[0] == default else options[0]
    if isinstance(default, bool):
        return not default
    if isinstance(default, int | float):
        return default * 10 + 1 if default else 1
    if isinstance(default, dict):
        if path == ("surfaces",):
            return {"plan": "exec"}
        return {"x": "y"} if not default else {k: "x" for k in default}
    if isinstance(default, tuple | list):
        return ["evil"]
    return "evil"


def content(where: str, table: str, path: tuple[str, ...], body: str) -> str:
    header = ".".join((table, *path[:-1]))
    prefix = "tool.tether." if where == "pyproject.toml" else ""
    head = '[project]\nname = "x"\nversion = "0"\n\n' if where == "pyproject.toml" else ""
    return f"{head}[{prefix}{header}]\n{body}\n"


def variant_text(variant: str, where: str, table: str, path: tuple[str, ...], tp: Any) -> str:
    cls = TABLES[table]
    for part in path[:-1]:
        cls = typing.get_type_hints(cls)[part]
    field = attrs.fields_dict(cls)[path[-1]]
    default = field.default.factory() if isinstance(field.default, attrs.Factory) else field.default  # type: ignore[arg-type]
    key = path[-1]
    if variant == "invalid TOML":
        return content(where, table, path, f"{key} = ")  # a half-written edit
    if variant == "wrong type":
        return content(where, table, path, f"{key} = {_toml(wrong_value(tp))}")
    if variant == "unknown key":
        return content(where, table, path, f"{key}_typo = 1")
    value = loosening_value(table, path, tp, field, default)
    if isinstance(value, dict):
        inner = "\n".join(f"{k} = {_toml(v)}" for k, v in value.items())
        return content(where, table, (*path, "_"), "").replace("._]", "]").rstrip() + (
            f"\n\n[{'tool.tether.' if where == 'pyproject.toml' else ''}"
            f"{'.'.join((table, *path))}]\n{inner}\n"
        )
    return content(where, table, path, f"{key} = {_toml(value)}")


CASES = [
    pytest.param(
        table, path, tp, variant, where, id=f"{'.'.join((table, *path))}-{variant}-{where}"
    )
    for table, path, tp in keys()
    for variant in VARIANTS
    for where in FILES
]


@pytest.mark.parametrize(("table", "path", "tp", "variant", "where"), CASES)
def test_a_bad_workdir_file_never_stops_a_run_nor_loosens_it(
    tally, tmp_path: Path, table: str, path: tuple[str, ...], tp: Any, variant: str, where: str
) -> None:
    held = False
    try:
        check_one_file(tmp_path, table, path, tp, variant, where)
        held = True
    finally:
        tally.record("config-tolerance", held=held)


def check_one_file(
    tmp_path: Path, table: str, path: tuple[str, ...], tp: Any, variant: str, where: str
) -> None:
    (tmp_path / where).write_text(variant_text(variant, where, table, path, tp))
    (tmp_path / "a.txt").write_text("old\n")
    layer = load_workdir_config(tmp_path)  # never raises

    async def main() -> tuple[Any, tether.ToolResult, list[str]]:
        async with tether.open_run(
            tmp_path,
            config=HARNESS,
            workdir_config=layer,
            plugins=[tether_files.hooks],
            entry_points=False,
        ) as run:
            loaded = run.config(table, TABLES[table])
            edited = await run.call("edit", {"path": "a.txt", "old": "old", "new": "new"})
            return loaded, edited, list(run.config_notes)

    loaded, edited, notes = anyio.run(main)
    assert not edited.is_error, edited.text_content
    assert (tmp_path / "a.txt").read_text() == "new\n"
    expected = TABLES[table](**HARNESS.get(table, {})) if table != "core" else None
    if expected is not None:
        assert loaded == expected, "the workdir changed the harness's table"
    else:
        assert loaded.call_timeout_s == 120.0 and loaded.surfaces == {}
        assert loaded.approval.read == "auto" and loaded.approval.exec == "ask"
    # a policy already at its loosest (read: auto; write: auto by the harness) has nothing
    # looser to be refused: the same value is no change, and not reported
    unchanged = variant == "loosening value" and path in (
        ("approval", "read"),
        ("approval", "write"),
    )
    if not unchanged:
        assert notes, "the ignored setting was not reported"
        assert edited.meta.get("config_ignored") == notes


@pytest.mark.parametrize("where", FILES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_cli_edit_that_fixes_the_file_still_runs(
    tally, tmp_path: Path, variant: str, where: str
) -> None:
    """Through ``tether call``: a broken workdir file is reported on stderr and in the result,
    and the ``edit`` that fixes it runs (exit 0) — the CLI never exits 2 for it."""
    held = False
    try:
        check_cli_edit(tmp_path, variant, where)
        held = True
    finally:
        tally.record("config-tolerance", held=held)


def check_cli_edit(tmp_path: Path, variant: str, where: str) -> None:
    path = ("call_timeout_s",)
    text = variant_text(variant, where, "core", path, float)
    (tmp_path / where).write_text(text)
    broken_line = text.strip().splitlines()[-1]
    fixed_line = "call_timeout_s = 60"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "call",
            "edit",
            json.dumps({"path": where, "old": broken_line, "new": fixed_line}),
            f"--workdir={tmp_path}",
            "--approve=write",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "TETHER_LOAD_PLUGINS": "files"},
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    reply = json.loads(done.stdout)
    assert reply["meta"]["config_ignored"], reply
    assert "workdir configuration" in done.stderr
    assert fixed_line in (tmp_path / where).read_text()


def test_the_harness_config_stays_strict(tmp_path: Path) -> None:
    """An unknown key in the harness's own configuration (``--config FILE``) is still an error
    naming it: only the workdir's file is tolerated."""
    harness = tmp_path / "harness.toml"
    harness.write_text("[core]\nbogus = 1\n")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "tether.cli", "call", "read", '{"path": "x"}'),
            *(f"--workdir={work}", f"--config={harness}"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "core.bogus" in done.stderr, done.stderr

    async def main() -> None:
        async with tether.open_run(work, config={"lsp": {"bogus": 1}}, entry_points=False) as run:
            run.config("lsp", LspConfig)

    with pytest.raises(tether.ConfigError, match=r"lsp\.bogus"):
        anyio.run(main)


def test_a_workdir_may_lower_a_timeout_but_not_remove_it(tmp_path: Path) -> None:
    (tmp_path / "tether.toml").write_text(
        "[core]\ncall_timeout_s = 7.5\n[lsp]\nstart_timeout_s = 99\n"
    )

    async def main() -> tuple[float, float]:
        async with tether.open_run(
            tmp_path, workdir_config=load_workdir_config(tmp_path), entry_points=False
        ) as run:
            return run.core.call_timeout_s, run.config("lsp", LspConfig).start_timeout_s

    assert anyio.run(main) == (
        7.5,
        30.0,
    )  # lowered (above its floor): kept; raised above the default: ignored
