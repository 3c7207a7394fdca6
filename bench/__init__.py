"""Benchmarks: python -m bench."""
