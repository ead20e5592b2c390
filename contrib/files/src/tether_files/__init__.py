"""Reference host tools for tether: read, write, edit and apply_patch."""
