"""The follower of one run against a real visdom server, fed by the project's Recorder.

Windows are read back through visdom's own client and compared with the
store's reference reader (``read_store``'s History: every value in logged order).
A directory of runs is in test_follower_runs.py.
"""

from __future__ import annotations

import logging
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from run_core import atomic
from snapshot_store.format import frames as fmt
from snapshot_store.read.store_reader import read_store
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.visdom_reading import CountingClient, VisdomReader, following, recorder
from tests.fixtures.servers.waiting import wait_until
from visualizer.follower import Follower
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.process import VisdomServer
from visualizer.visdom_client import VisdomClient


def expected(store: Path, group: str, name: str) -> tuple[list, list]:
    history, _, _ = read_store(store)
    steps, _, _, values = history.series((group, name))
    return list(steps), list(values)


def run_once(store: Path, endpoint: VisdomEndpoint, **kw) -> Follower:
    follower = Follower(str(store), VisdomClient(endpoint), **kw)
    follower.run_once()
    return follower


def test_replay_draws_every_window_of_a_run(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    with recorder(store, world_size=2) as rec:
        rec.set_status(total_steps=1000)
        for step in range(300):
            rec.log(
                {"loss": 1.0 / (step + 1), "aux": math.sin(step / 10)}, step=step, epoch=step / 100
            )
            rec.log({"lr": 0.1 * 0.99**step}, step=step, group="lr")
            rec.log({"samples_per_s": 1000.0 + step}, step=step, group="throughput")
            if step % 50 == 0:
                rec.log({"loss": 2.0 / (step + 1)}, step=step, group="val")
                rec.log({"accuracy": step / 300}, step=step, group="metric")
                rec.log({"b": float(step)}, step=step, group="Custom")
        rec.log_image("samples", np.random.rand(4, 3, 16, 16), step=299, dataformats="NCHW")

    client = CountingClient(visdom_server.endpoint)
    Follower(str(store), client).run_once()

    windows = reader.windows(run_name)
    assert {
        "train",
        "validation",
        "metrics",
        "lr",
        "throughput",
        "group_Custom",
        "status",
        "image_images_samples",
    } <= set(windows)
    assert windows["train"]["title"] == "train losses"
    for group, name, win in [
        ("train", "loss", "train"),
        ("train", "aux", "train"),
        ("val", "loss", "validation"),
        ("metric", "accuracy", "metrics"),
        ("lr", "lr", "lr"),
        ("throughput", "samples_per_s", "throughput"),
        ("Custom", "b", "group_Custom"),
    ]:
        assert reader.traces(run_name, win)[name] == expected(store, group, name), (group, name)
    assert windows["image_images_samples"]["content"][-1]["src"].startswith(
        "data:image/png;base64,"
    )
    status = windows["status"]["content"]
    assert "FINISHED" in status and "299 / 1000" in status and ">2<" in status  # world size 2
    # One message per window for the whole replay, not one per point (and the runs
    # table's two panes in the main env).
    assert client.posts <= len(windows) + 2


def test_follows_a_recording_run_with_appends(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    with recorder(store) as rec:
        rec.log({"loss": 10.0}, step=0)
        rec.flush()
        with following(store, visdom_server.endpoint) as follower:
            wait_until(lambda: reader.has_window(run_name, "train"))
            for step in range(1, 200):
                rec.log({"loss": 10.0 / (step + 1)}, step=step)
                time.sleep(0.005)
            rec.flush()
            wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 199)
            window = follower.screen.runs[run_name].plots["train"]
    assert reader.traces(run_name, "train")["loss"] == expected(store, "train", "loss")
    assert window.traces["loss"].shown == 200
    assert window.appends >= 5 and window.redraws <= 2, "new points are appended, not redrawn"


def test_restarted_visualizer_duplicates_nothing(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    with recorder(store) as rec:
        for step in range(100):
            rec.log({"loss": float(step)}, step=step)
    run_once(store, visdom_server.endpoint)
    with recorder(store) as rec:  # the run goes on while no visualizer watches
        for step in range(100, 150):
            rec.log({"loss": float(step)}, step=step)
    with following(store, visdom_server.endpoint):  # a new visualizer process, same env
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 149)
    steps, values = reader.traces(run_name, "train")["loss"]
    assert steps == list(range(150)) and values == [float(s) for s in range(150)]


def test_resumed_run_replaces_rewritten_steps(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    with recorder(store) as rec:
        for step in range(100):
            rec.log({"loss": 1.0}, step=step)
    with following(store, visdom_server.endpoint):
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 99)
        # A resumed trainer restarts from its step-60 checkpoint and logs 60.. again.
        with recorder(store) as rec:
            for step in range(60, 120):
                rec.log({"loss": 2.0}, step=step)
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 119)
    steps, values = reader.traces(run_name, "train")["loss"]
    assert steps == list(range(120)), "each step once: the rewritten ones replaced, not duplicated"
    assert values == [1.0] * 60 + [2.0] * 60
    assert (steps, values) == expected(store, "train", "loss")


