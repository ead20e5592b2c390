"""docs/threat-model.md covers every program tether may start on a read-tier call: each language
server and checker the installed plugins contribute, and each program of the core's launch
profiles — its row read from the same declaration the launch uses (``ServerSpec.untrusted``,
``ServerSpec.checker_untrusted``, ``tether.launch.PROFILES``), so the page cannot drift."""

from __future__ import annotations

from pathlib import Path

import tether
from tether.launch import PROFILES, Untrusted, declared

DOC = Path(__file__).resolve().parents[1] / "docs" / "threat-model.md"


def _cells(untrusted: Untrusted) -> str:
    if not untrusted.risk:
        return "nothing it reads from the workdir runs code | — |"
    closed = untrusted.closed_by or "nothing: **unavailable** on an untrusted workdir"
    return f"{untrusted.risk} | {closed} |"


def expected_rows(tmp_path: Path, plugins: tuple[object, ...] = ()) -> list[str]:
    """The table's rows as the installed plugins (and ``plugins``) and the core declare them."""
    from tether_lsp.tools import RESOURCE

    with tether.open_run_sync(tmp_path, plugins=plugins) as run:
        specs = run.resource(RESOURCE).specs
    rows = []
    for spec in sorted(specs.values(), key=lambda s: s.id):
        rows.append(f"| `{spec.id}` | language server | {_cells(declared(spec.untrusted))}")
        if spec.checker:
            shown = " ".join(spec.checker)
            untrusted = declared(spec.checker_untrusted)
            rows.append(f"| `{shown}` | checker of `{spec.id}` | {_cells(untrusted)}")
    for profile in PROFILES:
        names = ", ".join(f"`{name}`" for name in sorted(profile.programs))
        rows.append(
            f"| {names} | program (core launch profile) | {profile.risk} | {profile.closed_by} |"
        )
    return rows


def test_the_threat_model_has_a_row_for_every_contributed_server_checker_and_program(
    tmp_path: Path,
) -> None:
    text = DOC.read_text("utf-8")
    missing = [row for row in expected_rows(tmp_path) if row not in text]
    assert not missing, "docs/threat-model.md lacks (or words differently):\n" + "\n".join(missing)


def test_every_installed_server_declares_what_the_workdir_can_make_it_run(tmp_path: Path) -> None:
    from tether_lsp.tools import RESOURCE

    with tether.open_run_sync(tmp_path) as run:
        specs = run.resource(RESOURCE).specs
    undeclared = [spec.id for spec in specs.values() if spec.untrusted is None]
    unchecked = [spec.id for spec in specs.values() if spec.checker and not spec.checker_untrusted]
    assert not undeclared and not unchecked, (undeclared, unchecked)


def test_a_server_the_page_does_not_know_is_caught(tmp_path: Path) -> None:
    """The check can fail: a third party's server with no row is reported missing."""
    from tether_lsp import ServerSpec

    class ThirdParty:
        @tether.hookimpl
        def tether_lsp_servers(self) -> list[ServerSpec]:
            return [
                ServerSpec(
                    id="zls",
                    language="zig",
                    extensions={".zig": "zig"},
                    command=("zls",),
                    root_markers=("build.zig",),
                )
            ]

    text = DOC.read_text("utf-8")
    missing = [row for row in expected_rows(tmp_path, (ThirdParty(),)) if row not in text]
    assert missing == ["| `zls` | language server | " + _cells(declared(None))], missing
