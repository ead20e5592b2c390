"""What the protocol families (lsp, debug) share on the wire: byte streams split into lines or
Content-Length messages with size limits (:mod:`~tether.wire.framing`), and a ``line`` +
``symbol`` the agent gives turned into a position (:mod:`~tether.wire.positions`)."""
