"""Transfer hooks and their runner: copy each file a run writes to S3 or a shared directory.

A leaf package: it knows files and relative paths, never the snapshot store
that writes them or the trainer and visualizer above it.
"""
