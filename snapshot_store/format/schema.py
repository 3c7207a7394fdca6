"""What a stored record may hold, per stream and kind, and the conventional group names.

The one owner of the store's schema: a writer frames only records it would pass
and a reader keeps only the records passing it (:mod:`.batches` and
:mod:`.kinds` apply it to each frame). Every check names what is wrong, for
the reader's warning. The checks admit exactly what :class:`~.frames.SafeUnpickler`
can build: builtins, never a subclass (``bool`` is not a number here).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from snapshot_store.format import artifacts, packed

# Steps are stored and exported as int64; the visualizer and CSV consumers
# must never meet a wider one.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Exact types: the SafeUnpickler can build no subclass, and bool (a subclass of
# int) is a type error in a step or value, not the number 0 or 1.
_INT_TYPES = frozenset({int})
_NUMBER_TYPES = frozenset({int, float})

# --- group vocabulary ------------------------------------------------------------
#
# Names are stored as logged (:mod:`.tags`); these words are how loggers name the
# conventional groups, which the viewer draws in windows of their own. Two users,
# two word lists, kept as each behaves:
# GROUP_WORDS: a stored group (``train``, ``val``...) -> the conventional group it
# names; a stored group outside it is a window of its own (``eval`` stays ``eval``).
GROUP_WORDS = {
    "train": "train",
    "val": "validation",
    "valid": "validation",
    "validation": "validation",
    "metric": "metrics",
    "metrics": "metrics",
    "lr": "lr",
    "throughput": "throughput",
}
# SECTION_WORDS: also the frameworks' words for a name's first part (``training_loss``,
# ``eval/loss``, ``test_acc``), read only where a name picks its window.
SECTION_WORDS = {**GROUP_WORDS, "training": "train", "eval": "validation", "test": "test"}


# --- numbers -----------------------------------------------------------------------


def is_int64(value: object) -> bool:
    """An int (bool excluded) within int64: what a step may be."""
    return type(value) is int and INT64_MIN <= value <= INT64_MAX


class StepRangeError(ValueError):
    """A step outside int64, refused where it is logged: TensorBoard's error and message."""

    def __init__(self, step: int) -> None:
        super().__init__(f"Value out of range: {step}")


def int64_step(step: Any) -> int:
    """``step`` as an int (``int(step)``, as TensorBoard takes it); StepRangeError outside int64.

    Refused at the call because the reader drops such a record, and with it a
    W&B-style run's every later step.
    """
    if type(step) is not int:
        step = int(step)
    if not INT64_MIN <= step <= INT64_MAX:
        raise StepRangeError(step)
    return step


def is_number(value: object) -> bool:
    """A float, or an int within int64 (bool excluded)."""
    return type(value) is float or is_int64(value)


def _column_problem(label: str, col: object, allowed: frozenset[type]) -> str | None:
    """Why ``col`` is not a list of ``allowed`` numbers within int64 where int, else None."""
    if not isinstance(col, list):
        return f"{label} is {type(col).__name__}, not a list"
    # set(map(type, ...)) runs in C: a million points cost milliseconds.
    types = set(map(type, col))
    if not types <= allowed:
        bad = sorted(t.__name__ for t in types - allowed)
        return f"{label} holds {', '.join(bad)}"
    if int in types:
        ints = col if float not in types else [v for v in col if type(v) is int]
        if min(ints) < INT64_MIN or max(ints) > INT64_MAX:
            return f"{label} holds an integer outside int64"
    return None


# --- scalars and images --------------------------------------------------------------


def series_problem(item: object) -> str | None:
    """Why one scalar series entry breaks the schema, or None when it is valid."""
    if not isinstance(item, tuple) or len(item) != 6:
        return "series entry is not a 6-tuple"
    group, name, steps, epochs, times, values = item
    if not isinstance(group, str) or not isinstance(name, str):
        return "group and name must be str"
    if not isinstance(steps, list):  # format 3's packed bytes, or the arrays they read as
        problem = packed.packed_problem(item[2:])
        return f"{group}/{name}: {problem}" if problem else None
    for label, col, allowed in (
        ("steps", steps, _INT_TYPES),
        ("epochs", epochs, _NUMBER_TYPES),
        ("wall times", times, _NUMBER_TYPES),
        ("values", values, _NUMBER_TYPES),
    ):
        if problem := _column_problem(label, col, allowed):
            return f"{group}/{name}: {problem}"
    if not len(steps) == len(epochs) == len(times) == len(values):
        return f"{group}/{name}: columns differ in length"
    return None


