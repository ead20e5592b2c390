"""A brief (or label) never becomes an option of the worker CLI (issue 22, item 5): a value that
would start an argv element with "-" is refused naming the field, unless the harness's command
puts "--" (end of options) before it. The CLI here is a real one that takes options: python,
whose ``-c`` runs code — what a sandbox-off flag of an agent CLI would be."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from vibe_testlib import command_config

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("field", ["brief", "label"])
async def test_a_value_that_would_become_an_option_is_refused_naming_it(
    vibe_run: Any, tmp_path: Path, field: str
) -> None:
    mark = tmp_path / "OPTION-RAN"
    attack = f"-cimport pathlib; pathlib.Path({str(mark)!r}).touch()"
    args = {"brief": "look", "label": "job", field: attack}
    config = command_config(runners={"fast": {"command": [sys.executable, "{" + field + "}"]}})
    async with vibe_run(config=config) as run:
        result = await run.call("vibe_spawn", args, surface="plan")
        listed = await run.call("vibe_list", {}, surface="plan")
    assert result.is_error, result.text_content
    assert result.text_content.startswith(f'{field}: expected text that does not start with "-"')
    assert '"--"' in result.text_content  # says how the harness allows it
    assert "w1" not in listed.text_content  # no worker was added
    assert not mark.exists()


async def test_after_end_of_options_the_brief_is_an_argument(vibe_run: Any) -> None:
    printer = [sys.executable, "-c", "import sys; print(sys.argv[-1])", "--", "{brief}"]
    async with vibe_run(config=command_config(runners={"fast": {"command": printer}})) as run:
        spawned = await run.call("vibe_spawn", {"brief": "--version", "label": "job"})
        assert not spawned.is_error, spawned.text_content
        waited = await run.call("vibe_wait", {"worker_id": spawned.meta["worker_id"]})
    assert "--version" in waited.text_content and "Python 3" not in waited.text_content


async def test_a_value_inside_an_option_of_the_harness_is_left_alone(vibe_run: Any) -> None:
    printer = [sys.executable, "-c", "import sys; print(sys.argv[-1])", "--prompt={brief}"]
    async with vibe_run(config=command_config(runners={"fast": {"command": printer}})) as run:
        spawned = await run.call("vibe_spawn", {"brief": "-x", "label": "job"})
        assert not spawned.is_error, spawned.text_content
        waited = await run.call("vibe_wait", {"worker_id": spawned.meta["worker_id"]})
    assert "--prompt=-x" in waited.text_content


PLACEHOLDERS = ("brief", "tier", "label", "worker_id", "cwd")


@pytest.mark.parametrize("inner", PLACEHOLDERS)
@pytest.mark.parametrize("field", ["brief", "label"])
async def test_a_placeholder_inside_a_value_reaches_the_worker_as_written(
    vibe_run: Any, field: str, inner: str
) -> None:
    """Placeholders are substituted where the harness's command has them, never inside a
    substituted value: no text from the model is read as a template."""
    template = [
        sys.executable,
        "-c",
        "import sys; print('|'.join(sys.argv[2:]))",
        "--",
        "{brief}",
        "{label}",
        "at={cwd}",
    ]
    value = f"say: {{{inner}}} and {{{inner}}}{{tier}}"
    args = {"brief": "say: the brief", "label": "job", field: value}
    async with vibe_run(config=command_config(runners={"fast": {"command": template}})) as run:
        spawned = await run.call("vibe_spawn", args)
        assert not spawned.is_error, spawned.text_content
        waited = await run.call("vibe_wait", {"worker_id": spawned.meta["worker_id"]})
    printed = waited.text_content.split("result:\n", 1)[1].strip().split("|")
    assert printed == [args["brief"], args["label"], f"at={run.workdir}"], waited.text_content
