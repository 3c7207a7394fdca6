"""``add_graph``: the graph TensorBoard's ``add_graph`` traces, and the model's outline."""

from __future__ import annotations

import contextlib
import io
import logging
from typing import Any

from trainer.tensorboard.summaries.record import Record

log = logging.getLogger(__name__)


def outline(model: Any) -> str:
    """The module tree of ``model`` and its parameter count: what the page shows."""
    lines = [repr(model)]
    if hasattr(model, "parameters"):
        count = sum(p.numel() for p in model.parameters())
        lines.append(f"\n{count:,} parameters")
    return "\n".join(lines)


def traced(
    model: Any, input_to_model: Any, verbose: bool, use_strict_trace: bool
) -> tuple[bytes, bytes]:
    """The serialized GraphDef and RunMetadata TensorBoard's ``add_graph`` writes for
    ``model``; empty bytes, and one warning, when it can not be traced."""
    why = "no input_to_model to trace it with" if input_to_model is None else None
    if why is None:
        try:
            from torch.utils.tensorboard._pytorch_graph import graph as trace_graph
        except ImportError as err:  # torch's tracer builds tensorboard's protos
            why = f"tracing needs tensorboard ({err}): pip install tensorboard"
    if why is None:
        printed = io.StringIO()
        try:
            # torch prints the trace error and "No graph saved" too: the warning says it once.
            with contextlib.redirect_stdout(printed):
                graph_def, run_metadata = trace_graph(
                    model, input_to_model, verbose, use_strict_trace
                )
            return graph_def.SerializeToString(), run_metadata.SerializeToString()
        except Exception as err:  # a model's forward may raise anything
            first_line = (str(err).strip().splitlines() or [""])[0]
            why = f"{type(err).__name__}: {first_line}"
        finally:
            if verbose and (text := printed.getvalue()):
                print(text, end="")  # what verbose asked torch to print
    log.warning("add_graph: %s not traced (%s); kept its outline only", type(model).__name__, why)
    return b"", b""


def graph(
    model: Any, input_to_model: Any = None, verbose: bool = False, use_strict_trace: bool = True
) -> Record:
    """Under tag ``graph``: the model's outline and, traced as TensorBoard traces it, its
    GraphDef and RunMetadata (``export --kind graph_events`` writes them as an event file)."""
    graph_def, run_metadata = traced(model, input_to_model, verbose, use_strict_trace)
    data = {"text": outline(model), "graph_def": graph_def, "run_metadata": run_metadata}
    return Record("graph", "graph", data)
