"""Many runs opened from the page in quick succession: each drawn once, none rebuilt."""

from __future__ import annotations

import logging

import pytest

from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.visdom_reading import CountingClient, following
from tests.fixtures.servers.waiting import wait_until

RUNS = 60


@pytest.mark.integration
def test_runs_opened_quickly_are_drawn_once_and_never_rebuilt(
    tmp_path, visdom_server, reader, run_name, caplog
):
    """Issue 48: opening runs 50 ms apart logged "visdom env ... is gone: rebuilding it" for
    half of them (a listing of the server's envs taken before a new env was drawn, in the
    same pass, was trusted for that env); with no restart, none may be rebuilt."""
    write_small_runs(tmp_path / run_name, RUNS, steps=3)
    caplog.set_level(logging.INFO, logger="visualizer")
    client = CountingClient(visdom_server.endpoint)
    with following(
        tmp_path / run_name, visdom_server.endpoint, client, env=run_name, compare=2
    ) as follower:
        wait_until(lambda: len(follower.known) == RUNS, timeout=60)
        opened = sorted(set(follower.known) - set(follower.feeds))
        waits = []
        for name in opened:  # what the runs table's link asks of the follower, one after another
            drawn = follower.want(name)
            assert drawn is not None
            waits.append(drawn)
            # Paced by the follower's own draws, as clicks land between its passes.
            wait_until(lambda: len(waits) < 4 or waits[-4].is_set(), timeout=60)
        assert all(drawn.wait(60) for drawn in waits)
        envs = set(reader.envs())
        assert {follower.env_of(name) for name in opened} <= envs
        # Idle passes check the envs again (every PROBE_INTERVAL): none is found gone.
        listings = client.routes["env_state"]
        wait_until(lambda: client.routes["env_state"] >= listings + 2, timeout=30)
    rebuilt = [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()]
    assert not rebuilt
