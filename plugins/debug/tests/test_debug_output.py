"""The output log's cursor and bounds (the buffer behind op "output")."""

from __future__ import annotations

from tether_debug.session import OutputLog


def test_each_read_returns_only_what_is_new() -> None:
    log = OutputLog(max_bytes=1000)
    log.write("one\n")
    log.write("two\n")
    assert log.read_new(100) == ("one\ntwo\n", [])
    assert log.read_new(100) == ("", [])
    log.write("three\n")
    assert log.unread == 6  # bytes
    assert log.read_new(100) == ("three\n", [])


def test_a_long_read_is_cut_and_says_how_much_is_left() -> None:
    log = OutputLog(max_bytes=1000)
    log.write("x" * 30)
    text, notes = log.read_new(10)
    assert text == "x" * 10
    assert notes == ["10 of 30 new characters shown; call output again for the rest"]
    assert log.read_new(100) == ("x" * 20, [])


def test_output_dropped_before_it_was_read_is_counted() -> None:
    log = OutputLog(max_bytes=10)
    log.write("0123456789")
    log.write("abcde")
    text, notes = log.read_new(100)
    assert text == "56789abcde"
    assert notes == [
        "5 bytes were dropped before they were read (the session keeps the last 10 bytes)"
    ]


def test_a_cut_inside_multibyte_text_resumes_where_it_stopped() -> None:
    log = OutputLog(max_bytes=1000)
    log.write("héllo wörld")
    assert log.read_new(4) == (
        "héll",
        ["4 of 11 new characters shown; call output again for the rest"],
    )
    assert log.read_new(100) == ("o wörld", [])
