"""The documentation cannot drift from the code: every hook, every ``tether``/``tether_<family>``
Python name, every tool and action a page mentions exists, and every complete program on a page
runs as written.

Pages: ``docs/*.md`` and every README. What is checked is what a reader copies: inline code and
code blocks. Names are resolved by importing (the longest importable module, then attributes);
tools and actions against a run with every plugin installed (tools skipped for a missing resource
count as existing; a tool's action selector — ``action`` or ``op`` — is checked against its
schema's enum).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import pytest
from docs_pages import (
    CALL,
    DOTTED,
    FILE_SUFFIXES,
    HOOK,
    PAGES,
    ROOT,
    SELECTOR,
    TOOL_ACTION,
    code_of,
    page_id,
    resolve,
)

import tether


@cache
def hook_names() -> frozenset[str]:
    pm = tether.make_plugin_manager()
    return frozenset(
        name
        for name in dir(pm.hook)
        if name.startswith("tether_") and getattr(pm.hook, name).has_spec()
    )


def is_known_name(token: str) -> bool:
    """A ``tether_*`` token that is not a hook: a package, or a name of the test kit (fixtures)."""
    import tether.testing

    if hasattr(tether.testing, token):
        return True
    try:
        resolve(token)
    except (ImportError, AttributeError):
        return False
    return True


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_hook_a_page_names_exists(page: Path) -> None:
    unknown = sorted(
        {
            token
            for code in code_of(page)
            for token in HOOK.findall(code)
            if token not in hook_names() and not is_known_name(token)
        }
    )
    assert not unknown, f"{page_id(page)} names hooks (or names) that do not exist: {unknown}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_python_name_a_page_names_exists(page: Path) -> None:
    missing = []
    for code in code_of(page):
        for token in sorted(set(DOTTED.findall(code))):
            if token.rpartition(".")[2] in FILE_SUFFIXES:
                continue
            try:
                resolve(token)
            except (ImportError, AttributeError) as exc:
                missing.append(f"{token} ({type(exc).__name__}: {exc})")
    assert not missing, f"{page_id(page)} names what does not exist: {missing}"


@cache
def tools() -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
    """(schema by tool name, every tool name) of a run with every plugin, vibe mode on."""

    async def collect() -> tuple[dict[str, dict[str, Any]], frozenset[str]]:
        with tempfile.TemporaryDirectory() as workdir:
            async with tether.open_run(workdir, conversation_id="docs", vibe=True) as run:
                schemas = {s["name"]: s["input_schema"] for s in run.schemas(format="json")}
                return schemas, frozenset(schemas) | frozenset(run.registry.skipped)

    return anyio.run(collect)


def selectors(tool: str) -> dict[str, list[str]]:
    """The action selector of ``tool`` (``{"action": [...]}``), if it has one."""
    props = tools()[0].get(tool, {}).get("properties", {})
    return {f: props[f]["enum"] for f in ("action", "op") if "enum" in props.get(f, {})}


def call_problems(text: str) -> Iterator[str]:
    _, names = tools()
    for m in CALL.finditer(text):
        tool, args = m[1], m[2] or ""
        if tool not in names:
            yield f"tool {tool!r} does not exist ({m[0]!r})"
            continue
        for field, value in SELECTOR.findall(args):
            allowed = selectors(tool).get(field)
            if allowed is None:
                yield f"{tool} has no {field!r} field ({m[0]!r})"
            elif value not in allowed:
                yield f"{tool} has no {field} {value!r}: it has {allowed} ({m[0]!r})"


def family_prefixes() -> set[str]:
    """``lsp``, ``vibe``, ``ast``…: a prefix two or more tools share (``lsp`` and ``lsp_rename``),
    so a name written ``<prefix>_<word>`` on a page is a tool's."""
    names = tools()[1]
    heads = [name.split("_")[0] for name in names]
    return {head for head in heads if heads.count(head) >= 2}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_tool_and_action_a_page_names_exists(page: Path) -> None:
    problems = list(call_problems(page.read_text()))
    for code in code_of(page):
        head = code.split("_")[0]
        if re.fullmatch(r"[a-z]+(?:_[a-z]+)+", code) and head in family_prefixes():
            if code not in tools()[1]:
                problems.append(f"`{code}` is not a tool")
        m = TOOL_ACTION.match(code)
        if m is None or not selectors(m[1]):
            continue
        (allowed,) = selectors(m[1]).values()
        if m[2] not in allowed:
            problems.append(f"`{code}`: {m[1]} has no action {m[2]!r} (it has {allowed})")
    assert not problems, f"{page_id(page)}: " + "; ".join(problems)


