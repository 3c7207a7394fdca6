"""The visualizer: follow snapshot stores (local or S3) into visdom, live, without torch.

Entry points:

* ``python run_visualizer_local.py --pickle_dir DIR`` / ``run-visualizer``: :func:`visualizer.cli.main`
* ``python -m visualizer export --pickle_dir DIR``: every scalar as CSV (:mod:`visualizer.export`)
* :func:`visualizer.live.start_live`: follow a run from inside the trainer (``--remote False``)

Building blocks: :class:`visualizer.follower.Follower` (the loop),
:class:`visualizer.display.RunDisplay` (windows of one env),
:class:`visualizer.s3.S3Source` (the reader's ``Source`` over S3),
:func:`visualizer.decimate.decimate` (min/max-preserving thinning) and
:mod:`visualizer.server` (an offline-safe visdom server).

Nothing is imported here: ``python -m visualizer.server`` runs in visdom's child
process and should not pay for the follower's imports.
"""
