"""trainer.training.config: one place for every option's default and check."""

from __future__ import annotations

import dataclasses
import math

import pytest

from trainer.command.recipe import RecipeConfig
from trainer.training.config import OptionError, RunConfig


def test_defaults_are_the_documented_ones():
    config = RunConfig()
    assert (config.batch_size, config.num_epochs, config.remote) == (32, 10, False)
    assert (config.display_server, config.display_port) == ("127.0.0.1", 8097)
    assert config.run_dir.as_posix() == "checkpoints/experiment"
    assert config.store_dir.as_posix() == "checkpoints/experiment/pickle"


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("batch_size", 0, ">= 1"),
        ("num_epochs", -1, ">= 1"),
        ("min_delta", math.nan, "finite"),
        ("display_port", 0, ">= 1"),
        ("amp", "fp8", "one of off, bf16, fp16"),
        ("mode", "up", "one of min, max"),
        ("name", "a/b", "plain directory name"),
        ("name", "..", "plain directory name"),
        ("gpu_ids", (-1, 0), "can not be mixed"),
        ("gpu_ids", (0, 0), "repeated"),
        ("batch_size", True, "must be a number"),
        ("batch_size", 2.5, "must be a whole number"),
        ("num_epochs", 2.0, "must be a whole number"),
        ("num_epochs", math.inf, "finite"),
        ("print_freq", math.nan, "finite"),
        ("save_latest_freq", 0.5, "must be a whole number"),
        ("seed", 1.5, "must be a whole number"),
        ("display_port", 70000, "1 to 65535"),
        ("display_server", "", "a host or http://host"),
        ("display_env", "run/1", "letters, digits"),
    ],
)
def test_a_bad_value_names_the_option_and_the_problem(field, value, problem):
    with pytest.raises(OptionError, match=problem) as err:
        RunConfig(**{field: value})
    assert err.value.name == field and str(err.value).startswith(f"{field}={value!r}")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("display_server", "http://alice:PW-canary@host:8097"),
        ("display_env", "env?token=PW-canary"),
    ],
)
def test_a_refused_secret_is_named_but_never_quoted(field, value):
    with pytest.raises(OptionError, match="VISDOM_PASSWORD|letters, digits") as err:
        RunConfig(**{field: value})
    assert err.value.name == field and "PW-canary" not in str(err.value)


@pytest.mark.parametrize("value", [0.0, -0.1, math.inf, math.nan])
def test_learning_rate_must_be_finite_and_positive(value):
    with pytest.raises(OptionError, match="finite number > 0"):
        RecipeConfig(lr=value)


def test_options_accept_the_seeds_spellings_and_refuse_unknown_ones():
    assert RunConfig.from_options({"n_epochs": 3}).num_epochs == 3
    assert RunConfig.from_options({"epochs": 4, "batch_size": 2}).num_epochs == 4
    assert RunConfig.from_options({"gpu_ids": [0, 1]}).gpu_ids == (0, 1)
    with pytest.raises(TypeError, match="unknown run option 'n_epoch'.*num_epochs"):
        RunConfig.from_options({"n_epoch": 3})
    with pytest.raises(TypeError, match="given twice"):
        RunConfig.from_options({"n_epochs": 3, "num_epochs": 4})


def test_from_options_keeps_a_base_config_and_checks_the_result():
    base = RunConfig(name="base", batch_size=8)
    assert RunConfig.from_options({"num_epochs": 2}, base=base) == dataclasses.replace(
        base, num_epochs=2
    )
    with pytest.raises(OptionError, match="batch_size"):
        RunConfig.from_options({"batch_size": 0}, base=base)


def test_config_is_frozen_and_its_options_are_plain():
    config = RunConfig(gpu_ids=(-1,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batch_size = 1  # type: ignore[misc]
    options = config.to_options()
    assert options["gpu_ids"] == (-1,) and options["num_epochs"] == 10


def test_lr_scaling_rules():
    assert RecipeConfig(lr=0.1, lr_scaling="linear").scaled_lr(4) == pytest.approx(0.4)
    assert RecipeConfig(lr=0.1, lr_scaling="sqrt").scaled_lr(4) == pytest.approx(0.2)
    assert RecipeConfig(lr=0.1).scaled_lr(4) == 0.1
