"""The S3 source against a real S3 server (SeaweedFS): ranged GETs for new bytes, idle back-off."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from snapshot_store.read.store_reader import MAX_DOCUMENT_BYTES, READ_BYTES, StoreReader
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from visualizer.sources.s3 import S3Location, S3Source, make_read_client


class RequestLog:
    """Every HTTP request a boto3 client sends, seen through its event hooks."""

    def __init__(self, client) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.urls: list[str] = []  # of the same requests, in the same order
        client.meta.events.register("before-send.s3", self._record)

    def _record(self, request, event_name: str, **_) -> None:
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        self.requests.append((event_name.rsplit(".", 1)[-1], headers))
        self.urls.append(request.url)

    def counts(self) -> Counter:
        return Counter(op for op, _ in self.requests)

    def clear(self) -> None:
        self.requests.clear()
        self.urls.clear()


class CountingSource(S3Source):
    """An S3Source that remembers how many bytes each read returned."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.bytes_read: dict[str, int] = Counter()

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        data = super().read(name, offset, length)
        self.bytes_read[name] += len(data)
        return data


def upload(bucket, store: Path, prefix: str) -> None:
    """Copy the store to S3 as the transfer hook does: whole files, replaced as they grow."""
    client = bucket.client()
    for path in sorted(store.iterdir()):
        if not path.name.startswith("."):
            client.put_object(Bucket=bucket.name, Key=prefix + path.name, Body=path.read_bytes())


def test_location_parsing():
    loc = S3Location.parse("s3://bkt/some/prefix/exp1/pickle")
    assert (loc.bucket, loc.prefix, loc.run_name) == ("bkt", "some/prefix/exp1/pickle/", "exp1")
    assert S3Location.parse("s3://bkt/exp2/").run_name == "exp2"
    with pytest.raises(ValueError):
        S3Location.parse("/local/path")


def test_reader_gets_only_new_bytes_with_ranged_gets(tmp_path, s3_bucket):
    store, prefix = tmp_path / "exp" / "pickle", "runs/exp/pickle/"
    client = make_read_client()  # the standard chain: the fixture's AWS_* variables
    log = RequestLog(client)
    source = CountingSource(s3_bucket.uri(prefix), client)
    reader = StoreReader(source)
    rec = Recorder(store, flush_interval=0.05)
    try:
        for step in range(50):
            rec.log({"loss": float(step)}, step=step)
        rec.flush()
        upload(s3_bucket, store, prefix)
        first = reader.poll()
        assert first.points == 50 and first.meta is not None and first.status is not None
        assert log.counts()["ListObjectsV2"] == 1
        ranges = {h["Range"] for op, h in log.requests if op == "GetObject"}
        assert ranges == {f"bytes=0-{READ_BYTES - 1}", f"bytes=0-{MAX_DOCUMENT_BYTES - 1}"}, (
            "every GET is bounded: a page of a segment, or a document"
        )
        segment = store / "scalars-00000000.pickle"
        size_before = segment.stat().st_size

        log.clear()
        assert not reader.poll(), "nothing changed"
        assert log.counts() == Counter({"ListObjectsV2": 1}), "an idle poll is one LIST"

        for step in range(50, 60):
            rec.log({"loss": float(step)}, step=step)
        rec.flush()
        upload(s3_bucket, store, prefix)
        log.clear()
        second = reader.poll()
        assert second.points == 10
        ranged = [h["Range"] for op, h in log.requests if op == "GetObject" and "Range" in h]
        document = f"bytes=0-{MAX_DOCUMENT_BYTES - 1}"  # the rewritten status
        assert [r for r in ranged if r != document] == [
            f"bytes={size_before}-{size_before + READ_BYTES - 1}"
        ], "the grown segment is read from where the last poll stopped"
        assert source.bytes_read[segment.name] == segment.stat().st_size, (
            "each byte downloaded once"
        )
    finally:
        rec.close()
    assert [list(s[2]) for s in first.scalars + second.scalars] == [
        list(range(50)),
        list(range(50, 60)),
    ]


def test_missing_object_and_empty_prefix(s3_bucket):
    source = S3Source(s3_bucket.uri("nothing/here/pickle"), make_read_client())
    assert source.list() == {}
    with pytest.raises(FileNotFoundError):
        source.read("meta.pickle")