def test_decimation_keeps_envelope_and_last_point_while_following(
    tmp_path, visdom_server, reader, run_name
):
    store = tmp_path / run_name / "pickle"
    rng = np.random.default_rng(0)
    values = rng.normal(size=20_000)
    values[7_777], values[13_131] = 40.0, -40.0
    with recorder(store) as rec:
        for step, value in enumerate(values):
            rec.log({"loss": float(value)}, step=step)
    with following(store, visdom_server.endpoint, max_points=500):
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 19_999)
        steps, shown = reader.traces(run_name, "train")["loss"]
        assert len(steps) <= 500 and len(set(steps)) == len(steps)
        assert max(shown) == 40.0 and min(shown) == -40.0 and shown[-1] == values[-1]
        with recorder(store) as rec:  # keep logging: appends, then another thinning
            for step in range(20_000, 20_400):
                rec.log({"loss": 100.0 if step == 20_100 else 0.5}, step=step)
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 20_399)
    steps, shown = reader.traces(run_name, "train")["loss"]
    assert len(steps) <= 500 and steps == sorted(set(steps))
    assert max(shown) == 100.0 and min(shown) == -40.0 and shown[-1] == 0.5


@pytest.mark.integration
def test_visdom_server_restart_rebuilds_windows(tmp_path, run_name):
    store = tmp_path / run_name / "pickle"
    endpoint = VisdomEndpoint("127.0.0.1", free_port())
    server = VisdomServer(endpoint, env_path=tmp_path / "envs", log_path=tmp_path / "visdom.log")
    server.start()
    try:
        reader = VisdomReader(endpoint)
        with recorder(store) as rec:
            for step in range(50):
                rec.log({"loss": float(step)}, step=step)
        with following(store, endpoint, poll_interval=0.1):
            wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 49)
            server.stop()
            with recorder(store) as rec:  # logged while visdom is down
                for step in range(50, 80):
                    rec.log({"loss": float(step)}, step=step)
            time.sleep(0.5)
            server.start()
            wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 79, timeout=30)
            with recorder(store) as rec:
                for step in range(80, 90):
                    rec.log({"loss": float(step)}, step=step)
            wait_until(lambda: reader.traces(run_name, "train")["loss"][0][-1] == 89)
            steps, values = reader.traces(run_name, "train")["loss"]
            assert steps == list(range(90)) and values == [float(s) for s in range(90)]
            # A server restarted while nothing is logged is noticed by the idle probe.
            server.stop()
            server.start()
            wait_until(lambda: reader.has_window(run_name, "train"), timeout=30)
            assert reader.traces(run_name, "train")["loss"][0] == list(range(90))
    finally:
        server.stop()


