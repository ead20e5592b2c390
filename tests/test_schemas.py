"""Every installed tool's JSON Schema and the core's converter agree (the kit's property test,
run here over every family at once)."""

from __future__ import annotations

import pytest

import tether
from tether.testing import check_schema_agreement
from tether_ask import CallbackPort


class QuestionPort:
    @tether.hookimpl
    def tether_resources(self, run):
        async def nobody(card):
            raise tether.NoPerson("a schema test")

        return {"question_port": CallbackPort(nobody)}


def every_tool() -> list[tether.ToolSpec]:
    import anyio

    async def collect():
        async with tether.open_run(
            ".", conversation_id="schemas", vibe=True, plugins=[QuestionPort()]
        ) as run:
            return list(run.tools.values())

    return anyio.run(collect)


TOOLS = every_tool()


def test_all_families_are_covered():
    names = {t.name for t in TOOLS}
    assert {
        "lsp",
        "lsp_rename",
        "ast_grep",
        "ast_edit",
        "resolve",
        "debug",
        "eval",
        "ask_user",
        "vibe_spawn",
        "read",
    } <= names


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_every_schema_and_converter_agree(spec):
    check_schema_agreement(spec, examples=80)


def _node_22() -> str | None:
    """A node >= 22 (the Inspector's floor): tether-eval[node]'s beside this interpreter, or
    PATH's."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    for node in (Path(sys.executable).parent / "node", shutil.which("node")):
        if node and Path(node).is_file():
            version = subprocess.run([str(node), "--version"], capture_output=True, text=True)
            if version.returncode == 0 and int(version.stdout.lstrip("v").split(".")[0]) >= 22:
                return str(node)
    return None


def test_the_mcp_inspector_finds_no_portability_problem_in_any_tool(tmp_path):
    """The real MCP Inspector CLI's `--strict` portability check over `tether mcp`'s tools
    (every family): 0 errors and 0 warnings. A type array (`["string", "null"]`) is one
    warning per optional field; clients that map schemas to a single-type dialect drop it."""
    import subprocess
    import sys
    from pathlib import Path

    from tether.testing import require_real

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "contrib" / "mcp-bridge" / "tests" / "clients"))
    import setup_clients

    node = _node_22()
    require_real(node is not None, "node >= 22 (tether-eval[node] brings one)")
    try:
        env = setup_clients.ensure("inspector")
    except (OSError, subprocess.CalledProcessError) as exc:
        require_real(False, f"the MCP Inspector CLI ({exc})")
    cli = env / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "cli"
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    out = subprocess.run(
        [
            *(str(node), str(cli / "build" / "index.js"), "--cli", "--strict"),
            *(sys.executable, "-m", "tether.cli", "mcp", "--workdir", str(workdir)),
            *("--method", "tools/list"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    listed = {t["name"] for t in __import__("json").loads(out.stdout)["tools"]}
    assert {"lsp", "ast_grep", "debug", "read"} <= listed, listed
    # with findings it prints each ("Warning: tool …") and "N errors, N warnings across N
    # tools."; with none, nothing
    assert "Warning:" not in out.stderr and "Error:" not in out.stderr, out.stderr[-3000:]
    assert " warnings across " not in out.stderr, out.stderr[-3000:]


def every_declaration() -> list[tuple[str, str, dict]]:
    """(tool, format, declaration) for every tool of every installed family, in every format."""
    import anyio

    from tether.dialects import CHECKERS

    async def collect():
        async with tether.open_run(
            ".", conversation_id="dialects", vibe=True, plugins=[QuestionPort()]
        ) as run:
            out = []
            for fmt in CHECKERS:
                for schema in run.schemas(format=fmt):
                    name = schema.get("name") or schema["function"]["name"]
                    out.append((name, fmt, schema))
            return out

    return anyio.run(collect)


DECLARATIONS = every_declaration()


@pytest.mark.parametrize(
    ("tool", "fmt", "declaration"), DECLARATIONS, ids=[f"{t}-{f}" for t, f, _ in DECLARATIONS]
)
def test_every_tool_in_every_format_keeps_its_dialects_rules(tool, fmt, declaration):
    """OpenAI's, Anthropic's and Gemini's rules (tether.dialects) over every installed tool;
    the Gemini form also parses as google-genai's FunctionDeclaration."""
    from tether.dialects import dialect_problems

    assert dialect_problems(declaration, fmt) == []
    if fmt == "gemini":
        from tether.testing import require_real

        try:
            from google.genai import types as genai
        except ImportError:
            require_real(False, "google-genai (the core's test extra)")
        genai.FunctionDeclaration.model_validate(declaration)


def test_every_family_and_format_is_in_the_dialect_sweep():
    tools = {t for t, _, _ in DECLARATIONS}
    assert {"ast_grep", "ast_edit", "vibe_list", "lsp", "debug", "eval", "ask_user"} <= tools
    assert {f for _, f, _ in DECLARATIONS} == {"json", "openai", "anthropic", "gemini"}
