"""The listings that find a bucket's runs, paced past 1,000 runs: one request a discovery, and
walks through the folders and through every object a page a minute (SeaweedFS)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

from snapshot_store import Recorder
from tests.fixtures.runs.small_runs import write_small_runs
from tests.visualizer.sources.test_s3 import RequestLog, upload
from visualizer.sources import s3_runs
from visualizer.sources.catalog import Catalog
from visualizer.sources.s3 import make_read_client
from visualizer.sources.s3_runs import S3Runs

RUNS = 1005  # two pages of a delimited listing


def _sweep(bucket, extra: tuple[str, ...] = ()) -> None:
    """Runs ``run-0000`` to ``run-1004`` (and ``extra``) under ``sweep/``: a tiny status
    object each, which makes its folder exist and gives the object walk a version to read."""
    client = bucket.client()

    def put(name: str) -> None:
        client.put_object(Bucket=bucket.name, Key=f"sweep/{name}/pickle/status.pickle", Body=b"")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, [*(f"run-{i:04d}" for i in range(RUNS)), *extra]))


def _start_after(url: str) -> str | None:
    return parse_qs(urlsplit(url).query).get("start-after", [None])[0]


def _listed_then_one_named_before(bucket) -> tuple[S3Runs, RequestLog]:
    """The sweep listed whole once, then ``a-early`` put in (named before every run); the
    requests counted from there."""
    _sweep(bucket)
    client = bucket.client()
    requests = RequestLog(client)
    runs = S3Runs(bucket.uri("sweep/"), client)
    runs.found()
    _sweep(bucket, ("a-early",))
    requests.clear()
    return runs, requests


def test_past_1000_runs_a_discovery_is_one_request_after_the_last_run(s3_bucket):
    _sweep(s3_bucket)
    client = s3_bucket.client()
    requests = RequestLog(client)
    runs = S3Runs(s3_bucket.uri("sweep/"), client)
    assert len(runs.found()) == RUNS and requests.counts()["ListObjectsV2"] == 2
    _sweep(s3_bucket, ("run-9999", "a-early"))  # named later in order (a counter), and earlier
    requests.clear()
    assert [f.folder for f in runs.found()] == ["run-9999"]
    assert len(requests.urls) == 1 and _start_after(requests.urls[0]) == "sweep/run-1004/"
    assert [f.folder for f in runs.found()] == [] and len(requests.urls) == 2  # its minute to come


def test_the_folders_are_walked_a_page_at_a_time_and_find_a_run_named_before(
    s3_bucket, monkeypatch
):
    monkeypatch.setattr(s3_runs, "PAGE_GAP_S", 0.0)  # each discovery is a minute on
    runs, requests = _listed_then_one_named_before(s3_bucket)
    first = {f.folder for f in runs.found()}  # after the last run, and the walk's first page
    assert "a-early" in first and len(first) == 1000 and len(requests.urls) == 2
    assert _start_after(requests.urls[1]) is None
    second = {f.folder for f in runs.found()}  # from where the first page ended, to the end
    assert first | second == {"a-early", *(f"run-{i:04d}" for i in range(RUNS))}
    assert _start_after(requests.urls[3]) == max(f"sweep/{name}/" for name in first)
    runs.found()  # and the walk begins again
    assert len(requests.urls) == 6 and _start_after(requests.urls[5]) is None


def test_while_a_page_shows_the_runs_table_the_folders_are_walked_at_each_discovery(s3_bucket):
    runs, requests = _listed_then_one_named_before(s3_bucket)
    runs.watched = True  # the follower's word: a page shows the runs table
    assert "a-early" in {f.folder for f in runs.found()} and len(requests.urls) == 2
    runs.found()  # the walk's second page at once
    assert len(requests.urls) == 4 and _start_after(requests.urls[3]) is not None
    runs.watched = False  # the page closed: a page a minute again
    runs.found()
    assert len(requests.urls) == 5


def test_every_object_is_walked_a_page_a_minute_for_status_versions(s3_bucket, monkeypatch):
    _sweep(s3_bucket)
    client = s3_bucket.client()
    requests = RequestLog(client)
    runs = S3Runs(s3_bucket.uri("sweep/"), client)
    assert len(runs.status_page() or {}) == 1000
    assert runs.status_page() is None and len(requests.urls) == 1  # its minute to come
    monkeypatch.setattr(s3_runs, "PAGE_GAP_S", 0.0)  # each call is a minute on
    runs = S3Runs(s3_bucket.uri("sweep/"), client)
    assert len(runs.status_page() or {}) == 1000
    assert len(runs.status_page() or {}) == RUNS - 1000
    assert len(runs.status_page() or {}) == 1000  # the walk began again
    whole = runs.status_versions()
    assert len(whole) == RUNS and all(v.endswith(":0") for v in whole.values())


def test_a_finished_run_resumed_in_a_bucket_is_read_again_when_the_walk_reaches_it(
    tmp_path, s3_bucket, monkeypatch
):
    monkeypatch.setattr(s3_runs, "PAGE_GAP_S", 0.0)
    names = write_small_runs(tmp_path, 3)
    for name in names:
        upload(s3_bucket, tmp_path / name / "pickle", f"sweep/{name}/pickle/")
    catalog = Catalog(S3Runs(s3_bucket.uri("sweep/"), make_read_client()), 0.05, 60.0, few=0)
    try:
        catalog.scan()
        while not catalog.complete:
            catalog.collect(wait=5.0)
        assert all(entry.summary.ended for entry in catalog.entries.values())
        catalog.recheck(0.0, following=set())  # the walk's page: each status' version noted
        assert not any(entry.reading for entry in catalog.entries.values())
        with Recorder(tmp_path / names[1] / "pickle", flush_interval=0.05) as rec:
            rec.log({"loss": 0.5}, step=100)  # --continue-train: the run runs again
            rec.flush()
            upload(s3_bucket, tmp_path / names[1] / "pickle", f"sweep/{names[1]}/pickle/")
            catalog.recheck(0.0, following=set())
            reading = [e.found.folder for e in catalog.entries.values() if e.reading]
            assert reading == [names[1]]
            while any(entry.reading for entry in catalog.entries.values()):
                catalog.collect(wait=5.0)
        entry = next(e for e in catalog.entries.values() if e.found.folder == names[1])
        assert entry.summary.state == "running"
    finally:
        catalog.close()
