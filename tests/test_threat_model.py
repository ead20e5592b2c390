"""docs/threat-model.md covers every program tether may start on a read-tier call: each language
server and checker the installed plugins contribute, and each program of the core's launch
profiles — its row read from the same declaration the launch uses (``ServerSpec.untrusted``,
``ServerSpec.checker_untrusted``, ``tether.processes.launch.PROFILES``), so the page cannot drift. The
same for the write routes: every server and checker states how a checkout can make it write
(``Untrusted.writes``) and what pins it (``Untrusted.writes_closed_by``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tether
from tether.processes.launch import PROFILES, Untrusted, declared

DOC = Path(__file__).resolve().parents[1] / "docs" / "threat-model.md"


def _cells(untrusted: Untrusted) -> str:
    if not untrusted.risk:
        return "nothing it reads from the workdir runs code | — |"
    closed = untrusted.closed_by or "nothing: **unavailable** on an untrusted workdir"
    return f"{untrusted.risk} | {closed} |"


def _write_cells(untrusted: Untrusted) -> str:
    if untrusted.writes is None:
        return "not declared | nothing: **unavailable** on an untrusted workdir |"
    if not untrusted.writes:
        return "no setting it reads from the workdir names a path it writes | — |"
    closed = untrusted.writes_closed_by or "nothing: **unavailable** on an untrusted workdir"
    return f"{untrusted.writes} | {closed} |"


def _specs(tmp_path: Path, plugins: tuple[object, ...] = ()) -> list[Any]:
    from tether_lsp.tools import RESOURCE

    with tether.open_run_sync(tmp_path, plugins=plugins) as run:
        specs = run.resource(RESOURCE).specs
    return sorted(specs.values(), key=lambda s: s.id)


def expected_write_rows(tmp_path: Path, plugins: tuple[object, ...] = ()) -> list[str]:
    """The write-route table's rows as the installed plugins (and ``plugins``) declare them."""
    rows = []
    for spec in _specs(tmp_path, plugins):
        rows.append(f"| `{spec.id}` | language server | {_write_cells(declared(spec.untrusted))}")
        if spec.checker:
            shown = " ".join(spec.checker)
            untrusted = declared(spec.checker_untrusted)
            rows.append(f"| `{shown}` | checker of `{spec.id}` | {_write_cells(untrusted)}")
    return rows


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


def test_the_threat_model_has_a_write_route_row_for_every_server_and_checker(
    tmp_path: Path,
) -> None:
    text = DOC.read_text("utf-8")
    missing = [row for row in expected_write_rows(tmp_path) if row not in text]
    assert not missing, "docs/threat-model.md lacks (or words differently):\n" + "\n".join(missing)


def test_every_installed_server_and_checker_states_its_write_routes(tmp_path: Path) -> None:
    undeclared = [spec.id for spec in _specs(tmp_path) if declared(spec.untrusted).writes is None]
    undeclared += [
        f"{spec.id} (checker)"
        for spec in _specs(tmp_path)
        if spec.checker and declared(spec.checker_untrusted).writes is None
    ]
    assert not undeclared, undeclared


def test_a_server_that_does_not_state_its_write_routes_is_caught(tmp_path: Path) -> None:
    """The check can fail: a declaration of its code routes only is reported."""
    from tether_lsp import ServerSpec

    class CodeOnly:
        @tether.hookimpl
        def tether_lsp_servers(self) -> list[ServerSpec]:
            return [
                ServerSpec(
                    id="zls",
                    language="zig",
                    extensions={".zig": "zig"},
                    command=("zls",),
                    root_markers=("build.zig",),
                    untrusted=Untrusted(),  # says what it runs (nothing), not where it writes
                )
            ]

    text = DOC.read_text("utf-8")
    missing = [row for row in expected_write_rows(tmp_path, (CodeOnly(),)) if row not in text]
    assert missing == [
        "| `zls` | language server | not declared | nothing: **unavailable** on an untrusted "
        "workdir |"
    ], missing
