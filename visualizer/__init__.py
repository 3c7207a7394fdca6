"""visualizer."""
