"""tether: tools bound to the live resources of one coding-agent run.

A harness opens a run, and installed plugins (``tether-lsp``, ``tether-astgrep``…) wire their
resources and register their tools::

    async with tether.open_run(workdir, conversation_id="c1") as run:
        schemas = run.schemas(surface="plan", format="anthropic")
        result = await run.call("lsp", {"action": "hover", "file": "a.py", "line": 3, "symbol": "foo"})

Plugins are pluggy plugins registered under the entry-point group ``tether``; see
``docs/plugin-api.md``. What a harness, a plugin and nobody may use: ``docs/api.md``.

tether runs on POSIX systems: Linux (reading ``/proc``, a subreaper strengthening the cleanup)
and macOS or another POSIX system (through psutil: ``tether.processes.procinfo``). It supervises processes
through POSIX process groups and signals, which Windows lacks: there the import fails at once
with an error that says so, not with a crash deep inside a plugin.
"""

import sys as _sys

if _sys.platform.startswith(("win32", "cygwin")) or not hasattr(__import__("os"), "killpg"):
    raise ImportError(
        "tether needs a POSIX system (it supervises processes through POSIX process groups "
        f"and signals: os.killpg, os.setsid, SIGKILL), which this platform {_sys.platform!r} lacks"
    )

from tether import _moved
from tether.approval import ApprovalRequest, Approver, Decision
from tether.args import arg, object_schema, structure_args
from tether.budget import Continuation, Cut
from tether.errors import (
    ArgumentError,
    ArgumentErrors,
    ConfigError,
    NoPerson,
    PathError,
    PluginError,
    TetherError,
    ToolError,
)
from tether.hookspecs import hookimpl, hookspec
from tether.observe import waiting
from tether.plugins import PluginInfo, make_plugin_manager
from tether.preview import StagedChange, StagedFile
from tether.run import Run, SyncRun, open_run, open_run_sync
from tether.tiers import Tier
from tether.tools import (
    Action,
    Actions,
    CallContext,
    Content,
    Image,
    ResultNote,
    Text,
    ToolResult,
    ToolSpec,
)

_moved.install()

__all__ = [
    "Action",
    "Actions",
    "ApprovalRequest",
    "Approver",
    "ArgumentError",
    "ArgumentErrors",
    "CallContext",
    "ConfigError",
    "Content",
    "Continuation",
    "Cut",
    "Decision",
    "Image",
    "NoPerson",
    "PathError",
    "PluginError",
    "PluginInfo",
    "ResultNote",
    "Run",
    "StagedChange",
    "StagedFile",
    "SyncRun",
    "TetherError",
    "Text",
    "Tier",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "arg",
    "hookimpl",
    "hookspec",
    "make_plugin_manager",
    "object_schema",
    "open_run",
    "open_run_sync",
    "structure_args",
    "waiting",
]
