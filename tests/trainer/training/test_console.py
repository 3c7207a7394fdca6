"""What the trainer tells the person who started it."""

from __future__ import annotations

from pathlib import Path

from trainer.training.console import watch_command


def test_the_watch_command_names_the_runs_store(tmp_path: Path) -> None:
    store = tmp_path / "check points" / "exp1" / "pickle"
    assert watch_command(store, tmp_path / "check points", None) == (
        f"python run_visualizer_local.py --pickle-dir '{store}'"
    )


def test_with_the_s3_hook_the_bucket_is_named_too(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRANSFER_S3_URI", "s3://bucket/runs/")
    store = tmp_path / "exp1" / "pickle"
    line = watch_command(store, tmp_path, "transfer_plugins.s3.save_to_s3")
    assert line.endswith("--pickle-dir s3://bucket/runs/exp1/pickle")
    assert line.startswith(f"python run_visualizer_local.py --pickle-dir {store} (here)")
    # Another hook copies elsewhere: only the local store is certain.
    assert "s3://" not in watch_command(store, tmp_path, "mysave.copy")


def test_an_s3_key_with_spaces_and_hashes_is_quoted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRANSFER_S3_URI", "s3://bucket/my runs #2/")
    line = watch_command(tmp_path / "exp 1" / "pickle", tmp_path, "transfer_plugins.s3.save_to_s3")
    assert line.endswith("--pickle-dir 's3://bucket/my runs #2/exp 1/pickle'")
