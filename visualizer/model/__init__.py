"""The run model: what is known of one run, in forms cheap to draw.

* :mod:`~visualizer.model.rundata`: a run's series, images, status and extra data;
* :mod:`~visualizer.model.series`: compact series; :mod:`~visualizer.model.smoothing`,
  :mod:`~visualizer.model.decimate`, :mod:`~visualizer.model.zoom`: what is drawn of them;
* :mod:`~visualizer.model.traces`: a series as a plotly trace (x axes, times);
* :mod:`~visualizer.model.status`: the run's state, ETA and status panel;
* :mod:`~visualizer.model.extradata`: text, histograms, hparams and other records.
"""
