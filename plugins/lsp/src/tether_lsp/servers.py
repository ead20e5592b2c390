"""Language-server specs: what a server is, how to start it, and the built-in ones."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _methods(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen
class ServerSpec:
    """One language server, as contributed through the ``tether_lsp_servers`` hook.

    ``command[0]`` and ``probe[0]`` are resolved against the project's ``.venv/bin``,
    ``venv/bin`` and ``node_modules/.bin`` before ``PATH``. ``probe`` must exit 0 for the
    server to count as usable (a shim on ``PATH`` that cannot run is "not usable").
    """

    id: str
    #: file extension (with the dot) -> LSP languageId, e.g. {".py": "python"}
    extensions: Mapping[str, str] = attrs.field(converter=_frozen_mapping)
    #: the language this server answers for; one primary server per language
    language: str
    command: tuple[str, ...] = attrs.field(converter=_strings)
    root_markers: tuple[str, ...] = attrs.field(converter=_strings)
    probe: tuple[str, ...] = attrs.field(converter=_strings, default=())
    initialization_options: Mapping[str, Any] | None = None
    #: nested settings answered to workspace/configuration and sent by didChangeConfiguration
    settings: Mapping[str, Any] = attrs.field(converter=_frozen_mapping, factory=dict)
    #: argv of the project checker run by ``diagnostics "*"`` (cwd = the root), or ()
    checker: tuple[str, ...] = attrs.field(converter=_strings, default=())
    #: lower answers first when several servers of one language are usable
    priority: int = 50
    #: how a person gets the server, said when it is not found ("pip install 'tether-lsp[python]'")
    install: str | None = None
    #: readiness quirk: the server is not ready until it has asked workspace/configuration
    waits_for_configuration: bool = False
    #: readiness quirk: a window/logMessage (regex) the server prints once it knows its files;
    #: pyright answers workspace/symbol with [] until then
    ready_log: str | None = None
    #: workspace-wide queries (symbols) need one file open first (clangd, tsserver)
    workspace_needs_open_file: bool = False
    #: a freshly opened file is only understood once its first diagnostics arrive
    #: (tsserver answers definitions wrongly before; clangd starts indexing then)
    open_waits_for_diagnostics: bool = False
    #: ask for diagnostics (textDocument/diagnostic) instead of waiting for pushed ones;
    #: pyright pushes an empty list before the real one, a pull answers the current version
    pull_diagnostics: bool = False
    #: after files appear or vanish, the server takes them in on a timer: wait for the sign
    #: it did (diagnostics pushed, work ended) before asking, or a rename misses a file
    settles_after_file_events: bool = False
    #: LSP methods this server is known to answer wrongly although it advertises them
    unsupported: frozenset[str] = attrs.field(converter=_methods, factory=frozenset)

    def language_id(self, suffix: str) -> str | None:
        return self.extensions.get(suffix)


_PY = {".py": "python", ".pyi": "python"}
_PY_MARKERS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "pyrightconfig.json",
    "Pipfile",
)

_PYRIGHT_READY = r"Found \d+ source files?|No source files found"

BUILTIN_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        id="basedpyright",
        extensions=_PY,
        language="python",
        command=("basedpyright-langserver", "--stdio"),
        probe=("basedpyright", "--version"),
        root_markers=_PY_MARKERS,
        checker=("basedpyright",),
        priority=10,
        install="pip install 'tether-lsp[python]'",
        waits_for_configuration=True,
        ready_log=_PYRIGHT_READY,
        pull_diagnostics=True,
        settles_after_file_events=True,
    ),
    ServerSpec(
        id="pyright",
        extensions=_PY,
        language="python",
        command=("pyright-langserver", "--stdio"),
        probe=("pyright", "--version"),
        root_markers=_PY_MARKERS,
        checker=("pyright",),
        priority=20,
        waits_for_configuration=True,
        ready_log=_PYRIGHT_READY,
        pull_diagnostics=True,
        settles_after_file_events=True,
        # pyright's implementation answers are wrong (FIELD-NOTES); basedpyright's are right
        unsupported=frozenset({"textDocument/implementation"}),
    ),
    ServerSpec(
        id="pylsp",
        extensions=_PY,
        language="python",
        command=("pylsp",),
        probe=("pylsp", "--version"),
        root_markers=_PY_MARKERS,
        # hover signatures are formatted with black when it is installed: ~230 ms a hover
        settings={"pylsp": {"signature": {"formatter": None}}},
        checker=("pyflakes", "."),
        priority=30,
    ),
    ServerSpec(
        id="jedi-language-server",
        extensions=_PY,
        language="python",
        command=("jedi-language-server",),
        probe=("jedi-language-server", "--version"),
        root_markers=_PY_MARKERS,
        priority=40,
    ),
    ServerSpec(
        id="typescript-language-server",
        extensions={
            ".ts": "typescript",
            ".tsx": "typescriptreact",
            ".mts": "typescript",
            ".cts": "typescript",
            ".js": "javascript",
            ".jsx": "javascriptreact",
            ".mjs": "javascript",
            ".cjs": "javascript",
        },
        language="typescript",
        command=("typescript-language-server", "--stdio"),
        probe=("typescript-language-server", "--version"),
        root_markers=("tsconfig.json", "jsconfig.json", "package.json"),
        # a rename at an import site would otherwise become `import {A as B}`
        initialization_options={"preferences": {"providePrefixAndSuffixTextForRename": False}},
        checker=("tsc", "--noEmit", "--pretty", "false"),
        priority=10,
        workspace_needs_open_file=True,
        open_waits_for_diagnostics=True,
    ),
    ServerSpec(
        id="clangd",
        extensions={
            ".c": "c",
            ".h": "c",
            ".cc": "cpp",
            ".cpp": "cpp",
            ".cxx": "cpp",
            ".hpp": "cpp",
            ".hh": "cpp",
        },
        language="c",
        command=("clangd", "--background-index"),
        probe=("clangd", "--version"),
        root_markers=("compile_commands.json", "compile_flags.txt", ".clangd"),
        priority=10,
        workspace_needs_open_file=True,
        open_waits_for_diagnostics=True,
    ),
    ServerSpec(
        id="rust-analyzer",
        extensions={".rs": "rust"},
        language="rust",
        command=("rust-analyzer",),
        probe=("rust-analyzer", "--version"),
        root_markers=("Cargo.toml",),
        checker=("cargo", "check", "--message-format=short"),
        priority=10,
    ),
    ServerSpec(
        id="gopls",
        extensions={".go": "go"},
        language="go",
        command=("gopls",),
        probe=("gopls", "version"),
        root_markers=("go.mod", "go.work"),
        checker=("go", "vet", "./..."),
        priority=10,
    ),
    ServerSpec(
        id="dart",
        extensions={".dart": "dart"},
        language="dart",
        command=("dart", "language-server", "--protocol=lsp"),
        probe=("dart", "--version"),
        root_markers=("pubspec.yaml",),
        checker=("dart", "analyze"),
        priority=10,
    ),
)
