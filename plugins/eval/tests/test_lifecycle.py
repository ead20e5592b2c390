"""Interpreters live and die with the run: idle budget, reset, crashes, leftovers, floods."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import anyio
import psutil
import pytest

from tether.processes.managed import descendants, is_alive
from tether.testing import require_real

pytestmark = pytest.mark.anyio

LANGUAGES = ["python", "javascript"]
LOOP = {"python": "while True:\n    pass", "javascript": "while (true) {}"}
SET_X = {"python": "x = 'kept'", "javascript": "var x = 'kept'"}
GET_X = {"python": "x", "javascript": "x"}
SHOWN_X = {"python": "'kept'", "javascript": "'kept'"}


def kernel_of(run, language: str):
    return run.resources["eval_interpreters"].live(language)


@pytest.mark.parametrize("language", LANGUAGES)
async def test_endless_cell_is_interrupted_and_state_survives(eval_run, language, run_cell) -> None:
    async with eval_run(idle_budget_s=1.0) as run:
        assert not (await run_cell(run, SET_X[language], language)).is_error
        pid = kernel_of(run, language).pid
        with anyio.fail_after(15):
            looped = await run_cell(run, LOOP[language], language)
        assert looped.is_error and looped.meta["interrupted"] is True
        assert "no output for 1 s (the idle budget)" in looped.text_content
        assert "variables are kept" in looped.text_content
        after = await run_cell(run, GET_X[language], language)
        assert after.text_content.strip() == SHOWN_X[language]
        assert kernel_of(run, language).pid == pid  # interrupted, not restarted


async def test_javascript_pending_await_is_interrupted(eval_run, run_cell) -> None:
    async with eval_run(idle_budget_s=1.0) as run:
        await run_cell(run, "let y = 5", "javascript")
        hung = await run_cell(run, "await new Promise(() => {})", "javascript")
        assert hung.meta["interrupted"] is True
        assert (await run_cell(run, "y * 2", "javascript")).text_content.strip() == "10"


async def test_output_resets_the_idle_budget(eval_run, run_cell) -> None:
    async with eval_run(idle_budget_s=1.0) as run:
        # 3 s in all, past the 1 s budget; gaps of 0.2 s leave room for a slow iopub.
        result = await run_cell(
            run, "import time\nfor i in range(15):\n    print(i, flush=True)\n    time.sleep(0.2)"
        )
        assert not result.is_error, result.text_content
        assert result.text_content.split() == [str(i) for i in range(15)]


@pytest.mark.parametrize("language", LANGUAGES)
async def test_reset_discards_state(eval_run, language, run_cell) -> None:
    async with eval_run() as run:
        await run_cell(run, SET_X[language], language)
        old = kernel_of(run, language).pid
        only = await run_cell(run, "", language, reset=True)
        assert not only.is_error and "reset" in only.text_content
        assert not is_alive(old)
        gone = await run_cell(run, GET_X[language], language)
        assert gone.is_error
        assert ("NameError" if language == "python" else "ReferenceError") in gone.text_content
        both = await run_cell(run, SET_X[language] + "\n" + GET_X[language], language, reset=True)
        assert SHOWN_X[language] in both.text_content and "was reset" in both.text_content


@pytest.mark.parametrize("language", LANGUAGES)
async def test_killed_kernel_error_then_fresh_interpreter(eval_run, language, run_cell) -> None:
    # Written to the process's own fd 2 (a cell's sys.stderr / console.error go to the cell output).
    suicide = {
        "python": "import os\nos.write(2, b'dying-marker\\n')\nos.kill(os.getpid(), 9)",
        "javascript": "require('fs').writeSync(2, 'dying-marker\\n'); "
        "process.kill(process.pid, 'SIGKILL')",
    }
    async with eval_run() as run:
        await run_cell(run, SET_X[language], language)
        died = await run_cell(run, suicide[language], language)
        assert died.is_error and died.meta.get("kernel_died") is True
        assert "died" in died.text_content
        _, heading, tail = died.text_content.partition("last stderr of the interpreter:\n")
        assert heading and "dying-marker" in tail, died.text_content
        assert "the next call starts a fresh interpreter" in died.text_content
        fresh = await run_cell(run, "1 + 1", language)
        assert not fresh.is_error, fresh.text_content
        assert fresh.text_content.startswith("2\n")
        assert "variables, imports and data from earlier cells are gone" in fresh.text_content
        # Killed from outside between two calls: the next call starts fresh and says so.
        os.kill(kernel_of(run, language).pid, signal.SIGKILL)
        with anyio.fail_after(5):
            while kernel_of(run, language).alive:
                await anyio.sleep(0.05)
        again = await run_cell(run, "2 + 2", language)
        assert again.text_content.startswith("4\n")
        assert "had died" in again.text_content and "are gone" in again.text_content


async def test_nothing_is_left_after_the_run_closes(eval_run, run_cell) -> None:
    async with eval_run() as run:
        await run_cell(run, "1", "python")
        await run_cell(run, "1", "javascript")
        python = kernel_of(run, "python")
        node = kernel_of(run, "javascript")
        socket_dir = python.socket_dir
        names = {p.name for p in socket_dir.iterdir()}
        assert names == {"kernel.json", "pipe", "k-1", "k-2", "k-3", "k-4", "k-5"}
        # IPC only: the kernel listens on no TCP/UDP port.
        proc = psutil.Process(python.pid)
        assert proc.net_connections(kind="inet") == []
        assert socket_dir.is_dir() and len(str(socket_dir / "k-5")) < 100
        spawned = await run_cell(
            run,
            "import subprocess\n"
            "child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
            "child.pid",
        )
        orphan = int(spawned.text_content.strip())
        forked = await run_cell(
            run,
            "import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(300)\n    os._exit(0)\npid",
        )
        assert not forked.is_error, forked.text_content
        fork = int(forked.text_content.strip())
        pids = [python.pid, node.pid, orphan, fork]
        assert all(is_alive(p) for p in pids)
    assert not any(is_alive(p) for p in pids)
    assert not socket_dir.exists()


async def test_output_flood_is_capped_and_says_so(eval_run, run_cell) -> None:
    async with eval_run(max_output_chars=2000) as run:
        with anyio.fail_after(120):
            flood = await run_cell(
                run, "for i in range(1000):\n    print('x' * 99_999)\nprint('the end')"
            )
        text = flood.text_content
        assert len(text) < 3000
        assert "bytes dropped" in text and "of 100000008 bytes" in text
        assert text.rstrip().endswith("the end")
        js = await run_cell(
            run,
            "for (let i = 0; i < 200; i++) console.log('y'.repeat(99999)); 'done'",
            "javascript",
        )
        assert "of 20000007 bytes" in js.text_content and js.text_content.rstrip().endswith(
            "'done'"
        )


@pytest.mark.parametrize("installer", ["pip", "uv"])
async def test_pip_installs_into_the_kernels_environment(
    eval_run, tmp_path, installer, run_cell, build_wheel
) -> None:
    if installer == "uv":
        require_real(shutil.which("uv") is not None, "uv on PATH")
    v1 = build_wheel(tmp_path / "v1", "tether_probe_pkg", "1.0", "VALUE = 'one'\n")
    v2 = build_wheel(tmp_path / "v2", "tether_probe_pkg", "2.0", "VALUE = 'two'\n")
    async with eval_run() as run:
        if installer == "uv":
            # As in a uv-created environment: no pip module, so %pip goes to `uv pip`.
            await run_cell(run, "import sys\nsys.modules['pip'] = None")
        try:
            first = await run_cell(
                run, f"%pip install -q {v1}\nimport tether_probe_pkg\ntether_probe_pkg.VALUE"
            )
            assert not first.is_error, first.text_content
            assert first.text_content.strip().endswith("'one'")
            second = await run_cell(
                run,
                f"%pip install -q {v2}\nimport tether_probe_pkg\ntether_probe_pkg.VALUE",
            )
            assert "imports refreshed for: tether-probe-pkg" in second.text_content
            assert second.text_content.strip().endswith("'two'")
        finally:
            removed = await run_cell(run, "%pip uninstall -y tether_probe_pkg")
        assert not removed.is_error, removed.text_content
        gone = await run_cell(run, "import tether_probe_pkg")
        assert gone.is_error and "ModuleNotFoundError" in gone.text_content


async def test_kernel_that_cannot_start_is_a_clear_error(eval_run, run_cell) -> None:
    async with eval_run(python="/nonexistent/python3", node="/nonexistent/node") as run:
        py = await run_cell(run, "1")
        assert py.is_error and "/nonexistent/python3" in py.text_content
        js = await run_cell(run, "1", "javascript")
        assert js.is_error
        assert "javascript is not available here: node '/nonexistent/node'" in js.text_content


async def test_a_cell_that_ignores_the_interrupt_is_killed(eval_run, run_cell) -> None:
    async with eval_run(idle_budget_s=1.0) as run:
        await run_cell(run, "x = 1")
        pid = kernel_of(run, "python").pid
        with anyio.fail_after(20):
            stuck = await run_cell(
                run,
                "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "while True:\n    time.sleep(0.1)",
            )
        assert stuck.is_error and stuck.meta.get("kernel_died") is True
        assert "ignored the interrupt and was killed" in stuck.text_content
        assert not is_alive(pid)
        fresh = await run_cell(run, "'x' in globals()")
        assert fresh.text_content.startswith("False")
        assert "are gone" in fresh.text_content


async def test_a_cancelled_call_interrupts_its_cell_and_keeps_the_state(eval_run, run_cell) -> None:
    async with eval_run() as run:
        await run_cell(run, "x = 1")
        pid = kernel_of(run, "python").pid
        with anyio.move_on_after(1.0):
            await run_cell(run, "import time\nx = 2\ntime.sleep(60)\nx = 3")
        assert is_alive(pid) and kernel_of(run, "python").pid == pid
        with anyio.fail_after(10):  # the kernel is idle again, not still sleeping
            after = await run_cell(run, "x")
        assert after.text_content.startswith("2"), after.text_content


async def test_a_cancelled_cell_that_ignores_the_interrupt_is_discarded(eval_run, run_cell) -> None:
    async with eval_run() as run:
        await run_cell(run, "x = 1")
        pid = kernel_of(run, "python").pid
        stubborn = (
            "import time\n"
            "while True:\n"
            "    try:\n"
            "        time.sleep(60)\n"
            "    except KeyboardInterrupt:\n"
            "        pass\n"
        )
        with anyio.move_on_after(1.0):
            await run_cell(run, stubborn)
        assert not is_alive(pid)
        fresh = await run_cell(run, "'x' in globals()")
        assert fresh.text_content.startswith("False")
        assert "the previous call was cancelled while its cell was running" in fresh.text_content


async def test_prestart_starts_the_kernel_before_the_first_call(eval_run, run_cell) -> None:
    async with eval_run(prestart=["python"]) as run:
        with anyio.fail_after(60):
            while kernel_of(run, "python") is None:
                await anyio.sleep(0.05)
        pid = kernel_of(run, "python").pid
        result = await run_cell(run, "6 * 7")
        assert result.text_content.strip() == "42"
        assert kernel_of(run, "python").pid == pid
    assert not is_alive(pid)


async def test_closing_while_prestarting_leaves_nothing(eval_run, monkeypatch) -> None:
    import tether_eval.ipython

    made: list[Path] = []
    original = tether_eval.ipython._socket_dir

    def recording_socket_dir() -> Path:
        made.append(original())
        return made[-1]

    monkeypatch.setattr(tether_eval.ipython, "_socket_dir", recording_socket_dir)
    async with eval_run(prestart=["python", "javascript"]):
        # Close as soon as a kernel is on its way: its socket dir made and a child spawned.
        with anyio.fail_after(10):
            while not (made and (children := descendants(os.getpid()))):
                await anyio.sleep(0.01)
    assert made and children
    with anyio.fail_after(5):
        while any(is_alive(p) for p in children):
            await anyio.sleep(0.05)
    assert not any(p.exists() for p in made)


async def test_a_cancelled_node_cell_is_interrupted_and_keeps_the_state(eval_run, run_cell) -> None:
    async with eval_run() as run:
        await run_cell(run, "let x = 1", "javascript")
        pid = kernel_of(run, "javascript").pid
        with anyio.move_on_after(1.0):  # a synchronous loop: only SIGINT can break it
            await run_cell(run, "x = 2; while (true) {}", "javascript")
        assert is_alive(pid) and kernel_of(run, "javascript").pid == pid
        with anyio.fail_after(10):
            after = await run_cell(run, "x", "javascript")
        assert after.text_content.startswith("2"), after.text_content
        with anyio.move_on_after(1.0):  # a pending await
            await run_cell(run, "x = 3; await new Promise(() => {})", "javascript")
        with anyio.fail_after(10):
            after = await run_cell(run, "x", "javascript")
        assert after.text_content.startswith("3"), after.text_content
        assert kernel_of(run, "javascript").pid == pid


CHATTY = {
    "python": "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.05)",
    "javascript": "while (true) { console.log('tick'); await new Promise(r => setTimeout(r, 50)) }",
}


@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_cell_that_prints_forever_stops_at_the_ceiling(
    eval_run, language, run_cell
) -> None:
    """Every line resets the idle budget; the ceiling of one eval call does not move."""
    # an idle budget well above the gaps between lines, even on a loaded machine
    async with eval_run(idle_budget_s=5.0, max_cell_s=2.5) as run:
        assert not (await run_cell(run, SET_X[language], language)).is_error
        pid = kernel_of(run, language).pid
        with anyio.fail_after(20):
            chatty = await run_cell(run, CHATTY[language], language)
        assert chatty.is_error and chatty.meta["interrupted"] is True
        text = chatty.text_content
        assert "tick" in text, "the output so far comes back"
        assert "[eval] max_cell_s = 2.5" in text and "variables are kept" in text, text
        after = await run_cell(run, GET_X[language], language)
        assert after.text_content.strip() == SHOWN_X[language]
        assert kernel_of(run, language).pid == pid  # interrupted, not restarted


@pytest.mark.parametrize("form", ["cell", "line"])
async def test_timeit_is_alive_while_it_times(eval_run, run_cell, form) -> None:
    """%%timeit prints nothing until it ends; each timing it makes counts as activity, so a
    run longer than the idle budget is not interrupted (and nothing extra is printed)."""
    code = {
        "cell": "%%timeit -r 8\ntime.sleep(0.3)",
        "line": "%timeit -r 8 time.sleep(0.3)",
    }[form]
    # timings of 0.3 s, 2.7 s in all: past a 2 s budget, with room for a loaded machine
    async with eval_run(idle_budget_s=2.0) as run:
        await run_cell(run, "import time")
        timed = await run_cell(run, code)
        assert not timed.is_error, timed.text_content
        assert "per loop" in timed.text_content and "8 runs" in timed.text_content
        assert timed.meta["duration_s"] > 2.0, "longer than the idle budget in all"
        silent = await run_cell(run, "time.sleep(3)")
        assert silent.meta.get("interrupted") is True, "a silent cell still is interrupted"
