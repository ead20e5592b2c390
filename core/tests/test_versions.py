"""The core-range check's own PEP 440 subset agrees with ``packaging`` wherever it judges."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.versions import core_requirement, core_version, distribution, entry_points, satisfies

packaging_specifiers = pytest.importorskip("packaging.specifiers")
packaging_version = pytest.importorskip("packaging.version")

releases = st.lists(st.integers(0, 3), min_size=1, max_size=3).map(
    lambda parts: ".".join(map(str, parts))
)
suffixes = st.sampled_from(["", "a1", "b0", "rc2", ".post1", ".dev0", "rc1.dev3", ".post2.dev1"])
versions = st.builds(lambda r, s: r + s, releases, suffixes)
locals_ = st.sampled_from(["", "", "+local.7"])
ops = st.sampled_from(["==", "!=", ">=", "<=", ">", "<", "~="])


@st.composite
def clauses(draw: st.DrawFn) -> str:
    op = draw(ops)
    if op in ("==", "!=") and draw(st.booleans()):
        return f"{op}{draw(releases)}.*"
    if op == "~=":
        return f"~={draw(releases)}.{draw(st.integers(0, 3))}"
    return f"{op}{draw(versions)}"


specifiers = st.lists(clauses(), min_size=1, max_size=3).map(",".join)


@settings(max_examples=2000, deadline=None)
@given(versions, locals_, specifiers)
def test_agrees_with_packaging(version: str, local: str, specifier: str) -> None:
    candidate = version + local
    expected = packaging_specifiers.SpecifierSet(specifier).contains(
        packaging_version.Version(candidate), prereleases=True
    )
    assert satisfies(candidate, specifier) is expected, (candidate, specifier)


@pytest.mark.parametrize(
    ("candidate", "specifier", "expected"),
    [
        ("0.2.0", ">=0.2,<0.3", True),
        ("0.2.7", ">=0.2,<0.3", True),
        ("0.3.0", ">=0.2,<0.3", False),
        ("0.3.0.dev1", ">=0.2,<0.3", False),  # a pre-release of 0.3 is not below 0.3
        ("0.1.9", ">=0.2,<0.3", False),
        ("1.0", "", True),
        ("0.2.0", "==0.2.*", True),
        ("0.2.0", "~=0.2.0", True),
        ("0.3.0", "~=0.2.0", False),
        ("0.2.0", "@ file:///x", None),  # not a specifier: not judged
        ("0.2.0", ">=banana", None),
        ("not-a-version", ">=0.2", None),
    ],
)
def test_cases(candidate: str, specifier: str, expected: bool | None) -> None:
    assert satisfies(candidate, specifier) is expected


class Dist:
    """Just what core_requirement reads: the METADATA file, headers then the README body."""

    def __init__(self, *requires: str) -> None:
        headers = ["Metadata-Version: 2.4", "Name: x", "Version: 1"]
        headers += [f"Requires-Dist: {r}" for r in requires]
        # a body line that looks like a header must not count
        self.metadata = "\n".join(headers) + "\n\nRequires-Dist: tether>=9\n"

    def read_text(self, name: str) -> str | None:
        return self.metadata if name == "METADATA" else None


@pytest.mark.parametrize(
    ("requires", "expected"),
    [
        (["tether<0.3,>=0.2"], "<0.3,>=0.2"),
        (["attrs>=23", "Tether (>=0.2, <0.3)"], ">=0.2,<0.3"),
        (["tether[all]>=0.2"], ">=0.2"),
        (["tether"], ""),
        (["tether-lsp>=0.2"], None),  # another distribution, not the core
        (['tether>=0.2; extra == "test"'], None),  # only for an extra
        (["tether @ file:///src/core"], None),
        ([], None),
    ],
)
def test_core_requirement(requires: list[str], expected: str | None) -> None:
    assert core_requirement(Dist(*requires)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("group", ["tether", "console_scripts", "pytest11"])
def test_entry_points_agree_with_importlib_metadata(group: str) -> None:
    """The light reader finds what the standard one finds, in whatever environment this runs."""
    import importlib.metadata

    def key(name: str, value: str, dist: object) -> tuple[str, str, str, str]:
        return (name, value, dist.name, dist.version)  # type: ignore[attr-defined]

    ours = {key(ep.name, ep.value, ep.dist) for ep in entry_points(group)}
    theirs = {
        key(ep.name, ep.value, ep.dist) for ep in importlib.metadata.entry_points(group=group)
    }
    assert ours == theirs
    assert core_version() == importlib.metadata.version("tether")


def test_a_distribution_first_on_sys_path_shadows_later_ones(tmp_path, monkeypatch) -> None:
    for where, version in (("a", "1.0"), ("b", "2.0")):
        dist = tmp_path / where / f"Shadowed_Thing-{version}.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Name: shadowed.thing\nVersion: {version}\n\nbody\n")
        (dist / "entry_points.txt").write_text(
            f"[other]\nx = nowhere\n\n[tether_test]\nthing = json : dumps\nv{where} = os.path:join\n"
        )
        monkeypatch.syspath_prepend(str(tmp_path / where))  # b ends up first
    found = distribution("shadowed-thing")
    assert found is not None and found.version == "2.0" and found.name == "shadowed.thing"
    eps = entry_points("tether_test")
    assert [(ep.name, ep.value) for ep in eps] == [
        ("thing", "json : dumps"),
        ("vb", "os.path:join"),
    ]
    import json
    import os.path

    assert eps[0].load() is json.dumps and eps[1].load() is os.path.join
