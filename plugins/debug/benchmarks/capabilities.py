"""Start each debug adapter installed here, read the capabilities its ``initialize`` answer
carries, and print the per-adapter support table of plugins/debug/README.md.

    uv run python plugins/debug/benchmarks/capabilities.py          # print the table
    uv run python plugins/debug/benchmarks/capabilities.py --write  # record and update README

``--write`` records what the adapters said in ``tests/fixtures/capabilities.json`` and puts the
table in the README; ``tests/test_features.py`` checks that the README's table is the one this
record gives, and that the adapters installed still say what it records.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

import tether
import tether_debug.hooks
from tether_debug import features
from tether_debug.adapters import availability
from tether_debug.session import DebugSession

HERE = Path(__file__).resolve().parent
RECORD = HERE.parent / "tests" / "fixtures" / "capabilities.json"
README = HERE.parent / "README.md"
#: each adapter measured, with a root marker for its throwaway workdir
ADAPTERS = {"debugpy": "pyproject.toml", "lldb": "CMakeLists.txt", "delve": "go.mod"}


def _version(adapter_id: str, command: tuple[str, ...]) -> str:
    """What runs, as the adapter's own tools say it."""
    if adapter_id == "debugpy":
        code = "import debugpy; print('debugpy', debugpy.__version__)"
        argv = [command[0], "-c", code]
    elif adapter_id == "delve":
        argv = [command[0], "version"]
    else:
        return Path(command[0]).name
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False).stdout
    for line in out.splitlines():
        if line.startswith(("debugpy ", "Version: ")):
            return line.replace("Version: ", "dlv ").strip()
    return Path(command[0]).name


async def capabilities(adapter_id: str) -> dict[str, Any]:
    """``{"version": …, "capabilities": {…}}`` of one adapter, started as the tool starts it."""
    marker = ADAPTERS[adapter_id]
    with tempfile.TemporaryDirectory() as workdir:
        (Path(workdir) / marker).write_text("module probe\n" if marker == "go.mod" else "")
        async with tether.open_run(
            workdir,
            conversation_id="capabilities",
            plugins=[tether_debug.hooks],
            entry_points=False,
        ) as run:
            supervisor = run.resources["debug_supervisor"]
            adapter = supervisor.adapters()[adapter_id]
            found = await availability(adapter, run.workdir, run.workdir, supervisor.probe)
            if not found.usable:
                raise SystemExit(f"{adapter_id}: {found.explain(run.workdir)}")
            assert found.resolution.command is not None
            session = DebugSession(
                run=run,
                availability=found,
                adapter=adapter,
                mode="launch",
                target="capabilities",
                config=supervisor.config,
            )
            try:
                await session.open()
                caps = dict(session.capabilities)
            finally:
                await session.close("capabilities read")
            return {"version": _version(adapter_id, found.resolution.command), "capabilities": caps}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record and update the README")
    options = parser.parse_args()
    record = {adapter_id: await capabilities(adapter_id) for adapter_id in ADAPTERS}
    table = features.support_table(record)
    if options.write:
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        README.write_text(features.replace_table(README.read_text(), table))
        print(f"wrote {RECORD} and the table in {README}", file=sys.stderr)
    print(table)


if __name__ == "__main__":
    anyio.run(main)
