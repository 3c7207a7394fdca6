"""Where runs are read from: a local store directory or an ``s3://`` prefix.

* :mod:`~visualizer.sources.runs`: the runs under a ``--pickle-dir`` (local or S3);
* :mod:`~visualizer.sources.s3`: the reader's ``Source`` over S3;
* :mod:`~visualizer.sources.watch`: file events that wake the follower;
* :mod:`~visualizer.sources.export`: every scalar as CSV or JSON lines;
* :mod:`~visualizer.sources.download`: a loopback server offering each run's CSV.
"""
