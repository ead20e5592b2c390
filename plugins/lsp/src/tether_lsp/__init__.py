"""tether-lsp: language-server queries (``lsp``), project rename (``lsp_rename``) and
diagnostics after every write.

Add a language server from your own plugin::

    import tether
    from tether.processes.launch import Untrusted
    from tether_lsp import ServerSpec

    @tether.hookimpl
    def tether_lsp_servers():
        return [ServerSpec(id="zls", language="zig", extensions={".zig": "zig"},
                           command=("zls",), probe=("zls", "--version"),
                           root_markers=("build.zig",),
                           # what a checkout can make it run, and what closes it; a spec
                           # that declares nothing is unavailable on an untrusted workdir
                           untrusted=Untrusted(risk="build.zig runs at configure time"))]
"""

from tether_lsp.config import LspConfig
from tether_lsp.servers import BUILTIN_SERVERS, ServerSpec

__all__ = ["BUILTIN_SERVERS", "LspConfig", "ServerSpec"]
