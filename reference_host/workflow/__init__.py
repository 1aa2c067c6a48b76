"""The visual-workflow side of the host (SPEC F11): the tool catalog and saved canvases."""
