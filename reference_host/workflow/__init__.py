"""The visual-workflow side of the host (spec: host.md#saved-workflows): the tool catalog and
saved canvases."""
