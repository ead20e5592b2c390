"""What drifted once between the pages and the code, checked so it cannot again: every signature a
page shows against the real one, every default a ``--help`` states against the parser's, every
flag a page gives a command against that command, every configuration key a page sets against the
configuration classes, and every count of formats or dependencies against the code.

Each check is shown to fail on a wrong page of its kind (``test_each_check_catches_its_drift``).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import tomllib
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, get_args, get_origin

import attrs
import pytest
from docs_pages import PAGES, code_of, page_id, resolve

import tether

ROOT = Path(__file__).resolve().parents[1]

# --- signatures ---------------------------------------------------------------------------------

#: ``open_run(workdir, *, conversation_id, config)``, ``tether.ToolSpec(name, tier, …)``,
#: ``Run.call(name, args, surface=)``: a callable's name and the parameters a page lists
SIGNATURE = re.compile(r"^((?:tether(?:_[a-z]+)?\.|Run\.|run\.)?[A-Za-z_][\w.]*)\(([^()]*)\)")
#: a page's own receiver names, and what they are
RECEIVERS = {"run.": "tether.Run.", "Run.": "tether.Run."}


def _callable(name: str) -> Any | None:
    for short, full in RECEIVERS.items():
        if name.startswith(short):
            name = full + name[len(short) :]
    candidates = [name] if name.startswith("tether") else [f"tether.{name}"]
    for candidate in candidates:
        try:
            found = resolve(candidate)
        except (ImportError, AttributeError):
            continue
        if callable(found):
            return found
    return None


def _parameters(listed: str) -> list[str] | None:
    """The names a page lists (``*``, ``**kw``, defaults and annotations dropped); None when the
    text is not a parameter list (a call with values, ``(...)``)."""
    names = []
    for part in (p.strip() for p in listed.split(",")):
        if part in ("", "*", "/", "...", "…"):
            continue
        name = re.split(r"[=:]", part, maxsplit=1)[0].strip().lstrip("*")
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            return None
        names.append(name)
    return names


def signature_problems(code: str) -> Iterator[str]:
    found = SIGNATURE.match(code.strip())
    if found is None:
        return
    name, listed = found.groups()
    target = _callable(name)
    if target is None:
        return
    names = _parameters(listed)
    if not names:
        return
    try:
        parameters = inspect.signature(target).parameters
        real = list(parameters)
        if real[:1] in (["self"], ["cls"]):  # a method, shown without its receiver
            real = real[1:]
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    except (TypeError, ValueError):
        return
    parts = [p.strip() for p in listed.split(",") if p.strip() not in ("", "*", "/")]
    # `open_run(trust_workdir=True)`: a call with values shows some arguments, not the signature
    example = all(re.fullmatch(r"\w+\s*=\s*\S.*", part) for part in parts)
    # `run.spawn(argv, **kwargs)`: any keyword it passes on is a real one
    partial = example or takes_any or "..." in listed or "…" in listed
    unknown = [n for n in names if n not in real and not takes_any]
    missing = [] if partial else [n for n in real if n not in names and not n.startswith("_")]
    if unknown or missing:
        said = []
        if unknown:
            said.append(f"it has no {', '.join(unknown)}")
        if missing:
            said.append(f"the page omits {', '.join(missing)} (write … to show only some)")
        yield f"`{code.strip()}`: {'; '.join(said)} (real: {', '.join(real)})"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_signature_a_page_shows_is_the_real_one(page: Path) -> None:
    problems = [p for code in code_of(page) for p in signature_problems(code)]
    assert not problems, f"{page_id(page)}: " + "; ".join(problems)


# --- the command line ---------------------------------------------------------------------------


@cache
def commands() -> dict[str, argparse.ArgumentParser]:
    """Every ``tether`` subcommand's parser, with every installed plugin's commands."""
    from tether.cli import _parser

    parser = _parser(tether.make_plugin_manager())
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


#: ``(default: .)`` in an option's help
STATED_DEFAULT = re.compile(r"\(default: ([^)]*)\)")


def default_problems(command: str, parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        stated = STATED_DEFAULT.search(action.help or "")
        if stated is None or not action.option_strings:
            continue
        said = stated.group(1)
        flag = action.option_strings[-1]
        if " " not in said:  # a value: it is the parser's default
            if str(action.default) != said:
                yield f"tether {command} {flag}: the help says the default is {said!r}, it is {action.default!r}"
        elif action.default not in (None, False):  # a description: nothing is filled in
            yield f"tether {command} {flag}: the help describes the default ({said!r}) but it is {action.default!r}"


@pytest.mark.parametrize("command", sorted(commands()))
def test_every_default_a_help_states_is_the_parsers(command: str) -> None:
    assert not list(default_problems(command, commands()[command]))


#: ``tether call lsp '{…}' --workdir DIR --approve write``: a command and the flags given to it
#: (tether is the command run: first, or after ``&&``, ``;``, ``$``, ``(``, ``--``; not an
#: argument of another program's flag, as in ``inspector --cli tether mcp … --method …``)
COMMAND_LINE = re.compile(r"(?:^|&&|;|\$|\(|(?<!-)-- )\s*tether ([a-z]+)\b([^`\n|;&]*)", re.M)


def flag_problems(text: str) -> Iterator[str]:
    for found in COMMAND_LINE.finditer(text):
        command, rest = found.groups()
        parser = commands().get(command)
        if parser is None:
            continue
        known = {s for a in parser._actions for s in a.option_strings}
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest):
            if flag not in known:
                yield f"`tether {command}` has no {flag} ({found.group(0).strip()!r})"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_flag_a_page_gives_a_command_exists(page: Path) -> None:
    problems = sorted({p for code in code_of(page) for p in flag_problems(code)})
    assert not problems, f"{page_id(page)}: " + "; ".join(problems)


# --- configuration ------------------------------------------------------------------------------


@cache
def config_classes() -> dict[str, type]:
    """Each table's configuration class: ``[core]`` and one per installed family."""
    from tether.config import CoreConfig

    tables: dict[str, type] = {"core": CoreConfig}
    for family in ("lsp", "astgrep", "debug", "eval", "ask", "vibe"):
        try:
            module = importlib.import_module(f"tether_{family}.config")
        except ImportError:
            continue
        (cls,) = (
            v for k, v in vars(module).items() if k.lower() == f"{family}config" and attrs.has(v)
        )
        tables[family] = cls
    return tables


