"""The core's one collector: typed, ordered, traced and isolating, as a family uses it."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import pytest

import tether
from tether.contributions import collect, shape_problem
from tether.plugins import make_plugin_manager


class WidgetSpecs:
    """A family's own hookspec, added the way families add theirs."""

    @tether.hookspec
    def tether_widgets(self):  # pragma: no cover - a spec
        ...


@attrs.frozen
class Widget:
    name: str
    extensions: Mapping[str, str] = attrs.field(factory=dict)
    markers: tuple[str, ...] = ()
    timeout_s: float | None = None


class Family:
    @tether.hookimpl
    def tether_addhooks(self, pluginmanager):
        pluginmanager.add_hookspecs(WidgetSpecs)


def contributes(*items, raises=None):
    class Contributor:
        @tether.hookimpl
        def tether_widgets(self):
            if raises:
                raise raises
            return list(items)

    return Contributor()


def gather(*plugins, monkeypatch=None):
    pm = make_plugin_manager(entry_points_group=None, plugins=[Family(), *plugins])
    found = collect(pm, "tether_widgets", Widget, key=lambda w: w.name, label="widget")
    failed = {i.name: i.reason for i in pm.report if i.status == "failed"}
    return {k: c.plugin for k, c in found.items()}, failed


def test_good_contributions_are_kept_with_their_plugin():
    found, failed = gather(contributes(Widget("a"), Widget("b", {".py": "python"})))
    assert found == {"a": "Contributor-1", "b": "Contributor-1"} and failed == {}


def test_a_wrong_shape_or_kind_drops_only_that_contribution():
    bad = contributes(Widget("bad", extensions=(".py",)), "not a widget", Widget("ok"))  # type: ignore[arg-type]
    found, failed = gather(contributes(Widget("other")), bad)
    assert found == {"other": "Contributor-1", "ok": "Contributor-2"}
    reason = failed["Contributor-2"]
    assert (
        "tether_widgets: widget dropped: extensions: expected Mapping[str, str], got ('.py',)"
        in reason
    )
    assert "widget dropped: expected a Widget, got str" in reason


def test_a_raising_hook_fails_its_plugin_only():
    found, failed = gather(contributes(Widget("a")), contributes(raises=TypeError("probes=")))
    assert found == {"a": "Contributor-1"}
    assert failed == {"Contributor-2": "tether_widgets: raised TypeError: probes="}


def test_duplicates_keep_the_first_in_call_order_and_name_both():
    found, failed = gather(contributes(Widget("a")), contributes(Widget("a")))
    assert found == {"a": "Contributor-2"}  # registered later, asked first
    assert failed == {
        "Contributor-1": "tether_widgets: widget 'a' dropped: already contributed by 'Contributor-2'"
    }


def test_collection_is_traced(monkeypatch, capsys):
    monkeypatch.setenv("TETHER_TRACE_PLUGINS", "1")
    gather(contributes(Widget("a")))
    assert "tether_widgets [hook]" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("widget", "problem"),
    [
        (Widget("a", markers=["x"]), "markers: expected tuple[str, ...]"),  # type: ignore[arg-type]
        (Widget("a", timeout_s="5"), "timeout_s: expected float | None"),  # type: ignore[arg-type]
        (Widget(3), "name: expected str, got 3"),  # type: ignore[arg-type]
        (Widget("a", timeout_s=5), None),
    ],
)
def test_shape_problems_name_the_field(widget, problem):
    found = shape_problem(widget, Widget)
    assert (
        (found is None) if problem is None else (found is not None and found.startswith(problem))
    ), found
