"""An example tether plugin: ``count_lines`` (read tier) and a result post-processor."""
