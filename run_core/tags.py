"""A logged name (a TensorBoard tag, a Lightning/HF/Accelerate key) and the store's series key.

The store keys a scalar or image series by ``(group, name)``. A writer keeps the
name the user logged by splitting it at the first ``/`` only: ``"eval/loss"`` is
``("eval", "loss")``, ``"a/b/c"`` is ``("a", "b/c")``, and a name without one
(``"train_loss"``, ``"loss"``) is ``("", name)``. So :func:`tag_of` gives back
exactly the logged name, and two distinct names never share a key. Which window
shows a series is the viewer's display rule over these names
(:func:`visualizer.layout.window_for`), never a rename.

Stores written before names were kept hold conventional groups (``train``,
``val``, ``lr``, ``scalars``...); they read the same way: their tag is
``group/name``.
"""

from __future__ import annotations

import functools


def key_of(tag: str) -> tuple[str, str]:
    """The store key ``(group, name)`` of the logged name ``tag`` (inverse of :func:`tag_of`)."""
    group, sep, name = tag.partition("/")
    return (group, name) if sep and group and name else ("", tag)


def tag_of(group: str, name: str) -> str:
    """The name that was logged for the series ``(group, name)``."""
    return f"{group}/{name}" if group else name


# Words that mark a series where higher is better; the rest are minimized (loss, error).
_HIGHER = ("acc", "f1", "auc", "precision", "recall", "iou", "dice", "psnr", "ssim", "map", "bleu")


@functools.lru_cache(maxsize=4096)  # asked for each of 100,000 runs when they are ranked
def higher_is_better(tag: str) -> bool:
    """Whether a series' best value is its largest, judged by its logged name (accuracy, F1...):
    the runs table's best value and the alert rules' direction alike."""
    words = tag.lower().replace("/", "_").replace("-", "_").split("_")
    return any(word.startswith(_HIGHER) for word in words)
