"""The transfer suite's helpers: a checkpoint uploaded during the CLI's training step, and its rows."""
