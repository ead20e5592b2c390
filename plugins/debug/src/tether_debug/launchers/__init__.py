"""Small scripts tether runs in a helper process it starts (not in the debuggee): standard library
plus the tool they launch only, since they may run under another interpreter."""
