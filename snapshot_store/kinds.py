"""Record kinds beyond scalars and images (format version 2): their schemas and framing.

They live in their own stream, ``extras-NNNNNNNN.pickle``, one frame per batch::

    {"v": 2, "records": [(kind, tag, step, wall_time, data), ...]}

``data`` is a dict of plain values whose fields each kind fixes below. A store
of format version 1 simply has no ``extras`` segment; a version-1 reader does
not list these files, so it reads the rest of a version-2 store unchanged.
Like :mod:`.frames`, this module never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable

from . import frames as fmt

EXTRAS = fmt.EXTRAS
ExtraRecord = tuple[str, str, int, float, dict]

_PLAIN = (str, int, float, bool, type(None))

# hparams rows, as TensorBoard's table has one per session: every record tagged
# HPARAMS_TAG (an add_hparams call without a run name) is a row of its own; a
# record with another tag (a run name; OWN_RUN_TAG for the hparams summaries
# given to the writer's own file writer) replaces that tag's earlier row. A NaN
# metric is not given: its value is the last of the scalar logged under that tag.
HPARAMS_TAG = "hparams"
OWN_RUN_TAG = "."


def _is_number(value: object) -> bool:
    return fmt._is_number(value)  # one owner of what a stored number is


def _numbers(value: object) -> bool:
    return isinstance(value, list) and all(map(_is_number, value))


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
        type(k) is str and _is_number(v) for k, v in value.items()
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
    "tensor": {"shape": _ints, "dtype": _is(str), "values": _numbers},
    "histogram": {
        **dict.fromkeys(("min", "max", "num", "sum", "sum_squares"), _is_number),
        "limits": _numbers,
        "counts": _numbers,
    },
    "hparams": {"hparams": _plain_dict, "metrics": _number_dict},
    "pr_curve": {**dict.fromkeys(_PR_FIELDS, _numbers), "num_thresholds": _is(int)},
    "audio": {"wav": _is(bytes), "sample_rate": _is_number},
    "video": {"gif": _is(bytes), "fps": _is_number},
    "points": {"x": _numbers, "y": _numbers, "labels": _strs},
    "mesh": {"vertices": _numbers, "faces": _ints, "colors": _ints},
    "layout": {"layout": _layout},
    # A W&B-style alert (tag: its title): text and level (INFO, WARN or ERROR).
    "alert": {"text": _is(str), "level": _is(str)},
}
# Fields whose lists must have one length, per kind.
_SAME_LENGTH = {
    "histogram": ("limits", "counts"),
    "pr_curve": _PR_FIELDS,
    "points": ("x", "y"),
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
    if type(step) is not int or not fmt._INT64_MIN <= step <= fmt._INT64_MAX:
        return f"{tag}: step {step!r:.40} is not an int64"
    if not _is_number(wall_time):
        return f"{tag}: wall time must be a number"
    if not isinstance(data, dict) or set(data) != set(schema):
        return f"{tag}: {kind} data must have exactly the fields {sorted(schema)}"
    for name, check in schema.items():
        if not check(data[name]):
            return f"{tag}: {kind} field {name!r} has the wrong type"
    lengths = {len(data[name]) for name in _SAME_LENGTH.get(kind, ())}
    if len(lengths) > 1:
        return f"{tag}: {kind} lists {_SAME_LENGTH[kind]} differ in length"
    if kind == "points" and len(data["labels"]) not in (0, len(data["x"])):
        return f"{tag}: points have {len(data['labels'])} labels for {len(data['x'])} points"
    if kind == "mesh":
        return _mesh_problem(tag, data)
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


def encode_extra_batch(records: list[ExtraRecord]) -> bytes:
    """Frame bytes for one batch of extra records (several frames when it is huge)."""
    return fmt._encode_batch(
        "records", records, lambda items: fmt._halves(items) if len(items) > 1 else None
    )


def extra_records(payload: bytes, source: str) -> tuple[list[ExtraRecord], list[str]]:
    """The valid records of one extras frame, and why each invalid one was left out."""
    return fmt.records_of(payload, source, "records", "extras", record_problem)
