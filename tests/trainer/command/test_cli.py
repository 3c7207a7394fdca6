"""trainer.command.cli: options, bad input (one line, non-zero exit, nothing started), and a full CLI run."""

from __future__ import annotations

import argparse
import subprocess

import pytest
import torch
import torch.distributed as dist

from run_core.launch_env import LaunchEnv
from run_core.run_lock import LOCK_NAME
from snapshot_store import read_store
from tests.fixtures.runs.training import clean_env, read_run, series, train_args, trainer_cmd
from tests.fixtures.servers.net import free_port
from trainer.command import cli, launch, options
from trainer.command.models import prediction_grid


def _main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exit_:  # argparse's own exit
        return int(exit_.code)


# --- options -------------------------------------------------------------------------------


def test_help_documents_every_train_option(capsys):
    assert _main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    parser = options.train_parser()
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:  # the seeds' spellings: accepted, not listed
            continue
        assert action.help, action.option_strings
        for option in action.option_strings:
            assert option in text
    for option in (
        "--dataroot",
        "--gpu-ids",
        "--remote",
        "--remote-transfer-cmd",
        "--lr-scaling",
        "--amp",
        "--patience",
        "--min-delta",
        "--lr-policy",
        "--continue-train",
        "--display-env",
        "--save-epoch-freq",
        "--print-freq",
        "--num-workers",
    ):
        assert option in text


