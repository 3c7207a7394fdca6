"""The panes: what is drawn in visdom, kept equal to the run model.

* :mod:`~visualizer.panes.display`: an env's windows (:class:`~visualizer.panes.display.RunDisplay`);
* :mod:`~visualizer.panes.compare`: the comparison env; :mod:`~visualizer.panes.index`: the runs index;
* :mod:`~visualizer.panes.plotwindow`: one line-plot window; :mod:`~visualizer.panes.fold`: folding many;
* :mod:`~visualizer.panes.images`, :mod:`~visualizer.panes.extra_windows`,
  :mod:`~visualizer.panes.hparams`: image, extra and hparams panes;
* :mod:`~visualizer.panes.view`: the view settings and their controls pane.
"""
