"""The one Host/Origin rule of the visualizer's servers (visdom's and the CSV downloads')."""

from __future__ import annotations

import pytest

from visualizer.origin import refusal


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8097", None),
        ("LOCALHOST:8097", "http://localhost:8097"),
        ("[::1]:8097", "http://[::1]:8097"),
        ("localhost", None),
        (None, None),  # HTTP/1.0 without a Host: taken as 127.0.0.1, as tornado takes it
    ],
)
def test_the_servers_own_requests_are_answered(host, origin):
    assert refusal(host, origin, loopback=True) is None


@pytest.mark.parametrize(
    ("host", "origin", "why"),
    [
        ("evil.example:8097", None, "its own address"),
        ("127.0.0.1.evil.example", None, "its own address"),
        ("127.0.0.1:8097", "http://evil.example", "cross-origin"),
        ("127.0.0.1:8097", "http://127.0.0.1:8098", "cross-origin"),
        ("127.0.0.1:8097", "null", "cross-origin"),
        ("127.0.0.1:8097", "http://[evil", "cross-origin"),  # no URL at all
    ],
)
def test_a_foreign_host_or_origin_is_refused_with_one_line(host, origin, why):
    assert why in (refusal(host, origin, loopback=True) or "")


def test_a_server_on_every_interface_answers_any_host_but_only_its_own_pages():
    assert refusal("trainbox.lan:8097", None, loopback=False) is None
    assert refusal("trainbox.lan:8097", "http://trainbox.lan:8097", loopback=False) is None
    assert refusal("trainbox.lan:8097", "http://evil.example", loopback=False) is not None
