"""The shared core every package imports: who this process is in a job, exit codes and how a
run ended, redaction and plain values, atomic files, the run lock and tag names (stdlib only)."""