class _Boom:
    """Unpickling this would run os.system: the safe reader must refuse it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_hostile_and_corrupt_files_are_skipped_with_one_warning(
    tmp_path, visdom_server, reader, run_name, caplog
):
    import pickle

    store = tmp_path / run_name / "pickle"
    marker = tmp_path / "pwned"
    with recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
    hostile = store / fmt.segment_name(fmt.SCALARS, 7)
    hostile.write_bytes(fmt.encode_frame(pickle.dumps({"v": 1, "series": _Boom(marker)})))
    garbage = store / fmt.segment_name(fmt.IMAGES, 7)
    garbage.write_bytes(b"\x00garbage that is no frame at all" * 10)
    caplog.set_level(logging.WARNING)
    with following(store, visdom_server.endpoint):
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0] == [0])
        with recorder(store) as rec:  # the follower keeps going after the bad files
            rec.log({"loss": 2.0}, step=1)
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0] == [0, 1])
        time.sleep(0.5)  # more polls: still one warning per file
    assert not marker.exists(), "the hostile pickle ran code"
    for path in (hostile, garbage):
        warnings = [r for r in caplog.records if str(path) in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
        assert warnings[0].levelno == logging.WARNING


def test_status_panel_flags_a_silent_running_run(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    with recorder(store) as rec:
        rec.log({"loss": 1.0}, step=3)
    status = {
        "state": "running",
        "step": 3,
        "epoch": 0.5,
        "updated": time.time() - 120,
        "heartbeat_seconds": 5.0,
        "host": "gpu-node-7",
        "total_steps": 10,
    }
    atomic.write_atomic(store / fmt.STATUS_FILE, fmt.encode_document(status))
    run_once(store, visdom_server.endpoint)
    panel = reader.windows(run_name)["status"]["content"]
    assert "STALE" in panel and "gpu-node-7" in panel and "3 / 10" in panel


def malformed_status() -> dict:
    """A status whose numbers are NaN, infinite, a string or a list."""
    return {
        "state": "running",
        "step": [7],
        "total_steps": float("nan"),
        "epoch": float("inf"),
        "updated": "yesterday",
        "start_time": float("-inf"),
        "heartbeat_seconds": float("nan"),
        "host": "gpu-node-9",
    }


def test_followed_run_with_a_malformed_status_shows_dashes(
    tmp_path, visdom_server, reader, run_name
):
    store = tmp_path / run_name / "pickle"
    with recorder(store) as rec:
        rec.log({"loss": 1.0}, step=3)
    atomic.write_atomic(store / fmt.STATUS_FILE, fmt.encode_document(malformed_status()))
    with following(store, visdom_server.endpoint):
        panel = wait_until(lambda: reader.windows(run_name)["status"]["content"])
        assert "gpu-node-9" in panel
    assert reader.traces(run_name, "train")["loss"] == ([3], [1.0])
    rows = dict(re.findall(r"<td[^>]*>([^<]*)</td><td>([^<]*)</td>", panel))
    assert rows["step"] == rows["epoch"] == rows["last heartbeat"] == rows["ETA"] == "-", rows


def test_missing_directory_is_awaited_then_followed(
    tmp_path, visdom_server, reader, run_name, caplog
):
    store = tmp_path / "later" / run_name / "pickle"
    caplog.set_level(logging.INFO, logger="visualizer")
    with following(store, visdom_server.endpoint, poll_interval=0.1):
        wait_until(
            lambda: any(
                "waiting for" in r.getMessage() and str(store) in r.getMessage()
                for r in caplog.records
            )
        )
        with recorder(store) as rec:
            rec.log({"loss": 3.0}, step=0)
        wait_until(lambda: reader.traces(run_name, "train")["loss"] == ([0], [3.0]))


def test_polling_fallback_without_file_events(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    with recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
        rec.flush()
        with following(store, visdom_server.endpoint, use_watchdog=False, poll_interval=0.1):
            wait_until(lambda: reader.has_window(run_name, "train"))
            rec.log({"loss": 2.0}, step=1)
            rec.flush()
            wait_until(
                lambda: reader.traces(run_name, "train")["loss"] == ([0, 1], [1.0, 2.0]), timeout=5
            )