def test_the_checks_catch_each_kind_of_drift() -> None:
    """Each check fails on a wrong name of its kind (a check that cannot fail checks nothing)."""
    assert "tether_tools" in hook_names() and "tether_astgrep_grammars_x" not in hook_names()
    assert not is_known_name("tether_no_such_thing")
    with pytest.raises(AttributeError):
        resolve("tether.no_such_name")
    with pytest.raises(AttributeError):
        resolve("tether_lsp.supervisor:NoSuchClass")
    assert resolve("tether.testing.require_real") is not None
    assert list(call_problems('run.call("lsp", {"action": "hover"})')) == []
    wrong = list(call_problems('run.call("lsp", {"action": "rename", "file": "a.py"})'))
    assert wrong and "has no action 'rename'" in wrong[0]
    assert list(call_problems("tether call nosuchtool '{}'"))
    assert {"lsp", "vibe", "ast", "echo"} <= family_prefixes()


#: every Python source a reader may open (docstrings cite pages too)
SOURCES = sorted(
    p
    for d in ("core/src", "plugins", "contrib")
    for p in (ROOT / d).rglob("*.py")
    if "/tests/" not in p.as_posix() and ".venv" not in p.parts
)
CITED_PAGE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[A-Za-z][\w-]*\.md)\b")


def test_every_page_a_page_or_docstring_cites_is_in_the_repository() -> None:
    """``see DESIGN.md``: a page cited by name exists (beside the citing file, at the root, or
    anywhere in the repository under that name)."""
    names = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    missing = []
    for source in [*PAGES, *SOURCES]:
        for cited in set(CITED_PAGE.findall(source.read_text())):
            if "<" in cited or (source.parent / cited).exists() or (ROOT / cited).exists():
                continue
            if "/" not in cited and cited in names:
                continue
            missing.append(f"{source.relative_to(ROOT)} cites {cited}")
    assert not missing, missing


#: what a page once claimed wrongly, each still worth guarding against
FALSE_CLAIMS = {
    # only the core's writers (tether.workdir.writing) confine and record; a handler's open() is unchecked
    "docs/architecture.md": [r"every file write checked"],
}


@pytest.mark.parametrize("page", sorted(FALSE_CLAIMS))
def test_no_page_repeats_a_claim_found_false(page: str) -> None:
    text = " ".join((ROOT / page).read_text().split())
    assert not [c for c in FALSE_CLAIMS[page] if re.search(c, text)]


def test_writing_a_plugin_installs_the_family_it_extends_from_a_checkout(tmp_path: Path) -> None:
    """The page's install command for a plugin that extends tether-lsp, run from a copy of the
    template beside the checkout (resolved, not installed; the plugin's own test extra is left
    out). Resolved against the package index like a newcomer's machine: offline, the answer
    would depend on what this machine's uv cache happens to hold (a new dependency's index page
    is not there on a fresh machine)."""
    import shlex
    import shutil

    page = (ROOT / "docs" / "writing-a-plugin.md").read_text()
    command = next(
        (line for line in page.splitlines() if line.startswith("uv pip install") and "lsp" in line),
        None,
    )
    assert command is not None, "writing-a-plugin.md does not say how to install tether-lsp"
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed")
    (tmp_path / "tether").symlink_to(ROOT)
    plugin = tmp_path / "tether-wordcount"
    shutil.copytree(ROOT / "contrib" / "plugin-template", plugin)
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    args = [a.replace(".[test]", ".") for a in shlex.split(command)[1:]]
    out = subprocess.run(
        [uv, *args, "--dry-run", "--python", str(venv / "bin" / "python")],
        cwd=plugin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "tether-lsp" in out.stderr + out.stdout


def test_writing_a_plugin_says_how_the_test_kit_loads_a_plugin_without_entry_points() -> None:
    text = " ".join((ROOT / "docs" / "writing-a-plugin.md").read_text().split())
    assert "without entry points" in text and "plugins=[tether_myplugin.hooks]" in text


#: a complete program: it runs its own event loop (or a sync run) at top level
PROGRAM = re.compile(
    r"^(?:anyio\.run\(|asyncio\.run\(|with tether\.open_run_sync|if __name__)", re.M
)


def programs() -> list[Any]:
    found = []
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        for index, code in enumerate(blocks):
            if PROGRAM.search(code):
                found.append(pytest.param(code, id=f"{page_id(page)}#{index}"))
    return found


@pytest.mark.parametrize("code", programs())
def test_every_program_on_a_page_runs_as_written(code: str) -> None:
    """Run in the checkout (where a page's "." is a checkout with a README), nothing prepared."""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr[-3000:]
