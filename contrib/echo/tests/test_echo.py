"""tether-echo: the smallest plugin passes the plugin contract."""

from __future__ import annotations

import pytest

import tether
from tether.testing import check_plugin_contract

pytestmark = pytest.mark.anyio


async def test_contract_and_tiers(tmp_path):
    async with tether.open_run(tmp_path) as run:
        await check_plugin_contract(run, ["echo", "echo_write", "echo_exec"])
        tiers = {s["name"]: s["tier"] for s in run.schemas()}
        assert (
            tiers["echo"] == "read"
            and tiers["echo_write"] == "write"
            and tiers["echo_exec"] == "exec"
        )


async def test_exec_reports_exit_code_and_missing_programs(tmp_path):
    async with tether.open_run(tmp_path, config={"core": {"approval": {"exec": "auto"}}}) as run:
        ok = await run.call("echo_exec", {"argv": ["sh", "-c", "echo out; exit 3"]})
        assert ok.is_error and ok.meta["exit_code"] == 3 and ok.text_content == "out\n"
        missing = await run.call("echo_exec", {"argv": ["no-such-program-tether"]})
        assert missing.is_error and "argv: cannot start" in missing.text_content
