"""The follower of a directory of runs against a real visdom server: an env per run plus a
comparison, the page announced once known, and idle runs left alone."""

from __future__ import annotations

import time

from tests.fixtures.servers.visdom_reading import CountingClient, following, recorder
from tests.fixtures.servers.waiting import wait_until
from visualizer.panes.compare import CompareDisplay
from visualizer.panes.display import RunDisplay
from visualizer.panes.envdisplay import PROBE_INTERVAL
from visualizer.sources.runs import LocalRuns


def test_idle_runs_share_one_listing_of_the_envs(tmp_path, visdom_server, run_name):
    """Many finished runs: while idle, one env listing per probe interval, not one per run."""
    for i in range(6):
        with recorder(tmp_path / f"{run_name}-{i}" / "pickle") as rec:
            rec.log({"loss": 1.0}, step=0)
    client = CountingClient(visdom_server.endpoint)
    with following(tmp_path, visdom_server.endpoint, client=client, poll_interval=0.1) as follower:
        wait_until(
            lambda: len(follower.feeds) == 6 and all(f.replayed for f in follower.feeds.values())
        )
        time.sleep(1.0)  # the first syncs, and each env's first listing, are done
        client.routes.clear()
        time.sleep(3 * PROBE_INTERVAL)
    assert client.routes["win_exists"] == 0
    assert 1 <= client.routes["env_state"] <= 4  # once per interval, for all six runs


def test_idle_runs_are_not_laid_out_again(tmp_path, visdom_server, reader, run_name, monkeypatch):
    """Nothing new from the runs or the page: no full sync until a run logs again."""
    laid_out: list[str] = []
    run_windows, compare_windows = RunDisplay._windows, CompareDisplay._windows
    monkeypatch.setattr(
        RunDisplay,
        "_windows",
        staticmethod(lambda run: laid_out.append(run.name) or run_windows(run)),
    )
    monkeypatch.setattr(
        CompareDisplay,
        "_windows",
        lambda self, *args: laid_out.append("compare") or compare_windows(self, *args),
    )
    for name in ("a", "b"):
        with recorder(tmp_path / name / "pickle") as rec:
            rec.log({"loss": 1.0}, step=0)
    with following(tmp_path, visdom_server.endpoint, poll_interval=0.1, env=run_name):
        wait_until(lambda: reader.has_window(f"{run_name}_compare", "compare_train_loss"))
        time.sleep(0.5)
        laid_out.clear()
        time.sleep(1.5 * PROBE_INTERVAL)  # idle syncs, and at least one probe of each env
        assert laid_out == []
        with recorder(tmp_path / "a" / "pickle") as rec:
            rec.log({"loss": 2.0}, step=1)
        wait_until(
            lambda: reader.traces(f"{run_name}_compare", "compare_train_loss")["a"][0] == [0, 1]
        )
        # The comparison is drawn before the run's own env (what a person opens first, first):
        # wait for the run's layout too, then check the idle run was left alone.
        wait_until(lambda: "a" in laid_out)
        wait_until(lambda: reader.traces(f"{run_name}_a", "train")["loss"][0] == [0, 1])
        assert "compare" in laid_out and "b" not in laid_out


def test_many_runs_each_get_an_env_plus_a_comparison(tmp_path, visdom_server, reader, run_name):
    root = tmp_path / run_name
    for name, scale in (("a", 1.0), ("b", 2.0)):
        with recorder(root / name / "pickle") as rec:
            for step in range(20):
                rec.log({"loss": scale * step}, step=step)
    with following(root, visdom_server.endpoint, env=run_name):
        compare = f"{run_name}_compare"
        wait_until(lambda: set(reader.traces(compare, "compare_train_loss")) == {"a", "b"})
        # Each run's own env comes after the comparison (what a person opens first, first).
        wait_until(lambda: reader.has_window(f"{run_name}_b", "train"))
        assert reader.traces(f"{run_name}_a", "train")["loss"][1] == [float(s) for s in range(20)]
        assert reader.traces(f"{run_name}_b", "train")["loss"][1] == [2.0 * s for s in range(20)]
        with recorder(root / "c" / "pickle") as rec:  # a run that starts later is picked up
            rec.log({"loss": 7.0}, step=0)
        wait_until(lambda: set(reader.traces(compare, "compare_train_loss")) == {"a", "b", "c"})
        wait_until(lambda: reader.has_window(f"{run_name}_c", "train"))
        assert reader.traces(f"{run_name}_c", "train")["loss"] == ([0], [7.0])
    assert reader.traces(compare, "compare_train_loss")["b"] == (
        [*range(20)],
        [2.0 * s for s in range(20)],
    )


def test_the_page_is_announced_once_known_then_the_comparison(tmp_path, visdom_server, run_name):
    """Nothing while no store exists; the run's env once drawn; the comparison env with a second run."""
    root, pages = tmp_path / run_name, []
    with following(root, visdom_server.endpoint, on_page=pages.append) as follower:
        time.sleep(0.5)  # a few passes over a directory that does not exist yet
        assert pages == [] and follower.screen.page_env is None
        with recorder(root / "a" / "pickle") as rec:
            rec.log({"loss": 1.0}, step=0)
        wait_until(lambda: pages == ["a"])
        with recorder(root / "b" / "pickle") as rec:
            rec.log({"loss": 2.0}, step=0)
        wait_until(lambda: pages == ["a", f"{run_name}_compare"])


def test_a_slow_listing_of_the_root_is_made_rarely(tmp_path, visdom_server, run_name, monkeypatch):
    """Listing the root for new runs takes at most ``follower.DISCOVERY_SHARE`` of a core: one that takes
    50 ms (10,000 runs' folders) is made every 0.05 / DISCOVERY_SHARE s, not at every poll."""
    for name in ("a", "b"):
        with recorder(tmp_path / name / "pickle") as rec:
            rec.log({"loss": 1.0}, step=0)
    listings: list[float] = []
    found = LocalRuns.found

    def slow(self: LocalRuns) -> list:
        listings.append(time.monotonic())
        time.sleep(0.05)
        return found(self)

    monkeypatch.setattr(LocalRuns, "found", slow)
    options = {"poll_interval": 0.1, "use_watchdog": False, "env": run_name}
    with following(tmp_path, visdom_server.endpoint, **options) as follower:
        wait_until(lambda: len(follower.known) == 2)
        listed = len(listings)
        time.sleep(20 * 0.1)  # twenty polls: each would list the root without the share
        assert len(listings) - listed <= 1, listings
