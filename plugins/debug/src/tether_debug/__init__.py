"""tether-debug: the ``debug`` tool drives a debugger through the Debug Adapter Protocol.

A third party adds an adapter by implementing the family hook in its own plugin::

    import tether
    from tether_debug import DebugAdapter

    class Gdb(DebugAdapter):
        id = "gdb"
        commands = (("gdb", "--interpreter=dap"),)
        probe_args = ("--version",)
        root_markers = ("Makefile",)
        program_suffixes = (".elf",)

    @tether.hookimpl
    def tether_debug_adapters():
        return [Gdb()]

See :class:`DebugAdapter` for every attribute and method an adapter can override.
"""

from tether_debug.adapters import Availability, DebugAdapter, Resolution
from tether_debug.config import DebugConfig

__all__ = ["Availability", "DebugAdapter", "DebugConfig", "Resolution"]
