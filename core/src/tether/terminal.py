"""Untrusted text made safe for a person's terminal: every control character shown, never
interpreted.

Text that reaches a terminal or stderr comes from the model (a question, a card's options), the
checkout (a key in its ``tether.toml``, a file name) or a tool. A terminal interprets some of its
characters: BEL rings, CR and BS move the cursor back over what was written, ESC starts CSI, OSC
and DCS sequences (cursor moves, erased lines, a window title), the C1 controls do the same in one
byte, and the Unicode bidirectional controls reorder what a reader sees. :func:`for_terminal`
writes each of them as an escape (``\\x1b``, ``\\r``, ``\\u202e``) so the person sees exactly
what was sent; every writer of the CLI, the terminal port and the core's warnings (:func:`warn`) goes
through it. :func:`json_safe` does the same inside JSON text (a ``\\u202e`` JSON escape decodes to the
same string).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import logging

# categories a terminal does not draw as themselves: controls (C0, DEL, C1), format characters
# (bidi embeddings, overrides, isolates and marks, zero-width joiners, the BOM), surrogates,
# private use, unassigned, and the line and paragraph separators
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def is_hidden(char: str) -> bool:
    """Whether a terminal would act on ``char`` (or hide it) rather than draw it."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


def escape(char: str) -> str:
    """``char``'s visible escape: ``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\u202e``, ``\\U000e0001``."""
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def for_terminal(text: object, *, newlines: bool = False) -> str:
    """``text`` as a terminal may show it: every control, format (bidi) and separator character
    written as its escape. Line feeds stay only with ``newlines=True`` (a CR never does: it
    would return over the line). The result contains nothing a terminal interprets but ``\\n``."""
    text = str(text)
    if not any(is_hidden(char) for char in text):
        return text
    return "".join(
        char if (newlines and char == "\n") or not is_hidden(char) else escape(char)
        for char in text
    )


_NOT_ASCII = re.compile(r"[^\x00-\x7e]")


def json_safe(json_text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with the characters a terminal acts
    on written as JSON escapes: the same JSON value, harmless when printed. (``json.dumps``
    already escapes the C0 controls; DEL, C1 and the format characters it leaves raw.)"""
    if json_text.isascii() and "\x7f" not in json_text:
        return json_text
    return _NOT_ASCII.sub(
        lambda m: _json_escape(m.group()) if is_hidden(m.group()) else m.group(), json_text
    )


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def say(text: object, stream: TextIO) -> None:
    """Write one message line to a terminal stream (stderr), made safe; it ends the line."""
    stream.write(for_terminal(text, newlines=True).rstrip("\n") + "\n")
    stream.flush()


def warn(message: str, *args: object) -> None:
    """A warning on the ``tether`` logger (stderr, when the harness configured no logging), its
    arguments made safe first; ``logging`` is imported when there is one to give."""
    import logging

    safe = tuple(for_terminal(arg, newlines=True) for arg in args)
    logging.getLogger("tether").warning(message, *safe)


def stderr_log_handler(stream: TextIO) -> logging.Handler:
    """A ``logging.Handler`` for a command's own log lines (``tether mcp``): each formatted
    line made safe, line feeds kept."""
    import logging

    class _SafeFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return for_terminal(super().format(record), newlines=True)

    handler = logging.StreamHandler(stream)
    handler.setFormatter(_SafeFormatter("%(message)s"))
    return handler


__all__ = [
    "escape",
    "for_terminal",
    "is_hidden",
    "json_safe",
    "say",
    "stderr_log_handler",
    "warn",
]
