"""The many-runs suites' helpers: finished runs written, runs still training, a viewer over
them measured, its pages read in Chromium, an idle S3 run's requests."""
