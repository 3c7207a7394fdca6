"""The run documents: meta merged across sessions and rewritten with new options, status
and its step, a store directory that can not be written."""

from __future__ import annotations

import pytest

from run_core.redaction import REDACTED
from snapshot_store import Recorder, StoreError, read_store
from snapshot_store.write.documents import RESERVE_FILE
from tests.fixtures.servers.disk import fill_up


def test_the_status_step_is_the_furthest_step_not_the_last_logged(tmp_path):
    # add_hparams logs its metrics at step 0 after training: the status said step 0.
    store = tmp_path / "exp" / "pickle"
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=120)
        rec.log({"hparam/loss": 0.5}, step=0, group="hparams")
    assert read_store(store)[2].status["step"] == 120


def test_resumed_run_appends_and_replaces_repeated_steps(tmp_path):
    for session, steps in enumerate((range(10), range(8, 15))):
        with Recorder(tmp_path, rank=0) as rec:
            for step in steps:
                rec.log({"loss": float(session)}, step=step)
    segments = sorted(p.name for p in tmp_path.glob("scalars-*"))
    assert segments == ["scalars-00000000.pickle", "scalars-00000001.pickle"]
    history, _, update = read_store(tmp_path)
    steps, _, _, values = history.series(("train", "loss"))
    assert steps == list(range(15)) and values == [0.0] * 8 + [1.0] * 7
    first, second = update.meta["sessions"]
    # The run started once; its status says when the session that wrote it started.
    assert update.status["start_time"] == update.meta["start_time"] == first["start_time"]
    assert update.status["session_start"] == second["start_time"] > first["start_time"]


def test_the_run_is_named_after_its_folder_unless_a_name_is_given(tmp_path):
    with Recorder(tmp_path / "version_0" / "pickle"):
        pass
    with Recorder(tmp_path / "version_1" / "pickle", name="lightning_logs/version_1"):
        pass
    assert read_store(tmp_path / "version_0" / "pickle")[2].meta["name"] == "version_0"
    assert read_store(tmp_path / "version_1" / "pickle")[2].meta["name"] == (
        "lightning_logs/version_1"
    )


def test_unwritable_store_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match=r"can not write the snapshot store .*file/run/pickle"):
        Recorder(blocker / "run" / "pickle", rank=0)


def test_options_set_after_opening_replace_the_stored_ones_redacted(tmp_path):
    sent = []
    with Recorder(tmp_path, options={"lr": 0.1}, on_file=lambda p, closed: sent.append(p)) as rec:
        rec.set_options({"lr": 0.2, "api_key": "PW-canary"})
    update = read_store(tmp_path)[2]
    assert update.meta["options"] == {"lr": 0.2, "api_key": REDACTED}
    assert update.status["options"] == update.meta["options"]  # repeated, redacted alike
    assert sent.count(tmp_path / "meta.pickle") == 2  # at open, and after the change


def test_status_repeats_the_runs_name_and_options_so_a_listing_reads_one_document(tmp_path):
    store = tmp_path / "lightning_logs" / "version_3" / "pickle"
    with Recorder(store, options={"lr": 0.1, "token": "PW-canary"}, name="lightning_logs/3"):
        pass
    update = read_store(store)[2]
    assert update.status["name"] == update.meta["name"] == "lightning_logs/3"
    assert update.status["options"] == update.meta["options"] == {"lr": 0.1, "token": REDACTED}


@pytest.mark.parametrize("state", ["failed", "finished"])
def test_a_run_ending_on_a_disk_with_no_room_left_still_says_how_it_ended(small_disk, state):
    store = small_disk / "run" / "pickle"
    recorder = Recorder(store, rank=0, heartbeat_seconds=600.0)
    recorder.log({"loss": 1.0}, step=3)
    assert recorder.flush()
    fill_up(small_disk)  # not one page left: the status' temporary file can not be made
    recorder.close(state)
    _, reader, update = read_store(store)
    assert not reader.warnings, reader.warnings
    assert update.status["state"] == state and update.status["step"] == 3
    assert not (store / RESERVE_FILE).exists()  # given back once the run ended


def test_the_last_status_on_a_full_disk_drops_a_summary_too_big_for_the_reserve(small_disk, caplog):
    store = small_disk / "run" / "pickle"
    recorder = Recorder(store, rank=0, heartbeat_seconds=600.0)
    recorder.log({f"metric_{i:04d}": float(i) for i in range(1000)}, step=3)
    assert recorder.flush()
    fill_up(small_disk)
    recorder.close("finished")
    status = read_store(store)[2].status
    assert status["state"] == "finished" and status["step"] == 3
    assert "series" not in status  # ~80 kB: more than the 16 kB set aside
    assert "options" not in status and status["name"] == "run"  # meta keeps the options
    assert any("no room for the run summary" in r.getMessage() for r in caplog.records)
