"""Which core a plugin was built for: its distribution's ``tether`` requirement (read through
``importlib.metadata``), judged by ``packaging`` against the running core before the plugin is
imported."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tether import make_plugin_manager
from tether.plugins import core_requirement


@pytest.mark.parametrize(
    ("requires", "expected"),
    [
        (["tether<0.3,>=0.2"], "<0.3,>=0.2"),
        (["attrs>=23", "Tether (>=0.2, <0.3)"], "<0.3,>=0.2"),
        (["tether[all]>=0.2"], ">=0.2"),
        (["tether"], ""),
        (["tether-lsp>=0.2", "tether_files>=0.2"], None),  # other distributions, not the core
        (['tether>=0.2; extra == "test"'], None),  # only for an extra
        (['tether>=0.2; python_version >= "3"'], ">=0.2"),  # a marker that holds here
        (['tether>=0.2; python_version < "3"'], None),  # one that does not
        (["tether @ file:///src/core"], None),
        (["tether >= banana"], None),  # not a requirement packaging reads: not judged
        ([], None),
    ],
)
def test_core_requirement(requires: list[str], expected: str | None) -> None:
    assert core_requirement(requires) == expected


def fake_distribution(where, name, version, *, requires=(), entry_points=""):
    dist = where / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (dist / "METADATA").write_text("\n".join(lines) + "\n\nRequires-Dist: tether>=99\n")
    if entry_points:
        (dist / "entry_points.txt").write_text(entry_points)


@pytest.mark.parametrize(
    ("core", "accepts", "loads"),
    [
        ("0.2.0", ">=0.2,<0.3", True),
        ("0.2.7", ">=0.2,<0.3", True),
        ("0.2.5rc1", ">=0.2,<0.3", True),  # a pre-release core is admitted
        ("0.3.0", ">=0.2,<0.3", False),
        ("0.3.0.dev1", ">=0.2,<0.3", False),  # a pre-release of 0.3 is not below 0.3
        ("0.1.9", ">=0.2,<0.3", False),
        ("0.2.0", "==0.2.*", True),
        ("0.2.0+local.7", "==0.2.0", True),
        ("0.3.0", "~=0.2.0", False),
        ("1!0.2.0", ">=0.2", True),
    ],
)
def test_the_core_range_decides_before_import(tmp_path, monkeypatch, core, accepts, loads):
    """The running core (a fake one shadows the real) against the plugin's declared range."""
    fake_distribution(tmp_path, "tether", core)
    fake_distribution(
        tmp_path,
        "tether-ranged",
        "1.0",
        requires=[f"tether{accepts}"],
        entry_points="[tether]\nranged = tether_ranged_plugin\n",
    )
    (tmp_path / "tether_ranged_plugin.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        info = next(i for i in make_plugin_manager().report if i.name == "ranged")
    finally:
        imported = sys.modules.pop("tether_ranged_plugin", None) is not None
    assert (info.status == "loaded") is loads, info
    assert imported is loads
    if not loads:
        assert info.reason is not None
        assert f"tether-ranged 1.0 requires tether{info.accepts_core}" in info.reason
        assert info.reason.endswith(f"the running core is tether {core}")


def test_packaging_waits_for_a_plugin_that_declares_a_core_range():
    """``import tether`` and a plugin manager with no plugin loaded never import packaging."""
    code = (
        "import sys, tether; tether.make_plugin_manager(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'packaging'))"
    )
    env = {"TETHER_LOAD_PLUGINS": "", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"


def _by_packaging(requires: list[str]) -> str | None:
    """The reference: the reading before the fast path, every requirement through
    ``packaging.requirements``."""
    from packaging.requirements import InvalidRequirement, Requirement

    for text in requires:
        head = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
        if head is None or head[1].lower() != "tether":
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            return None
        if requirement.url or (
            requirement.marker is not None and not requirement.marker.evaluate({"extra": ""})
        ):
            continue
        return str(requirement.specifier)
    return None


_NAMES = ["tether", "Tether", "TETHER", "tether-lsp", "tethers"]
_EXTRAS = ["", "[testing]", "[ a , b ]", "[]", "[x"]
_SPECS = [
    "",
    ">=0.2,<0.3",
    " >= 0.2 , < 0.3 ",
    "(>=0.2, <0.3)",
    "==0.2.*",
    "~=0.2.0",
    "===0.2",
    ">= banana",
    "(>=0.2",
    ">=0.2)",
    ">=0.2,,<0.3",
    "!=0.2.1",
    "<0.3,",
    " @ file:///x",
    "==1!0.2",
    ">=0.2.0+local",
    "==0.2.0+local",
    "== 0.2.*",
    "<=0.2.*",
    "<>0.2",
    "=0.2",
    ">=0.2 <0.3",
    '; extra == "test"',
    '>=0.2; python_version >= "3"',
    ">=0.2 ; os_name == 'nt'",
]


@pytest.mark.parametrize("name", _NAMES)
@pytest.mark.parametrize("extras", _EXTRAS)
@pytest.mark.parametrize("spec", _SPECS)
def test_the_fast_reading_agrees_with_packaging(name: str, extras: str, spec: str) -> None:
    """Generated requirements: the plain ones (no marker, no URL) are read with
    ``packaging.specifiers`` alone (importing ``packaging.requirements`` costs about 10 ms of
    start-up); whatever the shape, the range found is the one ``packaging.requirements`` finds."""
    text = f"{name}{extras}{spec}"
    assert core_requirement([text]) == _by_packaging([text]), text
