"""Typed resources: keys, defaults made in dependency order, kinds checked, options."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import pytest

import tether
from tether.person import APPROVER, QUESTION_PORT
from tether.plugins import PluginInfo
from tether.resources import Default, ResourceKey

pytestmark = pytest.mark.anyio


@runtime_checkable
class Greeter(Protocol):
    def greet(self) -> str: ...


class Hello:
    def greet(self) -> str:
        return "hello"


GREETER: ResourceKey[Greeter] = ResourceKey("test_greeter", Greeter)
LOUD: ResourceKey[str] = ResourceKey("test_loud", str)
BASE: ResourceKey[str] = ResourceKey("test_base", str)


def plugin(name: str, resources: dict, **marks: bool) -> object:
    """A plugin object named ``name`` whose ``tether_resources`` returns ``resources``."""

    class Plugin:
        __name__ = name

        @tether.hookimpl(**marks)
        def tether_resources(self, run):
            return resources

    return Plugin()


def run_with(tmp_path, *plugins: object, **kwargs):
    return tether.open_run(tmp_path, entry_points=False, plugins=list(plugins), **kwargs)


def failed(run) -> dict[str, str]:
    return {i.name: i.reason or "" for i in run.pm.report if i.status == "failed"}


async def test_a_default_is_made_after_what_it_names_whatever_the_hook_order(tmp_path) -> None:
    # the default is asked first (tryfirst) and the resource it is made from last (trylast):
    # wired by hook order, `loud` would see nothing
    loud = plugin(
        "loud",
        {LOUD: Default(lambda run: run.resource(GREETER).greet().upper(), after=(GREETER,))},
        tryfirst=True,
    )
    greeter = plugin("greeter", {GREETER: Hello()}, trylast=True)
    async with run_with(tmp_path, loud, greeter) as run:
        assert run.resource(LOUD) == "HELLO"
        assert run.resources.origin(LOUD) == "loud"
        assert failed(run) == {}


@pytest.mark.parametrize("reverse", [False, True])
async def test_defaults_follow_each_other_in_dependency_order(tmp_path, reverse) -> None:
    first = plugin("first", {LOUD: Default(lambda run: run.resource(BASE) + "!", after=(BASE,))})
    second = plugin("second", {BASE: Default(lambda run: "base")})
    order = [second, first] if reverse else [first, second]
    async with run_with(tmp_path, *order) as run:
        assert run.resource(LOUD) == "base!"


async def test_a_default_gives_way_to_a_directly_wired_resource(tmp_path) -> None:
    made = []
    fallback = plugin("fallback", {GREETER: Default(lambda run: made.append(1) or Hello())})

    class Mine:
        def greet(self) -> str:
            return "mine"

    harness = plugin("harness", {GREETER: Mine()})
    async with run_with(tmp_path, fallback, harness) as run:
        assert run.resource(GREETER).greet() == "mine"
        assert made == []  # never made
        assert failed(run) == {}


async def test_a_cycle_of_defaults_is_reported_and_the_rest_is_wired(tmp_path) -> None:
    a = plugin("a", {LOUD: Default(lambda run: "a", after=(BASE,))})
    b = plugin("b", {BASE: Default(lambda run: "b", after=(LOUD,))})
    ok = plugin("ok", {GREETER: Hello()})
    async with run_with(tmp_path, a, b, ok) as run:
        assert LOUD not in run.resources and BASE not in run.resources
        assert run.resource(GREETER).greet() == "hello"
        reasons = failed(run)
        assert set(reasons) == {"a", "b"}
        assert "forms a cycle" in reasons["a"] and "forms a cycle" in reasons["b"]


async def test_a_default_that_raises_fails_its_plugin_only(tmp_path) -> None:
    def broken(run):
        raise RuntimeError("no luck")

    bad = plugin("bad", {LOUD: Default(broken)})
    ok = plugin("ok", {GREETER: Hello()})
    async with run_with(tmp_path, bad, ok) as run:
        assert LOUD not in run.resources
        assert "default for 'test_loud' raised RuntimeError: no luck" in failed(run)["bad"]
        assert GREETER in run.resources


async def test_a_value_of_the_wrong_kind_from_the_harness_fails_the_opening(tmp_path) -> None:
    with pytest.raises(tether.ConfigError, match=r"test_greeter: expected a .*Greeter, got int"):
        async with run_with(tmp_path, plugin("harness", {GREETER: 3})):
            pass
    # a bare name is checked against the key declared for it, too
    with pytest.raises(
        tether.ConfigError, match=r"approver: expected a tether\.approval\.Approver"
    ):
        async with run_with(tmp_path, plugin("harness", {"approver": "yes"})):
            pass


async def test_a_kind_given_by_name_is_imported_when_a_value_is_checked(tmp_path) -> None:
    import sys

    sys.modules.pop("fractions", None)
    key: ResourceKey[object] = ResourceKey("test_lazy_kind", "fractions:Fraction")
    assert "fractions" not in sys.modules  # declaring the key imported nothing
    with pytest.raises(tether.ConfigError, match=r"test_lazy_kind: expected a fractions\.Fraction"):
        async with run_with(tmp_path, plugin("harness", {key: 0.5})):
            pass
    from fractions import Fraction

    async with run_with(tmp_path, plugin("harness", {key: Fraction(1, 2)})) as run:
        assert run.resource(key) == Fraction(1, 2)


async def test_a_value_of_the_wrong_kind_from_an_installed_plugin_is_dropped(tmp_path) -> None:
    bad = plugin("installed-bad", {GREETER: 3})
    pm = tether.make_plugin_manager(entry_points_group=None)
    pm.register(bad, name="installed-bad")
    pm.report.append(PluginInfo("installed-bad", "1.0", "loaded"))  # as an entry point is
    from tether.resources import Resources

    resources = Resources()
    resources.wire(pm, run=None)
    assert GREETER not in resources
    assert pm.report[0].status == "failed"
    assert "resource 'test_greeter' dropped: test_greeter: expected a" in (
        pm.report[0].reason or ""
    )


async def test_a_missing_resource_names_its_key(tmp_path) -> None:
    async with run_with(tmp_path) as run:
        with pytest.raises(tether.ToolError, match=r"resource 'test_greeter' is not wired"):
            run.resource(GREETER)
        assert run.resource(GREETER, None) is None
        assert run.resource(QUESTION_PORT, "none") == "none"
        assert APPROVER not in run.resources


async def test_a_tool_may_require_a_key(tmp_path) -> None:
    import attrs

    @attrs.frozen
    class Args:
        pass

    async def greet(call, args):
        return call.run.resource(GREETER).greet()

    class Tools:
        @tether.hookimpl
        def tether_tools(self, run):
            return [tether.ToolSpec("greet", "read", Args, greet, "greets", requires=(GREETER,))]

    async with run_with(tmp_path, Tools()) as run:
        assert run.skipped_tools == {
            "greet": "needs resource(s) test_greeter (not wired for this run)"
        }
    async with run_with(tmp_path, Tools(), plugin("g", {GREETER: Hello()})) as run:
        assert (await run.call("greet", {})).text_content == "hello"


async def test_run_options_are_a_familys_to_read(tmp_path) -> None:
    async with run_with(tmp_path) as run:
        assert run.options == {}
        assert not hasattr(run, "vibe")  # the core does not know what vibe means
    async with run_with(tmp_path, vibe=True, options={"colour": "blue"}) as run:
        assert run.options == {"vibe": True, "colour": "blue"}


class Counter:
    """A per-conversation thing: what it has seen, and whether it was closed."""

    made: list[Counter] = []

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.closed = False
        Counter.made.append(self)

    def greet(self) -> str:
        return f"{len(self.seen)}"

    async def aclose(self) -> None:
        self.closed = True


class _CountTools:
    @tether.hookimpl
    def tether_resources(self, run):
        from tether.resources import PerConversation

        return {GREETER: PerConversation(lambda run: Counter(), run)}

    @tether.hookimpl
    def tether_tools(self, run):
        import attrs

        @attrs.frozen
        class Args:
            word: str = tether.arg(description="a word")

        async def note(call, args):
            counter = call.run.resource(GREETER)
            counter.seen.append(args.word)
            return ",".join(counter.seen)

        return [tether.ToolSpec("note", "read", Args, note, "notes", requires=(GREETER,))]


@pytest.mark.parametrize("conversations", [["a", "b"], ["a", None, "b", "a"], [None, None]])
async def test_a_per_conversation_resource_is_each_calling_conversations_own(
    tmp_path, conversations
) -> None:
    """``run.call(conversation=…)`` reaches that conversation's instance (None: the run's own);
    closing one conversation closes its instance only; the run's close closes the rest."""
    Counter.made.clear()
    async with run_with(tmp_path, _CountTools(), conversation_id="run") as run:
        expected: dict[str | None, list[str]] = {}
        for i, conversation in enumerate(conversations):
            word = f"w{i}"
            result = await run.call("note", {"word": word}, conversation=conversation)
            key = conversation or "run"
            expected.setdefault(key, []).append(word)
            assert result.text_content == ",".join(expected[key])
        assert len(run.resources.every(GREETER)) == len(expected)
        # outside a call: the run's own conversation's (made now if it had no call)
        assert run.resource(GREETER).seen == expected.get("run", [])
        named = [c for c in conversations if c is not None]
        if named:
            gone = run.resources.every(GREETER)
            await run.close_conversation(named[0])
            closed = [c for c in gone if c.closed]
            assert [c.seen for c in closed] == [expected[named[0]]]
        made = list(Counter.made)
    assert all(c.closed for c in made)
