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


def test_a_contract_check_that_is_never_awaited_fails_the_test(pytester):
    pytester.makepyfile(
        """
        import pytest, tether
        from tether.testing import check_plugin_contract

        @pytest.mark.anyio
        async def test_forgot(tmp_path):
            async with tether.open_run(tmp_path, entry_points=False) as run:
                check_plugin_contract(run)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*was called but never awaited*"])


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