def image_problem(item: object) -> str | None:
    """Why one image record breaks the schema, or None when it is valid."""
    if not isinstance(item, tuple) or len(item) not in (6, 7):
        return "image record is not a 6- or 7-tuple"
    group, name, step, epoch, wall_time, png, *captions = item
    if not isinstance(group, str) or not isinstance(name, str):
        return "group and name must be str"
    if not is_int64(step):
        return f"{group}/{name}: step {step!r:.40} is not an int64"
    if not (is_number(epoch) and is_number(wall_time)):
        return f"{group}/{name}: epoch and wall time must be numbers"
    if type(png) is not bytes:
        return f"{group}/{name}: PNG is {type(png).__name__}, not bytes"
    if captions and not _strs(captions[0]):
        return f"{group}/{name}: captions must be a list of str"
    return None


# --- the record kinds of the extras stream (see kinds.py) --------------------------------

_PLAIN = (str, int, float, bool, type(None))
# The dtypes an embedding's features may be stored in: little-endian (or one-byte)
# numbers, as numpy's ``dtype.str`` spells them.
EMBEDDING_DTYPE = re.compile(r"<[fiu][248]|\|[iub]1")


def _numbers(value: object) -> bool:
    return isinstance(value, list) and all(map(is_number, value))


def _ints(value: object) -> bool:
    return isinstance(value, list) and all(type(v) is int for v in value)


def _strs(value: object) -> bool:
    return isinstance(value, list) and all(type(v) is str for v in value)


def _plain_dict(value: object) -> bool:
    return isinstance(value, dict) and all(
        type(k) is str and type(v) in _PLAIN for k, v in value.items()
    )


def _number_dict(value: object) -> bool:
    return isinstance(value, dict) and all(
        type(k) is str and is_number(v) for k, v in value.items()
    )


def _table_cell(value: object) -> bool:
    """A W&B Table's cell: a plain value, a PNG image's bytes, or a list of plain values."""
    if isinstance(value, list):
        return all(type(v) in _PLAIN for v in value)
    return type(value) in _PLAIN or type(value) is bytes


def _table_rows(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(row, list) and all(map(_table_cell, row)) for row in value
    )


def _layout(value: object) -> bool:
    """TensorBoard's custom-scalar layout: {category: {title: [chart kind, [tags]]}}."""
    return isinstance(value, dict) and all(
        type(category) is str
        and isinstance(charts, dict)
        and all(
            type(title) is str
            and isinstance(chart, list)
            and len(chart) == 2
            and chart[0] in ("Multiline", "Margin")
            and _strs(chart[1])
            for title, chart in charts.items()
        )
        for category, charts in value.items()
    )


def _is(kind: type) -> Callable[[object], bool]:
    return lambda value: type(value) is kind


_PR_FIELDS = ("tp", "fp", "tn", "fn", "precision", "recall")

# kind -> field -> check. Every field is required; no other field is allowed.
SCHEMAS: dict[str, dict[str, Callable[[object], bool]]] = {
    "text": {"text": _is(str)},
    # add_graph: the model's outline, and TensorBoard's serialized GraphDef and RunMetadata
    # (empty when the model could not be traced).
    "graph": {"text": _is(str), "graph_def": _is(bytes), "run_metadata": _is(bytes)},
    "tensor": {"shape": _ints, "dtype": _is(str), "values": _numbers},
    "histogram": {
        **dict.fromkeys(("min", "max", "num", "sum", "sum_squares"), is_number),
        "limits": _numbers,
        "counts": _numbers,
    },
    "hparams": {"hparams": _plain_dict, "metrics": _number_dict},
    "pr_curve": {**dict.fromkeys(_PR_FIELDS, _numbers), "num_thresholds": _is(int)},
    "audio": {"wav": _is(bytes), "sample_rate": is_number},
    "video": {"gif": _is(bytes), "fps": is_number},
    "points": {"x": _numbers, "y": _numbers, "labels": _strs},  # before embeddings kept features
    # add_embedding: the 2-D view (as points), the features (shape, little-endian dtype,
    # raw bytes), metadata.tsv's lines (a header first when given), sprite PNG and [W, H].
    "embedding": {
        "x": _numbers,
        "y": _numbers,
        "labels": _strs,
        "shape": _ints,
        "dtype": lambda value: type(value) is str and EMBEDDING_DTYPE.fullmatch(value) is not None,
        "values": _is(bytes),
        "metadata": _strs,
        "sprite": _is(bytes),
        "sprite_dim": _ints,
    },
    "mesh": {"vertices": _numbers, "faces": _ints, "colors": _ints},
    "layout": {"layout": _layout},
    # A W&B-style alert (tag: its title): text and level (INFO, WARN or ERROR).
    "alert": {"text": _is(str), "level": _is(str)},
    # A W&B-style Table: its column names and rows, a cell a plain value, a list of them, or
    # an image's PNG bytes.
    "table": {"columns": _strs, "rows": _table_rows},
    # W&B-style artifacts (:mod:`.artifacts`): one the run logged (tag: its name), with its
    # manifest, and one it used (the contents' digest, the run that logged it).
    "artifact": {
        **dict.fromkeys(("name", "type", "description", "digest"), _is(str)),
        "metadata": _plain_dict,
        "aliases": _strs,
        "files": artifacts.files_check,
    },
    "artifact_use": {
        **dict.fromkeys(("name", "version", "digest", "run"), _is(str)),
        "stored": _strs,
    },
}
# Fields whose lists must have one length, per kind.
_SAME_LENGTH = {
    "histogram": ("limits", "counts"),
    "pr_curve": _PR_FIELDS,
    "points": ("x", "y"),
    "embedding": ("x", "y"),
}


