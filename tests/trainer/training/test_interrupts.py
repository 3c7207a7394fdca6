"""trainer.training.interrupts: SIGTERM during a run closes it and exits 143; nothing stays installed."""

from __future__ import annotations

import signal

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.training import (
    LONG,
    read_run,
    start,
    train_args,
    trainer_cmd,
    wait_for_file,
)
from trainer.training.interrupts import (
    Terminated,
    raise_if_terminated,
    terminate_as_exit,
    terminate_later,
)


def test_sigterm_inside_the_block_unwinds_and_the_old_handler_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as stopped, terminate_as_exit():
        signal.raise_signal(signal.SIGTERM)
    assert stopped.value.code == ExitCode.TERMINATED
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_sigterm_while_a_failed_run_closes_is_noted_not_raised():
    with pytest.raises(Terminated), terminate_as_exit():
        with terminate_later():
            signal.raise_signal(signal.SIGTERM)
            sum(range(100))  # the handler has run here, and raised nothing
        raise_if_terminated()  # noted: a later check still sees it
    with terminate_later():  # outside terminate_as_exit it changes nothing
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


class _SignalInDestructor:
    """Gets SIGTERM while Python runs its ``__del__``: the handler's exception is dropped there."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)
        sum(range(100))  # the handler runs here, inside the destructor


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped one
def test_a_sigterm_lost_in_a_destructor_is_raised_at_the_next_check():
    with pytest.raises(Terminated), terminate_as_exit():
        _SignalInDestructor()  # Python prints "Exception ignored" and goes on
        raise_if_terminated()
    raise_if_terminated()  # outside the block nothing is pending


@pytest.mark.integration
@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGTERM, ExitCode.TERMINATED, "terminated"),
        (signal.SIGINT, ExitCode.INTERRUPTED, "interrupted"),
    ],
)
def test_a_signal_during_training_marks_the_run_stopped(tiny_dataset, tmp_path, signum, code, said):
    """SIGTERM (a scheduler) or Ctrl-C: status ``stopped``, exit 143/130, one line, no traceback."""
    proc = start(trainer_cmd("train", *train_args(tiny_dataset, tmp_path, "term", *LONG)), tmp_path)
    wait_for_file(tmp_path / "term", "epoch_*.pth", proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err and err.strip().endswith(f"trainer train: {said}")
    history, meta, status = read_run(tmp_path / "term")
    assert status["state"] == "stopped" and history.series(("train", "loss"))[0]


@pytest.mark.integration
def test_ctrl_c_to_trainer_launch_stops_every_rank_without_a_traceback(tiny_dataset, tmp_path):
    """torchrun (in ``trainer launch``) passes the signal on; the run is ``stopped``, exit 130."""
    launch = trainer_cmd("launch", "--nproc-per-node", "2")
    proc = start([*launch, *train_args(tiny_dataset, tmp_path, "ddp", *LONG)], tmp_path)
    wait_for_file(tmp_path / "ddp", "epoch_*.pth", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == ExitCode.INTERRUPTED, err[-3000:]
    assert "Traceback" not in out + err, err[-3000:]
    assert err.strip().endswith("trainer launch: interrupted")
    assert err.count("trainer train: interrupted") == 2  # both ranks unwound, not killed
    history, meta, status = read_run(tmp_path / "ddp")
    assert status["state"] == "stopped" and meta["world_size"] == 2
