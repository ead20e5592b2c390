"""Language-server specs: what a server is, how to start it, and the built-in ones."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from tether.processes.launch import SAFE, Untrusted


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _methods(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen
class ServerSpec:
    """One language server, as contributed through the ``tether_lsp_servers`` hook.

    ``command[0]`` and ``probe[0]`` are resolved on ``PATH`` and in the directory of the
    interpreter tether runs in; the project's ``.venv/bin``, ``venv/bin`` and
    ``node_modules/.bin`` come first only when the harness trusts the workdir
    (``tether.processes.availability``). ``probe`` must exit 0 for the server to count as usable (a shim
    on ``PATH`` that cannot run is "not usable").

    ``untrusted`` / ``checker_untrusted`` declare how a checkout can make the server / its
    checker run code and what closes it (:class:`tether.processes.launch.Untrusted`); a spec that declares
    nothing is unavailable on a workdir the harness does not trust.
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
    #: files one of which a root must hold for ``checker`` to run there (``tsc`` without a
    #: tsconfig.json prints its help); () = every root
    checker_needs: tuple[str, ...] = attrs.field(converter=_strings, default=())
    #: a run of ``checker`` in a root also checks the roots nested in it (pyright, tsc: their
    #: files are in the outer project unless it excludes them), so those are skipped; False
    #: when a nested root is a project of its own the outer run leaves alone (go, cargo)
    checker_covers_nested: bool = True
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
    #: pull diagnostics through typescript-language-server's ``typescript.tsserverRequest``
    #: command: its pushes come one per tsserver pass, unversioned, and none says it is the last
    tsserver_diagnostics: bool = False
    #: its publishes for an open document carry the document's version; an unversioned one is
    #: about the file on disk (gopls diagnoses the workspace from disk) and never counts for
    #: the old text of a written file sent for its baseline
    versioned_publishes: bool = False
    #: after files appear or vanish, the server takes them in on a timer: wait for the sign
    #: it did (diagnostics pushed, work ended) before asking, or a rename misses a file
    settles_after_file_events: bool = False
    #: a regex of the progress (its title, message) that is only checking files for their
    #: diagnostics, which changes no navigation answer: it is not called "still indexing" and
    #: project-wide questions do not wait for it (the pyright family's "N files to analyze",
    #: pylsp's "lint: pyflakes")
    checking_progress: str | None = None
    #: LSP methods this server is known to answer wrongly although it advertises them
    unsupported: frozenset[str] = attrs.field(converter=_methods, factory=frozenset)
    #: how the server's project is configured, so tether can say which files it leaves out
    #: ("pyright": ``include``/``exclude`` of pyrightconfig.json or [tool.pyright]; "tsconfig":
    #: the nearest tsconfig.json's ``files``/``include``/``exclude``; "compile_commands": the
    #: sources of the root's compile_commands.json; "go": the go tool's build rules — testdata,
    #: ``_``/``.`` names, platform suffixes, ``//go:build``); None: only files outside the
    #: root are known to be outside
    project_config: str | None = None
    #: a write of a file no installed server handles says "diagnostics unavailable" only for
    #: languages that expect a server (Python, C); data and shell files stay quiet
    announce_missing: bool = True
    #: definitions and hovers across files need the server's first scan of the workspace
    #: (bash-language-server's background analysis): they wait for ``ready_log`` too
    navigation_waits_for_index: bool = False
    #: what the server is asked for: "navigation" (every query and rename: the first usable
    #: server of the language that offers the action answers) and "diagnostics" (the first
    #: usable navigation server's, merged with every usable server that has no "navigation"
    #: role — a linter such as ruff runs beside the type checker)
    roles: frozenset[str] = attrs.field(
        converter=_methods, factory=lambda: frozenset({"navigation", "diagnostics"})
    )
    #: what an untrusted workdir can make the server run, and the switch that closes it
    untrusted: Untrusted | None = None
    #: the same for ``checker`` (a checker that builds cannot be closed: it is unavailable)
    checker_untrusted: Untrusted | None = None
    #: settings that point the server at a root's own Python environment, ``{python}`` standing
    #: for its interpreter: given only on a trusted workdir whose root (or a directory above it,
    #: up to the workdir) holds a ``.venv`` or ``venv`` with a ``bin/python``
    #: (:func:`tether_lsp.trust.project_python`); an untrusted workdir keeps ``untrusted``'s
    project_python_settings: Mapping[str, Any] | None = None

    @property
    def companion(self) -> bool:
        """A diagnostics-only server: it runs beside the language's primary server."""
        return "navigation" not in self.roles and "diagnostics" in self.roles

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

