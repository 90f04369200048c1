"""Reusable console widgets: the node tree, the virtual event log, the details pane, formatting."""
