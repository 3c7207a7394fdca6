"""trainer.command.options: the command line generated from the config, with the seeds' spellings."""

from __future__ import annotations

import dataclasses

import pytest

from trainer.command import options
from trainer.command.options import parse_train_args
from trainer.command.recipe import RecipeConfig
from trainer.training.config import RunConfig, UsageError


def test_every_config_field_with_a_command_line_form_is_an_option():
    parser = options.train_parser()
    dests = {action.dest for action in parser._actions}
    for config in (RunConfig, RecipeConfig):
        for f in dataclasses.fields(config):
            if f.metadata.get("command_line", True):
                assert f.name in dests, f.name


def test_defaults_come_from_the_config():
    config, recipe = parse_train_args(["--dataroot", "d"])
    assert config == RunConfig() and recipe == RecipeConfig(dataroot="d")


def test_dashed_options_and_the_seeds_spellings_give_the_same_config():
    dashed = parse_train_args(
        [
            "--dataroot",
            "d",
            "--batch-size",
            "4",
            "--num-epochs",
            "3",
            "--checkpoints-dir",
            "c",
            "--gpu-ids",
            "-1",
            "--continue-train",
            "--remote-transfer-cmd",
            "m.f",
            "--lr-policy",
            "step",
        ]
    )
    seeds = parse_train_args(
        [
            "--dataroot",
            "d",
            "--batch_size",
            "4",
            "--n_epochs",
            "3",
            "--checkpoints_dir",
            "c",
            "--gpu_ids",
            "-1",
            "--continue_train",
            "--remote_transfer_cmd",
            "m.f",
            "--lr_policy",
            "step",
        ]
    )
    assert dashed == seeds
    assert parse_train_args(["--dataroot", "d", "--n-epochs", "5"])[0].num_epochs == 5
    assert parse_train_args(["--dataroot", "d", "--epochs", "6"])[0].num_epochs == 6


def test_help_shows_one_spelling_per_option_and_no_doubled_default():
    text = options.train_parser().format_help()
    assert "--batch-size" in text and "--batch_size" not in text and "--n_epochs" not in text
    assert "(default: None)" not in text
    assert "(default: as stored) (default" not in text


@pytest.mark.parametrize(
    "text, value",
    [("True", True), ("TRUE", True), ("false", False), ("0", False), ("yes", True), ("off", False)],
)
def test_remote_takes_booleans_in_any_case(text, value):
    assert parse_train_args(["--dataroot", "d", "--remote", text])[0].remote is value


def test_gpu_ids_repeat_and_default_to_auto():
    assert parse_train_args(["--dataroot", "d", "--gpu-ids", "0", "--gpu-ids", "1"])[0].gpu_ids == (
        0,
        1,
    )
    assert parse_train_args(["--dataroot", "d"])[0].gpu_ids is None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--batch-size", "0"], "--batch-size 0: must be a finite number >= 1"),
        (["--lr", "nan"], "--lr nan: must be a finite number > 0"),
        (["--lr", "inf"], "--lr inf: must be a finite number > 0"),
        (["--gpu-ids", "-1", "--gpu-ids", "0"], "--gpu-ids -1 0: -1 (CPU) can not be mixed"),
        (["--name", "a/b"], "--name a/b: must be a plain directory name"),
    ],
)
def test_a_bad_value_is_one_usage_error_in_the_option_spelling(argv, message):
    with pytest.raises(UsageError) as err:
        parse_train_args(["--dataroot", "d", *argv])
    assert str(err.value).startswith(message)


def test_a_value_of_the_wrong_type_is_argparses_one_line_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_train_args(["--dataroot", "d", "--batch-size", "four"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith("'four' is not an integer (see --help)")
