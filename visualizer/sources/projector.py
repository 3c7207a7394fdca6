"""``python -m visualizer export --kind projector --out DIR``: the runs' embeddings as the
files TensorBoard's projector reads (``tensorboard --logdir DIR``).

Each run gets a folder ``DIR/<run>`` holding what ``torch.utils.tensorboard``'s
``add_embedding`` writes in its log dir: per embedding ``<step>/<tag>/tensors.tsv``
(a row a point, values printed as TensorBoard prints them), ``metadata.tsv`` and
``sprite.png`` when logged, and one ``projector_config.pbtxt`` naming them all.
The store bounds each embedding (see ``snapshot_store.write.encoders``), so the
files are as large as what was logged, never more. No tensorboard import: the
config is protobuf text written here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from snapshot_store.read.store_reader import read_store

from .runs import RunSpec

CONFIG = "projector_config.pbtxt"


def tag_folder(tag: str) -> str:
    """The folder TensorBoard's writer names a tag's files after (``%`` and ``/`` escaped)."""
    return tag.replace("%", "%25").replace("/", "%2f")


def run_folder(out_dir: Path, name: str) -> Path:
    """``out_dir/name``, the name's parts kept only where they stay below ``out_dir``."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return out_dir.joinpath(*parts) if parts else out_dir / "run"


def _quoted(text: str) -> str:
    """``text`` as a protobuf text-format string, escaped as ``text_format`` does (UTF-8 kept)."""
    escapes = {"\n": r"\n", "\r": r"\r", "\t": r"\t", '"': r"\"", "'": r"\'", "\\": r"\\"}
    out = [escapes.get(c) or (c if 32 <= ord(c) != 127 else f"\\{ord(c):03o}") for c in text]
    return '"' + "".join(out) + '"'


def _write_files(folder: Path, data: dict[str, Any]) -> None:
    """The embedding's ``tensors.tsv``, and its ``metadata.tsv`` and ``sprite.png`` if kept."""
    folder.mkdir(parents=True, exist_ok=True)
    values = np.frombuffer(data["values"], dtype=np.dtype(data["dtype"]))
    rows = values.reshape(data["shape"]).tolist()
    with open(folder / "tensors.tsv", "w", encoding="utf-8", newline="") as out:
        out.writelines("\t".join(map(str, row)) + "\n" for row in rows)
    if data["metadata"]:
        text = "\n".join(data["metadata"]) + "\n"
        (folder / "metadata.tsv").write_bytes(text.encode())
    if data["sprite"]:
        (folder / "sprite.png").write_bytes(data["sprite"])


def _config_entry(tag: str, step: int, subdir: str, data: dict[str, Any]) -> str:
    """One ``embeddings { ... }`` entry, fields in TensorBoard's order."""
    lines = [f"  tensor_name: {_quoted(f'{tag}:{str(step).zfill(5)}')}"]
    if data["metadata"]:
        lines.append(f"  metadata_path: {_quoted(f'{subdir}/metadata.tsv')}")
    if data["sprite"]:
        lines.append("  sprite {")
        lines.append(f"    image_path: {_quoted(f'{subdir}/sprite.png')}")
        lines += [f"    single_image_dim: {n}" for n in data["sprite_dim"]]
        lines.append("  }")
    lines.append(f"  tensor_path: {_quoted(f'{subdir}/tensors.tsv')}")
    return "embeddings {\n" + "\n".join(lines) + "\n}\n"


def write_projector(spec: RunSpec, out_dir: Path) -> int:
    """Write the projector files of one run's embeddings; how many embeddings were written.

    An embedding logged again at one step and tag replaces the earlier one, files and entry.
    """
    _history, _reader, update = read_store(spec.source)  # extras come with the images
    entries: dict[str, str] = {}
    folder = run_folder(out_dir, spec.name)
    for kind, tag, step, _wall, data in update.extras:
        if kind != "embedding":
            continue
        subdir = f"{str(step).zfill(5)}/{tag_folder(tag)}"
        _write_files(folder / subdir, data)
        entries[subdir] = _config_entry(tag, step, subdir, data)
    if entries:
        (folder / CONFIG).write_text("".join(entries.values()), encoding="utf-8")
    return len(entries)
