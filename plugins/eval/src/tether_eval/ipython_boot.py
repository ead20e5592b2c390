"""Runs INSIDE the kernel once at start (sent as source, never imported by the host).

Defines ``tool()`` (the bridge over the stdin channel), captures every open matplotlib figure
at the end of a cell, routes ``%pip`` to pip or ``uv pip`` and refreshes imports afterwards.
It must only use the standard library and IPython: the kernel may be another interpreter.
"""

from __future__ import annotations


def _tether_boot(prefix: str) -> None:
    import base64
    import builtins
    import importlib
    import importlib.metadata
    import importlib.util
    import io
    import json
    import os
    import shlex
    import shutil
    import site
    import sys
    import threading
    from typing import Any

    from IPython import get_ipython
    from IPython.core.magic import register_line_magic
    from IPython.display import display

    shell = get_ipython()
    lock = threading.Lock()

    class ToolError(Exception):
        """A tool called through ``tool()`` answered with an error."""

    # Shown as plain `ToolError` in tracebacks (it is also a builtin in the kernel).
    ToolError.__module__ = "builtins"

    class ToolResult:
        """What ``tool()`` returns: ``str()`` is the text; ``.content`` the blocks."""

        def __init__(self, content: list[dict[str, Any]], is_error: bool, meta: dict[str, Any]):
            self.content = content
            self.is_error = is_error
            self.meta = meta

        @property
        def text(self) -> str:
            return "\n".join(c["text"] for c in self.content if c.get("type") == "text")

        @property
        def images(self) -> list[bytes]:
            return [base64.b64decode(c["data"]) for c in self.content if c.get("type") == "image"]

        def __str__(self) -> str:
            return self.text

        def __repr__(self) -> str:
            return f"ToolResult(is_error={self.is_error}, text={self.text!r})"

    def tool(name: str, args: dict[str, Any] | None = None) -> ToolResult:
        """Call one of the run's tools through the same pipeline as the model."""
        if not isinstance(name, str):
            raise TypeError(f"tool(): name must be a str, got {type(name).__name__}")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise TypeError(f"tool(): args must be a dict, got {type(args).__name__}")
        request = prefix + json.dumps({"tool": name, "args": args})
        # One request on the stdin socket at a time: concurrent sends crash libzmq.
        with lock:
            reply = shell.kernel.raw_input(request)
        data = json.loads(reply)
        result = ToolResult(
            data.get("content", []), bool(data.get("is_error")), data.get("meta", {})
        )
        if result.is_error:
            raise ToolError(result.text or f"tool {name!r} failed")
        return result

    if hasattr(tool.__code__, "co_qualname"):  # a traceback frame reads `in tool(name, args)`
        tool.__code__ = tool.__code__.replace(co_qualname="tool")

    def show_open_figures(_result: object = None) -> None:
        # The inline backend shows and closes its figures at post_execute; whatever is still
        # open here (agg, plt.show() on a non-interactive backend) would otherwise be lost.
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return
        for number in pyplot.get_fignums():
            figure = pyplot.figure(number)
            buffer = io.BytesIO()
            try:
                figure.savefig(buffer, format="png", bbox_inches="tight")
            except Exception as exc:
                print(f"[figure {number} could not be rendered: {exc}]", file=sys.stderr)
                continue
            display({"image/png": buffer.getvalue()}, raw=True)
        pyplot.close("all")

    def distributions() -> dict[str, tuple[str, str]]:
        found: dict[str, tuple[str, str]] = {}
        for dist in importlib.metadata.distributions():
            name = normalize(dist.metadata["Name"] or "")
            if name and name not in found:
                found[name] = (dist.version, str(getattr(dist, "_path", "")))
        return found

    def normalize(name: str) -> str:
        return name.lower().replace("_", "-").replace(".", "-")

    def modules_by_distribution() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for module, dists in importlib.metadata.packages_distributions().items():
            for dist in dists:
                found.setdefault(normalize(dist), set()).add(module)
        return found

    def refresh_imports(
        before: dict[str, tuple[str, str]], modules_before: dict[str, set[str]]
    ) -> list[str]:
        importlib.invalidate_caches()
        for path in [*site.getsitepackages(), site.getusersitepackages()]:
            if os.path.isdir(path) and path not in sys.path:
                site.addsitedir(path)
        after = distributions()
        changed = sorted(n for n in after if before.get(n) != after[n])
        changed += sorted(n for n in before if n not in after)
        if not changed:
            return changed
        modules_after = modules_by_distribution()
        # Purge only what changed: re-importing a purged C extension can crash the kernel.
        for name in changed:
            for module in modules_before.get(name, set()) | modules_after.get(name, set()):
                for key in [k for k in sys.modules if k == module or k.startswith(module + ".")]:
                    del sys.modules[key]
        return changed

    @register_line_magic
    def pip(line: str) -> None:
        """%pip in any environment: pip when the kernel has it, else ``uv pip --python``."""
        before = distributions()
        modules_before = modules_by_distribution()
        python = shlex.quote(sys.executable)
        if importlib.util.find_spec("pip") is not None:
            command = f"{python} -m pip {line}"
        else:
            uv = shutil.which("uv")
            if uv is None:
                try:
                    from uv import find_uv_bin

                    uv = find_uv_bin()
                except Exception:
                    uv = None
            if uv is None:
                print("%pip: this environment has neither pip nor uv", file=sys.stderr)
                return
            words = shlex.split(line)
            if words[:1] == ["uninstall"]:
                # uv never asks before uninstalling, and refuses pip's -y.
                words = [w for w in words if w not in ("-y", "--yes")]
            args = " ".join(shlex.quote(w) for w in words)
            command = f"{shlex.quote(uv)} pip {args} --python {python}"
        shell.system(command)
        changed = refresh_imports(before, modules_before)
        if changed:
            print(f"[imports refreshed for: {', '.join(changed)}]")

    def activity() -> None:
        """Tell the host the cell is alive without printing: an iopub message of the cell that
        the host counts as activity (it resets the idle budget) and does not show."""
        kernel = getattr(shell, "kernel", None)
        if kernel is None:
            return
        try:
            kernel.session.send(
                kernel.iopub_socket, "tether_activity", {}, parent=kernel.get_parent("shell")
            )
        except Exception:  # an older kernel: the idle budget applies as it would anyway
            pass

    # %timeit / %%timeit print nothing until they end (seconds for a fast statement: up to
    # 2 s a timing, 7 timings): each timing they make is a sign of life instead.
    from IPython.core.magics import execution

    class ReportingTimer(execution.Timer):
        def timeit(self, number: int = 1000000) -> float:
            spent = super().timeit(number)
            activity()
            return float(spent)

    execution.Timer = ReportingTimer  # type: ignore[misc]

    shell.events.register("post_run_cell", show_open_figures)
    shell.run_line_magic("colors", "nocolor")
    builtins.tool = tool  # type: ignore[attr-defined]
    builtins.ToolError = ToolError  # type: ignore[attr-defined]
    shell.user_ns["tool"] = tool
    shell.user_ns["ToolError"] = ToolError
    shell.user_ns["ToolResult"] = ToolResult