def _attrs_class(annotation: Any) -> type | None:
    """The attrs class a field holds (``X``, ``X | None``), if any (not a mapping of them)."""
    if isinstance(annotation, type) and attrs.has(annotation):
        return annotation
    if get_origin(annotation) in (dict, Mapping):
        return None
    for arg in get_args(annotation):
        if isinstance(arg, type) and attrs.has(arg):
            return arg
    return None


def _mapped_class(annotation: Any) -> type | None:
    """``X`` of a ``dict[str, X]`` field whose values are attrs classes (``[vibe.runners.fast]``)."""
    if get_origin(annotation) in (dict, Mapping):
        args = get_args(annotation)
        if len(args) == 2 and isinstance(args[1], type) and attrs.has(args[1]):
            return args[1]
    return None


def key_problems(cls: type, table: Mapping[str, Any], where: str) -> Iterator[str]:
    attrs.resolve_types(cls)  # a module with `from __future__ import annotations` has strings
    fields = {f.name: f for f in attrs.fields(cls)}
    for key, value in table.items():
        field = fields.get(key)
        if field is None:
            yield f"[{where}] has no key {key!r} (it has: {', '.join(sorted(fields))})"
            continue
        inner = _attrs_class(field.type)
        if inner is not None and isinstance(value, Mapping):
            yield from key_problems(inner, value, f"{where}.{key}")
        each = _mapped_class(field.type)
        if each is not None and isinstance(value, Mapping):
            for name, entry in value.items():
                if isinstance(entry, Mapping):
                    yield from key_problems(each, entry, f"{where}.{key}.{name}")


def toml_problems(text: str) -> Iterator[str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    data = data.get("tool", {}).get("tether", data) if "tool" in data else data
    for table, keys in data.items():
        cls = config_classes().get(table)
        if cls is not None and isinstance(keys, Mapping):
            yield from key_problems(cls, keys, table)


#: `[eval] idle_budget_s = 300`, `[core] call_timeout_s`: a table and a key in one code span
INLINE_KEY = re.compile(r"^\[([a-z]+(?:\.[a-z_]+)*)\]\s+([a-z_]+)\b")
#: "A `[core]` table (`approval`, `call_timeout_s`, …)": a page listing a table's keys
KEY_LIST = re.compile(r"`\[([a-z]+)\]` table \(((?:`[a-z_]+`(?:, )?)+)\)")


def config_problems(page_text: str) -> Iterator[str]:
    for block in re.findall(r"```toml\n(.*?)```", page_text, re.S):
        yield from toml_problems(block)
    for found in re.finditer(r"`([^`\n]+)`", page_text):
        inline = INLINE_KEY.match(found.group(1))
        if inline is None:
            continue
        table, key = inline.groups()
        head, *rest = table.split(".")
        cls = config_classes().get(head)
        for part in rest:
            if cls is not None:
                attrs.resolve_types(cls)
            field = {f.name: f for f in attrs.fields(cls)}.get(part) if cls else None
            cls = _attrs_class(field.type) if field is not None else None
        if cls is not None and key not in {f.name for f in attrs.fields(cls)}:
            yield f"`{found.group(1)}`: [{table}] has no key {key!r}"
    for found in KEY_LIST.finditer(page_text):
        table, listed = found.groups()
        cls = config_classes().get(table)
        if cls is None:
            continue
        named = set(re.findall(r"`([a-z_]+)`", listed))
        real = {f.name for f in attrs.fields(cls)}
        if named != real:
            yield (
                f"the [{table}] keys listed ({', '.join(sorted(named))}) are not its keys "
                f"({', '.join(sorted(real))})"
            )


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_configuration_key_a_page_sets_exists(page: Path) -> None:
    problems = sorted(set(config_problems(page.read_text())))
    assert not problems, f"{page_id(page)}: " + "; ".join(problems)


# --- counts -------------------------------------------------------------------------------------

NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}


