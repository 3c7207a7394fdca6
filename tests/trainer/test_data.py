"""trainer.data: the generated dataset, the Pillow image-folder reader, and its input checks."""

from __future__ import annotations

import pytest
import torch

from trainer.data import DataError, ImageFolder, check_dataroot, load_datasets, make_dataset


def test_make_dataset_writes_an_image_folder_of_real_pngs(tmp_path):
    counts = make_dataset(tmp_path, classes=3, train_per_class=5, val_per_class=2, image_size=20)
    assert counts == {"train": 15, "val": 6}
    assert sorted(p.name for p in (tmp_path / "train").iterdir()) == [
        "circle",
        "square",
        "triangle",
    ]
    assert len(list((tmp_path / "val" / "circle").glob("*.png"))) == 2
    assert check_dataroot(tmp_path) == counts


def test_make_dataset_is_deterministic(tmp_path):
    make_dataset(tmp_path / "a", classes=2, train_per_class=2, val_per_class=1, seed=3)
    make_dataset(tmp_path / "b", classes=2, train_per_class=2, val_per_class=1, seed=3)
    first = (tmp_path / "a" / "train" / "circle" / "circle_00001.png").read_bytes()
    assert first == (tmp_path / "b" / "train" / "circle" / "circle_00001.png").read_bytes()


def test_image_folder_yields_chw_floats_and_class_indices(tiny_dataset):
    datasets = load_datasets(tiny_dataset)
    train, valid = datasets["train"], datasets["valid"]
    assert (len(train), len(valid)) == (48, 12)
    assert train.classes == valid.classes == ["circle", "square", "triangle"]
    image, label = train[len(train) - 1]
    assert image.shape == (3, 16, 16) and image.dtype == torch.float32
    assert image.min() >= 0.0 and image.max() <= 1.0
    assert label == 2
    assert torch.equal(train[0][0], train[0][0])  # cached copy equals the decoded one


def test_image_folder_resizes_to_image_size(tiny_dataset):
    image, _ = ImageFolder(tiny_dataset / "train", image_size=8)[0]
    assert image.shape == (3, 8, 8)


def test_validation_split_is_optional(tmp_path):
    make_dataset(tmp_path, classes=2, train_per_class=2, val_per_class=1)
    for path in (tmp_path / "val").rglob("*.png"):
        path.unlink()
    for folder in sorted((tmp_path / "val").iterdir()):
        folder.rmdir()
    (tmp_path / "val").rmdir()
    assert set(load_datasets(tmp_path)) == {"train"}


@pytest.mark.parametrize(
    "layout, message",
    [
        (None, "no such directory"),
        ([], "expected"),
        (["train/a/", "train/b/"], "no images"),
        (["train/a/x.png"], "at least 2 class folders"),
        (["train/a/x.png", "train/b/y.png", "val/a/x.png", "val/c/y.png"], "differ"),
        (["train/a/x.txt", "train/b/y.txt"], "no images"),
    ],
)
def test_bad_dataroots_name_the_problem(tmp_path, layout, message):
    root = tmp_path / "data"
    if layout is not None:
        root.mkdir()
        for rel in layout:
            path = root / rel
            if rel.endswith("/"):
                path.mkdir(parents=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"")
    with pytest.raises(DataError, match=message) as err:
        check_dataroot(root)
    assert str(root) in str(err.value) and "\n" not in str(err.value)
