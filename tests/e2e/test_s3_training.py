"""Issue 5 end to end: real torchrun training runs uploading through ``transfer_plugins.s3``.

Every run here is ``torchrun --nproc-per-node=2 -m trainer train`` on the CPU (gloo)
with ``--remote True --remote-transfer-cmd transfer_plugins.s3.save_to_s3`` and
``TRANSFER_S3_URI=s3://<bucket>/<prefix>``, against a SeaweedFS server with
authentication on (``tests/fixtures/servers/s3.py``). The checks:

* the bucket ends equal to the run dir, byte for byte: every file under
  ``<checkpoints_dir>/<name>/`` is the object ``<prefix>/<name>/<relpath>``;
* with the server stopped for a while mid-run, training finishes and the
  bucket still ends equal; when the run ends before the server is back, the
  files not sent are listed with the ``python -m trainer sync`` command, and
  that command completes the bucket;
* wrong credentials or a missing bucket stop the trainer at start-up with one
  clear error, before any checkpoint or store segment is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.s3_training import (
    NAME,
    PREFIX,
    SPEC,
    Training,
    assert_bucket_equals_run,
    assert_no_training_output,
    differences,
    make_dataset,
    run_tree,
    s3_env,
    s3_train_args,
    sync,
    torchrun_train,
)
from tests.fixtures.runs.training import trainer_cmd

REPO = Path(__file__).resolve().parents[2]

# The runner retries a failing file with exponential backoff (its defaults: from 0.5 s,
# at most 30 s apart), however often the recorder re-submits it (the active segment is
# re-submitted after every write). The runner's recovery line says the most attempts.
BACKOFF = (0.5, 30.0)
SETTLE_S = 10.0  # from the server's restart to the retry that succeeds, on a busy machine


def most_attempts(outage: float) -> int:
    """The attempts backoff allows a file while the server is down for `outage` seconds.

    Derived from the measured outage, not a fixed bound: stopping and restarting the
    server takes longer on a loaded CI machine, and more attempts then are no fault.
    """
    waited, attempts = 0.0, 1
    while True:
        delay = min(BACKOFF[1], BACKOFF[0] * 2 ** (attempts - 1))
        if waited + delay > outage + SETTLE_S:
            return attempts + 1  # the one after the server is back
        waited, attempts = waited + delay, attempts + 1


ATTEMPTS = re.compile(r"at most (\d+) attempts per file")

SYNC_HINT = re.compile(
    r"run: python -m trainer sync (?P<run_dir>\S+) --remote-transfer-cmd (?P<spec>\S+)"
)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """48 training images: 6 steps per epoch with 2 processes x batch 4 (well under a second)."""
    return make_dataset(tmp_path_factory.mktemp("data") / "tiny", 16)


@pytest.fixture(scope="module")
def small_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 training images: 38 steps per epoch, roughly half a second per epoch here."""
    return make_dataset(tmp_path_factory.mktemp("data") / "small", 100)


@pytest.fixture
def s3_uri(monkeypatch):
    """Point TRANSFER_S3_URI at PREFIX in a bucket; used with s3_bucket or private_s3_bucket."""

    def point(bucket) -> None:
        monkeypatch.setenv("TRANSFER_S3_URI", bucket.uri(PREFIX))

    return point


# --- the bucket mirrors the run ----------------------------------------------------------------


