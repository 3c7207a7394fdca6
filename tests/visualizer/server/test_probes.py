"""Probes: visdom is told apart from other HTTP servers and from nothing at all."""

from __future__ import annotations

import pytest

from tests.fixtures.servers.net import free_port
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import visdom_answers


@pytest.mark.integration
def test_plain_http_server_is_not_taken_for_visdom(plain_http: VisdomEndpoint) -> None:
    assert not visdom_answers(plain_http)


def test_nothing_listening_means_no_visdom() -> None:
    assert not visdom_answers(VisdomEndpoint(port=free_port()))
