"""The core's result budget over the lsp tool: a project's diagnostics larger than the budget are
cut on whole lines, and the notice's continuation (one file) gives that file's diagnostics."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lsp_testkit import WRITE_AUTO, Caller, need

import tether


def test_project_diagnostics_are_cut_and_continue_file_by_file(tmp_path: Path) -> None:
    need("basedpyright-langserver")
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "budget-demo"\nversion = "0"\n')
    for i in range(5):
        body = "".join(f"value_{j}: int = 'text {j}'\n" for j in range(12))
        (project / "pkg" / f"m{i}.py").write_text(body)
    config = {"result_budget": {"tools": {"lsp": 3000}}}
    with tether.open_run_sync(project, config={"core": {**WRITE_AUTO, **config}}) as run:
        result = run.call("lsp", {"action": "diagnostics", "file": "*"})
        assert not result.is_error, result.text_content
        texts = [block.text for block in result.content]
        assert sum(len(t) for t in texts) <= 3000
        notice = texts[-1]
        assert notice.startswith("[tether cut this result to its budget:"), notice
        assert "[core.result_budget.tools] lsp = 3000" in notice
        found = re.search(r"call lsp with (\{.*?\}), then the next file", notice)
        assert found, notice
        narrower = json.loads(found.group(1))
        assert narrower["action"] == "diagnostics" and narrower["file"].startswith("pkg/m")
        text = Caller(run).ok(**narrower)
        assert "budget" not in text
        assert text.count(f"{narrower['file']}:") == 12, text
