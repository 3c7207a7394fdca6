"""transfer_plugins.local: atomic copies into a shared directory."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from transfer_plugins import local as plugin
from transfer_plugins.common import SentRecord
from transfer_plugins.local import LocalTransferError, copy_to

SEGMENT = "myrun/pickle/scalars-00000000.pickle"


@pytest.fixture(autouse=True)
def fresh_plugin(monkeypatch):
    """Each test starts with an empty record of what was copied."""
    monkeypatch.setattr(plugin, "_record", SentRecord())


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A checkpoints dir (the training side)."""
    (tmp_path / "src" / "myrun" / "pickle").mkdir(parents=True)
    return tmp_path / "src"


@pytest.fixture
def shared(tmp_path: Path, monkeypatch) -> Path:
    """The mounted directory, named by TRANSFER_LOCAL_DIR."""
    target = tmp_path / "shared"
    target.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(target))
    return target


def _leftovers(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.name.endswith(".tmp")]


def test_copies_byte_for_byte_into_the_same_layout(source, shared):
    (source / SEGMENT).write_bytes(b"frames")
    (source / "myrun" / "latest.pth").write_bytes(os.urandom(3_000_000))

    assert copy_to(source / SEGMENT, SEGMENT)
    assert copy_to(str(source / "myrun" / "latest.pth"), "myrun/latest.pth")

    assert (shared / SEGMENT).read_bytes() == b"frames"
    assert (shared / "myrun" / "latest.pth").read_bytes() == (
        source / "myrun" / "latest.pth"
    ).read_bytes()
    assert _leftovers(shared) == []


def test_an_unchanged_file_is_not_copied_again(source, shared):
    (source / SEGMENT).write_bytes(b"frames")
    copy_to(source / SEGMENT, SEGMENT)
    # Removed behind the plugin's back: only a new copy could bring it back.
    (shared / SEGMENT).unlink()

    assert not copy_to(source / SEGMENT, SEGMENT)

    assert not (shared / SEGMENT).exists()


def test_a_grown_file_is_copied_again(source, shared):
    (source / SEGMENT).write_bytes(b"frame1")
    copy_to(source / SEGMENT, SEGMENT)
    with (source / SEGMENT).open("ab") as f:
        f.write(b"frame2")

    assert copy_to(source / SEGMENT, SEGMENT)

    assert (shared / SEGMENT).read_bytes() == b"frame1frame2"


def test_a_reader_of_the_old_file_keeps_it_whole(source, shared):
    (source / SEGMENT).write_bytes(b"old" * 1000)
    copy_to(source / SEGMENT, SEGMENT)
    (source / SEGMENT).write_bytes(b"new" * 2000)

    with (shared / SEGMENT).open("rb") as reader:
        copy_to(source / SEGMENT, SEGMENT)
        assert reader.read() == b"old" * 1000
    assert (shared / SEGMENT).read_bytes() == b"new" * 2000


def test_a_concurrent_reader_only_ever_sees_whole_files(source, shared):
    versions = [bytes([i]) * (2 * 1024 * 1024 + i) for i in range(2)]
    (source / SEGMENT).write_bytes(versions[0])
    copy_to(source / SEGMENT, SEGMENT)
    seen: set[bytes] = set()
    done = threading.Event()

    def read_until_done() -> None:
        while not done.is_set():
            seen.add((shared / SEGMENT).read_bytes())

    reader = threading.Thread(target=read_until_done)
    reader.start()
    try:
        for i in range(1, 21):
            (source / SEGMENT).write_bytes(versions[i % 2])
            copy_to(source / SEGMENT, SEGMENT)
    finally:
        done.set()
        reader.join()

    assert seen <= set(versions)
    assert _leftovers(shared) == []


@pytest.mark.parametrize("relative", ["../escape.pickle", "/etc/passwd", "", "myrun/../../x"])
def test_paths_outside_the_directory_are_refused(source, shared, relative):
    (source / SEGMENT).write_bytes(b"frames")
    with pytest.raises(ValueError, match="not a relative POSIX path"):
        copy_to(source / SEGMENT, relative)
    assert list(shared.iterdir()) == []


# --- preflight -------------------------------------------------------------------


def test_preflight_accepts_a_writable_directory_and_leaves_nothing(shared):
    copy_to.preflight()

    assert list(shared.iterdir()) == []


def test_preflight_requires_transfer_local_dir(monkeypatch):
    monkeypatch.delenv("TRANSFER_LOCAL_DIR", raising=False)

    with pytest.raises(LocalTransferError, match="TRANSFER_LOCAL_DIR is not set"):
        copy_to.preflight()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_preflight_rejects_a_path_that_is_not_a_directory(tmp_path, monkeypatch, kind):
    path = tmp_path / "mount"
    if kind == "file":
        path.write_text("not a dir")
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(path))

    with pytest.raises(LocalTransferError, match="is not an existing directory") as caught:
        copy_to.preflight()
    assert str(path) in str(caught.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_preflight_rejects_a_directory_where_no_file_can_be_created(monkeypatch):
    # /proc takes no new files, even from root, for whom permission bits do not count.
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", "/proc")

    with pytest.raises(LocalTransferError, match="'/proc' is not writable"):
        copy_to.preflight()
