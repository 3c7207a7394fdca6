"""What the trainer tells the person who started it."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import pytest

from trainer.training.console import log_through_tqdm, watch_command
from trainer.training.interrupts import Terminated, signals_at_the_end, terminate_as_exit


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


def test_a_sigterm_inside_tqdms_write_lock_ends_the_run_without_a_logging_error(
    monkeypatch, capsys
) -> None:
    """The race CI met: SIGTERM while tqdm takes its lock for a log line. Unwound after the
    line, Terminated comes out of ``log.info`` and logging prints no "Logging error"."""
    import tqdm

    real_get_lock = tqdm.tqdm.get_lock.__func__

    def get_lock_then_signal(cls):  # the handler runs inside get_lock, as it did on CI
        signal.raise_signal(signal.SIGTERM)
        return real_get_lock(cls)

    monkeypatch.setattr(tqdm.tqdm, "get_lock", classmethod(get_lock_then_signal))
    console = logging.StreamHandler()  # stderr at call time: capsys sees it
    logging.getLogger("trainer").addHandler(console)
    try:
        with pytest.raises(Terminated), terminate_as_exit(), log_through_tqdm():
            logging.getLogger("trainer.test").warning("one whole line")
    finally:
        logging.getLogger("trainer").removeHandler(console)
    err = capsys.readouterr().err
    assert "one whole line" in err and "Logging error" not in err and "Traceback" not in err


def test_a_ctrl_c_inside_the_deferred_block_is_raised_at_its_end() -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt), signals_at_the_end():
        signal.raise_signal(signal.SIGINT)
        reached.append(sum(range(100)))  # the handler has run here, and raised nothing
    assert reached == [4950]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
