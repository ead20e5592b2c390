"""``lsp status`` says which of the workdir's own settings were ignored (issue 22, section 5):
a bad `[lsp]` key or a file that is not TOML never stops the run, and is shown where the agent
looks when a server behaves unexpectedly."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_testkit import Caller, copy_project, need, open_lsp_run

from tether.config import load_workdir_config

JEDI = {"servers": {"python": ["jedi-language-server"]}}


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('[lsp]\nrequest_timeout_s = "x"\n', 'lsp.request_timeout_s: expected number, got "x"'),
        ("[lsp]\nrequest_timeout_s = 0\n", "lsp.request_timeout_s: ignored 0"),
        ("[lsp]\nservers = 3\nbogus = 1\n", "lsp.bogus: ignored (unknown key"),
        ("[lsp]\nrequest_timeout_s = \n", "is not valid TOML"),
    ],
    ids=["wrong type", "loosening", "unknown key", "invalid TOML"],
)
def test_status_shows_the_ignored_workdir_settings(tmp_path: Path, text: str, shown: str) -> None:
    need("jedi-language-server")
    work = copy_project("pyproj", tmp_path)
    (work / "tether.toml").write_text(text)
    with open_lsp_run(work, JEDI, workdir_config=load_workdir_config(work)) as run:
        status = Caller(run).ok(action="status")
    assert "Workdir configuration ignored (the harness's applies):" in status
    assert shown in status, status
