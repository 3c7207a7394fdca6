"""One run of an S3 prefix denied (403 AccessDenied) while the others are followed.

A bucket policy may deny one run's prefix; the proxy in front of SeaweedFS answers 403
for that run's objects as such a policy would, while both runs go on appending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from snapshot_store.read.store_reader import StoreReader
from tests.fixtures.servers.visdom_reading import following, page_on
from tests.fixtures.servers.waiting import wait_until
from tests.visualizer.sources.test_s3 import upload
from visualizer import cli
from visualizer.__main__ import main as python_m_visualizer
from visualizer.sources.catalog import Catalog
from visualizer.sources.s3 import S3ReadError, S3Source, make_read_client
from visualizer.sources.s3_runs import S3Runs
from workloads.s3_proxy import CountingProxy

Append = Callable[[str, int], None]


@contextmanager
def appending(tmp_path: Path, bucket, prefix: str, names: tuple[str, ...]) -> Iterator[Append]:
    """Runs ``names`` under ``prefix``, their trainers still running: ``append(name, steps)``
    logs up to ``steps`` points of ``loss == step`` and uploads the run."""
    recorders = {name: Recorder(tmp_path / name / "pickle", flush_interval=0.05) for name in names}
    logged = dict.fromkeys(names, 0)

    def append(name: str, steps: int) -> None:
        rec = recorders[name]
        for step in range(logged[name], steps):
            rec.log({"loss": float(step)}, step=step)
        logged[name] = steps
        rec.flush()
        upload(bucket, tmp_path / name / "pickle", f"{prefix}{name}/pickle/")

    try:
        yield append
    finally:
        for rec in recorders.values():
            rec.close()


@contextmanager
def one_run_denied(
    tmp_path: Path, bucket, prefix: str, steps: int, monkeypatch, listings: bool = True
) -> Iterator[None]:
    """Runs ``open`` and ``denied`` under ``prefix``, ``steps`` points each, read through a
    proxy that answers 403 for ``denied`` (and, with ``listings``, for its listings)."""
    with (
        CountingProxy(bucket.server.endpoint_url) as proxy,
        appending(tmp_path, bucket, prefix, ("open", "denied")) as append,
    ):
        append("open", steps)
        append("denied", steps)
        proxy.deny(f"{bucket.name}/{prefix}denied/", listings=listings)
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        yield


@pytest.mark.parametrize("denied_from", ["the start", "after it was drawn"])
def test_a_denied_run_is_warned_of_once_the_others_go_on_and_it_recovers(
    tmp_path, s3_bucket, visdom_server, reader, run_name, caplog, monkeypatch, denied_from
):
    prefix = f"{run_name}/"
    denied = f"{s3_bucket.name}/{prefix}denied/"
    caplog.set_level(logging.INFO, logger="visualizer")

    def drawn(name: str, steps: int) -> bool:
        return reader.traces(f"{run_name}_{name}", "train")["loss"][0] == list(range(steps))

    def warnings() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.levelno >= logging.WARNING and "denied" in r.getMessage()
        ]

    with (
        CountingProxy(s3_bucket.server.endpoint_url) as proxy,
        appending(tmp_path, s3_bucket, prefix, ("open", "denied")) as append,
        # Each run's page open, as a person watching both: a running run of an S3 sweep no
        # page shows is read every 5 minutes (feeds.READ_GAPS).
        page_on(visdom_server.endpoint, f"{run_name}_open"),
        page_on(visdom_server.endpoint, f"{run_name}_denied"),
    ):
        append("open", 5)
        append("denied", 5)
        if denied_from == "the start":
            proxy.deny(denied)
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        with following(
            s3_bucket.uri(prefix),
            visdom_server.endpoint,
            env=run_name,
            poll_interval=0.05,
            max_idle_interval=0.2,
            s3_client=make_read_client(),
        ):
            wait_until(lambda: drawn("open", 5))
            if denied_from != "the start":
                wait_until(lambda: drawn("denied", 5))
                proxy.deny(denied)
            wait_until(warnings)
            for steps in (10, 15):  # both trainers go on; the open run is still followed
                append("open", steps)
                append("denied", steps)
                wait_until(lambda: drawn("open", steps))  # noqa: B023 (waited for here)
            told = warnings()
            assert len(told) == 1, told
            assert f"{prefix}denied/" in told[0] and "bucket policy" in told[0], told

            proxy.allow(denied)
            wait_until(lambda: drawn("denied", 15))
            append("denied", 20)
            wait_until(lambda: drawn("denied", 20))
            assert any("readable again" in r.getMessage() for r in caplog.records)
    assert len(warnings()) == 1, warnings()


def test_once_draws_the_other_runs_and_tells_of_the_denied_one(
    tmp_path, s3_bucket, visdom_server, reader, run_name, caplog, monkeypatch
):
    prefix = f"{run_name}/"
    with one_run_denied(tmp_path, s3_bucket, prefix, 5, monkeypatch):
        status = cli.main(
            ["--pickle-dir", s3_bucket.uri(prefix), "--once", "--no-start-server",
             "--port", str(visdom_server.endpoint.port), "--env", run_name]
        )  # fmt: skip
    assert status == 0, caplog.text
    assert reader.traces(f"{run_name}_open", "train")["loss"][0] == list(range(5))
    told = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(told) == 1 and f"{prefix}denied/" in told[0], told


def test_what_a_poll_read_before_a_denied_object_is_not_lost(tmp_path, s3_bucket, monkeypatch):
    """A poll that meets a 403 ends there; the documents and frames it read before, and the
    document it was denied, all come with the first poll once the object is readable."""
    store, prefix = tmp_path / "run" / "pickle", "team/run/pickle/"
    with Recorder(store, flush_interval=0.05) as rec:
        rec.log_record("text", "note", {"text": "hello"}, 0)  # extras-*: read before scalars-*
        for step in range(5):
            rec.log({"loss": float(step)}, step=step)
    upload(s3_bucket, store, prefix)
    with CountingProxy(s3_bucket.server.endpoint_url) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        reader = StoreReader(S3Source(s3_bucket.uri(prefix), make_read_client()))
        for denied in ("meta.pickle", "scalars-00000000.pickle"):
            proxy.deny(f"{s3_bucket.name}/{prefix}{denied}", listings=False)
            with pytest.raises(S3ReadError, match="access denied"):
                reader.poll()
            proxy.allow(f"{s3_bucket.name}/{prefix}{denied}")
        update = reader.poll()
    assert update.meta is not None and update.status is not None
    assert [extra[4] for extra in update.extras] == [{"text": "hello"}]
    assert [list(s[2]) for s in update.scalars] == [list(range(5))]


def test_a_denied_run_not_followed_is_asked_again_with_back_off(
    tmp_path, s3_bucket, caplog, monkeypatch
):
    """The catalog reads the runs not followed: a denied one is read again ever later (not
    at every pass of the loop), shown as unreadable, and read as it was once allowed."""
    caplog.set_level(logging.INFO, logger="visualizer")
    with (
        CountingProxy(s3_bucket.server.endpoint_url) as proxy,
        appending(tmp_path, s3_bucket, "sweep/", ("open", "denied")) as append,
    ):
        append("open", 5)
        append("denied", 5)
        proxy.deny(f"{s3_bucket.name}/sweep/denied/")
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        catalog = Catalog(S3Runs(s3_bucket.uri("sweep/"), make_read_client()), 0.05, 60.0, few=0)
        try:
            catalog.scan()
            while not catalog.complete:
                catalog.collect(wait=5.0)
            entry = next(e for e in catalog.entries.values() if e.found.folder == "denied")
            assert entry.summary is not None and entry.summary.state == "unreadable"
            catalog.recheck(entry.checked + 0.1, following=set())  # the loop's next pass
            assert not entry.reading, "asked again at once"
            proxy.allow(f"{s3_bucket.name}/sweep/denied/")
            catalog.recheck(entry.checked + 1.0, following=set())  # its back-off is over
            assert entry.reading
            wait_until(lambda: catalog.collect(wait=1.0) and entry.summary.state == "running")
        finally:
            catalog.close()
    told = [r.getMessage() for r in caplog.records if "sweep/denied/" in r.getMessage()]
    assert len(told) == 2 and "readable again" in told[1], told


@pytest.mark.parametrize("kind", ["scalars", "text", "runs"])
def test_export_writes_the_other_runs_and_names_the_denied_one(
    tmp_path, s3_bucket, run_name, caplog, capsys, monkeypatch, kind
):
    """One warning for the denied run, every row of the other; a run's records left out fail
    the export (the rows written stand), while --kind runs shows it as unreadable."""
    prefix = f"{run_name}/"
    with one_run_denied(tmp_path, s3_bucket, prefix, 3, monkeypatch, listings=False):
        status = python_m_visualizer(
            ["export", "--pickle-dir", s3_bucket.uri(prefix), "--kind", kind]
        )
    out = capsys.readouterr().out
    told = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(f"{prefix}denied/" in m and "bucket policy" in m for m in told), told
    if kind == "runs":
        assert status == ExitCode.OK, told
        rows = {row.split(",")[0]: row.split(",")[1] for row in out.splitlines()[1:]}
        assert rows == {"open": "running", "denied": "unreadable"}, out  # its trainer still runs
        return
    assert status == ExitCode.USAGE, told
    assert "1 of 2 runs left out of the export" in told[-1] and "denied" in told[-1], told
    assert ",denied," not in out and "denied" not in out.replace(run_name, "")
    if kind == "scalars":
        open_rows = [line for line in out.splitlines()[1:] if line.startswith("open,")]
        assert [row.split(",")[3] for row in open_rows] == ["0", "1", "2"], out
