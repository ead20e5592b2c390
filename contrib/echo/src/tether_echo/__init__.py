"""One tool per tier: the smallest tether plugin."""