def test_torchrun_run_ends_with_the_bucket_equal_to_the_run_dir(
    s3_bucket, s3_uri, tiny_data, tmp_path
):
    s3_uri(s3_bucket)
    checkpoints = tmp_path / "checkpoints"
    # 3 epochs: latest/best rewritten and re-uploaded, epoch_N.pth, an images segment.
    args = s3_train_args(
        tiny_data, checkpoints, "--n-epochs", "3", "--save-epoch-freq", "1", "--display-freq", "2"
    )
    proc = subprocess.run(
        torchrun_train(*args),
        cwd=tmp_path,
        env=s3_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "S3 transfer ready" in proc.stderr
    assert "not transferred" not in proc.stderr, proc.stderr[-4000:]
    run_dir = checkpoints / NAME
    assert {"epoch_1.pth", "epoch_3.pth", "best.pth", "pickle/images-00000000.pickle"} <= set(
        run_tree(run_dir)
    )
    assert_bucket_equals_run(s3_bucket, run_dir)


def test_s3_outage_mid_run_training_finishes_and_the_bucket_catches_up(
    private_s3_server, private_s3_bucket, s3_uri, small_data, tmp_path
):
    """The server goes away right after training starts and is back a few seconds later."""
    s3_uri(private_s3_bucket)
    checkpoints = tmp_path / "checkpoints"
    run_dir = checkpoints / NAME
    args = s3_train_args(
        small_data,
        checkpoints,
        "--n-epochs",
        "15",
        "--save-epoch-freq",
        "5",
        "--display-freq",
        "20",
    )
    with Training(torchrun_train(*args), tmp_path, s3_env()) as training:
        training.wait_for(
            (run_dir / "pickle" / "scalars-00000000.pickle").exists, 180, "first store segment"
        )
        down = time.monotonic()
        private_s3_server.stop()
        time.sleep(3.0)
        private_s3_server.start()
        outage = time.monotonic() - down
        back_before_the_end = training.running()
        print(f"S3 down for {outage:.1f} s; back before training ended: {back_before_the_end}")
        code = training.finish(240)
        output = training.output()

    hint = SYNC_HINT.search(output)
    assert (code == 0) == (hint is None), output[-4000:]  # files left unsent: non-zero exit
    assert "done: 15 epochs" in output
    # The outage was real: uploads failed, said so once at once, and were retried.
    assert re.search(rf"transfer {re.escape(SPEC)} failed for \S+ \(attempt 1\)", output), output[
        -4000:
    ]
    if back_before_the_end:
        assert hint is None, output[-4000:]
    if hint is None:  # every file went through in the end: the recovery was said
        assert f"transfer {SPEC} works again" in output, output[-4000:]
    else:  # a fast machine finished training during the outage: recover with the listed command
        assert hint["spec"] == SPEC, output[-4000:]
        proc = sync(hint["run_dir"], hint["spec"], tmp_path)
        assert proc.returncode == 0, proc.stderr[-4000:]
    attempts = [int(n) for n in ATTEMPTS.findall(output)]
    assert attempts or hint, output[-4000:]
    assert max(attempts, default=0) <= most_attempts(outage), (
        f"retried without backoff during a {outage:.0f} s outage: {attempts}"
    )
    assert_bucket_equals_run(private_s3_bucket, run_dir)


def test_run_ending_during_an_outage_lists_the_sync_command_that_completes_the_bucket(
    private_s3_server, private_s3_bucket, s3_uri, small_data, tmp_path
):
    """Server down from the start of training until after the trainer exited (a 10 s drain)."""
    s3_uri(private_s3_bucket)
    checkpoints = tmp_path / "checkpoints"
    run_dir = checkpoints / NAME
    args = s3_train_args(
        small_data,
        checkpoints,
        "--n-epochs",
        "4",
        "--display-freq",
        "0",
        "--remote-transfer-wait",
        "10",
    )
    with Training(torchrun_train(*args), tmp_path, s3_env()) as training:
        # meta.pickle is written right after the preflight check passed.
        training.wait_for((run_dir / "pickle" / "meta.pickle").exists, 180, "store metadata")
        private_s3_server.stop()
        assert training.running(), "training ended before the server was down"
        code = training.finish(240)
        output = training.output()

    # Training finished; the files left unsent make the job's exit status non-zero.
    assert code != 0 and "done: 4 epochs" in output, output[-4000:]
    assert f"not uploaded: exit status {int(ExitCode.UPLOAD_INCOMPLETE)}" in output
    hint = SYNC_HINT.search(output)
    assert hint, output[-4000:]
    assert Path(hint["run_dir"]).resolve() == run_dir.resolve() and hint["spec"] == SPEC
    listed = output[output.index("were not transferred") : hint.start()]
    assert (
        str(run_dir / "latest.pth") in listed
        and str(run_dir / "pickle" / "status.pickle") in listed
    )

    private_s3_server.start()
    missing, _, _ = differences(private_s3_bucket, run_dir)
    assert "latest.pth" in missing and "pickle/status.pickle" in missing
    proc = sync(hint["run_dir"], hint["spec"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert_bucket_equals_run(private_s3_bucket, run_dir)


# --- one clear error at start-up -----------------------------------------------------------------


@pytest.mark.parametrize("fault", ["wrong secret key", "missing bucket"])
def test_bad_s3_settings_stop_the_trainer_at_start_up_with_one_clear_error(
    s3_bucket, s3_uri, tiny_data, tmp_path, fault
):
    s3_uri(s3_bucket)
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    if fault == "wrong secret key":
        extra, bucket = {"AWS_SECRET_ACCESS_KEY": "not-the-secret-key-0123456789"}, s3_bucket.name
        what_to_do = "check the credentials"
    else:
        bucket = f"{s3_bucket.name}-missing"
        extra, what_to_do = (
            {"TRANSFER_S3_URI": f"s3://{bucket}/{PREFIX}"},
            "the bucket does not exist",
        )
    checkpoints = tmp_path / "checkpoints"
    proc = subprocess.run(
        trainer_cmd("train", *s3_train_args(tiny_data, checkpoints, "--n-epochs", "1")),
        cwd=tmp_path,
        env=s3_env(**extra),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith("trainer train: error:"), errors
    assert f"S3 bucket {bucket!r}" in errors[0] and s3_bucket.server.endpoint_url in errors[0]
    assert what_to_do in errors[0], errors[0]
    assert secret not in proc.stderr + proc.stdout and "not-the-secret" not in proc.stderr
    assert_no_training_output(checkpoints / NAME)
    assert s3_bucket.keys() == []


def test_wrong_credentials_stop_a_torchrun_job_before_training(
    s3_bucket, s3_uri, tiny_data, tmp_path
):
    """``torchrun --nproc-per-node 2 -m trainer train``, as docs/training.md shows: rank 0's check stops the job."""
    s3_uri(s3_bucket)
    checkpoints = tmp_path / "checkpoints"
    proc = subprocess.run(
        torchrun_train(*s3_train_args(tiny_data, checkpoints, "--n-epochs", "1")),
        cwd=tmp_path,
        env=s3_env(AWS_ACCESS_KEY_ID="AKUNKNOWNKEY0000"),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert proc.returncode != 0, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("trainer train: error:")]
    assert len(errors) == 1, proc.stderr  # only rank 0 checks the destination
    assert f"S3 bucket {s3_bucket.name!r} at {s3_bucket.server.endpoint_url}" in errors[0]
    assert "check the credentials" in errors[0]
    assert " step " not in proc.stderr and "validation" not in proc.stderr, proc.stderr
    assert_no_training_output(checkpoints / NAME)
    # No worker printed a traceback; torchrun itself ends with its ChildFailedError summary
    # (its own frames only), which no worker can prevent.
    frames = re.findall(r'File "([^"]+)"', proc.stderr)
    ours = [f for f in frames if f.startswith(str(REPO)) and "/.venv/" not in f]
    assert not ours, proc.stderr
    assert proc.stderr.count("Traceback") <= 1, proc.stderr
    assert s3_bucket.keys() == []
