"""Runs as data: W&B's read API (``Api().runs()``, ``Api().run()``) over snapshot stores,
offline, and the one-table forms of a sweep the export writes.

* :mod:`~visualizer.api.client`: :class:`Api`, listing runs by their small documents;
* :mod:`~visualizer.api.run`: :class:`ApiRun`, W&B's names for one run;
* :mod:`~visualizer.api.filters`: the subset of W&B's run filters taken;
* :mod:`~visualizer.api.points`: a run's points as numpy columns, a row a step;
* :mod:`~visualizer.api.artifacts`: :class:`ApiArtifact`, what a run logged and used.

``from remote_train_monitor import Api`` is this :class:`Api`; none of it imports torch.
"""

from .artifacts import ApiArtifact
from .client import Api
from .run import ApiRun, Media

__all__ = ["Api", "ApiArtifact", "ApiRun", "Media"]