def record_problem(item: object) -> str | None:
    """Why one extra record breaks its kind's schema, or None when it is valid."""
    if not isinstance(item, tuple) or len(item) != 5:
        return "extra record is not a 5-tuple"
    kind, tag, step, wall_time, data = item
    if not isinstance(tag, str):
        return "tag must be str"
    schema = SCHEMAS.get(kind) if isinstance(kind, str) else None
    if schema is None:
        return f"{tag}: unknown kind {kind!r:.40}"
    if not is_int64(step):
        return f"{tag}: step {step!r:.40} is not an int64"
    if not is_number(wall_time):
        return f"{tag}: wall time must be a number"
    if not isinstance(data, dict) or set(data) != set(schema):
        return f"{tag}: {kind} data must have exactly the fields {sorted(schema)}"
    for name, check in schema.items():
        if not check(data[name]):
            return f"{tag}: {kind} field {name!r} has the wrong type"
    lengths = {len(data[name]) for name in _SAME_LENGTH.get(kind, ())}
    if len(lengths) > 1:
        return f"{tag}: {kind} lists {_SAME_LENGTH[kind]} differ in length"
    if kind in ("points", "embedding") and len(data["labels"]) not in (0, len(data["x"])):
        return f"{tag}: points have {len(data['labels'])} labels for {len(data['x'])} points"
    if kind == "embedding":
        return _embedding_problem(tag, data)
    if kind == "mesh":
        return _mesh_problem(tag, data)
    if kind == "table" and any(len(row) != len(data["columns"]) for row in data["rows"]):
        return f"{tag}: table rows must have a cell a column ({len(data['columns'])})"
    return None


def _embedding_problem(tag: str, data: dict) -> str | None:
    """Why an embedding's bytes are not its N x D values of one row a point, or None."""
    shape, size = data["shape"], int(data["dtype"][2:])
    if len(shape) != 2 or shape[0] != len(data["x"]) or min(shape) < 0:
        return f"{tag}: embedding of shape {shape} for {len(data['x'])} points"
    if len(data["values"]) != shape[0] * shape[1] * size:
        return f"{tag}: embedding holds {len(data['values'])} bytes, not {shape} of {size}"
    if len(data["sprite_dim"]) not in (0, 2) or bool(data["sprite"]) != bool(data["sprite_dim"]):
        return f"{tag}: embedding sprite without its image size, or the reverse"
    return None


def _mesh_problem(tag: str, data: dict) -> str | None:
    """Why a mesh's flat lists do not describe whole vertices, faces and colors, or None."""
    vertices, faces, colors = data["vertices"], data["faces"], data["colors"]
    if len(vertices) % 3 or len(faces) % 3:
        return f"{tag}: mesh vertices and faces must come in threes"
    if colors and len(colors) != len(vertices):
        return f"{tag}: mesh has {len(colors) // 3} colors for {len(vertices) // 3} vertices"
    if faces and not 0 <= min(faces) <= max(faces) < len(vertices) // 3:
        return f"{tag}: mesh faces index vertices that do not exist"
    return None
