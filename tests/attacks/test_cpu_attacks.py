"""CPU attacks (issue 37, part 2): input the model or the checkout controls that makes a
matcher's work explode — catastrophic regexes in every place a rule takes one, the string forms
tether parses with its own regexes (``nthChild``, a transform's string form), pathological
``.gitignore`` globs on a walked tree, ``utils`` graphs whose expansion is exponential, deep
nesting, and rules whose matching is polynomial in a file's depth — through the real
``tether session``, each under a 5 s ``call_timeout_s``.

Generated: every family × every variant (each family's inputs are built by a generator, not
listed). The promise, per attack: the call answers (a result or an error naming the field and
the limit) within :data:`ANSWER_S`; the session answers a ``tools`` request sent while the
attack runs; the next harmless call succeeds; and for the attacks whose matching runs until its
deadline, SIGTERM ends the session within :data:`SIGTERM_S` with no process of its run left.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from attack_cli import TETHER

CALL_TIMEOUT_S = 5.0
ANSWER_S = 6.0  # the call's timeout plus what killing its work may take
SIGTERM_S = 2.0
STOPPED_S = 0.5  # from SIGTERM to the answer of the search it cancelled
INTO_S = 0.5  # when the `tools` request is sent: the attack is running
HARMLESS = {"pattern": "y = 1"}

# -- the inputs ------------------------------------------------------------------------------


def regex_families(n: int = 40) -> Iterator[tuple[str, str, str]]:
    """(name, regex, subject): each regex backtracks exponentially (or with a high power) on
    its subject in Python's `re`; the subject is a Python string literal, quotes included."""
    a = "a" * n
    yield "alternation (a|aa)+", r'^"(a|aa)+"$', f'"{"a" * 62}!"'
    yield "nested (a+)+", r'^"(a+)+"$', f'"{a}!"'
    yield "nested (a*)*", r'^"(a*)*b"$', f'"{a}!"'
    yield "optional (a|a?)+", r'^"(a|a?)+"$', f'"{a}!"'
    yield "words (\\w+\\s?)+", r'^"(\w+\s?)+"$', f'"{a}!"'
    yield "polynomial (.*a){12}", r'^"(.*a){12}"$', f'"{a}!"'
    yield "adjacent (x+x+)+y", r'"(x+x+)+y"', f'"{"x" * n}"'


