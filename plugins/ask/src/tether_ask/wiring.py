"""Which question port a run gets, and the approver backed by it."""

from __future__ import annotations

import importlib
from typing import Any

import tether
from tether_ask.approval import PortApprover
from tether_ask.asking import check_timeouts, port_timeout
from tether_ask.config import AskConfig
from tether_ask.ports import CallbackPort, QuestionPort, SessionPort
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
    if "card_stream" in run.resources:
        return SessionPort(run.resources["card_stream"])
    if "terminal" in run.resources:
        return TerminalPort(run.resources["terminal"])
    return None


def wire_ask_resources(run: tether.Run) -> dict[str, Any] | None:
    """`question_port` (unless the harness wired its own) and `approver` backed by the port
    (unless the harness wired its own approver)."""
    config = run.config("ask", AskConfig)
    check_timeouts(config)
    wired: dict[str, Any] = {}
    port = run.resources.get("question_port")
    if port is None:
        port = configured_port(run, config)
        if port is None:
            return None
        wired["question_port"] = port
    elif config.callback is not None:
        raise tether.ConfigError(
            "ask.callback: the run already has a question_port from the harness; "
            "set one or the other"
        )
    if not isinstance(port, QuestionPort):
        # the harness's own object is wrong: its input, like its config, fails the run's opening
        raise tether.ConfigError(
            f"question_port: expected a tether_ask.QuestionPort (name, timeout_s, "
            f"person_attached, async ask), got {type(port).__name__}"
        )
    port_timeout(config, port)  # a bad bound fails the run's opening, not a later call
    if "approver" not in run.resources:
        wired["approver"] = PortApprover(port, config)
    return wired