@pytest.mark.integration
def test_top_level_help_lists_the_commands():
    result = subprocess.run(
        trainer_cmd(), env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    for command in ("train", "make-dataset", "launch", "sync"):
        assert command in result.stderr


def test_torchrun_command_for_one_node_and_for_several():
    one = launch.torchrun_command(2, ["--dataroot", "d"], master_port=1234)
    rdzv_id = next(a for a in one if a.startswith("--rdzv-id="))
    assert one[1:] == [
        "-m",
        "torch.distributed.run",
        "--nproc-per-node=2",
        "--max-restarts=0",
        "--nnodes=1",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=127.0.0.1:1234",  # loopback: nothing for other hosts to reach
        rdzv_id,
        "--local-addr=127.0.0.1",
        "-m",
        "trainer",
        "train",
        "--dataroot",
        "d",
    ]
    two = launch.torchrun_command(
        4, [], nnodes=2, node_rank=1, master_addr="n0", master_port=1234, max_restarts=3
    )
    assert {
        "--nnodes=2",
        "--node-rank=1",
        "--master-addr=n0",
        "--master-port=1234",
        "--max-restarts=3",
    } <= set(two) and "--standalone" not in two


@pytest.mark.integration
def test_sync_is_dispatched_to_trainer_sync(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr("trainer.training.sync.sync", lambda *args: seen.append(args) or [])
    assert cli.main(["sync", str(tmp_path), "--remote-transfer-cmd", "m.f"]) == 0
    assert seen == [(tmp_path, "m.f", 3600.0)]


@pytest.mark.integration
def test_make_dataset_command(tmp_path):
    out = tmp_path / "shapes"
    args = [
        "make-dataset",
        str(out),
        "--classes",
        "2",
        "--train-per-class",
        "3",
        "--val-per-class",
        "1",
        "--image-size",
        "12",
    ]
    result = subprocess.run(
        trainer_cmd(*args), env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 6 training and 2 validation images" in result.stdout
    assert len(list(out.rglob("*.png"))) == 8
    again = subprocess.run(
        trainer_cmd(*args), env=clean_env(), capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 2 and "--force" in again.stderr


# --- bad input --------------------------------------------------------------------------------


@pytest.fixture
def two_rank_env(monkeypatch):
    """Pretend to be rank 0 of 2 with nobody at MASTER_PORT: starting a group would hang."""
    for name, value in {
        "RANK": "0",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)


def _bad_input_cases(tmp_path, tiny_dataset):
    empty = tmp_path / "empty"
    empty.mkdir()
    no_images = tmp_path / "no_images"
    (no_images / "train" / "a").mkdir(parents=True)
    (no_images / "train" / "b").mkdir(parents=True)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    (tmp_path / "failing_hook.py").write_text(
        "def save(path):\n    pass\n\n"
        "def _check():\n    raise RuntimeError('bucket s3://nope does not exist')\n\n"
        "save.preflight = _check\n"
    )
    (tmp_path / "noarg_hook.py").write_text("def save():\n    pass\n")
    corrupt = tmp_path / "corrupt"
    for rel in ("train/a/x.png", "train/b/y.png"):
        (corrupt / rel).parent.mkdir(parents=True)
        (corrupt / rel).write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    data = str(tiny_dataset)
    cases = {
        "missing dataroot": (["--dataroot", str(tmp_path / "nope")], "no such directory"),
        "empty dataroot": (["--dataroot", str(empty)], "expected"),
        "no images": (["--dataroot", str(no_images)], "no images"),
        "zero batch size": (["--dataroot", data, "--batch-size", "0"], "--batch-size"),
        "bad boolean": (["--dataroot", data, "--remote", "maybe"], "not a boolean"),
        "unknown amp": (["--dataroot", data, "--amp", "fp8"], "invalid choice"),
        "unknown option": (["--dataroot", data, "--n-epoch", "3"], "unrecognized arguments"),
        "mixed gpu ids": (["--dataroot", data, "--gpu-ids", "-1", "--gpu-ids", "0"], "mixed"),
        "bad transfer spec": (
            ["--dataroot", data, "--remote-transfer-cmd", "nosuchmodule.save"],
            "no module 'nosuchmodule'",
        ),
        "hook taking no argument": (
            ["--dataroot", data, "--remote-transfer-cmd", "noarg_hook.save"],
            "noarg_hook.save() takes no positional argument",
        ),
        "unreadable images": (["--dataroot", str(corrupt)], "none of the 2 images"),
        "failing preflight": (
            ["--dataroot", data, "--remote-transfer-cmd", "failing_hook.save"],
            "bucket s3://nope does not exist",
        ),
        "unwritable checkpoints dir": (
            ["--dataroot", data, "--checkpoints-dir", str(a_file / "sub")],
            "can not write",
        ),
        "nothing to continue": (["--dataroot", data, "--continue-train"], "no checkpoint"),
        "bad name": (["--dataroot", data, "--name", "a/b"], "plain directory name"),
        "negative transfer wait": (
            ["--dataroot", data, "--remote-transfer-wait", "-1"],
            "--remote-transfer-wait",
        ),
    }
    if not torch.cuda.is_available():
        cases["absent gpu"] = (["--dataroot", data, "--gpu-ids", "0"], "no CUDA GPU")
        cases["fp16 on cpu"] = (
            ["--dataroot", data, "--gpu-ids", "-1", "--amp", "fp16"],
            "needs a GPU",
        )
    return cases


@pytest.mark.timeout(120)
def test_bad_input_is_one_line_and_a_non_zero_exit_before_any_process_group(
    tmp_path, tiny_dataset, two_rank_env, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # where --remote-transfer-cmd modules are looked up
    checkpoints = tmp_path / "checkpoints"
    for case, (args, message) in _bad_input_cases(tmp_path, tiny_dataset).items():
        defaults = (
            ["--checkpoints-dir", str(checkpoints)] if "--checkpoints-dir" not in args else []
        )
        code = _main(["train", *defaults, "--remote", "True", *args])
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2, case
        assert len(lines) == 1 and message in lines[0], (case, err)
        assert lines[0].startswith("trainer train: error: "), (case, err)
        assert not dist.is_initialized(), case
        assert not list(checkpoints.rglob("*.pth")) and not list(checkpoints.rglob("loss_log.txt"))


class _Writes:
    """A stderr that keeps each write it is given."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_an_error_line_is_one_write_so_two_ranks_lines_never_run_together(monkeypatch):
    """A job's ranks share stderr: with the text and its newline written apart, CI once read
    rank 1's line run into rank 0's ("...; stoppingtrainer train: error: ...")."""
    stderr = _Writes()
    monkeypatch.setattr("sys.stderr", stderr)
    assert _main(["train", "--dataroot", "/nonexistent/data"]) != 0
    [line] = stderr.writes
    assert line.startswith("trainer train: error: ") and line.endswith("\n")
    assert line.count("\n") == 1


@pytest.mark.integration
def test_the_real_command_exits_with_one_line(tmp_path):
    result = subprocess.run(
        trainer_cmd("train", "--dataroot", str(tmp_path / "missing")),
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"trainer train: error: --dataroot {tmp_path / 'missing'}: no such directory"
    ]


# --- a whole run through the CLI ----------------------------------------------------------------


def test_train_in_one_process_hands_every_file_to_the_transfer_hook(
    tiny_dataset, tmp_path, monkeypatch, capsys
):
    dest = tmp_path / "dest"
    dest.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(dest))
    checkpoints = tmp_path / "checkpoints"
    code = cli.main(
        [
            "train",
            *train_args(
                tiny_dataset,
                checkpoints,
                "cli",
                "--batch-size",
                "16",
                "--n-epochs",
                "2",
                "--save-epoch-freq",
                "1",
                "--display-freq",
                "2",
                "--remote-transfer-cmd",
                "transfer_plugins.local.copy_to",
            ),
        ]
    )
    assert code == 0
    run_dir = checkpoints / "cli"
    history, meta, status = read_run(run_dir)
    assert status["state"] == "finished" and meta["options"]["remote"] is True
    assert series(history, "train/loss")[0] == [1, 2, 3, 4, 5, 6]
    assert series(history, "val/loss")[0] == [3, 6]
    for name in ("latest.pth", "best.pth", "epoch_1.pth", "epoch_2.pth"):
        assert (dest / "cli" / name).read_bytes() == (run_dir / name).read_bytes()
    for path in (run_dir / "pickle").iterdir():
        if path.name != LOCK_NAME:  # the writer's lock is this host's, not the run's data
            assert (dest / "cli" / "pickle" / path.name).exists(), path.name
    log_text = (run_dir / "loss_log.txt").read_text()
    assert "effective batch size 16" in log_text and "3 steps per epoch" in log_text
    assert "one process on cpu" in log_text, "not '(none launch)'"
    err = capsys.readouterr().err
    assert "done: 2 epochs, 6 steps" in err
    assert f"watch it: python run_visualizer_local.py --pickle-dir {run_dir / 'pickle'}" in err
    state = torch.load(run_dir / "latest.pth", weights_only=True)
    assert state["options"]["batch_size"] == 16 and state["options"]["gpu_ids"] == [-1]
    # The grid is shown under a name that says what its green and red frames mean.
    _, _, update = read_store(run_dir / "pickle")
    assert {(g, n) for g, n, *_ in update.images} == {("images", prediction_grid.image_name)}


def test_lr_scaling_uses_the_number_of_processes(tiny_dataset, tmp_path, monkeypatch):
    class Stop(Exception):
        pass

    def fake_fit(model, criterion, optimizer, datasets, **kwargs):
        raise Stop(optimizer.param_groups[0]["lr"])

    monkeypatch.setattr("trainer.training.fit.fit", fake_fit)
    monkeypatch.setattr(
        "trainer.ranks.distributed.detect",
        lambda: LaunchEnv(rank=0, world_size=4, launcher="env", master_addr="x", master_port=1),
    )
    for rule, lr in (("none", 0.01), ("linear", 0.04), ("sqrt", 0.02)):
        with pytest.raises(Stop) as stop:
            cli.main(
                [
                    "train",
                    *train_args(tiny_dataset, tmp_path, "lr", "--lr", "0.01", "--lr-scaling", rule),
                ]
            )
        assert stop.value.args[0] == pytest.approx(lr)
