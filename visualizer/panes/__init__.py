"""The panes: what is drawn in visdom, kept equal to the run model.

* :mod:`~visualizer.panes.screen`: the display loop the follower hands runs to;
  every pane kind it drives is a :class:`~visualizer.panes.pane.Pane`;
* :mod:`~visualizer.panes.display`: a run's env (:class:`~visualizer.panes.display.RunDisplay`),
  on :mod:`~visualizer.panes.envdisplay`, the windows of one env and the checks that keep them;
* :mod:`~visualizer.panes.compare`: the comparison env; :mod:`~visualizer.panes.runs_table`: the runs table;
* :mod:`~visualizer.panes.plotwindow`: when one line-plot window appends or redraws,
  :mod:`~visualizer.panes.plotmessage`: what it sends; :mod:`~visualizer.panes.fold`: folding many;
* :mod:`~visualizer.panes.images`, :mod:`~visualizer.panes.extra_windows`,
  :mod:`~visualizer.panes.hparams`: image, extra and hparams panes;
* :mod:`~visualizer.panes.view`: the view settings and their controls pane.
"""