def test_follower_draws_an_s3_run_and_backs_off_while_idle(
    tmp_path, s3_bucket, visdom_server, reader, run_name
):
    store, prefix = tmp_path / run_name / "pickle", f"team/{run_name}/pickle/"
    with Recorder(store, flush_interval=0.05) as rec:
        for step in range(30):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
    upload(s3_bucket, store, prefix)
    client = make_read_client()
    log = RequestLog(client)
    with following(
        s3_bucket.uri(prefix),
        visdom_server.endpoint,
        poll_interval=0.05,
        max_idle_interval=0.4,
        s3_client=client,
    ):
        wait_until(lambda: reader.traces(run_name, "train")["loss"][0] == list(range(30)))
        time.sleep(0.5)
        log.clear()
        time.sleep(2.5)  # idle: polls spread out to 0.4 s instead of every 0.05 s
        idle = log.counts()
        assert idle["GetObject"] == 0, "an unchanged run downloads nothing"
        assert 2 <= idle["ListObjectsV2"] <= 8, idle  # 50 at the undamped rate

        with Recorder(store, flush_interval=0.05) as rec:  # the run resumes
            for step in range(30, 40):
                rec.log({"loss": 0.01}, step=step)
        upload(s3_bucket, store, prefix)
        wait_until(
            lambda: reader.traces(run_name, "train")["loss"][0] == list(range(40)), timeout=5
        )


def test_a_prefix_of_runs_gets_an_env_per_run_and_a_comparison(
    tmp_path, s3_bucket, visdom_server, reader, run_name
):
    for name, scale in (("a", 1.0), ("b", 3.0)):
        store = tmp_path / name / "pickle"
        with Recorder(store, flush_interval=0.05) as rec:
            for step in range(10):
                rec.log({"loss": scale * step}, step=step)
        upload(s3_bucket, store, f"{run_name}/{name}/pickle/")
    with following(
        s3_bucket.uri(f"{run_name}/"), visdom_server.endpoint, env=run_name, poll_interval=0.05
    ):
        wait_until(
            lambda: set(reader.traces(f"{run_name}_compare", "compare_train_loss")) == {"a", "b"}
        )
    assert reader.traces(f"{run_name}_b", "train")["loss"] == (
        [*range(10)],
        [3.0 * s for s in range(10)],
    )


# --- failures: one line naming the cause, an exit status, no traceback ----------------

ROOT = Path(__file__).resolve().parents[3]


def _s3_failure(case: str, bucket, env: dict[str, str]) -> tuple[str, tuple[str, ...], int]:
    """Spoil ``env`` (or the URL) as ``case`` says; the URL, what the message must say, the status."""
    url = bucket.uri("exp1/pickle")
    if case == "bad credentials":
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        return url, ("access denied", "AWS_ACCESS_KEY_ID"), ExitCode.USAGE
    if case == "missing bucket":
        missing = f"no-such-{uuid.uuid4().hex[:12]}"
        return (
            f"s3://{missing}/exp1/pickle",
            (f"bucket {missing!r} does not exist",),
            ExitCode.NO_DATA,
        )
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    return url, ("can not reach the S3 endpoint", "AWS_ENDPOINT_URL"), ExitCode.UNAVAILABLE


@pytest.mark.parametrize("command", ["export", "--once"])
@pytest.mark.parametrize("case", ["bad credentials", "missing bucket", "unreachable endpoint"])
def test_s3_failures_end_in_one_line_naming_the_cause(tmp_path, s3_bucket, case, command):
    store = tmp_path / "exp1" / "pickle"
    with Recorder(store, flush_interval=0.05) as rec:
        rec.log({"loss": 1.0}, step=0)
    upload(s3_bucket, store, "exp1/pickle/")
    env = dict(os.environ)
    url, says, status = _s3_failure(case, s3_bucket, env)
    args = (
        ["export", "--pickle-dir", url]
        if command == "export"
        else ["--pickle-dir", url, "--once", "--no-start-server", "--port", str(free_port())]
    )
    proc = subprocess.run(
        [sys.executable, "-m", "visualizer", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr and "store is empty" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "ERROR" in last and all(part in last for part in says), proc.stderr
    assert proc.stdout == ""


def test_a_prefix_of_more_than_1000_runs_is_listed_page_by_page(s3_bucket):
    """S3 lists at most 1,000 folders per request: every run past that is found too."""
    from concurrent.futures import ThreadPoolExecutor

    from visualizer.sources.s3_runs import S3Runs

    client = s3_bucket.client()
    names = [f"run-{i:04d}" for i in range(1005)]

    def put(name: str) -> None:  # a tiny object makes the run's folder exist
        client.put_object(Bucket=s3_bucket.name, Key=f"sweep/{name}/pickle/x", Body=b"")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, names))
    requests = RequestLog(client)
    runs = S3Runs(s3_bucket.uri("sweep/"), client)
    specs = runs.discover()
    assert [spec.name for spec in specs] == names  # no metadata: named after their folders
    assert requests.counts()["ListObjectsV2"] == 2
