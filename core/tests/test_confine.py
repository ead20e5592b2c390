"""tether.processes.confine: a program started with ``confine=True`` on an untrusted workdir writes only in
the run's own directory — with Landlock, with bwrap, and (said plainly) not at all with none."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import tether
from tether.processes import confine

#: tries to write in the workdir, beside it and in /tmp (each line says how it went), then in
#: its TMPDIR, which must work
WRITER = (
    "for t in wd-file ../beside $OUTSIDE; do (echo x > $t) 2>/dev/null && echo wrote $t "
    "|| echo denied $t; done; echo y > $TMPDIR/mine && echo tmpdir-ok"
)


def _available(kind: str) -> None:
    if kind == "landlock" and not confine.landlock_abi()[0]:
        if os.environ.get("TETHER_REQUIRE_REAL"):
            pytest.fail("this kernel has no Landlock (TETHER_REQUIRE_REAL)")
        pytest.skip("no Landlock in this kernel")
    if kind == "bwrap" and shutil.which("bwrap") is None:
        if os.environ.get("TETHER_REQUIRE_REAL"):
            pytest.fail("bwrap is required (TETHER_REQUIRE_REAL)")
        pytest.skip("bwrap not installed")


def _write_everywhere(workdir: Path, outside: Path, trusted: bool = False) -> tuple[str, Path]:
    with tether.open_run_sync(workdir, trust_workdir=trusted) as run:
        done = run.portal.call(
            lambda: run.run.process_owner.run_command(
                ["sh", "-c", WRITER],
                timeout_s=20,
                cwd=workdir,
                env={**os.environ, "OUTSIDE": str(outside)},
                confine=True,
            )
        )
        directory = run.run.process_owner.directory
        assert directory.is_dir()
    return done.text(), directory


@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_a_confined_program_writes_only_in_the_runs_directory(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _available(kind)
    monkeypatch.setenv(confine.CHOICE_ENV, kind)
    workdir = tmp_path / "w"
    workdir.mkdir()
    outside = tmp_path / "outside"
    text, directory = _write_everywhere(workdir, outside)
    assert "wrote" not in text and text.count("denied") == 3 and "tmpdir-ok" in text, text
    assert not outside.exists() and not (tmp_path / "beside").exists()
    assert list(workdir.iterdir()) == []
    assert not directory.exists()  # the run's directory goes with the run


def test_with_no_confinement_the_writes_happen_and_status_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(confine.CHOICE_ENV, "none")
    workdir = tmp_path / "w"
    workdir.mkdir()
    text, _ = _write_everywhere(workdir, tmp_path / "outside")
    assert text.count("wrote") == 3, text
    described = confine.detect().describe()
    assert described.startswith("none") and "left open" in described, described


def test_a_trusted_workdir_is_not_confined(tmp_path: Path) -> None:
    workdir = tmp_path / "w"
    workdir.mkdir()
    text, _ = _write_everywhere(workdir, tmp_path / "outside", trusted=True)
    assert text.count("wrote") == 3, text


def test_an_unknown_choice_falls_to_none_and_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(confine.CHOICE_ENV, "selinux")
    found = confine.detect()
    assert found.kind == "none" and "TETHER_CONFINEMENT='selinux'" in found.reason, found


def test_a_missing_program_is_not_found_as_without_confinement(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        confine.wrap(["no-such-program-anywhere"], tmp_path, {"PATH": "/usr/bin"})


def test_the_runs_directory_goes_with_a_close_cut_short(tmp_path: Path) -> None:
    with tether.open_run_sync(tmp_path) as run:
        owner = run.run.process_owner
        directory = owner.directory
        (directory / "left").write_text("x")
        owner.kill_all()  # what a close cut short does
        assert not directory.exists()
        with pytest.raises(tether.ToolError):
            owner.directory  # noqa: B018 - made after the close, it would outlive the run
