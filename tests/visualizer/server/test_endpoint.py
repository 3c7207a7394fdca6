"""VisdomEndpoint: every spelling ``--server`` accepts, clear refusals, the login from the environment."""

from __future__ import annotations

import pytest

from visualizer.server.endpoint import DEFAULT_VISDOM_PORT, VisdomEndpoint


@pytest.mark.parametrize(
    "server, host, port, url",
    [
        ("127.0.0.1", "127.0.0.1", DEFAULT_VISDOM_PORT, "http://127.0.0.1:8097"),
        ("localhost", "localhost", DEFAULT_VISDOM_PORT, "http://localhost:8097"),
        ("http://gpu-node-7", "gpu-node-7", DEFAULT_VISDOM_PORT, "http://gpu-node-7:8097"),
        ("http://gpu-node-7:9000", "gpu-node-7", 9000, "http://gpu-node-7:9000"),
        (
            "http://visdom.example.org/",
            "visdom.example.org",
            DEFAULT_VISDOM_PORT,
            "http://visdom.example.org:8097",
        ),
        ("[::1]", "::1", DEFAULT_VISDOM_PORT, "http://[::1]:8097"),
        ("::1", "::1", DEFAULT_VISDOM_PORT, "http://[::1]:8097"),
        ("http://[::1]:8097", "::1", 8097, "http://[::1]:8097"),
        ("localhost:8098", "localhost", 8098, "http://localhost:8098"),
    ],
)
def test_accepted_spellings(server, host, port, url):
    endpoint = VisdomEndpoint.parse(server, environ={})
    assert (endpoint.host, endpoint.port, endpoint.url) == (host, port, url)


def test_port_option_and_url_port():
    assert VisdomEndpoint.parse("localhost", 9001, environ={}).port == 9001
    assert VisdomEndpoint.parse("http://localhost:9001", 9001, environ={}).port == 9001
    with pytest.raises(ValueError, match="names port 9001 but --port is 9002"):
        VisdomEndpoint.parse("http://localhost:9001", 9002, environ={})


@pytest.mark.parametrize(
    "server, message",
    [
        ("", "names no valid host"),
        ("http://", "names no valid host"),
        ("a host", "names no valid host"),
        ("https://visdom.example.org", "over http://"),
        ("http://visdom.example.org/visdom", "without a path"),
        ("http://user:secret@visdom.example.org", "VISDOM_USERNAME and VISDOM_PASSWORD"),
        ("http://localhost:99999", "not a valid URL"),
        ("http://[::1", "not a valid URL"),
        ("localhost:0", "outside 1-65535"),
    ],
)
def test_refused_spellings_say_why(server, message):
    with pytest.raises(ValueError, match=message):
        VisdomEndpoint.parse(server, environ={})


def test_login_comes_from_the_environment_and_is_not_printed():
    endpoint = VisdomEndpoint.parse("http://visdom.example.org", environ={
        "VISDOM_USERNAME": "alice", "VISDOM_PASSWORD": "s3cret"
    })  # fmt: skip
    assert (endpoint.username, endpoint.password) == ("alice", "s3cret")
    assert "s3cret" not in repr(endpoint)
    assert VisdomEndpoint.parse("localhost", environ={"VISDOM_USERNAME": ""}).username is None


def test_loopback():
    assert VisdomEndpoint("localhost").is_loopback and VisdomEndpoint("::1").is_loopback
    assert VisdomEndpoint("127.0.0.2").is_loopback
    assert (
        not VisdomEndpoint("0.0.0.0").is_loopback and not VisdomEndpoint("gpu-node-7").is_loopback
    )
