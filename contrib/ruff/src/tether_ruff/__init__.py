"""tether-ruff: `ruff server` as a diagnostics-only Python language server for tether-lsp."""

from tether_ruff.hooks import RUFF

__all__ = ["RUFF"]
