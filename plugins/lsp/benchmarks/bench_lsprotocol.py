"""What typing LSP replies with lsprotocol costs on big answers, against the dicts of before.

    uv run python plugins/lsp/benchmarks/bench_lsprotocol.py [--repeat N]

Three payloads at the shapes real servers send (basedpyright's diagnostics and symbols), made
here: 20,000 diagnostics in one ``publishDiagnostics``, 5,000 references, 19,000 workspace
symbols. For each, the path from the decoded JSON to the rows the model is shown: the old one
(dicts read with ``.get``: the functions as they were, copied below) and the typed one
(:mod:`tether_lsp.protocol` structuring, then the rendering on attrs objects). Prints the best
of N runs of each, the ratio, and the peak memory of one run (tracemalloc), plus
lsprotocol's import time in a fresh interpreter.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from tether_lsp import protocol
from tether_lsp.documents import Published, uri_to_path
from tether_lsp.positions import from_lsp_character, split_lines
from tether_lsp.render import (
    SEVERITIES,
    SYMBOL_KINDS,
    Place,
    format_diagnostics,
    places,
    symbol_rows,
)

DIAGNOSTICS = 20_000
REFERENCES = 5_000
SYMBOLS = 19_000
FILES = 1_900  # the workspace the references and symbols point into


def _span(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


def diagnostics_payload() -> str:
    """One publish of 20,000 diagnostics, as basedpyright words them (a code, its link, a
    tag on some, a source)."""
    items = []
    for n in range(DIAGNOSTICS):
        item: dict[str, Any] = {
            "range": _span(n, 4, 12),
            "message": f'"name_{n}" is not defined',
            "severity": 1 + n % 3,
            "source": "basedpyright",
            "code": "reportUndefinedVariable",
            "codeDescription": {
                "href": "https://docs.basedpyright.com/latest/configuration/config-files/"
                "#reportUndefinedVariable"
            },
        }
        if n % 5 == 0:
            item["tags"] = [1]
        items.append(item)
    params = {"uri": "file:///work/big.py", "version": 3, "diagnostics": items}
    return json.dumps(
        {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params}
    )


def references_payload() -> str:
    found = [
        {"uri": f"file:///work/src/pkg/module_{n % FILES}.py", "range": _span(n % 400, 8, 20)}
        for n in range(REFERENCES)
    ]
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": found})


def symbols_payload() -> str:
    kinds = (5, 6, 12, 13, 14)
    found = [
        {
            "name": f"symbol_{n}",
            "kind": kinds[n % len(kinds)],
            "location": {
                "uri": f"file:///work/src/pkg/module_{n % FILES}.py",
                "range": _span(n % 400, 4, 14),
            },
            "containerName": f"Class{n % 50}" if n % 2 else "",
        }
        for n in range(SYMBOLS)
    ]
    return json.dumps({"jsonrpc": "2.0", "id": 8, "result": found})


# -- the old paths: tether_lsp's dict code before lsprotocol (render.py, client.py) ---------


def old_diagnostic_line(
    diagnostic: dict[str, Any], where: str, line_text: str, encoding: str
) -> str:
    start = diagnostic.get("range", {}).get("start", {"line": 0, "character": 0})
    column = from_lsp_character(line_text, start.get("character", 0), encoding) + 1
    severity = SEVERITIES.get(diagnostic.get("severity") or 1, "error")
    code = diagnostic.get("code")
    code_text = f" [{code}]" if code not in (None, "") else ""
    message = str(diagnostic.get("message", "")).strip().replace("\n", " ")
    source = diagnostic.get("source")
    source_text = f" ({source})" if source else ""
    return (
        f"{where}:{start.get('line', 0) + 1}:{column} {severity}{code_text}: {message}{source_text}"
    )


def old_diagnostic_order(diagnostic: dict[str, Any]) -> tuple[int, int, int]:
    start = diagnostic.get("range", {}).get("start", {})
    return (start.get("line", 0), start.get("character", 0), diagnostic.get("severity") or 1)


def old_format_diagnostics(
    diagnostics: list[dict[str, Any]], rel: str, text: str, encoding: str
) -> list[str]:
    lines = split_lines(text)
    out = []
    for diagnostic in sorted(diagnostics, key=old_diagnostic_order):
        line = diagnostic.get("range", {}).get("start", {}).get("line", 0)
        out.append(
            old_diagnostic_line(diagnostic, rel, lines[line] if line < len(lines) else "", encoding)
        )
    return out


def old_places(result: Any) -> list[Place]:
    if result is None:
        return []
    items = result if isinstance(result, list) else [result]
    found: dict[tuple[str, int, int], Place] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        uri = item.get("targetUri") or item.get("uri")
        rng = item.get("targetSelectionRange") or item.get("range") or item.get("targetRange")
        if not uri or not rng:
            continue
        start = rng["start"]
        found.setdefault(
            (uri, start["line"], start["character"]),
            Place(uri_to_path(uri), uri, start["line"], start["character"]),
        )
    return [found[key] for key in sorted(found)]


def old_symbol_rows(result: Any) -> list[tuple[int, str, str, Place | None, str]]:
    rows: list[tuple[int, str, str, Place | None, str]] = []

    def walk(items: list[Any], depth: int, parent: str) -> None:
        for item in items:
            if not isinstance(item, dict):
                continue
            kind = SYMBOL_KINDS.get(item.get("kind", 0), "symbol")
            name = str(item.get("name", "?"))
            place: Place | None = None
            if "location" in item:
                loc = item["location"]
                start = (loc.get("range") or {}).get("start", {"line": 0, "character": 0})
                place = Place(
                    uri_to_path(loc["uri"]), loc["uri"], start["line"], start["character"]
                )
            elif "selectionRange" in item:
                start = item["selectionRange"]["start"]
                place = Place(None, "", start["line"], start["character"])
            rows.append((depth, kind, name, place, str(item.get("containerName") or parent)))
            walk(item.get("children") or [], depth + 1, name)

    walk(result if isinstance(result, list) else [], 0, "")
    return rows


# -- the two paths per payload: decoded message -> rows -------------------------------------

SOURCE_TEXT = "".join(f"    value_{n} = name_{n} + 1\n" for n in range(DIAGNOSTICS))


def old_diagnostics(message: dict[str, Any]) -> int:
    params = message["params"]
    kept = list(params.get("diagnostics") or [])  # what the client kept per publish
    return len(old_format_diagnostics(kept, "big.py", SOURCE_TEXT, "utf-16"))


def new_diagnostics(message: dict[str, Any]) -> int:
    _uri, version, raw = protocol.publish_envelope("bench", message["params"])
    published = Published(1, version, raw=raw, server="bench")
    return len(format_diagnostics(published.items, "big.py", SOURCE_TEXT, "utf-16"))


def new_diagnostics_eager(message: dict[str, Any]) -> int:
    """The whole notification structured at once (lsprotocol's PublishDiagnosticsParams): the
    path not taken, for comparison."""
    from lsprotocol import types

    params = protocol.structure(
        "bench",
        "textDocument/publishDiagnostics",
        message["params"],
        types.PublishDiagnosticsParams,
    )
    return len(format_diagnostics(list(params.diagnostics), "big.py", SOURCE_TEXT, "utf-16"))


def old_references(message: dict[str, Any]) -> int:
    return len(old_places(message["result"]))


def new_references(message: dict[str, Any]) -> int:
    return len(places(protocol.result("bench", "textDocument/references", message["result"])))


def old_symbols(message: dict[str, Any]) -> int:
    return len(old_symbol_rows(message["result"]))


def new_symbols(message: dict[str, Any]) -> int:
    return len(symbol_rows(protocol.result("bench", "workspace/symbol", message["result"])))


def best_of(repeat: int, payload: str, path: Callable[[dict[str, Any]], int]) -> tuple[float, int]:
    """The best time of ``repeat`` runs (a fresh decode each: structuring repairs in place),
    the decode excluded; and the row count."""
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        message = json.loads(payload)
        started = time.perf_counter()
        rows = path(message)
        best = min(best, time.perf_counter() - started)
    return best, rows


def peak_mib(payload: str, path: Callable[[dict[str, Any]], int]) -> float:
    message = json.loads(payload)
    tracemalloc.start()
    path(message)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def lsprotocol_import_s() -> float:
    code = (
        "import time; t = time.perf_counter(); import lsprotocol.types, lsprotocol.converters; "
        "lsprotocol.converters.get_converter(); print(time.perf_counter() - t)"
    )
    # cattrs comes first: the core imports it before any run's lsp client is made
    warm = "import cattrs; " + code
    return float(
        subprocess.run(
            [sys.executable, "-c", warm], capture_output=True, text=True, check=True
        ).stdout
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    protocol.converter()  # built once per process, before the first reply
    cases = [
        (
            "20,000 diagnostics (one publish)",
            diagnostics_payload(),
            old_diagnostics,
            new_diagnostics,
        ),
        (
            "  ... structured eagerly (not used)",
            diagnostics_payload(),
            old_diagnostics,
            new_diagnostics_eager,
        ),
        ("5,000 references", references_payload(), old_references, new_references),
        ("19,000 workspace symbols", symbols_payload(), old_symbols, new_symbols),
    ]
    print(
        f"{'payload':38} {'dicts':>9} {'typed':>9} {'ratio':>6} {'peak dicts':>11} {'peak typed':>11}"
    )
    for name, payload, old, new in cases:
        old_s, old_rows = best_of(repeat, payload, old)
        new_s, new_rows = best_of(repeat, payload, new)
        assert old_rows == new_rows, (name, old_rows, new_rows)
        old_peak, new_peak = peak_mib(payload, old), peak_mib(payload, new)
        print(
            f"{name:38} {old_s * 1000:7.1f}ms {new_s * 1000:7.1f}ms {new_s / old_s:5.1f}x "
            f"{old_peak:8.1f}MiB {new_peak:8.1f}MiB"
        )
    decode = min(_decode_s(diagnostics_payload()) for _ in range(repeat))
    print(f"json.loads of the 20,000-diagnostics message: {decode * 1000:.1f}ms")
    print(
        f"lsprotocol import + converter (fresh interpreter, cattrs loaded): {lsprotocol_import_s() * 1000:.0f}ms"
    )


def _decode_s(payload: str) -> float:
    started = time.perf_counter()
    json.loads(payload)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
