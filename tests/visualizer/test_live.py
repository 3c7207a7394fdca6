"""Live mode (trainer --remote False): start_live() follows the store from a background thread."""

from __future__ import annotations

from snapshot_store import Recorder
from tests.fixtures.net import free_port
from tests.visualizer.conftest import VisdomReader, wait_until
from visualizer.live import start_live
from visualizer.server import visdom_answers


def test_start_live_uses_a_running_server_and_draws_while_training(
    tmp_path, visdom_server, reader, run_name
):
    store = tmp_path / run_name / "pickle"
    live = start_live(str(store), port=visdom_server.port)
    try:
        assert live.server is None, "a visdom already answering is reused"
        with Recorder(store, flush_interval=0.05, handle_signals=False) as rec:
            for step in range(40):
                rec.log({"loss": float(step)}, step=step)
            rec.flush()
            wait_until(lambda: reader.traces(run_name, "train")["loss"][0] == list(range(40)))
    finally:
        live.stop()
    # The final status (written at close) is drawn by stop()'s last pass.
    assert "FINISHED" in reader.windows(run_name)["status"]["content"]


def test_start_live_starts_and_stops_its_own_server(tmp_path, run_name):
    store = tmp_path / run_name / "pickle"
    port = free_port()
    with Recorder(store, flush_interval=0.05, handle_signals=False) as rec:
        rec.log({"loss": 1.0}, step=0)
    live = start_live(str(store), port=port, env="live-env")
    try:
        assert live.server is not None and visdom_answers("127.0.0.1", port)
        wait_until(lambda: VisdomReader(port).traces("live-env", "train")["loss"] == ([0], [1.0]))
    finally:
        live.stop()
    assert not visdom_answers("127.0.0.1", port)
