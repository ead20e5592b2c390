"""Test helpers: fixture projects copied to a temp dir, runs with real servers, a caller."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import tether
from tether.testing import require_real

FIXTURES = Path(__file__).parent / "fixtures"
WRITE_AUTO = {"approval": {"read": "auto", "write": "auto", "exec": "ask"}}


def copy_project(name: str, into: Path) -> Path:
    workdir = into / name
    shutil.copytree(FIXTURES / name, workdir)
    if name == "cproj":
        entries = [
            {"directory": str(workdir), "file": str(workdir / src), "arguments": ["cc", "-c", src]}
            for src in ("main.c", "util.c")
        ]
        (workdir / "compile_commands.json").write_text(json.dumps(entries))
    return workdir


def need(binary: str) -> None:
    """The real server must be installed (skip on a dev box, fail in CI)."""
    found = shutil.which(binary) or shutil.which(binary, path=str(Path(sys.executable).parent))
    require_real(found is not None, f"{binary} (a real language server)")


def open_lsp_run(workdir: Path, lsp: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    config: dict[str, Any] = {"core": WRITE_AUTO}
    if lsp:
        config["lsp"] = lsp
    return tether.open_run_sync(workdir, config=config, **kwargs)


class Caller:
    """``ok(...)`` asserts success and returns the text; ``err(...)`` asserts an error."""

    def __init__(self, run: Any) -> None:
        self.run = run

    def ok(self, tool: str = "lsp", **args: Any) -> str:
        result = self.run.call(tool, args)
        assert not result.is_error, result.text_content
        return result.text_content

    def err(self, tool: str = "lsp", **args: Any) -> str:
        result = self.run.call(tool, args)
        assert result.is_error, result.text_content
        return result.text_content
