"""transfer_plugins."""
