"""What the tests and the benchmarks both build, built one way: many runs written as the store's
writer writes them (:mod:`workloads.many_runs`), and an S3 proxy that counts and denies requests
(:mod:`workloads.s3_proxy`).

Not part of the product (not installed): the tests and ``bench/`` import it from the
repository root, and nothing under the product packages does.
"""
