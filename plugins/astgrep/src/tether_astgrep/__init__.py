"""tether-astgrep: structural search (``ast_grep``), staged rewrites (``ast_edit``, ``resolve``).

A plugin adds a language by returning :class:`Grammar` objects from ``tether_astgrep_grammars()``.
"""

from tether_astgrep.grammars import Grammar, Scaffold, lazy_language

__all__ = ["Grammar", "Scaffold", "lazy_language"]
