"""The store's on-disk format: frames, record schemas and batches, read one screen at a time."""
