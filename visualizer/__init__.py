"""The visualizer: follow snapshot stores (local or S3) into visdom, live, without torch.

Entry points (all in :mod:`visualizer.cli`):

* ``python run_visualizer_local.py --pickle-dir DIR`` / ``run-visualizer`` /
  ``python -m visualizer``: follow runs into visdom. The trainer's live mode
  (``--remote False``) starts ``python -m visualizer ... --parent-pid PID`` as a
  child process.
* ``python -m visualizer export --pickle-dir DIR``: every scalar as CSV (:mod:`visualizer.sources.export`)
* ``python -m visualizer.server``: an offline-safe visdom server (:mod:`visualizer.server`)
* ``python -m visualizer.server.assets``: install the JS/CSS files visdom serves
  (the visualizer also fetches them itself, into a cache, when they are missing)

The wings, in the order data flows through them:

* :mod:`visualizer.sources`: where runs are (a local directory or an ``s3://``
  prefix), every run's summary (the catalog), file events, the CSV export and the
  loopback server of downloads and links;
* :mod:`visualizer.model`: what is known of a run (:class:`~visualizer.model.rundata.RunData`):
  compact series, smoothing, decimation, zoom, status, extra data;
* :mod:`visualizer.panes`: the windows drawn in visdom: a run's env, the
  comparison, the runs index, each kind a :class:`~visualizer.panes.pane.Pane`;
* :mod:`visualizer.server`: the visdom server: its endpoint, our client of it,
  starting it, probes, the patches in its process, its assets;
* :mod:`visualizer.alerts`: rules over the runs' series and their notifications.

At the top: :mod:`visualizer.cli` (wiring, exit statuses), :mod:`visualizer.options`
(the follow command's options), :mod:`visualizer.follower`
(reads the sources and hands each run to the panes), :mod:`visualizer.runset`
(which of many runs are read whole) over :mod:`visualizer.feeds` (a run read
whole), and the vocabulary every
wing shares: :mod:`visualizer.layout` (window names and sizes),
:mod:`visualizer.markup` (the one HTML rule) and :mod:`visualizer.origin` (the one
Host/Origin rule of our servers).

Nothing is imported here: ``python -m visualizer.server`` runs in visdom's child
process and should not pay for the follower's imports.
"""
