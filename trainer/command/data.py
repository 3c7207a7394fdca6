"""Image-folder datasets read with Pillow, and a generator of a small real one.

The layout is the one torchvision's ``ImageFolder`` reads (torchvision itself is
not a dependency)::

    DATAROOT/train/<class>/*.png|jpg
    DATAROOT/val/<class>/*.png|jpg

Every image is checked before training (:func:`unreadable_image`, cheap: no
full decode of a PNG); unreadable ones are skipped with a warning each.
"""

from __future__ import annotations

import logging
import math
import os
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
SPLITS = ("train", "val")
SHAPES = ("circle", "square", "triangle", "cross", "ring", "bar")
# Unreadable images get a warning each up to this many; the rest are only counted.
MAX_IMAGE_WARNINGS = 20

log = logging.getLogger(__name__)


class DataError(ValueError):
    """A dataroot that can not be trained on; the message says what to fix."""


class ImageFolder:
    """``root/<class>/<image>`` as ``(float CHW tensor in [0, 1], class index)`` pairs.

    Images are converted to RGB and resized to ``image_size`` when they differ.
    Decoded images are kept in memory (``cache=True``) because the datasets this
    trainer targets are small and decoding dominates a CPU step otherwise.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        classes: list[str] | None = None,
        image_size: int | None = None,
        cache: bool = True,
        transform: Callable | None = None,
    ) -> None:
        self.root = Path(root)
        self.classes = classes if classes is not None else find_classes(self.root)
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.samples: list[tuple[Path, int]] = [
            (path, self.class_to_idx[name])
            for name in self.classes
            for path in _image_files(self.root / name)
        ]
        self.targets = [label for _, label in self.samples]
        self.image_size = image_size
        self.transform = transform
        self._cache: dict[int, np.ndarray] | None = {} if cache else None

    def __len__(self) -> int:
        return len(self.samples)

    def drop(self, paths: set[Path]) -> None:
        """Leave out the samples read from ``paths``."""
        self.samples = [sample for sample in self.samples if sample[0] not in paths]
        self.targets = [label for _, label in self.samples]

    def __getitem__(self, index: int):
        import torch

        pixels = self._pixels(index)
        image = torch.from_numpy(pixels).permute(2, 0, 1).float().div_(255.0)
        if self.transform is not None:
            image = self.transform(image)
        return image, self.samples[index][1]

    def _pixels(self, index: int) -> np.ndarray:
        if self._cache is not None and index in self._cache:
            return self._cache[index]
        path = self.samples[index][0]
        with Image.open(path) as opened:
            img = opened.convert("RGB")
            if self.image_size and img.size != (self.image_size, self.image_size):
                img = img.resize((self.image_size, self.image_size), Image.Resampling.BILINEAR)
            pixels = np.asarray(img, dtype=np.uint8).copy()
        if self._cache is not None:
            self._cache[index] = pixels
        return pixels


def _image_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


def find_classes(split_dir: Path) -> list[str]:
    """Sorted names of the class folders of one split."""
    return sorted(p.name for p in split_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def check_dataroot(dataroot: str | os.PathLike[str]) -> dict[str, int]:
    """Check the layout without decoding anything; return the image count per split.

    Raises :class:`DataError` with one line that names the problem and the path.
    """
    root = Path(dataroot)
    if not root.exists():
        raise DataError(f"--dataroot {root}: no such directory")
    if not root.is_dir():
        raise DataError(f"--dataroot {root}: not a directory")
    train = root / "train"
    if not train.is_dir():
        found = ", ".join(sorted(p.name for p in root.iterdir())[:5]) or "nothing"
        raise DataError(
            f"--dataroot {root}: expected {train}/<class>/*.png (found {found}); "
            f"create one with: python -m trainer make-dataset {root}"
        )
    counts = {}
    train_classes = find_classes(train)
    for split in SPLITS:
        split_dir = root / split
        if not split_dir.is_dir():
            continue
        classes = find_classes(split_dir)
        if not classes:
            raise DataError(f"--dataroot {root}: {split_dir} has no class folders")
        if split != "train" and classes != train_classes:
            raise DataError(
                f"--dataroot {root}: classes of {split}/ {classes} differ from "
                f"train/ {train_classes}"
            )
        counts[split] = sum(len(_image_files(split_dir / name)) for name in classes)
        if counts[split] == 0:
            raise DataError(
                f"--dataroot {root}: no images ({'/'.join(IMAGE_SUFFIXES)}) "
                f"under {split_dir}/<class>/"
            )
    if len(train_classes) < 2:
        raise DataError(
            f"--dataroot {root}: need at least 2 class folders in {train}, found {train_classes}"
        )
    return counts


def unreadable_image(path: Path) -> str | None:
    """Why ``path`` can not be read as an image, or None when it can.

    A PNG's chunk structure and checksums are verified without decoding its
    pixels; other formats are decoded (JPEG at reduced scale, which is cheap).
    """
    try:
        with Image.open(path) as img:
            if img.format == "PNG":
                img.verify()
            else:
                img.draft("RGB", (1, 1))
                img.load()
        return None
    except Exception as err:  # Pillow raises OSError, SyntaxError, ValueError, EOFError...
        problem = f"{type(err).__name__}: {err}"
    try:  # verify is stricter than decoding (a missing end chunk): what decodes is usable
        with Image.open(path) as img:
            img.load()
        return None
    except Exception:
        return problem


def _drop_unreadable(root: Path, datasets: dict[str, ImageFolder]) -> None:
    """Skip unreadable images with a warning each; DataError when a split has none left."""
    unreadable = {
        split: {path: problem for path, _ in dataset.samples if (problem := unreadable_image(path))}
        for split, dataset in datasets.items()
    }
    for split, bad in unreadable.items():
        if bad and len(bad) == len(datasets[split]):
            first, problem = next(iter(bad.items()))
            raise DataError(
                f"--dataroot {root}: none of the {len(bad)} images under "
                f"{datasets[split].root} can be read (e.g. {first}: {problem})"
            )
    skipped = [(path, problem) for bad in unreadable.values() for path, problem in bad.items()]
    if not skipped:
        return
    for path, problem in skipped[:MAX_IMAGE_WARNINGS]:
        log.warning("skipping unreadable image %s (%s)", path, problem)
    for split, bad in unreadable.items():
        datasets[split].drop(set(bad))
    more = " (only the first were named)" if len(skipped) > MAX_IMAGE_WARNINGS else ""
    total = len(skipped) + sum(len(d) for d in datasets.values())
    log.warning(
        "--dataroot %s: skipped %d unreadable image(s) of %d%s", root, len(skipped), total, more
    )


def load_datasets(
    dataroot: str | os.PathLike[str], image_size: int | None = None, cache: bool = True
) -> dict[str, ImageFolder]:
    """The ``train`` and (when present) ``valid`` splits of an image folder."""
    root = Path(dataroot)
    counts = check_dataroot(root)
    classes = find_classes(root / "train")
    datasets = {"train": ImageFolder(root / "train", classes, image_size, cache)}
    if "val" in counts:
        datasets["valid"] = ImageFolder(root / "val", classes, image_size, cache)
    _drop_unreadable(root, datasets)
    return datasets


# --- a generated dataset of noisy shapes ----------------------------------------------


def _draw_shape(
    draw: ImageDraw.ImageDraw,
    shape: str,
    cx: float,
    cy: float,
    r: float,
    angle: float,
    color: tuple[int, int, int],
) -> None:
    def rotated(points):
        c, s = math.cos(angle), math.sin(angle)
        return [(cx + x * c - y * s, cy + x * s + y * c) for x, y in points]

    width = max(1, round(r / 3))
    if shape == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=color)
    elif shape == "ring":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=color, width=width)
    elif shape == "square":
        draw.polygon(rotated([(-r, -r), (r, -r), (r, r), (-r, r)]), fill=color)
    elif shape == "triangle":
        draw.polygon(rotated([(0, -r), (r * 0.87, r * 0.5), (-r * 0.87, r * 0.5)]), fill=color)
    elif shape == "cross":
        draw.line(rotated([(-r, 0), (r, 0)]), fill=color, width=width)
        draw.line(rotated([(0, -r), (0, r)]), fill=color, width=width)
    elif shape == "bar":
        draw.polygon(rotated([(-r, -r / 3), (r, -r / 3), (r, r / 3), (-r, r / 3)]), fill=color)
    else:
        raise ValueError(f"unknown shape {shape!r}")


def render_shape(shape: str, size: int, rng: random.Random, noise: float = 24.0) -> Image.Image:
    """One ``size``×``size`` RGB image of ``shape`` at a random place, scale, angle and color."""
    background = (rng.randrange(0, 90), rng.randrange(0, 90), rng.randrange(0, 90))
    color = (rng.randrange(140, 256), rng.randrange(140, 256), rng.randrange(140, 256))
    img = Image.new("RGB", (size, size), background)
    r = rng.uniform(0.2, 0.38) * size
    cx, cy = (rng.uniform(r, size - r) for _ in range(2))
    _draw_shape(ImageDraw.Draw(img), shape, cx, cy, r, rng.uniform(0, math.pi), color)
    noise_rng = np.random.default_rng(rng.getrandbits(32))
    pixels = np.asarray(img, dtype=np.float64) + noise_rng.normal(0.0, noise, (size, size, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def make_dataset(
    out_dir: str | os.PathLike[str],
    classes: int = 4,
    train_per_class: int = 400,
    val_per_class: int = 100,
    image_size: int = 32,
    seed: int = 0,
) -> dict[str, int]:
    """Write ``out_dir/{train,val}/<shape>/*.png``; return the image count per split.

    The defaults make 2,000 32×32 images, about 3 MB.
    """
    if not 2 <= classes <= len(SHAPES):
        raise ValueError(f"classes must be between 2 and {len(SHAPES)}, not {classes}")
    out = Path(out_dir)
    rng = random.Random(seed)
    counts = {}
    for split, per_class in (("train", train_per_class), ("val", val_per_class)):
        for shape in SHAPES[:classes]:
            folder = out / split / shape
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                render_shape(shape, image_size, rng).save(
                    folder / f"{shape}_{i:05d}.png", optimize=False
                )
        counts[split] = classes * per_class
    return counts
