"""tether-astgrep: structural search (``ast_grep``), staged rewrites (``ast_edit``, ``resolve``).

A plugin adds a language by returning :class:`Grammar` objects from ``tether_astgrep_grammars()``.

The grammar table (and tree-sitter) is imported when a run first asks for the grammars, not when
the plugin is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether_astgrep.grammars import Grammar, Scaffold, lazy_language

__all__ = ["Grammar", "Scaffold", "lazy_language"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tether_astgrep import grammars

        return getattr(grammars, name)
    raise AttributeError(f"module 'tether_astgrep' has no attribute {name!r}")
