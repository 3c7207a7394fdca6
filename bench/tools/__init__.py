"""Measuring tools the suites share: CPU and process trees, a call's cost, latency, a replay,
a slower link, S3 set-ups and request counts, and the tables of docs/benchmarks.md."""
