"""What each ``add_*`` method of the SummaryWriter stores, one module per kind.

As TensorBoard's ``summary`` builders turn a method's arguments into a
``Summary``, each function here turns them into a :class:`~.record.Record`:
the kind, the tag, a private copy of the value (or the kind's data already)
and the writer-thread encoder of :mod:`snapshot_store.write.encoders` that
finishes it. They read nothing but their arguments and write nothing; the
writer hands the record to its recorder. Bad input raises ValueError or
TypeError, which the writer turns into one warning (:mod:`..bad_input`).
"""

from trainer.tensorboard.summaries.audio import audio
from trainer.tensorboard.summaries.custom_scalars import custom_scalars, one_chart
from trainer.tensorboard.summaries.embedding import embedding
from trainer.tensorboard.summaries.graph import graph
from trainer.tensorboard.summaries.histogram import histogram, histogram_raw
from trainer.tensorboard.summaries.hparams import hparams_metrics, hparams_row
from trainer.tensorboard.summaries.image import image_with_boxes
from trainer.tensorboard.summaries.mesh import mesh
from trainer.tensorboard.summaries.pr_curve import pr_curve, pr_curve_raw
from trainer.tensorboard.summaries.record import Record
from trainer.tensorboard.summaries.tensor import tensor
from trainer.tensorboard.summaries.text import onnx_graph, text
from trainer.tensorboard.summaries.video import video

__all__ = [
    "Record",
    "audio",
    "custom_scalars",
    "embedding",
    "graph",
    "histogram",
    "histogram_raw",
    "hparams_metrics",
    "hparams_row",
    "image_with_boxes",
    "mesh",
    "one_chart",
    "onnx_graph",
    "pr_curve",
    "pr_curve_raw",
    "tensor",
    "text",
    "video",
]
