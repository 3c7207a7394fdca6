"""trainer.command.data: the generated dataset, the Pillow image-folder reader, and its input checks."""

from __future__ import annotations

import pytest
import torch

from trainer.command.data import DataError, ImageFolder, check_dataroot, load_datasets, make_dataset


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


# --- unreadable images: found before training ----------------------------------------------------


def _corrupt(folder, good):
    """Four kinds of broken PNG next to good ones; returns their paths."""
    data = good.read_bytes()
    broken = {
        "garbage.png": bytes(range(200)),
        "empty.png": b"",
        "truncated.png": data[: len(data) // 2],
        "flipped.png": data[:60] + bytes([data[60] ^ 0xFF]) + data[61:],
    }
    for name, content in broken.items():
        (folder / name).write_bytes(content)
    return sorted(folder / name for name in broken)


def test_unreadable_images_are_skipped_with_a_warning_each_and_one_count(tmp_path, caplog):
    make_dataset(tmp_path, classes=2, train_per_class=4, val_per_class=2, image_size=12)
    folder = tmp_path / "train" / "circle"
    bad = _corrupt(folder, next(folder.iterdir()))
    caplog.set_level("WARNING", logger="trainer.command.data")

    datasets = load_datasets(tmp_path)

    assert len(datasets["train"]) == 8 and len(datasets["valid"]) == 4
    assert not {path for path, _ in datasets["train"].samples} & set(bad)
    assert len(datasets["train"].targets) == 8
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 5, messages
    for path in bad:
        assert sum(str(path) in m and "skipping unreadable image" in m for m in messages) == 1
    assert messages[-1] == f"--dataroot {tmp_path}: skipped 4 unreadable image(s) of 16"
    for i in range(len(datasets["train"])):  # every image left decodes
        assert datasets["train"][i][0].shape == (3, 12, 12)


def test_a_split_with_no_readable_image_is_an_error_naming_the_dataroot(tmp_path, caplog):
    make_dataset(tmp_path, classes=2, train_per_class=1, val_per_class=1, image_size=12)
    for path in (tmp_path / "val").rglob("*.png"):
        path.write_bytes(b"not a png")

    with pytest.raises(DataError) as err:
        load_datasets(tmp_path)

    message = str(err.value)
    assert message.startswith(f"--dataroot {tmp_path}: none of the 2 images under ")
    assert str(tmp_path / "val") in message and "cannot identify image file" in message
    assert not caplog.records  # the error alone, no warning per file before it
