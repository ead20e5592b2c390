"""The Python interpreter through the eval tool, with a real ipykernel."""

from __future__ import annotations

import anyio
import pytest

import tether

pytestmark = pytest.mark.anyio


async def test_state_persists_and_last_expression_is_shown(eval_run, run_cell) -> None:
    async with eval_run() as run:
        first = await run_cell(run, "import math\nx = 41\nprint('set')")
        assert not first.is_error, first.text_content
        assert first.text_content.strip() == "set"
        second = await run_cell(run, "x + 1")
        assert second.text_content.strip() == "42"
        third = await run_cell(run, "math.sqrt(x + 8)")
        assert third.text_content.strip() == "7.0"


async def test_display_and_dataframe_table(eval_run, run_cell) -> None:
    async with eval_run() as run:
        shown = await run_cell(run, "display('first'); display({'k': 1}); 'last'")
        assert shown.text_content.splitlines() == ["'first'", "{'k': 1}", "'last'"]
        table = await run_cell(
            run,
            "import pandas as pd\npd.DataFrame({'name': ['ada', 'alan'], 'year': [1815, 1912]})",
        )
        lines = table.text_content.splitlines()
        assert lines[0].split() == ["name", "year"]
        assert lines[1].split() == ["0", "ada", "1815"]
        assert lines[2].split() == ["1", "alan", "1912"]


async def test_matplotlib_agg_and_show_still_returns_the_png(eval_run, run_cell, images) -> None:
    async with eval_run() as run:
        headless = await run_cell(
            run,
            "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [3, 1, 2])\nplt.title('agg')\nplt.show()",
        )
        assert not headless.is_error, headless.text_content
        [png] = images(headless)
        assert png.mime_type == "image/png" and png.data.startswith(b"\x89PNG")
        two = await run_cell(
            run,
            "fig1 = plt.figure(); plt.plot([1]); fig2 = plt.figure(); plt.plot([2])",
        )
        assert len(images(two)) == 2
        # Captured figures are closed: the next cell does not show them again.
        after = await run_cell(run, "len(plt.get_fignums())")
        assert images(after) == [] and after.text_content.strip() == "0"


async def test_inline_backend_figure_is_shown_once(eval_run, run_cell, images) -> None:
    async with eval_run() as run:
        result = await run_cell(run, "import matplotlib.pyplot as plt\nplt.plot([1, 2]);")
        assert len(images(result)) == 1, result.content


async def test_errors_are_clean_tracebacks(eval_run, run_cell) -> None:
    async with eval_run() as run:
        result = await run_cell(run, "def f():\n    return 1 / 0\nprint('before')\nf()")
        assert result.is_error
        text = result.text_content
        assert "\x1b" not in text
        assert text.startswith("before\n")
        assert "ZeroDivisionError: division by zero" in text
        assert "return 1 / 0" in text
        syntax = await run_cell(run, "def broken(:\n    pass")
        assert syntax.is_error and "SyntaxError" in syntax.text_content
        assert "\x1b" not in syntax.text_content


async def test_shell_idioms(eval_run, tmp_path, run_cell) -> None:
    async with eval_run() as run:
        bang = await run_cell(run, "!echo hello from the shell")
        assert bang.text_content.strip() == "hello from the shell"
        bash = await run_cell(run, "%%bash\necho one\necho two >&2\nexit 0")
        assert "one" in bash.text_content and "two" in bash.text_content
        (run.workdir / "sub").mkdir()
        cd = await run_cell(run, "%cd sub\nimport os\nos.getcwd()")
        assert cd.text_content.strip().endswith(f"{run.workdir / 'sub'}'")
        timeit = await run_cell(run, "%%timeit -n 3 -r 2\nsum(range(100))")
        assert "per loop" in timeit.text_content, timeit.text_content


async def test_input_is_refused_with_a_reason(eval_run, run_cell) -> None:
    async with eval_run() as run:
        result = await run_cell(run, "name = input('your name? ')")
        assert result.is_error
        assert "EOFError" in result.text_content
        assert "nobody can type here" in result.text_content


async def test_bad_arguments_name_the_field(eval_run, run_cell) -> None:
    async with eval_run() as run:
        missing = await run.call("eval", {"code": "1"})
        assert missing.is_error and "description" in missing.text_content
        short = await run.call("eval", {"code": "1", "description": "too short"})
        assert short.is_error
        assert "description: 5 to 10 words saying what the cell does, got 2" in short.text_content
        long = await run.call("eval", {"code": "1", "description": " ".join(["word"] * 11)})
        assert long.is_error and "got 11" in long.text_content
        language = await run_cell(run, "1", language="ruby")
        assert language.is_error and "language" in language.text_content
        assert '"javascript"' in language.text_content and '"python"' in language.text_content
        empty = await run_cell(run, "   ")
        assert empty.is_error and "code:" in empty.text_content


async def test_contract(eval_run) -> None:
    async with eval_run(idle_budget_s=300) as run:
        assert await tether.testing.check_plugin_contract(run, ["eval"]) == ["eval"]
        [schema] = [s for s in run.schemas() if s["name"] == "eval"]
        assert "prints nothing for 5 min is interrupted" in schema["description"]
        assert schema["input_schema"]["required"] == ["code", "description"]
        # The tool is exec tier: absent from read-only surfaces.
        assert "eval" not in [s["name"] for s in run.schemas(surface="plan")]


async def test_modules_of_the_workdir_are_importable(eval_run, run_cell) -> None:
    async with eval_run() as run:
        (run.workdir / "helpers.py").write_text("def greet(name):\n    return f'hi {name}'\n")
        result = await run_cell(run, "from helpers import greet\ngreet('ada')")
        assert result.text_content.strip() == "'hi ada'", result.text_content


async def test_output_of_a_thread_after_its_cell_is_shown_labelled(eval_run, run_cell) -> None:
    async with eval_run() as run:
        started = await run_cell(
            run, "import threading\nthreading.Timer(0.2, lambda: print('late line')).start()\n1"
        )
        assert started.text_content.strip() == "1"
        await anyio.sleep(0.6)  # the thread prints while no cell runs
        waited = await run_cell(run, "2")
        assert waited.text_content.splitlines() == [
            "[output written after the previous cell ended]",
            "late line",
            "2",
        ]
