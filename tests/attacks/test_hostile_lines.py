"""Hostile lines: no input line, argument value or file name can end ``tether session`` or
corrupt its output (issue 11, item 4). One real session reads more than 500 hostile lines, each
followed by a probe ``echo``: a probe answered proves the session lived past the line before
it. Every line the session writes must be valid UTF-8 and one JSON object."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from attack_cli import TETHER, utf8_json_lines


def request(rid: int, tool: str, args: object) -> bytes:
    return json.dumps({"id": rid, "tool": tool, "args": args}).encode()


def hostile_lines() -> list[tuple[str, bytes]]:
    rng = random.Random(11)
    lines: list[tuple[str, bytes]] = []
    add = lines.append
    rid = iter(range(1, 1_000_000))
    # nesting deeper than any parser stack, and deep but parseable values inside arguments
    for depth in (1_000, 10_000, 100_000, 1_000_000):
        add((f"array nested {depth}", b"[" * depth + b"]" * depth))
        add((f"object nested {depth}", b'{"a":' * depth + b"1" + b"}" * depth))
        add((f"unterminated {depth}", b"[" * depth))
    for depth in (50, 500, 900, 5_000):
        deep = b"[" * depth + b"]" * depth
        add(
            (
                f"deep argument {depth}",
                b'{"id": %d, "tool": "echo", "args": {"message": %s}}' % (next(rid), deep),
            )
        )
    # NaN and the infinities, wherever a number can stand
    for literal in (b"NaN", b"Infinity", b"-Infinity"):
        add(
            (
                f"{literal!r} delay",
                b'{"id": %d, "tool": "echo", "args": {"message": "x", "delay_s": %s}}'
                % (next(rid), literal),
            )
        )
        add((f"{literal!r} id", b'{"id": %s, "tool": "echo", "args": {"message": "x"}}' % literal))
        add((f"{literal!r} alone", literal))
        add(
            (
                f"{literal!r} in a list",
                b'{"id": %d, "tool": "echo_exec", "args": {"argv": [%s]}}' % (next(rid), literal),
            )
        )
    # numbers JSON allows but Python stores oddly
    for number in (b"1e400", b"-1e400", b"1" * 5000, b"0." + b"0" * 400 + b"1", b"-0"):
        add(
            (
                "number in delay",
                b'{"id": %d, "tool": "echo", "args": {"message": "x", "delay_s": %s}}'
                % (next(rid), number),
            )
        )
        add(("number as id", b'{"id": %s, "tool": "echo", "args": {"message": "x"}}' % number))
    # lone surrogates (valid JSON escapes, not valid UTF-8 once decoded) everywhere
    for escape in (b"\\ud800", b"\\udfff", b"\\udcff", b"\\ud83d", b"a\\udc80b"):
        add(
            (
                "surrogate message",
                b'{"id": %d, "tool": "echo", "args": {"message": "%s"}}' % (next(rid), escape),
            )
        )
        add(("surrogate tool", b'{"id": %d, "tool": "%s"}' % (next(rid), escape)))
        add(
            (
                "surrogate key",
                b'{"id": %d, "tool": "echo", "args": {"%s": 1}}' % (next(rid), escape),
            )
        )
        add(("surrogate id", b'{"id": "%s", "tool": "echo", "args": {"message": "x"}}' % escape))
        add(
            (
                "surrogate path",
                b'{"id": %d, "tool": "read", "args": {"path": "%s.txt"}}' % (next(rid), escape),
            )
        )
        add(("surrogate card", b'{"card": "%s", "choices": ["x"]}' % escape))
    # bytes that are not UTF-8: alone, inside strings, inside keys
    invalid = [
        b"\xff",
        b"\xfe",
        b"\xc3\x28",
        b"\xa0\xa1",
        b"\xe2\x28\xa1",
        b"\xf0\x28\x8c\x28",
        b"\xed\xa0\x80",
        b"\xc0\xaf",
        b"\xf8\x88\x80\x80\x80",
        b"\x80",
    ]
    for bad in invalid:
        add(("invalid UTF-8 alone", bad))
        add(
            (
                "invalid UTF-8 in a string",
                b'{"id": %d, "tool": "echo", "args": {"message": "a%sb"}}' % (next(rid), bad),
            )
        )
        add(
            (
                "invalid UTF-8 in a key",
                b'{"id": %d, "tool": "echo", "args": {"m%s": "x"}}' % (next(rid), bad),
            )
        )
        add(("invalid UTF-8 in a tool", b'{"id": %d, "tool": "ec%sho"}' % (next(rid), bad)))
    # control characters, a byte-order mark, carriage returns, NUL
    for ctrl in (b"\x00", b"\x01", b"\x1b[2J", b"\x7f", b"\x0c", b"\x0b", b"\r"):
        add(
            (
                "control character raw in a string",
                b'{"id": %d, "tool": "echo", "args": {"message": "a%sb"}}' % (next(rid), ctrl),
            )
        )
        add(("control character outside", ctrl + request(next(rid), "echo", {"message": "x"})))
    add(("byte-order mark", b"\xef\xbb\xbf" + request(next(rid), "echo", {"message": "bom"})))
    add(
        (
            "two requests joined by CR",
            request(next(rid), "echo", {"message": "a"})
            + b"\r"
            + request(next(rid), "echo", {"message": "b"}),
        )
    )
    add(("NUL in a path", request(next(rid), "read", {"path": "a\x00b"})))
    # JSON that is not a request
    for other in (
        b"1",
        b"-1",
        b'"text"',
        b"null",
        b"true",
        b"false",
        b"[]",
        b"[1, 2]",
        b"{}",
        b'""',
        b"[{}]",
    ):
        add(("not an object", other))
    for bad_id in (b"true", b"false", b"1.5", b"[]", b"{}", b"null", b'"' + b"i" * 100_000 + b'"'):
        add(("bad id", b'{"id": %s, "tool": "echo", "args": {"message": "x"}}' % bad_id))
    for bad_tool in (
        b"1",
        b"null",
        b"[]",
        b"{}",
        b'""',
        b'"' + b"t" * 100_000 + b'"',
        b'"../echo"',
    ):
        add(("bad tool", b'{"id": %d, "tool": %s}' % (next(rid), bad_tool)))
    for bad_args in (b"1", b"null", b"[]", b'"x"', b"[{}]", b"true"):
        add(("bad args", b'{"id": %d, "tool": "echo", "args": %s}' % (next(rid), bad_args)))
    add(("unknown request key", b'{"id": %d, "tool": "echo", "args": {}, "extra": 1}' % next(rid)))
    add(("no id", b'{"tool": "echo", "args": {"message": "x"}}'))
    slow = next(rid)
    add(("slow request", request(slow, "echo", {"message": "slow", "delay_s": 1})))
    add(("id still in flight", request(slow, "echo", {"message": "again"})))
    for answer in (
        b'{"card": "card_1", "choices": ["x"]}',
        b'{"card": 1}',
        b'{"card": null, "skip": true}',
        b'{"card": "card_1", "skip": "yes"}',
        b'{"card": "card_1", "choices": "allow"}',
        b'{"card": [], "text": 1}',
        b'{"card": "card_1", "id": null}',
    ):
        add(("bad card answer", answer))
    # very long lines
    add(("5 MB message", request(next(rid), "echo", {"message": "m" * 5_000_000})))
    add(("1 MB of spaces", b" " * 1_000_000 + b"{"))
    # over the session's line limit (64 MiB): answered with an error line, skipped, read on
    add(("68 MB request", request(next(rid), "echo", {"message": "m" * 68_000_000})))
    add(("68 MB without a quote or brace", b"\xff" * 68_000_000))
    add(
        (
            "1 MB garbage",
            bytes(rng.randrange(32, 127) for _ in range(1_000_000)).replace(b"\n", b" "),
        )
    )
    # hostile argument values for the file tools
    for path in (
        "../../etc/passwd",
        "/etc/passwd",
        "a" * 10_000,
        "n" * 300,
        "dir/",
        "",
        ".",
        "\u202e.txt",
    ):
        add(("hostile path", request(next(rid), "read", {"path": path})))
    # fuzz: JSON-ish tokens and raw bytes, seeded
    tokens = [
        b"{",
        b"}",
        b"[",
        b"]",
        b":",
        b",",
        b'"id"',
        b'"tool"',
        b'"args"',
        b'"echo"',
        b"1",
        b"-",
        b"e",
        b"NaN",
        b'"\\u',
        b"\\",
        b'"',
        b"null",
        b"\xff",
        b"\xc3",
        b"\x00",
    ]
    while len(lines) < 560:
        if rng.random() < 0.5:
            line = b"".join(rng.choice(tokens) for _ in range(rng.randrange(1, 40)))
        else:
            line = bytes(rng.randrange(0, 256) for _ in range(rng.randrange(1, 200)))
        add(("fuzz", line.replace(b"\n", b"")))
    return lines


def test_hostile_lines_never_end_the_session(tally, tmp_path: Path) -> None:
    # a file whose name is not UTF-8, found by ast_grep in the middle of the attack
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    with open(bytes(tmp_path) + b"/caf\xe9.py", "wb") as fh:
        fh.write(b"value = 1\n")
    attacks = hostile_lines()
    attacks.append(
        (
            "non-UTF-8 file name",
            request(999_999, "ast_grep", {"pattern": "value = 1", "language": "python"}),
        )
    )
    parts = []
    for index, (_, line) in enumerate(attacks):
        probe = {"id": f"probe-{index}", "tool": "echo", "args": {"message": f"alive {index}"}}
        parts += [line, json.dumps(probe).encode()]
    payload = b"\n".join(parts) + b"\n"
    out = subprocess.run(
        [*TETHER, "session", "--workdir", str(tmp_path)],
        input=payload,
        capture_output=True,
        timeout=600,
    )
    try:
        replies = utf8_json_lines(out.stdout)
        valid = True
    except (ValueError, AssertionError):
        replies, valid = [], False
    answered = {
        r["id"]
        for r in replies
        if isinstance(r.get("id"), str)
        and r["id"].startswith("probe-")
        and r["content"][0]["text"] == f"alive {r['id'][6:]}"
    }
    died_at = next((i for i in range(len(attacks)) if f"probe-{i}" not in answered), None)
    for index, _ in enumerate(attacks):
        held = valid and out.returncode == 0 and f"probe-{index}" in answered
        tally.record("hostile-lines", held=held, deaths=int(index == died_at))
    found = next(r for r in replies if r.get("id") == 999_999)
    assert valid and out.returncode == 0, out.stderr[-2000:]
    assert died_at is None, (attacks[died_at][0], out.stderr[-2000:])
    assert "value = 1" in found["content"][0]["text"]
    # every hostile line without a usable id got exactly the protocol's error line
    assert all(r["is_error"] for r in replies if r.get("id") is None)
    over_limit = [r for r in replies if "over the limit of" in r["content"][0]["text"]]
    assert len(over_limit) == 2 and all(r["id"] is None for r in over_limit)
