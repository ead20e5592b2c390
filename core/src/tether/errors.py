"""The one small error hierarchy of tether.

Expected failures (bad arguments, a refused call, a tool that cannot do what was asked) reach the
model as ``is_error`` results with actionable text; anything else is a bug and propagates.
"""

from __future__ import annotations

from collections.abc import Sequence


class TetherError(Exception):
    """Base class of every error tether raises on purpose."""


class ToolError(TetherError):
    """An expected failure of a tool call; its message is shown to the model as an error result."""


class ArgumentError(ToolError):
    """A tool argument is wrong. The message always starts with the field's name."""

    def __init__(self, field: str, expected: str) -> None:
        self.field = field
        self.expected = expected
        super().__init__(f"{field}: {expected}")


class ArgumentErrors(ToolError):
    """Several argument errors found at once (one line each)."""

    def __init__(self, errors: Sequence[ArgumentError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class PathError(ArgumentError):
    """A path argument points outside the workdir (``..``, absolute, or an escaping symlink)."""


class NoPerson(TetherError):
    """Raised by a question port or approver when no person is attached to answer."""


class ConfigError(TetherError):
    """The configuration has an unknown key or a value of the wrong type."""


class PluginError(TetherError):
    """A plugin broke a registration rule (duplicate tool or resource name, bad spec)."""
