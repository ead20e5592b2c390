"""The plugin author's kit must be able to fail: a broken tool and a forgotten ``await`` fail."""

from __future__ import annotations

import attrs
import pytest

import tether
from tether.testing import (
    AUTO_APPROVE,
    call_error,
    call_ok,
    check_plugin_contract,
    check_plugin_contract_sync,
)

pytest_plugins = ["pytester"]


@attrs.frozen
class Args:
    path: str = tether.arg(description="a path")
    limit: int = tether.arg(3, description="a limit")


async def handler(call, args):
    return f"{args.path} {args.limit}"


class Provides:
    def __init__(self, spec):
        self.spec = spec

    @tether.hookimpl
    def tether_tools(self, run):
        return [self.spec]


@pytest.mark.anyio
async def test_a_good_tool_passes_and_a_bad_one_fails(tmp_path):
    good = tether.ToolSpec("good", "read", Args, handler, "A good tool.")
    bad = tether.ToolSpec("bad", "read", Args, handler, "  ")
    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[Provides(good), Provides(bad)]
    ) as run:
        assert await check_plugin_contract(run, ["good"]) == ["good"]
        with pytest.raises(AssertionError, match="bad: empty description"):
            await check_plugin_contract(run, ["bad"])
        with pytest.raises(TypeError, match="check_plugin_contract_sync"):
            check_plugin_contract(tether.SyncRun(run, None), ["good"])  # type: ignore[arg-type]


def test_the_sync_entry_point(tmp_path):
    good = tether.ToolSpec("good", "read", Args, handler, "A good tool.")
    with tether.open_run_sync(tmp_path, entry_points=False, plugins=[Provides(good)]) as run:
        assert check_plugin_contract_sync(run) == ["good"]


@pytest.mark.parametrize("how", ["-p", "conftest"])
def test_a_contract_check_that_is_never_awaited_fails_the_test(pytester, how):
    pytester.makepyfile(
        """
        import pytest, tether
        from tether.testing import check_plugin_contract

        @pytest.mark.anyio
        async def test_forgot(tmp_path):
            async with tether.open_run(tmp_path, entry_points=False) as run:
                check_plugin_contract(run)

        def test_another_unawaited_coroutine_is_left_to_its_suite():
            async def theirs():
                pass

            theirs()
        """
    )
    if how == "conftest":
        pytester.makeconftest('pytest_plugins = ["tether.testing"]')
    flags = ["-p", "tether.testing"] if how == "-p" else []
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *flags)
    result.assert_outcomes(failed=1, passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*coroutine '_check_plugin_contract' was never awaited*"])


@pytest.mark.anyio
async def test_call_helpers_say_what_went_wrong(tmp_path):
    import tether_echo.hooks

    async with tether.open_run(
        tmp_path, entry_points=False, plugins=[tether_echo.hooks], config=AUTO_APPROVE
    ) as run:
        assert (await call_ok(run, "echo_write", {"path": "a", "text": "b"})).text_content
        assert "message: required" in await call_error(run, "echo", {}, match="message")
        with pytest.raises(AssertionError, match="echo failed: invalid arguments"):
            await call_ok(run, "echo", {})
        with pytest.raises(AssertionError, match="expected to fail"):
            await call_error(run, "echo", {"message": "fine"})


def test_check_hookspecs_fails_on_undocumented_or_untested_hooks(tmp_path):
    import types

    from tether.testing import check_hookspecs

    module = types.ModuleType("family_hookspecs")

    @tether.hookspec
    def tether_widgets(run):  # pragma: no cover - a spec
        ...

    module.tether_widgets = tether_widgets
    (tmp_path / "test_x.py").write_text("def test_hook_tether_widgets():\n    pass\n")
    assert check_hookspecs(module, "call `tether_widgets(run)`", tmp_path) == ["tether_widgets"]
    with pytest.raises(AssertionError, match=r"tether_widgets\(run\) is not documented"):
        check_hookspecs(module, "call `tether_widgets()`", tmp_path)
    (tmp_path / "test_x.py").write_text("def test_widgets():\n    pass\n")
    with pytest.raises(AssertionError, match="has no test_hook_tether_widgets"):
        check_hookspecs(module, "call `tether_widgets(run)`", tmp_path)
