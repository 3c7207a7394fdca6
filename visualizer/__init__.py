"""The visualizer: follow snapshot stores (local or S3) into visdom, live, without torch.

Entry points (all in :mod:`visualizer.cli`):

* ``python run_visualizer_local.py --pickle-dir DIR`` / ``run-visualizer`` /
  ``python -m visualizer``: follow runs into visdom. The trainer's live mode
  (``--remote False``) starts ``python -m visualizer ... --parent-pid PID`` as a
  child process.
* ``python -m visualizer export --pickle-dir DIR``: every scalar as CSV (:mod:`visualizer.export`)
* ``python -m visualizer.assets``: install the JS/CSS files visdom serves
  (:mod:`visualizer.assets`; the visualizer also fetches them itself, into a
  cache, when they are missing)

Building blocks: :class:`visualizer.follower.Follower` (the loop),
:class:`visualizer.rundata.RunData` (what is known of one run),
:class:`visualizer.display.RunDisplay` (windows of one env),
:class:`visualizer.endpoint.VisdomEndpoint` (where visdom is, and its login),
:class:`visualizer.s3.S3Source` (the reader's ``Source`` over S3),
:func:`visualizer.decimate.decimate_indices` (min/max-preserving thinning) and
:mod:`visualizer.server` (an offline-safe visdom server).

Nothing is imported here: ``python -m visualizer.server`` runs in visdom's child
process and should not pay for the follower's imports.
"""
