"""One run's training: ``fit``, the loop, the session around it, checkpoints and the console."""
