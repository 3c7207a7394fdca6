"""A log_dir that holds an ended run: the writer says once that it appends."""

from __future__ import annotations

from remote_train_monitor import SummaryWriter


def test_a_writer_given_an_ended_runs_log_dir_says_it_appends_once(tmp_path, caplog):
    with SummaryWriter(tmp_path / "exp1") as writer:
        writer.add_scalar("loss", 1.0, 0)
    with SummaryWriter(tmp_path / "exp2") as fresh:  # a new log_dir: nothing said
        fresh.add_scalar("loss", 1.0, 0)
    assert "appends to it" not in caplog.text
    writer = SummaryWriter(tmp_path / "exp1")  # the recipe's second experiment, same log_dir
    writer.add_scalar("loss", 2.0, 1)
    writer.close()
    writer.add_scalar("loss", 3.0, 2)  # reopened after close(): its own run, nothing said again
    writer.close()
    said = [r.getMessage() for r in caplog.records if "appends to it" in r.getMessage()]
    assert said == [
        f"{tmp_path / 'exp1'} holds a run that finished: this writer appends to it as a new "
        "session, as TensorBoard merges writers of one log_dir; give a new log_dir for a new run"
    ]
