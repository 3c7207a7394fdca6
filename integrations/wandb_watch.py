"""``wandb.watch``: a model's gradients and parameters as histograms every ``log_freq`` batches.

As W&B: a gradient hook per parameter counts backward passes and, on every
``log_freq``-th, stores the gradient's histogram (64 buckets) as
``gradients/<name>``; a forward hook on the model does the same for its
parameters (``parameters/<name>``). Both land at the run's current step, one per
tag and step: the run keeps the last until the step closes (``Run._histogram``), as
W&B's history row does. A second watched model's names get W&B's ``graph_<n>`` prefix.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

BINS = 64  # W&B's buckets per histogram
_watched = [0]  # models watched so far in this process: W&B numbers them across runs


def _every(count: int) -> Callable[[], bool]:
    """True on every ``count``-th call (W&B's log_track_update)."""
    calls = itertools.count(1)
    return lambda: next(calls) % count == 0


def watch_models(
    run: Any,
    models: Any,
    criterion: Any = None,
    log: str | None = "gradients",
    log_freq: int = 1000,
    idx: int | None = None,
    log_graph: bool = False,
) -> list[Any]:
    """Hook ``models`` (one ``torch.nn.Module`` or several) so ``run`` stores their histograms."""
    import torch

    if log not in ("gradients", "parameters", "all", None):
        raise ValueError("log must be one of 'gradients', 'parameters', 'all', or None")
    models = tuple(models) if isinstance(models, (tuple, list)) else (models,)
    for model in models:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"Expected a pytorch model (torch.nn.Module). Received {type(model)}")
    start = _watched[0] if idx is None else idx
    for local, model in enumerate(models):
        _watched[0] += 1
        prefix = f"graph_{start + local}" if start + local > 0 else ""
        if log in ("parameters", "all"):
            due = _every(log_freq)

            def parameters(
                module: Any, _in: Any, _out: Any, due: Any = due, p: str = prefix
            ) -> None:
                if due():
                    for name, param in module.named_parameters():
                        run._histogram(f"parameters/{p}{name}", param)

            run._hooks.append(model.register_forward_hook(parameters))
        if log in ("gradients", "all"):
            for name, param in model.named_parameters():
                if param.requires_grad:
                    tag, due = f"gradients/{prefix}{name}", _every(log_freq)
                    hook = _gradient_hook(run, tag, due)
                    run._hooks.append(param.register_hook(hook))
        if log_graph and run._writer is not None:
            run._writer.add_graph(model)
    return []


def _gradient_hook(run: Any, tag: str, due: Callable[[], bool]) -> Callable[[Any], None]:
    def hook(grad: Any) -> None:
        if due():
            run._histogram(tag, grad)

    return hook
