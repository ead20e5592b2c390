"""The reference host tools, driven through a real run (gates and all)."""

from __future__ import annotations

import os
import time

import anyio
import pytest

import tether
from tether.testing import check_plugin_contract
from tether_files.tools import MAX_FILE_BYTES, MAX_LINE_CHARS, MAX_READ_BYTES

pytestmark = pytest.mark.anyio
AUTO = {"core": {"approval": {"write": "auto"}}}


@pytest.fixture
async def run(tmp_path):
    async with tether.open_run(tmp_path, config=AUTO) as run:
        yield run


@pytest.fixture
async def unbudgeted_run(tmp_path):
    """read's own byte cap, without the core's result budget (lower) in front of it."""
    config = {**AUTO, "core": {**AUTO["core"], "result_budget": {"max_chars": 0}}}
    async with tether.open_run(tmp_path, config=config) as run:
        yield run


async def test_read_caps_what_it_returns_and_says_so(unbudgeted_run, tmp_path):
    """A huge file with a huge limit: the reply stays under the byte cap, states the window and
    how to read on, and memory stays bounded (issue 11, item 7)."""
    run = unbudgeted_run
    lines = 2_000_000
    (tmp_path / "big.txt").write_bytes(b"".join(b"%07d\n" % i for i in range(lines)))
    result = await run.call("read", {"path": "big.txt", "limit": 1_000_000_000})
    text = result.text_content
    assert not result.is_error and len(text.encode()) <= MAX_READ_BYTES + 200
    shown = MAX_READ_BYTES // 8
    assert text.endswith(
        f"[lines 1–{shown:,} of 2,000,000 shown (the {MAX_READ_BYTES // 1000} KB cap of one "
        f"read); use offset={shown + 1} to read on]"
    )
    tail = await run.call("read", {"path": "big.txt", "offset": lines - 1})
    assert tail.text_content == "1999998\n1999999\n"
    # one line far over the cap, without a newline: cut, counted, in bounded memory
    (tmp_path / "one.txt").write_bytes(b"x" * 50_000_000)
    one = (await run.call("read", {"path": "one.txt"})).text_content
    assert one == "x" * MAX_LINE_CHARS + f"… ({50_000_000 - 4 * MAX_LINE_CHARS:,}+ more bytes)"


async def test_a_file_over_the_read_cap_is_refused_before_a_byte_is_read(run, tmp_path):
    """A 100 GB sparse file: refused at once, naming its size and the cap (issue 22, item 2)."""
    (tmp_path / "huge.txt").touch()
    os.truncate(tmp_path / "huge.txt", 100 * 1024**3)
    started = time.monotonic()
    result = await run.call("read", {"path": "huge.txt"})
    assert result.is_error and time.monotonic() - started < 2
    assert result.text_content == (
        "path: 'huge.txt' is 107,374,182,400 bytes, over the cap of "
        f"{MAX_FILE_BYTES:,} bytes tether reads of one file; nothing of it was read"
    )


async def test_a_long_read_runs_off_the_event_loop_and_its_timeout_applies(tmp_path):
    """A sparse file just under the cap, without a newline: the read takes longer than the call
    timeout. Another call sent meanwhile is answered while the read still runs; the read ends
    at its timeout."""
    (tmp_path / "small.txt").write_text("m\n")
    (tmp_path / "huge.txt").touch()
    os.truncate(tmp_path / "huge.txt", MAX_FILE_BYTES)
    config = {"core": {"call_timeout_s": 0.4}}
    async with tether.open_run(tmp_path, config=config) as run:
        done: dict[str, float] = {}
        started = time.monotonic()

        async def read() -> None:
            result = await run.call("read", {"path": "huge.txt"})
            assert result.is_error and "read timed out after 0.4 s" in result.text_content
            done["read"] = time.monotonic() - started

        async def echo() -> None:
            await anyio.sleep(0.1)  # the read is under way
            sent = time.monotonic()
            assert (await run.call("read", {"path": "small.txt"})).text_content == "m\n"
            done["echo"] = time.monotonic() - started
            done["echo_wait"] = time.monotonic() - sent

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(echo)
    assert done["echo"] < done["read"]
    print(f"a small read answered in {done['echo_wait'] * 1000:.1f} ms during the huge read")


async def test_empty_and_non_empty_files_agree_on_offsets(run, tmp_path):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "one.txt").write_text("a\n")
    assert (await run.call("read", {"path": "empty.txt"})).text_content == ""
    for name, lines in (("empty.txt", 0), ("one.txt", 1)):
        past = await run.call("read", {"path": name, "offset": 5})
        assert past.is_error
        assert f"offset: the file has {lines} lines, offset 5 is past its end" in past.text_content


async def test_contract(run):
    assert await check_plugin_contract(run, ["read", "write", "edit", "apply_patch"])


