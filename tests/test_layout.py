"""Every family is laid out the same way, no function grows past ~60 lines, no class past ~500.

The layout (``docs/architecture.md``, "How a family is laid out") is checked on the sources of
every package in ``plugins/`` and of the plugin template, statically (nothing is imported, so the
check reads a tree that is not installed, e.g. a copy of an older commit). Each rule is also
shown to fail on a family broken in that one way (a check that cannot fail checks nothing).
"""

from __future__ import annotations

import ast
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the template is laid out like a family (its name: what a third party renames)
TEMPLATE = ("contrib/plugin-template", "myplugin")


def families(root: Path) -> list[tuple[str, Path]]:
    """(family name, package directory) of every family and of the template under ``root``."""
    found = [(d.name, d / "src" / f"tether_{d.name}") for d in sorted((root / "plugins").iterdir())]
    where, name = TEMPLATE
    found.append((name, root / where / "src" / f"tether_{name}"))
    return [(name, package) for name, package in found if package.parent.is_dir()]


def _module(package: Path, name: str) -> ast.Module | None:
    path = package / f"{name}.py"
    return ast.parse(path.read_text(), str(path)) if path.is_file() else None


def _functions(module: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        node.name: node
        for node in module.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _decorated(function: ast.FunctionDef | ast.AsyncFunctionDef, marker: str) -> bool:
    """Whether ``function`` carries ``@tether.<marker>`` (called with arguments or not)."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if ast.unparse(target) == f"tether.{marker}":
            return True
    return False


def _assigned(module: ast.Module) -> dict[str, ast.expr]:
    """Module-level names and the value assigned to each."""
    found: dict[str, ast.expr] = {}
    for node in module.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            found[node.target.id] = node.value
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value
    return found


def _calls(value: ast.expr, name: str) -> bool:
    return isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] == name


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _resource_problems(family: str, tools: ast.Module, hooks: ast.Module) -> list[str]:
    """A family that wires resources names the key its tools need ``RESOURCE``, in tools.py,
    after what it holds (``<family>_<class>``: ``astgrep_service`` holds an AstgrepService)."""
    assigned = _assigned(tools)
    keys = [n for n, v in assigned.items() if _calls(v, "ResourceKey") and n != "RESOURCE"]
    problems = [f"tools.py: resource key named {name}, expected RESOURCE" for name in keys]
    if "tether_resources" not in _functions(hooks):
        return problems
    value = assigned.get("RESOURCE")
    if value is None:
        return [*problems, "tools.py: no RESOURCE (the key of the resource its tools need)"]
    if isinstance(value, ast.Call) and _calls(value, "ResourceKey"):
        key, kind = (
            ast.literal_eval(arg) if isinstance(arg, ast.Constant) else ast.unparse(arg)
            for arg in value.args[:2]
        )
        holder = _snake(str(kind).rpartition(":")[2])
        expected = holder if holder.startswith(f"{family}_") else f"{family}_{holder}"
        if key != expected:
            problems.append(f"tools.py: RESOURCE is named {key!r}, expected {expected!r}")
    elif not isinstance(value, ast.Name):  # else one of the core's keys (the question port)
        problems.append("tools.py: RESOURCE is neither a ResourceKey nor a core key")
    return problems


def layout_problems(family: str, package: Path) -> list[str]:
    """What in ``package`` departs from the layout every family shares."""
    modules = {name: _module(package, name) for name in ("hooks", "tools", "config", "hookspecs")}
    problems = [f"{name}.py: missing" for name in ("hooks", "tools", "config") if not modules[name]]
    hooks, tools, config, hookspecs = (
        modules[n] for n in ("hooks", "tools", "config", "hookspecs")
    )
    if hooks is not None:
        problems += [
            f"hooks.py: {name} is not a hookimpl (logic lives in the modules named for it)"
            for name, function in _functions(hooks).items()
            if not _decorated(function, "hookimpl")
        ]
        tether_tools = _functions(hooks).get("tether_tools")
        body = [] if tether_tools is None else [ast.unparse(n) for n in tether_tools.body]
        if body[-1:] != ["return tool_specs(run)"] or len(body) > 2:  # a docstring at most
            problems.append("hooks.py: tether_tools does not return tool_specs(run)")
    if tools is not None:
        factory = _functions(tools).get("tool_specs")
        if factory is None or [a.arg for a in factory.args.args] != ["run"]:
            problems.append("tools.py: no tool_specs(run) (the one spec factory's name)")
        actions = [n for n, v in _assigned(tools).items() if _calls(v, "Actions")]
        problems += [f"tools.py: per-action fields named {n}, expected ACTIONS" for n in actions
                     if n != "ACTIONS"]  # fmt: skip
        if hooks is not None:
            problems += _resource_problems(family, tools, hooks)
    expected_config = f"{family.capitalize()}Config"
    if config is not None and not any(
        isinstance(node, ast.ClassDef) and node.name == expected_config for node in config.body
    ):
        problems.append(f"config.py: no class {expected_config}")
    if hookspecs is not None:
        problems += [
            f"hookspecs.py: {name} lacks the family prefix tether_{family}_"
            for name, function in _functions(hookspecs).items()
            if _decorated(function, "hookspec") and not name.startswith(f"tether_{family}_")
        ]
    return problems


FAMILIES = families(ROOT)


def test_the_families_are_all_there() -> None:
    names = [name for name, _ in FAMILIES]
    assert names == ["ask", "astgrep", "debug", "eval", "lsp", "vibe", "myplugin"]


@pytest.mark.parametrize(("family", "package"), FAMILIES, ids=[name for name, _ in FAMILIES])
def test_every_family_is_laid_out_alike(family: str, package: Path) -> None:
    assert layout_problems(family, package) == []


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path.name}: {old!r} not found (the mutation is stale)"
    path.write_text(text.replace(old, new, 1))


#: one break of each rule, on a copy of a real family: (family, break, what the check must say)
BREAKS: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "tools-file": ("ask", lambda p: (p / "tools.py").rename(p / "tool.py"), "tools.py: missing"),
    "config-file": (
        "eval",
        lambda p: (p / "config.py").rename(p / "settings.py"),
        "config.py: missing",
    ),
    "config-class": (
        "vibe",
        lambda p: _edit(p / "config.py", "class VibeConfig:", "class VibeSettings:"),
        "config.py: no class VibeConfig",
    ),
    "factory-name": (
        "lsp",
        lambda p: _edit(p / "tools.py", "def tool_specs(run", "def lsp_tools(run"),
        "no tool_specs(run)",
    ),
    "hook-not-delegating": (
        "debug",
        lambda p: _edit(p / "hooks.py", "return tool_specs(run)", "return tool_specs(run)[:0]"),
        "tether_tools does not return tool_specs(run)",
    ),
    "logic-in-hooks": (
        "vibe",
        lambda p: _edit(p / "hooks.py", "@tether.hookimpl\ndef tether_tools", "def tether_tools"),
        "hooks.py: tether_tools is not a hookimpl",
    ),
    "hook-prefix": (
        "astgrep",
        lambda p: _edit(p / "hookspecs.py", "def tether_astgrep_grammars(", "def tether_grammars("),
        "tether_grammars lacks the family prefix tether_astgrep_",
    ),
    "resource-constant": (
        "lsp",
        lambda p: _edit(p / "tools.py", "\nRESOURCE:", "\nSUPERVISOR:"),
        "resource key named SUPERVISOR, expected RESOURCE",
    ),
    "resource-name": (
        "astgrep",
        lambda p: _edit(p / "tools.py", '"astgrep_service"', '"parser_registry"'),
        "RESOURCE is named 'parser_registry', expected 'astgrep_service'",
    ),
    "actions-name": (
        "debug",
        lambda p: _edit(p / "tools.py", "\nACTIONS = ", "\nDEBUG_ACTIONS = "),
        "per-action fields named DEBUG_ACTIONS, expected ACTIONS",
    ),
}


@pytest.mark.parametrize("rule", sorted(BREAKS))
def test_the_layout_check_catches_each_break(rule: str, tmp_path: Path) -> None:
    family, breaking, expected = BREAKS[rule]
    package = tmp_path / f"tether_{family}"
    shutil.copytree(dict(FAMILIES)[family], package)
    assert layout_problems(family, package) == []
    breaking(package)
    problems = layout_problems(family, package)
    assert any(expected in problem for problem in problems), problems


# ---------------------------------------------------------------------------------------------
# No function over ~60 lines outside data tables

MAX_LINES = 60
#: where functions are measured: the shipped code, its benchmarks and the scripts (tests apart)
MEASURED = ("core", "plugins", "contrib", "scripts")

#: The longer ones that stay, each with why (a qualified name: path, then function). An entry
#: that no longer exceeds the limit fails the test, so the list only shrinks.
LONG_FUNCTIONS: dict[str, str] = {
    # data tables: one entry per language, read as a table
    "plugins/astgrep/src/tether_astgrep/languages.py::optional_grammars": "table",
    "plugins/astgrep/src/tether_astgrep/grammars.py::builtin_grammars": "table",
    # the converter's hooks: one short closure per JSON kind over the one converter they share
    "core/src/tether/args.py::_make_converter": "table of closures",
    # a script run inside the kernel, shipped as one function's source
    "plugins/eval/src/tether_eval/ipython_boot.py::_tether_boot": "one source for the kernel",
}


def measured_sources(root: Path) -> Iterator[tuple[str, list[str], ast.AST]]:
    """Each measured source file under ``root`` (test suites and their fixtures apart): its
    path relative to ``root``, its lines and its parsed tree."""
    for top in MEASURED:
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root)
            if {"tests", "fixtures", ".venv"} & set(relative.parts):
                continue
            text = path.read_text()
            yield relative.as_posix(), text.splitlines(), ast.parse(text, str(path))


def long_functions(root: Path) -> dict[str, int]:
    """``path::function`` -> lines, for every function over MAX_LINES under ``root``'s
    measured directories (test suites and their fixtures apart)."""
    found: dict[str, int] = {}
    for relative, _, tree in measured_sources(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    found[f"{relative}::{node.name}"] = lines
    return found


def test_no_function_over_sixty_lines_outside_the_allow_list() -> None:
    found = long_functions(ROOT)
    new = {name: lines for name, lines in found.items() if name not in LONG_FUNCTIONS}
    assert not new, (
        f"functions over {MAX_LINES} lines (split them, or say why in LONG_FUNCTIONS): {new}"
    )
    stale = sorted(set(LONG_FUNCTIONS) - set(found))
    assert not stale, f"no longer over {MAX_LINES} lines: take them out of LONG_FUNCTIONS: {stale}"


def test_the_length_check_catches_a_long_function(tmp_path: Path) -> None:
    module = tmp_path / "core" / "src" / "grown.py"
    module.parent.mkdir(parents=True)
    body = "".join(f"    x{n} = {n}\n" for n in range(MAX_LINES))
    module.write_text(f"def grown():\n{body}\n\ndef short():\n    return 1\n")
    assert long_functions(tmp_path) == {"core/src/grown.py::grown": MAX_LINES + 1}


# ---------------------------------------------------------------------------------------------
# No class over ~500 lines outside data tables

MAX_CLASS_LINES = 500

#: The longer ones that stay for now, each with why (``path::Class``). An entry that no longer
#: exceeds the limit fails the test, so the list only shrinks.
LONG_CLASSES: dict[str, str] = {}


def long_classes(root: Path) -> dict[str, int]:
    """``path::Class`` -> its non-blank lines (blank lines between methods are layout, not
    size), for every class over MAX_CLASS_LINES under ``root``'s measured directories (test
    suites and their fixtures apart)."""
    found: dict[str, int] = {}
    for relative, source_lines, tree in measured_sources(root):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                body = source_lines[node.lineno - 1 : node.end_lineno]
                lines = sum(1 for line in body if line.strip())
                if lines > MAX_CLASS_LINES:
                    found[f"{relative}::{node.name}"] = lines
    return found


def test_no_class_over_five_hundred_lines_outside_the_allow_list() -> None:
    found = long_classes(ROOT)
    new = {name: lines for name, lines in found.items() if name not in LONG_CLASSES}
    assert not new, (
        f"classes over {MAX_CLASS_LINES} lines (split them along what they do, or say why in "
        f"LONG_CLASSES): {new}"
    )
    stale = sorted(set(LONG_CLASSES) - set(found))
    assert not stale, (
        f"no longer over {MAX_CLASS_LINES} lines: take them out of LONG_CLASSES: {stale}"
    )


def test_the_class_check_catches_a_long_class(tmp_path: Path) -> None:
    module = tmp_path / "plugins" / "x" / "src" / "grown.py"
    module.parent.mkdir(parents=True)
    methods = "".join(f"    def m{n}(self):\n        return {n}\n\n" for n in range(250))
    module.write_text(f"class Grown:\n{methods}\n\nclass Small:\n    x = 1\n")
    assert long_classes(tmp_path) == {"plugins/x/src/grown.py::Grown": 501}


# ---------------------------------------------------------------------------------------------
# Family READMEs are for users: short, and no dated measurements (those go to the family's
# benchmarks/RESULTS.md, beside the scripts that made them; long reference to its docs/ pages)

MAX_README_LINES = 300
#: what marks a line as a measurement or a piece of history: a date (``2026-12-01``), a commit
#: (``main at d2113bf``, ``sharkdp/fd (ee20f426d)``), a load the figures were taken under
#: (``load ~4``, ``load average 15``)
MEASUREMENT_MARKS = {
    "a date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    "a commit": re.compile(r"(?<![#\w])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "a machine load": re.compile(r"\bload(?: average)?\b[^.\n|]{0,12}?[~≈]?\d"),
}


def readme_problems(root: Path) -> list[str]:
    """What keeps each family README (``plugins/*/README.md``) from being a user's page: over
    MAX_README_LINES lines, or a line that records a measurement (see MEASUREMENT_MARKS)."""
    problems = []
    for readme in sorted(root.glob("plugins/*/README.md")):
        name = readme.relative_to(root).as_posix()
        lines = readme.read_text().splitlines()
        if len(lines) > MAX_README_LINES:
            problems.append(
                f"{name}: {len(lines)} lines, over {MAX_README_LINES} (move reference material "
                "to the family's docs/ pages, linked from the README)"
            )
        for number, line in enumerate(lines, 1):
            for what, mark in MEASUREMENT_MARKS.items():
                if mark.search(line):
                    problems.append(
                        f"{name}:{number}: {what} — a measurement belongs in the family's "
                        f"benchmarks/RESULTS.md: {line.strip()[:80]!r}"
                    )
    return problems


def test_every_family_readme_is_short_and_free_of_measurements() -> None:
    problems = readme_problems(ROOT)
    assert not problems, "\n".join(problems)


def test_the_readme_check_catches_a_long_page_and_each_mark(tmp_path: Path) -> None:
    readme = tmp_path / "plugins" / "x" / "README.md"
    readme.parent.mkdir(parents=True)
    readme.write_text("# x\n" + "text\n" * MAX_README_LINES)
    (long,) = readme_problems(tmp_path)
    assert long.startswith("plugins/x/README.md: 301 lines, over 300"), long
    measured = [
        "Measured 2026-12-01 on the shared machine.",
        "tether before (main at d2113bf) and now:",
        "at load ~12, 5 / 17 ms",
    ]
    readme.write_text("# x\n" + "\n".join(measured) + "\nA `#deadbee1` colour and 1234567 lines.\n")
    found = readme_problems(tmp_path)
    assert [p.split(": ", 1)[1].split(" —")[0] for p in found] == list(MEASUREMENT_MARKS), found
