"""The servers a project needs (issue 31 §6): ``status`` starts what a query here would use —
the first usable server of each language in preference order, and the diagnostics-only
servers beside it — and lists the other installed ones as not started, with how to choose
them. Before: ``status`` on a Python project started every installed Python server (nine on
attrs with json, yaml and bash) and showed a server being started as "pid None … exited:
None".
"""

from __future__ import annotations

from pathlib import Path

from lsp_testkit import Caller, copy_project, need, open_lsp_run

OTHERS = ("pyright", "pylsp", "jedi-language-server")


def test_status_starts_only_the_servers_a_query_would_use(tmp_path: Path) -> None:
    need("basedpyright-langserver")
    for binary in ("pyright-langserver", "pylsp", "jedi-language-server"):
        need(binary)
    workdir = copy_project("pyproj", tmp_path)
    with open_lsp_run(workdir) as run:
        status = Caller(run).ok(action="status")
        running, _, known = status.partition("Known servers:")
        assert "basedpyright for ." in running, status
        for other in OTHERS:
            assert f"  {other} for" not in running, status
            assert (
                f"  {other} [python] installed, not started — " in known
                and f"basedpyright answers for python first (put {other} first in "
                "`[lsp] servers.python` to use it)"
                in known
            ), status
        assert "pid None" not in status and "exited: None" not in status, status
        started = {client.spec.id for client in run.run.resources["lsp_supervisor"].clients}
        assert not started & set(OTHERS), started
