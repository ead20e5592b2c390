"""CellOutput: caps that say what they cut, clean text."""

from __future__ import annotations

import tether
from tether_eval.output import CellOutput


def test_flood_keeps_head_and_tail_and_counts_the_middle() -> None:
    output = CellOutput(max_chars=100)
    output.write("HEAD" + "x" * 10_000 + "TAIL\n")
    text = output.result().text_content
    assert text.startswith("HEAD")
    assert text.endswith("TAIL\n")
    assert text.splitlines()[1] == (
        "[… output cut here: 9909 of 10009 bytes dropped; the first 50 and the last 50 are shown]"
    )


def test_progress_bars_and_colours_are_cleaned() -> None:
    output = CellOutput()
    output.write("\x1b[31mred\x1b[0m\n10%\r50%\r100%\nwindows line\r\n")
    assert output.result().text_content == "red\n100%\nwindows line\n"


def test_image_cap_says_how_many_were_dropped() -> None:
    output = CellOutput(max_images=1)
    output.image(b"\x89PNG one")
    output.image(b"\x89PNG two")
    result = output.result()
    assert [c.data for c in result.content if isinstance(c, tether.Image)] == [b"\x89PNG one"]
    assert "1 of 2 images shown (1 dropped by the image cap)" in result.text_content


def test_interruption_and_errors_mark_the_result() -> None:
    output = CellOutput()
    assert output.result().text_content == "(no output)"
    output.write("partial\n")
    output.interrupted = "interrupted: no output for 1 s"
    result = output.result()
    assert result.is_error
    assert result.text_content == "partial\n[interrupted: no output for 1 s]"
