"""A server's hover markdown read as text (tether_lsp.render.markdown_text): each rule is
skipped where its text cannot occur; the result is the rules' over every mix of what they
handle (code spans and fences kept literal, escapes, entities, hard breaks)."""

from __future__ import annotations

import html
import itertools
import re

from tether_lsp.render import markdown_text

#: the rules as first written, each run on every chunk
_CODE = re.compile(r"(^```.*?^```[ \t]*$|`[^`\n]+`)", re.MULTILINE | re.DOTALL)
_HARD_BREAK = re.compile(r"(?: {2,}|\\)$", re.MULTILINE)
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")

#: each thing a rule acts on (or must leave alone), and plain text around them
FRAGMENTS = [
    "   \n    x   y  \n",
    "`a\\*b`",
    "```py\nx = 1  \n&lt;\n```",
    "\\*args",
    "&lt;T&gt;",
    "&nbsp;&nbsp;x",
    "end  \n",
    "end\\\n",
    "tail  ",
    "tail\\",
    "plain",
    "\n",
]


def _every_rule(markdown: str) -> str:
    """The rules applied to every chunk outside code, none skipped."""
    out = []
    for index, chunk in enumerate(_CODE.split(markdown)):
        if index % 2:
            out.append(chunk)
            continue
        chunk = _HARD_BREAK.sub("", chunk)
        chunk = _ESCAPED.sub(r"\1", chunk)
        out.append(_ENTITY.sub(lambda m: html.unescape(m.group(0)).replace("\xa0", " "), chunk))
    return "".join(out)


def test_markdown_text_is_its_rules_over_every_mix_of_fragments() -> None:
    mixes = ["".join(mix) for mix in itertools.product(FRAGMENTS, repeat=3)]
    wrong = [mix for mix in mixes if markdown_text(mix) != _every_rule(mix)]
    assert not wrong, wrong[:5]
    assert markdown_text("\\*args &lt;T&gt; `a\\*b`") == "*args <T> `a\\*b`"