# What a checkout can make each server run, and what closes it (docs/threat-model.md).
_RUNS_VENV_PYTHON = (
    "it runs the project's .venv/bin/python (or the interpreter a venv setting names) to learn "
    "its search paths"
)
# ... and how it can make each one *write* (each setting that names a path), and what pins
# that write into the run's own directory ({rundir}) or turns it off. Whatever is not declared
# is still held by the confinement (tether.processes.confine): on an untrusted workdir every server and
# checker writes only in the run's directory, its TMPDIR and XDG_CACHE_HOME pointing there.
_BASELINE = (
    "a baselineFile in pyrightconfig.json or [tool.basedpyright] names a file it rewrites, "
    "anywhere, when errors were fixed (its default baseline mode, auto)"
)
_PYRIGHT = Untrusted(
    risk=_RUNS_VENV_PYTHON,
    closed_by="python.pythonPath set to an interpreter outside the workdir",
    settings={"python": {"pythonPath": "{python}"}},
    writes="",
)
_BASEDPYRIGHT = attrs.evolve(
    _PYRIGHT,
    settings={
        "python": {"pythonPath": "{python}"},
        "basedpyright": {"analysis": {"baselineMode": "discard"}},
    },
    writes=_BASELINE,
    # the setting beats the file's baselineFile: a discarded baseline is never written
    writes_closed_by="basedpyright.analysis.baselineMode set to discard (never written)",
)
#: the pyright family's interpreter setting, for a root's own environment
_PYRIGHT_PROJECT_PYTHON = {"python": {"pythonPath": "{python}"}}
_PYRIGHT_CHECKER = Untrusted(
    risk=_RUNS_VENV_PYTHON,
    closed_by="--pythonpath set to an interpreter outside the workdir",
    args=("--pythonpath", "{python}"),
    writes="",
)
# --baselinefile cannot help: the file's baselineFile wins over it
_BASEDPYRIGHT_CHECKER = attrs.evolve(
    _PYRIGHT_CHECKER,
    args=("--pythonpath", "{python}", "--baselinemode", "discard"),
    writes=_BASELINE,
    writes_closed_by="--baselinemode discard (never written)",
)
_PYREFLY = Untrusted(
    risk=(
        "it runs the interpreter a .venv, pyrefly.toml or [tool.pyrefly] "
        "python-interpreter-path names, and a [build-system] command; `pyrefly lsp` has no "
        "switch that pins them"
    ),
    writes="not examined (the code route makes it unavailable)",
)
_TSSERVER = Untrusted(
    risk="it loads the workspace's node_modules/typescript/lib/tsserver.js before its own",
    closed_by="tsserver.path set to the tsserver.js installed beside the binary",
    writes=(
        "a package.json's dependencies make tsserver's automatic type acquisition install "
        "@types packages into its typings cache (under XDG_CACHE_HOME)"
    ),
    writes_closed_by="XDG_CACHE_HOME and TMPDIR set to the run's directory",
    env={"XDG_CACHE_HOME": "{rundir}/cache", "TMPDIR": "{rundir}/tmp"},
)
_TSC = Untrusted(
    writes=(
        "incremental or composite in tsconfig.json makes `tsc --noEmit` write build info to "
        "the file tsBuildInfoFile names, anywhere (or beside the config)"
    ),
    writes_closed_by=(
        "--incremental false --composite false --tsBuildInfoFile <run's directory> "
        "(with --noEmit, outDir, declarationDir and outFile write nothing)"
    ),
    args=(
        "--incremental", "false", "--composite", "false",
        "--tsBuildInfoFile", "{rundir}/tsc.tsbuildinfo",
    ),
)  # fmt: skip
_CLANGD = Untrusted(
    writes=(
        "--background-index writes .cache/clangd/index beside compile_commands.json "
        "(a planted .cache symlink sends it anywhere); preambles go to TMPDIR"
    ),
    writes_closed_by=(
        "the confinement denies the index's writes (clangd keeps it in memory); with none in "
        "force, --background-index=false (no switch moves the index; references then come "
        "from the files opened); TMPDIR set to the run's directory"
    ),
    env={"TMPDIR": "{rundir}/tmp"},
    unconfined_args=("--background-index=false",),
)
_CARGO_RUNS = "cargo reads .cargo/config.toml from the workdir (build.rustc, build.rustc-wrapper)"
_CARGO_WRITES = (
    "it builds into target/, or where CARGO_TARGET_DIR or build.target-dir in the workdir's "
    ".cargo/config.toml says"
)
_RUST_ANALYZER = Untrusted(
    risk=(
        "it runs the crate's build scripts and proc macros, and " + _CARGO_RUNS + "; its "
        "rustup proxy is pinned by the core, the rest has no switch that closes it"
    ),
    writes=_CARGO_WRITES,
)
_CARGO_CHECK = Untrusted(
    risk="`cargo check` builds: it runs build.rs, and " + _CARGO_RUNS, writes=_CARGO_WRITES
)
_GO = Untrusted(
    risk="a `toolchain` line in go.mod/go.work makes go download and run that toolchain",
    closed_by="GOTOOLCHAIN=local (the core's launch profile for go and gopls)",
    writes=(
        "the requirements of go.mod make go download modules into GOMODCACHE; it writes its "
        "build cache (GOCACHE) and gopls its file cache (XDG_CACHE_HOME)"
    ),
    writes_closed_by=(
        "GOPROXY=off (no download), GOCACHE and XDG_CACHE_HOME set to the run's directory"
    ),
    env={
        "GOPROXY": "off",
        "GOCACHE": "{rundir}/go-build",
        "XDG_CACHE_HOME": "{rundir}/cache",
    },
)
_DART = Untrusted(
    risk="analysis_options.yaml names analyzer plugins, which the server runs",
    writes="it writes .dart_tool/ in the package and its analysis cache under the home directory",
)

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
        project_config="pyright",
        untrusted=_BASEDPYRIGHT,
        checker_untrusted=_BASEDPYRIGHT_CHECKER,
        project_python_settings=_PYRIGHT_PROJECT_PYTHON,
        checking_progress=r"files? to analyze",
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
        checking_progress=r"files? to analyze",
        # pyright's implementation answers are wrong (FIELD-NOTES); basedpyright's are right
        unsupported=frozenset({"textDocument/implementation"}),
        project_config="pyright",
        untrusted=_PYRIGHT,
        checker_untrusted=_PYRIGHT_CHECKER,
        project_python_settings=_PYRIGHT_PROJECT_PYTHON,
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
        untrusted=SAFE,
        checker_untrusted=SAFE,
        checking_progress=r"^lint\b",
    ),
    ServerSpec(
        id="jedi-language-server",
        extensions=_PY,
        language="python",
        command=("jedi-language-server",),
        probe=("jedi-language-server", "--version"),
        root_markers=_PY_MARKERS,
        priority=40,
        untrusted=SAFE,
    ),
    ServerSpec(
        id="ty",
        extensions=_PY,
        language="python",
        command=("ty", "server"),
        probe=("ty", "--version"),
        root_markers=_PY_MARKERS,
        checker=("ty", "check"),
        priority=45,
        untrusted=SAFE,
        checker_untrusted=SAFE,
    ),
    ServerSpec(
        id="pyrefly",
        extensions=_PY,
        language="python",
        command=("pyrefly", "lsp"),
        probe=("pyrefly", "--version"),
        root_markers=_PY_MARKERS,
        checker=("pyrefly", "check"),
        priority=46,
        untrusted=_PYREFLY,
        checker_untrusted=_PYREFLY,
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
        checker_needs=("tsconfig.json",),
        priority=10,
        workspace_needs_open_file=True,
        open_waits_for_diagnostics=True,
        untrusted=_TSSERVER,
        checker_untrusted=_TSC,
        tsserver_diagnostics=True,
        project_config="tsconfig",
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
        command=("clangd", "--background-index", "--use-dirty-headers"),
        probe=("clangd", "--version"),
        root_markers=("compile_commands.json", "compile_flags.txt", ".clangd"),
        priority=10,
        workspace_needs_open_file=True,
        open_waits_for_diagnostics=True,
        untrusted=_CLANGD,
        project_config="compile_commands",
    ),
    ServerSpec(
        id="rust-analyzer",
        extensions={".rs": "rust"},
        language="rust",
        command=("rust-analyzer",),
        probe=("rust-analyzer", "--version"),
        root_markers=("Cargo.toml",),
        checker=("cargo", "check", "--message-format=short"),
        checker_covers_nested=False,
        priority=10,
        untrusted=_RUST_ANALYZER,
        checker_untrusted=_CARGO_CHECK,
    ),
    ServerSpec(
        id="gopls",
        extensions={".go": "go"},
        language="go",
        command=("gopls",),
        probe=("gopls", "version"),
        root_markers=("go.mod", "go.work"),
        checker=("go", "vet", "./..."),
        checker_covers_nested=False,
        priority=10,
        versioned_publishes=True,
        untrusted=_GO,
        checker_untrusted=_GO,
        project_config="go",
    ),
    ServerSpec(
        id="bash-language-server",
        extensions={".sh": "shellscript", ".bash": "shellscript"},
        language="shell",
        command=("bash-language-server", "start"),
        probe=("bash-language-server", "--version"),
        # a shell script needs no project: the workdir is its root
        root_markers=(),
        checker=(),
        priority=10,
        waits_for_configuration=True,
        ready_log=r"BackgroundAnalysis: (Completed|stopped|skipping|failed)",
        navigation_waits_for_index=True,
        announce_missing=False,
        untrusted=SAFE,
    ),
    ServerSpec(
        id="yaml-language-server",
        extensions={".yaml": "yaml", ".yml": "yaml"},
        language="yaml",
        command=("yaml-language-server", "--stdio"),
        probe=("yaml-language-server", "--version"),
        root_markers=(),
        settings={"yaml": {"validate": True, "hover": True, "completion": False}},
        priority=10,
        announce_missing=False,
        untrusted=SAFE,
    ),
    ServerSpec(
        id="vscode-json-language-server",
        extensions={".json": "json", ".jsonc": "jsonc"},
        language="json",
        command=("vscode-json-language-server", "--stdio"),
        root_markers=(),
        # it reads local schemas itself instead of asking the client for them
        initialization_options={"provideFormatter": False, "handledSchemaProtocols": ["file"]},
        settings={"json": {"validate": {"enable": True}}},
        priority=10,
        announce_missing=False,
        untrusted=SAFE,
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
        untrusted=_DART,
        checker_untrusted=_DART,
    ),
)