def regex_places(regex: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(place, tool, args): the regex where ast-grep's rules take one."""
    string = {"kind": "string"}
    yield "rule.regex", "ast_grep", {"rule": {**string, "regex": regex}}
    yield "rule.not.regex", "ast_grep", {"rule": {**string, "not": {"regex": regex}}}
    yield "rule.all[1].regex", "ast_grep", {"rule": {"all": [string, {"regex": regex}]}}
    yield (
        "rule.has.regex",
        "ast_grep",
        {"rule": {"kind": "expression_statement", "has": {"regex": regex, "stopBy": "end"}}},
    )
    yield (
        "constraints.S.regex",
        "ast_grep",
        {"rule": {"rule": {"pattern": "print($S)"}, "constraints": {"S": {"regex": regex}}}},
    )
    yield (
        "transform.T.replace",
        "ast_edit",
        {
            "rule": {
                "rule": {"pattern": "print($S)"},
                "transform": {"T": {"replace": {"source": "$S", "replace": regex, "by": "z"}}},
                "fix": "print($T)",
            }
        },
    )


def refused_regexes() -> Iterator[tuple[str, str]]:
    """(regex, what the refusal names): what ast-grep's engine (Rust's) refuses too."""
    yield r'^"(a)\1"$', "backreferences"
    yield r'^"(?P<x>a)(?P=x)"$', "invalid regular expression"
    yield r'^"(?=a)a+"$', "lookahead"
    yield r'^"(?!b)a+"$', "lookahead"
    yield r'"(?<=a)a"', "lookbehind"
    yield r'"(?<!b)a"', "lookbehind"


def string_form_attacks(n: int = 3000) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(name, rule, the field the refusal names): strings tether reads with its own regexes."""
    yield "nthChild spaces", {"kind": "identifier", "nthChild": " " * n + "x"}, "rule.nthChild"
    yield "nthChild digits", {"kind": "identifier", "nthChild": "9" * n + "n"}, "rule.nthChild"
    yield (
        "nthChild signs",
        {"kind": "identifier", "nthChild": "n" + " " * n + "+" + " " * n + "x"},
        "rule.nthChild",
    )
    yield (
        "transform string form",
        {"rule": {"pattern": "print($S)"}, "transform": {"T": "a($" + " " * n + "x"}},
        "rule.transform.T",
    )


def diamond(n: int) -> dict[str, Any]:
    """`u_i: any[matches u_i+1 ×2]`: 2**n rule objects once expanded."""
    utils: dict[str, Any] = {
        f"u{i}": {"any": [{"matches": f"u{i + 1}"}, {"matches": f"u{i + 1}"}]} for i in range(n)
    }
    utils[f"u{n}"] = {"kind": "identifier", "regex": "^zz$"}
    return {"rule": {"kind": "identifier", "matches": "u0"}, "utils": utils}


def rule_graphs() -> Iterator[tuple[str, dict[str, Any], str]]:
    """(name, rule, what the refusal names): rules whose size or depth explodes."""
    for n in (12, 20, 51):
        yield f"utils diamond of {n}", diamond(n), "rule objects" if n < 30 else "levels"
    chain = {f"u{i}": {"kind": "identifier", "not": {"matches": f"u{i + 1}"}} for i in range(300)}
    chain["u300"] = {"kind": "identifier"}
    yield (
        "utils chain of 300",
        {"rule": {"kind": "identifier", "matches": "u0"}, "utils": chain},
        "levels",
    )
    for key in ("not", "has", "all"):
        rule: dict[str, Any] = {"kind": "identifier"}
        for _ in range(300):
            rule = {"kind": "identifier", key: [rule] if key == "all" else rule}
        yield f"{key} nested 300 deep", rule, "levels"
    yield (
        "any of 20000",
        {"kind": "identifier", "any": [{"kind": "identifier"}] * 20_000},
        "rule objects",
    )


#: `.gitignore` lines that backtrack in pathspec's default (Python `re`) backend on the file
#: name beside them
def glob_families(n: int = 60) -> Iterator[tuple[str, str, str]]:
    """(name, .gitignore line, file name)."""
    yield "a**********b", "a**********b", "a" * n + "c.py"
    yield "a*a*a*…b", "*".join(["a"] * 12) + "*b", "a" * n + "c.py"
    yield "**/a**a**…b", "**/" + "**".join(["a"] * 10) + "**b", "a" * n + "c.py"
    yield "*a?*a?*…b", "*a?" * 10 + "*b", "a" * n + "c.py"


def deep_nesting(depth: int) -> str:
    return "x = " + "[" * depth + "1" + "]" * depth + "\n"


#: a rule whose matching is polynomial in the tree's depth (each `has … stopBy: end` walks the
#: subtree of every candidate): it runs until its deadline, then must be killed
SLOW_RULE = {
    "kind": "list",
    "has": {
        "kind": "list",
        "stopBy": "end",
        "has": {
            "kind": "list",
            "stopBy": "end",
            "has": {
                "kind": "list",
                "stopBy": "end",
                "has": {"kind": "integer", "regex": "^2$", "stopBy": "end"},
            },
        },
    },
}


# -- the session -----------------------------------------------------------------------------


class Session:
    """A ``tether session`` whose replies are read by a thread, so every wait has a timeout."""

    def __init__(self, workdir: Path, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [*TETHER, "session", "--workdir", str(workdir), *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.pending: dict[Any, dict[str, Any]] = {}
        threading.Thread(target=self._read, daemon=True).start()
        assert self.next(60).get("ready") is True
        self.ids = iter(range(1, 1_000_000))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.replies.put(json.loads(raw))

    def next(self, timeout: float) -> dict[str, Any]:
        return self.replies.get(timeout=timeout)

    def send(self, message: dict[str, Any]) -> int:
        n = next(self.ids)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": n, **message}).encode() + b"\n")
        self.proc.stdin.flush()
        return n

    def reply(self, n: int, timeout: float) -> dict[str, Any] | None:
        """The reply to request ``n``, or None when it did not come within ``timeout``."""
        deadline = time.monotonic() + timeout
        while n not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                got = self.next(left)
            except queue.Empty:
                return None
            self.pending[got.get("id")] = got
        return self.pending.pop(n)

    def call(self, tool: str, args: dict[str, Any], timeout: float) -> tuple[dict | None, float]:
        start = time.monotonic()
        reply = self.reply(self.send({"tool": tool, "args": args}), timeout)
        return reply, time.monotonic() - start

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def children(pid: int) -> set[int]:
    """The live (not zombie) child processes of ``pid``: a run's forked search workers."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return {c for c in found if alive(c)}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def text(reply: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in reply.get("content", []))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "pyproject.toml").write_text('[project]\nname = "victim"\nversion = "0"\n')
    (work / "y.py").write_text("y = 1\n")
    return work


def harness(tmp_path: Path, extra: str = "") -> str:
    config = tmp_path / "harness.toml"
    config.write_text(f"[core]\ncall_timeout_s = {CALL_TIMEOUT_S}\n{extra}")
    return f"--config={config}"


def held_call(
    session: Session, tool: str, args: dict[str, Any]
) -> tuple[dict[str, Any] | None, float, bool]:
    """The attack, a ``tools`` request sent into it, then the harmless call: (the attack's
    reply, its seconds, whether the session answered the other two in time)."""
    start = time.monotonic()
    attack = session.send({"tool": tool, "args": args})
    time.sleep(INTO_S)
    tools = session.reply(session.send({"request": "tools"}), ANSWER_S)
    answered_tools = tools is not None and "tools" in tools and time.monotonic() - start < 2.5
    reply = session.reply(attack, ANSWER_S + 1.0 - (time.monotonic() - start))
    seconds = time.monotonic() - start
    after, _ = session.call("ast_grep", HARMLESS, ANSWER_S)
    harmless = after is not None and not after["is_error"] and "1 match" in text(after)
    return reply, seconds, answered_tools and harmless


# -- the attacks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("family", list(regex_families()), ids=lambda f: f[0])
def test_a_catastrophic_regex_answers_in_time_in_every_place(
    tmp_path, workdir, tally, family
) -> None:
    _name, regex, subject = family
    (workdir / "victim.py").write_text(f"print({subject})\ns = {subject}\n")
    session = Session(workdir, harness(tmp_path), "--approve=write")
    try:
        for place, tool, args in regex_places(regex):
            reply, seconds, answered = held_call(session, tool, args)
            held = reply is not None and seconds <= ANSWER_S and answered
            tally.record("cpu: regex", held=held)
            assert held, (place, seconds, answered, reply)
    finally:
        session.close()


def test_a_regex_ast_grep_cannot_run_is_refused_naming_the_field(tmp_path, workdir, tally) -> None:
    (workdir / "victim.py").write_text('s = "aaa"\n')
    session = Session(workdir, harness(tmp_path))
    try:
        for regex, what in refused_regexes():
            for place in ("rule.regex", "rule.not.regex"):
                rule: dict[str, Any] = {"kind": "string", "regex": regex}
                if place == "rule.not.regex":
                    rule = {"kind": "string", "not": {"regex": regex}}
                reply, _ = session.call("ast_grep", {"rule": rule}, ANSWER_S)
                held = (
                    reply is not None
                    and reply["is_error"]
                    and place in text(reply)
                    and what in text(reply)
                )
                tally.record("cpu: regex", held=held)
                assert held, (regex, place, reply)
    finally:
        session.close()


def test_strings_tether_parses_itself_answer_in_time(tmp_path, workdir, tally) -> None:
    (workdir / "victim.py").write_text("print(x)\n")
    session = Session(workdir, harness(tmp_path), "--approve=write")
    try:
        for name, rule, field in string_form_attacks():
            tool = "ast_edit" if "transform" in rule else "ast_grep"
            args: dict[str, Any] = {"rule": rule}
            if tool == "ast_edit":
                args = {"rule": {**rule, "fix": "print($T)"}}
            reply, seconds, answered = held_call(session, tool, args)
            held = (
                reply is not None
                and reply["is_error"]
                and field in text(reply)
                and seconds <= ANSWER_S
                and answered
            )
            tally.record("cpu: string forms", held=held)
            assert held, (name, seconds, answered, reply)
    finally:
        session.close()


def test_an_exploding_rule_is_refused_naming_the_limit(tmp_path, workdir, tally) -> None:
    (workdir / "victim.py").write_text("x = 1\n")
    session = Session(workdir, harness(tmp_path))
    try:
        for name, rule, limit in rule_graphs():
            reply, seconds, answered = held_call(session, "ast_grep", {"rule": rule})
            held = (
                reply is not None
                and reply["is_error"]
                and limit in text(reply)
                and seconds <= ANSWER_S
                and answered
            )
            tally.record("cpu: rule size", held=held)
            assert held, (name, seconds, answered, reply and text(reply)[:300])
    finally:
        session.close()


@pytest.mark.parametrize("family", list(glob_families()), ids=lambda f: f[0])
def test_a_pathological_gitignore_on_a_walked_tree_answers_in_time(
    tmp_path, workdir, tally, family
) -> None:
    name, line, file_name = family
    # a key outside the harmless list: git is refused there, ast_grep walks the tree itself
    (workdir / ".git").mkdir()
    (workdir / ".git" / "config").write_text("[core]\n\tbare = false\n[alias]\n\tx = !true\n")
    (workdir / ".gitignore").write_text(line + "\n")
    (workdir / file_name).write_text("x = 1\n")
    session = Session(workdir, harness(tmp_path))
    try:
        reply, seconds, answered = held_call(session, "ast_grep", {"pattern": "x = 1"})
        held = (
            reply is not None
            and not reply["is_error"]
            and file_name in text(reply)
            and seconds <= ANSWER_S
            and answered
        )
        tally.record("cpu: ignore globs", held=held)
        assert held, (name, seconds, answered, reply)
    finally:
        session.close()


def test_a_prefilter_chain_on_a_hostile_file_answers_in_time(tmp_path, workdir, tally) -> None:
    # one long line of `is #`: Python's comment regex takes the rest of the line at every `is`
    (workdir / "victim.py").write_text("None\nx = " + "is #" * 250_000 + "\n")
    session = Session(workdir, harness(tmp_path))
    try:
        reply, seconds, answered = held_call(session, "ast_grep", {"pattern": "$X is None"})
        held = reply is not None and seconds <= ANSWER_S and answered
        tally.record("cpu: prefilter", held=held)
        assert held, (seconds, answered, reply)
    finally:
        session.close()


@pytest.mark.parametrize("where", ["in-process", "worker pool"])
def test_matching_past_its_deadline_is_killed_and_sigterm_ends_the_run(
    tmp_path, workdir, tally, survivors, where
) -> None:
    (workdir / "victim.py").write_text(deep_nesting(150))
    extra = "[astgrep]\nparallel_min_files = 1\n" if where == "worker pool" else ""
    session = Session(workdir, harness(tmp_path, extra))
    held, orphans = False, 0
    before: set[int] = set()
    workers: set[int] = set()
    try:
        assert session.call("ast_grep", HARMLESS, 60)[0] is not None  # workers are up
        before = children(session.proc.pid)
        reply, seconds, answered = held_call(session, "ast_grep", {"rule": SLOW_RULE})
        assert reply is not None and reply["is_error"], reply
        assert seconds <= ANSWER_S and answered, (seconds, answered)
        if where == "worker pool":
            # the worker past its deadline is gone (killed and replaced), never reused
            assert {p for p in before if not alive(p)}, before
        # again, and SIGTERM while it runs
        running = session.send({"tool": "ast_grep", "args": {"rule": SLOW_RULE}})
        time.sleep(1.0)
        workers = children(session.proc.pid)
        start = time.monotonic()
        session.proc.send_signal(signal.SIGTERM)
        # the search lets go at once: its call is answered, then the run closes
        stopped = session.reply(running, SIGTERM_S)
        assert stopped is not None and "SIGTERM" in text(stopped), stopped
        assert time.monotonic() - start <= STOPPED_S, time.monotonic() - start
        try:
            session.proc.wait(timeout=SIGTERM_S)
        except subprocess.TimeoutExpired:
            pass
        ended = time.monotonic() - start
        left = survivors(f"TETHER_OWNER={session.proc.pid}.") + [
            p for p in before | workers if alive(p)
        ]
        orphans = len(left)
        assert session.proc.poll() is not None and ended <= SIGTERM_S, ended
        assert not left
        held = True
    finally:
        tally.record("cpu: killable matching", held=held, orphans=orphans)
        for pid in survivors(f"TETHER_OWNER={session.proc.pid}."):
            os.kill(pid, signal.SIGKILL)
        session.close()
        time.sleep(0.2)
        for pid in before | workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
