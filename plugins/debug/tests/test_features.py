"""The README's per-adapter support table is the one the recorded capabilities give, and the
adapters installed here still answer ``initialize`` with what was recorded: it cannot drift."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.testing import require_real
from tether_debug import features

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
RECORD = json.loads((HERE / "fixtures" / "capabilities.json").read_text())
README = (HERE.parent / "README.md").read_text()


def _script() -> Any:
    path = HERE.parent / "benchmarks" / "capabilities.py"
    spec = importlib.util.spec_from_file_location("debug_capabilities_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_readme_table_is_generated_from_the_recorded_capabilities() -> None:
    assert features.table_in(README) == features.support_table(RECORD)


def test_a_changed_capability_changes_the_table() -> None:
    # the check above can fail: lldb gaining log points is a different table
    changed = json.loads(json.dumps(RECORD))
    changed["lldb"]["capabilities"]["supportsLogPoints"] = True
    assert features.support_table(changed) != features.table_in(README)


_NEEDS = {
    "debugpy": lambda: importlib.util.find_spec("debugpy") is not None,
    "lldb": lambda: any(shutil.which(n) for n in ("lldb-dap", "lldb-vscode", "lldb-vscode-14")),
    "delve": lambda: shutil.which("dlv") is not None,
}


@pytest.mark.parametrize("adapter_id", sorted(RECORD))
async def test_the_installed_adapter_still_answers_what_was_recorded(adapter_id: str) -> None:
    require_real(_NEEDS[adapter_id](), f"the {adapter_id} adapter")
    live = await _script().capabilities(adapter_id)
    recorded = RECORD[adapter_id]
    wanted = [f.capability for f in features.FEATURES]
    assert {k: bool(live["capabilities"].get(k)) for k in wanted} == {
        k: bool(recorded["capabilities"].get(k)) for k in wanted
    }
    assert features.exception_filters(live["capabilities"]) == features.exception_filters(
        recorded["capabilities"]
    )
    assert live["version"] == recorded["version"]
