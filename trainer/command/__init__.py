"""``python -m trainer``: the CLI, its options and launchers, and the CLI's own data and model."""