@cache
def counts() -> dict[str, int]:
    from tether.registry import SchemaFormat

    core = tomllib.loads((ROOT / "core" / "pyproject.toml").read_text())["project"]
    return {"formats": len(get_args(SchemaFormat)), "dependencies": len(core["dependencies"])}


def count_problems(text: str, where: str) -> Iterator[str]:
    flat = " ".join(text.split())
    for word, noun in re.findall(
        r"\b(two|three|four|five|six|seven|eight|nine) (formats|dependencies)\b", flat, re.I
    ):
        if NUMBERS[word.lower()] != counts()[noun]:
            yield f"{where} says {word} {noun}: there are {counts()[noun]}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_count_a_page_gives_is_the_codes(page: Path) -> None:
    problems = list(count_problems(page.read_text(), page_id(page)))
    assert not problems, "; ".join(problems)


# --- each check fails on its kind of drift ------------------------------------------------------


def test_each_check_catches_its_drift() -> None:
    """A check that cannot fail checks nothing: each is given a page of its kind that is wrong."""
    assert list(signature_problems("open_run(workdir, *, conversation_id, config)"))
    assert not list(
        signature_problems(
            "open_run(workdir, *, conversation_id, config, plugins, vibe, options, "
            "entry_points, workdir_config, trust_workdir)"
        )
    )
    assert list(signature_problems("Run.call(name, args, surfce=)"))
    assert not list(signature_problems("run.spawn(argv, ...)"))
    wrong = argparse.ArgumentParser()
    wrong.add_argument("--workdir", default=None, help="the checkout (default: .)")
    assert list(default_problems("mcp", wrong))
    assert list(flag_problems("tether call lsp '{}' --no-such-flag"))
    assert not list(flag_problems("tether call lsp '{}' --workdir . --approve write"))
    assert list(config_problems("```toml\n[core]\ncall_timeout = 5\n```"))
    assert list(config_problems("`[eval] idle_budget = 300`"))
    assert not list(config_problems("`[eval] idle_budget_s = 300`"))
    assert list(config_problems("A `[core]` table (`approval`, `call_timeout_s`) and"))
    runner = '```toml\n[vibe.runners.fast]\n{key} = ["codex", "exec", "{{brief}}"]\n```'
    assert not list(config_problems(runner.format(key="command")))
    assert list(config_problems(runner.format(key="comand")))
    assert list(count_problems("the schemas in three formats", "x"))
    assert list(count_problems("its four dependencies", "x"))


#: what only one distribution may say of itself (tether-bwrap needs bubblewrap: Linux only)
LINUX_ONLY = {"contrib/bwrap/README.md"}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_page_but_bwraps_says_linux_only(page: Path) -> None:
    """The core runs on macOS through the portable backend (the README's "Platforms"): a
    family's page saying "Linux only" contradicted it in six READMEs."""
    if page_id(page) in LINUX_ONLY or page_id(page) == "README.md":
        return
    said = re.findall(r"[^.]*\bLinux only\b[^.]*", " ".join(page.read_text().split()))
    assert not [s for s in said if "bwrap" not in s and "Elsewhere than" not in s], said


def test_every_core_module_a_distribution_imports_is_public() -> None:
    """``docs/api.md`` said ``tether.config`` and ``tether.cli`` were private while six
    distributions imported them: every core module a plugin's or contrib's sources import is one
    the page's public tiers name."""
    api = (ROOT / "docs" / "api.md").read_text()
    public_part = api.split("## 3. Private")[0]
    named = set(re.findall(r"`(tether\.[a-z_]+)", public_part))
    used: dict[str, set[str]] = {}
    for source in [*ROOT.glob("plugins/*/src/**/*.py"), *ROOT.glob("contrib/*/src/**/*.py")]:
        for module in re.findall(
            r"^\s*(?:from|import) (tether\.[a-z_]+)", source.read_text(), re.M
        ):
            used.setdefault(module, set()).add(source.relative_to(ROOT).parts[1])
    # the error classes are exported from `tether` itself; importing their module is the same name
    private = {m: sorted(who) for m, who in used.items() if m not in named and m != "tether.errors"}
    assert not private, f"core modules imported but not public in docs/api.md: {private}"
