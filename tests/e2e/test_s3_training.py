"""Issue 5 end to end: real torchrun training runs uploading through ``transfer_plugins.s3``.

Every run here is ``torchrun --nproc-per-node=2 -m trainer train`` on the CPU (gloo)
with ``--remote True --remote-transfer-cmd transfer_plugins.s3.save_to_s3`` and
``TRANSFER_S3_URI=s3://<bucket>/<prefix>``, against a SeaweedFS server with
authentication on (``tests/fixtures/s3.py``). The checks:

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
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.seaweed import CONFLICTING_ENV
from tests.fixtures.training import clean_env, train_args

REPO = Path(__file__).resolve().parents[2]
SPEC = "transfer_plugins.s3.save_to_s3"
PREFIX = "runs/team-a"
NAME = "exp"

# The runner retries a failing file with exponential backoff from 0.5 s, so within an
# outage of well under a minute no file may reach its 10th attempt (that would take
# over 4 minutes), however often the recorder re-submits it (the active segment is
# re-submitted after every write). The runner's recovery line says the most attempts.
MAX_ATTEMPTS_IN_OUTAGE = 9
ATTEMPTS = re.compile(r"at most (\d+) attempts per file")

SYNC_HINT = re.compile(
    r"run: python -m trainer sync (?P<run_dir>\S+) --remote-transfer-cmd (?P<spec>\S+)"
)


# --- helpers ---------------------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    """A clean launcher environment (AWS_* already pointing at the test server)."""
    env = clean_env(
        AWS_EC2_METADATA_DISABLED="true",  # no instance-metadata probe
        PYTHONUNBUFFERED="1",
        **extra,
    )
    for name in CONFLICTING_ENV:
        if name not in extra:
            env.pop(name, None)
    return env


def _train_args(dataroot: Path, checkpoints: Path, *extra: str) -> list[str]:
    # The trainer tests' fast options, with images every 50 steps as the CLI's default.
    return train_args(
        dataroot,
        checkpoints,
        NAME,
        "--remote-transfer-cmd",
        SPEC,
        "--batch-size",
        "4",
        "--display-freq",
        "50",
        *extra,
    )


def _torchrun(*train_args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "trainer",
        "train",
        *train_args,
    ]


class Training:
    """A torchrun training run in the background, output to files, killed on exit if still alive."""

    def __init__(self, cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.out = cwd / "train.out"
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.running(), f"training ended before {what}:\n{self.output()[-4000:]}"
            assert time.monotonic() < deadline, (
                f"no {what} after {timeout:.0f}s:\n{self.output()[-4000:]}"
            )
            time.sleep(0.05)

    def finish(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"training still running after {timeout:.0f}s:\n{self.output()[-4000:]}"
            ) from None

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def kill(self) -> None:
        if self.running():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def __enter__(self) -> Training:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()


def _run_tree(run_dir: Path) -> dict[str, bytes]:
    """Every file of the run (relative POSIX path -> bytes), without temp files starting with '.'."""
    return {
        p.relative_to(run_dir).as_posix(): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def _bucket_tree(bucket, prefix: str) -> dict[str, bytes]:
    """Every object under ``prefix`` (key without the prefix -> bytes)."""
    return {key[len(prefix) :]: bucket.read(key) for key in bucket.keys() if key.startswith(prefix)}


def _differences(bucket, run_dir: Path) -> tuple[set[str], set[str], set[str]]:
    """(missing from the bucket, extra in the bucket, different bytes) for the run's files."""
    local = _run_tree(run_dir)
    remote = _bucket_tree(bucket, f"{PREFIX}/{run_dir.name}/")
    differ = {k for k in local.keys() & remote.keys() if local[k] != remote[k]}
    return set(local) - set(remote), set(remote) - set(local), differ


def _assert_bucket_equals_run(bucket, run_dir: Path) -> None:
    """Assert the bucket mirrors the run dir byte for byte, and holds nothing else."""
    stray = [k for k in bucket.keys() if not k.startswith(f"{PREFIX}/{run_dir.name}/")]
    assert not stray, f"objects outside {PREFIX}/{run_dir.name}/ (preflight probes?): {stray}"
    missing, extra, differ = _differences(bucket, run_dir)
    local = _run_tree(run_dir)
    sizes = {k: len(v) for k, v in local.items()}
    assert not differ, (
        f"objects with other bytes than the run dir: {sorted(differ)} (local sizes {sizes})"
    )
    assert not extra, f"objects with no file in the run dir: {sorted(extra)}"
    assert not missing, f"files never uploaded: {sorted(missing)}"
    assert {
        "latest.pth",
        "loss_log.txt",
        "pickle/meta.pickle",
        "pickle/status.pickle",
        "pickle/scalars-00000000.pickle",
    } <= set(local), sorted(local)


def _sync(run_dir: str, spec: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer",
            "sync",
            run_dir,
            "--remote-transfer-cmd",
            spec,
            "--timeout",
            "60",
        ],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- fixtures --------------------------------------------------------------------------------


