"""LocalSource reads regular files inside the store only, and never blocks on one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapshot_store import StoreReader, read_store
from snapshot_store.format import batches
from snapshot_store.format import frames as fmt
from snapshot_store.read.store_reader import LocalSource
from tests.fixtures.runs.export import run_export

SEGMENT0 = fmt.segment_name(fmt.SCALARS, 0)
SEGMENT1 = fmt.segment_name(fmt.SCALARS, 1)

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


def _batch(steps: list[int]) -> bytes:
    n = len(steps)
    return batches.encode_scalar_batch([("train", "a", steps, [0.0] * n, [1.0] * n, [1.0] * n)])


@needs_fifo
@pytest.mark.parametrize("name", [SEGMENT1, fmt.STATUS_FILE, fmt.META_FILE])
def test_a_fifo_named_like_a_store_file_is_skipped_with_one_warning(tmp_path, name):
    (tmp_path / SEGMENT0).write_bytes(_batch([0, 1]))
    os.mkfifo(tmp_path / name)
    history, reader, _ = read_store(tmp_path)
    assert history.points == 2
    assert reader.warnings == [f"skipped {tmp_path / name}: not a regular file"]
    reader.poll()
    assert len(reader.warnings) == 1  # once per file, not per poll


@needs_fifo
@pytest.mark.integration
def test_export_does_not_hang_on_fifos(tmp_path):
    (tmp_path / SEGMENT0).write_bytes(_batch([0, 1]))
    for name in (SEGMENT1, fmt.STATUS_FILE, fmt.META_FILE):
        os.mkfifo(tmp_path / name)
    result = run_export(tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3  # header and two rows
    assert "Traceback" not in result.stderr


@pytest.mark.integration
def test_a_symlink_out_of_the_store_is_skipped(tmp_path):
    store, outside = tmp_path / "store", tmp_path / "outside"
    store.mkdir()
    outside.mkdir()
    (outside / SEGMENT0).write_bytes(_batch([7]))
    (store / SEGMENT0).symlink_to(outside / SEGMENT0)
    (store / SEGMENT1).write_bytes(_batch([0]))
    history, reader, _ = read_store(store)
    assert history.series(("train", "a"))[0] == [0]
    assert reader.warnings == [
        f"skipped {store / SEGMENT0}: a symlink that leads outside the store"
    ]
    result = run_export(store)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2


def test_a_symlink_inside_the_store_is_read(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "seg").write_bytes(_batch([0, 1]))
    (tmp_path / SEGMENT0).symlink_to(Path("data") / "seg")
    history, reader, _ = read_store(tmp_path)
    assert history.points == 2
    assert reader.warnings == []


@pytest.mark.integration
def test_a_directory_named_like_a_segment_is_skipped(tmp_path):
    (tmp_path / SEGMENT0).write_bytes(_batch([0]))
    (tmp_path / SEGMENT1).mkdir()
    (tmp_path / fmt.STATUS_FILE).mkdir()
    history, reader, _ = read_store(tmp_path)
    assert history.points == 1
    assert sorted(reader.warnings) == sorted(
        f"skipped {tmp_path / name}: not a regular file" for name in (SEGMENT1, fmt.STATUS_FILE)
    )
    assert run_export(tmp_path).returncode == 0


def test_a_dangling_or_looping_symlink_is_ignored(tmp_path):
    (tmp_path / SEGMENT0).write_bytes(_batch([0]))
    (tmp_path / SEGMENT1).symlink_to(tmp_path / "missing")
    (tmp_path / fmt.STATUS_FILE).symlink_to(tmp_path / fmt.STATUS_FILE)
    history, _, _ = read_store(tmp_path)
    assert history.points == 1


@needs_fifo
def test_read_refuses_a_fifo_swapped_in_after_listing_without_blocking(tmp_path):
    os.mkfifo(tmp_path / SEGMENT0)
    with pytest.raises(OSError, match="not a regular file"):
        LocalSource(tmp_path).read(SEGMENT0)


def test_reader_over_a_custom_warn_callback(tmp_path):
    (tmp_path / SEGMENT0).mkdir()
    seen: list[str] = []
    LocalSource(tmp_path, warn=seen.append).list()
    assert seen == [f"skipped {tmp_path / SEGMENT0}: not a regular file"]
    assert StoreReader(tmp_path).poll().points == 0


@pytest.mark.integration  # runs export in a process of its own
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_segment_linked_to_dev_zero_is_skipped_not_read(tmp_path):
    (tmp_path / SEGMENT0).symlink_to("/dev/zero")  # endless bytes: reading it whole never ends
    (tmp_path / SEGMENT1).write_bytes(_batch([0]))
    result = run_export(tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2
    assert f"skipped {tmp_path / SEGMENT0}" in result.stderr


def test_read_refuses_a_symlink_out_of_the_store_swapped_in_after_listing(tmp_path):
    store, outside = tmp_path / "store", tmp_path / "secret"
    store.mkdir()
    outside.write_bytes(b"not the store's")
    (store / SEGMENT0).symlink_to(outside)
    with pytest.raises(OSError, match="leads outside the store"):
        LocalSource(store).read(SEGMENT0)
    (store / "inside").write_bytes(b"kept")
    (store / "link").symlink_to(store / "inside")
    assert LocalSource(store).read("link") == b"kept"


@pytest.mark.parametrize("folder", ["runs/a", "runs//a/", "./runs/a/.", "runs/./a", "runs/.a"])
def test_a_store_is_named_as_its_path_writes_it(tmp_path, folder):
    source = LocalSource(f"{tmp_path}/{folder}")
    assert source.root == Path(tmp_path, folder)
    assert source.describe(fmt.STATUS_FILE) == str(Path(tmp_path, folder, fmt.STATUS_FILE))