async def test_read_with_window(run, tmp_path):
    (tmp_path / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert (await run.call("read", {"path": "f.txt"})).text_content.startswith("line 1\n")
    window = (await run.call("read", {"path": "f.txt", "offset": 3, "limit": 2})).text_content
    assert window == "line 3\nline 4\n\n[lines 3–4 of 10 shown; use offset=5 to read on]"
    assert (await run.call("read", {"path": "f.txt", "offset": 10})).text_content == "line 10\n"
    past = await run.call("read", {"path": "f.txt", "offset": 50})
    assert past.is_error and "offset:" in past.text_content
    missing = await run.call("read", {"path": "nope.txt"})
    assert missing.is_error and "path: no such file" in missing.text_content


@pytest.mark.parametrize(
    "tool,args",
    [
        ("read", {"path": "../etc/passwd"}),
        ("write", {"path": "/tmp/elsewhere.txt", "content": "x"}),
        ("edit", {"path": "../x", "old": "a", "new": "b"}),
    ],
)
async def test_paths_are_confined(run, tool, args):
    result = await run.call(tool, args)
    assert (
        result.is_error
        and "path: " in result.text_content
        and "outside the workdir" in result.text_content
    )


async def test_write_creates_and_overwrites_atomically(run, tmp_path):
    result = await run.call("write", {"path": "sub/new.txt", "content": "hello"})
    assert "created sub/new.txt" in result.text_content
    assert result.meta["paths"] == [str(tmp_path.resolve() / "sub" / "new.txt")]
    result = await run.call("write", {"path": "sub/new.txt", "content": "again"})
    assert "overwrote" in result.text_content and (tmp_path / "sub/new.txt").read_text() == "again"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["new.txt"]


async def test_edit_needs_exactly_one_occurrence(run, tmp_path):
    (tmp_path / "e.py").write_text("a = 1\nb = 1\n")
    twice = await run.call("edit", {"path": "e.py", "old": "= 1", "new": "= 2"})
    assert twice.is_error and "old: occurs 2 times" in twice.text_content
    none = await run.call("edit", {"path": "e.py", "old": "zzz", "new": "y"})
    assert none.is_error and "old: not found" in none.text_content
    ok = await run.call("edit", {"path": "e.py", "old": "b = 1", "new": "b = 2"})
    assert "line 2" in ok.text_content and (tmp_path / "e.py").read_text() == "a = 1\nb = 2\n"


PATCH = """\
--- a/one.txt
+++ b/one.txt
@@ -1,3 +1,3 @@
 alpha
-beta
+BETA
 gamma
--- /dev/null
+++ b/new/two.txt
@@ -0,0 +1,2 @@
+fresh
+file
"""


async def test_apply_patch_over_several_files(run, tmp_path):
    (tmp_path / "one.txt").write_text("alpha\nbeta\ngamma\n")
    result = await run.call("apply_patch", {"patch": PATCH})
    assert not result.is_error, result.text_content
    assert (tmp_path / "one.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert (tmp_path / "new/two.txt").read_text() == "fresh\nfile\n"


async def test_apply_patch_is_all_or_nothing(run, tmp_path):
    (tmp_path / "one.txt").write_text("alpha\nbeta\ngamma\n")
    bad = PATCH + "--- a/three.txt\n+++ b/three.txt\n@@ -1 +1 @@\n-nothing like this\n+x\n"
    (tmp_path / "three.txt").write_text("something else\n")
    result = await run.call("apply_patch", {"patch": bad})
    assert result.is_error and "three.txt" in result.text_content
    assert (tmp_path / "one.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert not (tmp_path / "new").exists()  # not even the directory the patch would create


async def test_apply_patch_tolerates_drifted_line_numbers(run, tmp_path):
    (tmp_path / "d.txt").write_text("x\ny\nalpha\nbeta\ngamma\n")
    patch = "--- a/d.txt\n+++ b/d.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"
    assert not (await run.call("apply_patch", {"patch": patch})).is_error
    assert (tmp_path / "d.txt").read_text() == "x\ny\nalpha\nBETA\ngamma\n"


async def test_apply_patch_rejects_garbage(run):
    result = await run.call("apply_patch", {"patch": "just some text"})
    assert result.is_error and "unified diff" in result.text_content


async def test_write_tools_need_approval_by_default(tmp_path):
    async with tether.open_run(tmp_path) as run:
        result = await run.call("write", {"path": "x", "content": "y"})
        assert result.is_error and "approver" in result.text_content
        assert not (tmp_path / "x").exists()


async def test_write_refuses_a_directory_path_and_an_overlong_name(run, tmp_path):
    slash = await run.call("write", {"path": "dir/", "content": "x"})
    assert slash.is_error and "path: 'dir/' ends with a slash" in slash.text_content
    assert not (tmp_path / "dir").exists()
    long = await run.call("write", {"path": "n" * 300 + ".txt", "content": "x"})
    assert long.is_error and "path: the name" in long.text_content
    assert "internal error" not in long.text_content and list(tmp_path.iterdir()) == []