def _make_dataset(root: Path, train_per_class: int) -> Path:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer",
            "make-dataset",
            str(root),
            "--classes",
            "3",
            "--train-per-class",
            str(train_per_class),
            "--val-per-class",
            "4",
            "--image-size",
            "16",
            "--seed",
            "1",
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """48 training images: 6 steps per epoch with 2 processes x batch 4 (well under a second)."""
    return _make_dataset(tmp_path_factory.mktemp("data") / "tiny", 16)


@pytest.fixture(scope="module")
def small_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 training images: 38 steps per epoch, roughly half a second per epoch here."""
    return _make_dataset(tmp_path_factory.mktemp("data") / "small", 100)


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
    args = _train_args(
        tiny_data, checkpoints, "--n-epochs", "3", "--save-epoch-freq", "1", "--display-freq", "2"
    )
    proc = subprocess.run(
        _torchrun(*args), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=180
    )

    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "S3 transfer ready" in proc.stderr
    assert "not transferred" not in proc.stderr, proc.stderr[-4000:]
    run_dir = checkpoints / NAME
    assert {"epoch_1.pth", "epoch_3.pth", "best.pth", "pickle/images-00000000.pickle"} <= set(
        _run_tree(run_dir)
    )
    _assert_bucket_equals_run(s3_bucket, run_dir)


def test_s3_outage_mid_run_training_finishes_and_the_bucket_catches_up(
    private_s3_server, private_s3_bucket, s3_uri, small_data, tmp_path
):
    """The server goes away right after training starts and is back a few seconds later."""
    s3_uri(private_s3_bucket)
    checkpoints = tmp_path / "checkpoints"
    run_dir = checkpoints / NAME
    args = _train_args(
        small_data,
        checkpoints,
        "--n-epochs",
        "15",
        "--save-epoch-freq",
        "5",
        "--display-freq",
        "20",
    )
    with Training(_torchrun(*args), tmp_path, _env()) as training:
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
        proc = _sync(hint["run_dir"], hint["spec"], tmp_path)
        assert proc.returncode == 0, proc.stderr[-4000:]
    assert outage < 30, outage
    attempts = [int(n) for n in ATTEMPTS.findall(output)]
    assert attempts or hint, output[-4000:]
    assert max(attempts, default=0) <= MAX_ATTEMPTS_IN_OUTAGE, (
        f"retried without backoff during a {outage:.0f} s outage: {attempts}"
    )
    _assert_bucket_equals_run(private_s3_bucket, run_dir)


def test_run_ending_during_an_outage_lists_the_sync_command_that_completes_the_bucket(
    private_s3_server, private_s3_bucket, s3_uri, small_data, tmp_path
):
    """Server down from the start of training until after the trainer exited (~60 s drain)."""
    s3_uri(private_s3_bucket)
    checkpoints = tmp_path / "checkpoints"
    run_dir = checkpoints / NAME
    args = _train_args(small_data, checkpoints, "--n-epochs", "4", "--display-freq", "0")
    with Training(_torchrun(*args), tmp_path, _env()) as training:
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
    missing, _, _ = _differences(private_s3_bucket, run_dir)
    assert "latest.pth" in missing and "pickle/status.pickle" in missing
    proc = _sync(hint["run_dir"], hint["spec"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    _assert_bucket_equals_run(private_s3_bucket, run_dir)


# --- one clear error at start-up -----------------------------------------------------------------


def _assert_no_training_output(run_dir: Path) -> None:
    written = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    assert not [p for p in written if p.endswith(".pth")], written
    assert not (run_dir / "pickle").exists() or not [
        p for p in written if p.startswith("pickle/")
    ], written


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
        [
            sys.executable,
            "-m",
            "trainer",
            "train",
            *_train_args(tiny_data, checkpoints, "--n-epochs", "1"),
        ],
        cwd=tmp_path,
        env=_env(**extra),
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
    _assert_no_training_output(checkpoints / NAME)
    assert s3_bucket.keys() == []


def test_wrong_credentials_stop_a_torchrun_job_before_training(
    s3_bucket, s3_uri, tiny_data, tmp_path
):
    """``torchrun --nproc-per-node 2 -m trainer train``, as docs/training.md shows: rank 0's check stops the job."""
    s3_uri(s3_bucket)
    checkpoints = tmp_path / "checkpoints"
    proc = subprocess.run(
        _torchrun(*_train_args(tiny_data, checkpoints, "--n-epochs", "1")),
        cwd=tmp_path,
        env=_env(AWS_ACCESS_KEY_ID="AKUNKNOWNKEY0000"),
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
    _assert_no_training_output(checkpoints / NAME)
    # No worker printed a traceback; torchrun itself ends with its ChildFailedError summary
    # (its own frames only), which no worker can prevent.
    frames = re.findall(r'File "([^"]+)"', proc.stderr)
    ours = [f for f in frames if f.startswith(str(REPO)) and "/.venv/" not in f]
    assert not ours, proc.stderr
    assert proc.stderr.count("Traceback") <= 1, proc.stderr
    assert s3_bucket.keys() == []
