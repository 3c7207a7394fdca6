"""snapshot_store."""
