"""Which question port a run gets, and the approver backed by it.

Both are defaults (`tether.resources.Default`): a harness that wires its own `question_port` or
`approver` keeps it. The port is made after the transports' resources (the session's card
stream, `tether call`'s terminal), whichever plugin wires them.
"""

from __future__ import annotations

import importlib
from typing import Any

import tether
from tether.person import APPROVER, CARD_STREAM, QUESTION_PORT, TERMINAL, QuestionPort
from tether.resources import Default
from tether_ask.approval import PortApprover
from tether_ask.asking import check_timeouts, port_timeout
from tether_ask.config import AskConfig
from tether_ask.ports import CallbackPort, SessionPort
from tether_ask.terminal import TerminalPort


def load_callback(path: str) -> Any:
    """Import `"package.module:function"` named by `[ask] callback`."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise tether.ConfigError(f'ask.callback: expected "package.module:function", got {path!r}')
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise tether.ConfigError(f"ask.callback: cannot import {path!r}: {exc}") from None
    if not callable(target):
        raise tether.ConfigError(f"ask.callback: {path!r} is not callable")
    return target


def configured_port(run: tether.Run, config: AskConfig) -> QuestionPort | None:
    """The port this plugin wires: `[ask] callback`, else the session stream, else the terminal."""
    # Their timeouts come from [ask] at each card (see asking.port_timeout).
    if config.callback is not None:
        return CallbackPort(load_callback(config.callback))
    stream = run.resource(CARD_STREAM, None)
    if stream is not None:
        return SessionPort(stream)
    terminal = run.resource(TERMINAL, None)
    if terminal is not None:
        return TerminalPort(terminal)
    return None


def wire_ask_resources(run: tether.Run) -> dict[Any, Any]:
    """`question_port` and `approver` backed by it, each unless the harness wired its own."""
    config = run.config("ask", AskConfig)
    check_timeouts(config)
    made: list[QuestionPort] = []

    def port(run: tether.Run) -> QuestionPort | None:
        found = configured_port(run, config)
        if found is not None:
            made.append(found)
        return found

    def approver(run: tether.Run) -> PortApprover | None:
        found = run.resource(QUESTION_PORT, None)
        if found is None:
            return None
        if config.callback is not None and not made:
            raise tether.ConfigError(
                "ask.callback: the run already has a question_port from the harness; "
                "set one or the other"
            )
        port_timeout(config, found)  # a bad bound fails the run's opening, not a later call
        return PortApprover(found, config)

    return {
        QUESTION_PORT: Default(port, after=(CARD_STREAM, TERMINAL)),
        APPROVER: Default(approver, after=(QUESTION_PORT,)),
    }
