"""A Hugging Face ``TrainerCallback`` writing the snapshot store: ``callbacks=[MonitorCallback()]``.

The store is ``<output_dir>/pickle`` (the run's ``TrainingArguments`` are its
options; ``run_name``, when set, its shown name); checkpoints the Trainer saves go to the transfer hook, with paths
relative to ``output_dir``'s parent as the trainer's are (``<run>/pickle/...``,
``<run>/checkpoint-500/...``). Only the world process zero writes.

What is stored is what the Trainer's own ``TensorBoardCallback`` writes: the
logs under its tags (``eval_loss`` -> ``eval/loss``, ``test_*`` -> ``test/*``,
everything else ``train/<name>``: ``train/loss``, ``train/learning_rate``,
``train/epoch``) at the global step, a ``str`` as text, and at the start the
``args`` and the model's ``model_config`` as JSON text. So ``report_to`` stays
as it is: this callback is the one line to add.

What W&B's callback keeps is kept too, where TensorBoard has no place for it: the
run's options are the model's config, the ``args`` and ``model/num_parameters``
(W&B's run config), and the end-of-training values (``train_loss``,
``train_runtime``...) are the run's summary, as W&B makes them, besides their tags.
"""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path
from typing import Any

import transformers
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.integrations.integration_utils import rewrite_logs
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from run_core.values import plain

from ._run import MonitorRun, check_adapter, files_under

log = logging.getLogger(__name__)

TRANSFORMERS_VERSIONS = ">=4.40,<6"
# The Trainer's end-of-training values, which W&B's callback makes summary-only
# (its ``single_value_scalars``).
END_OF_TRAINING = (
    "train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss",
    "total_flos",
)  # fmt: skip


class MonitorCallback(TrainerCallback):
    """Records the Trainer's logs in the snapshot store (world process zero only).

    Args:
        store_dir: where the store goes (default ``<output_dir>/pickle``).
        remote_transfer_cmd: ``module.func`` transfer hook (the trainer's
            ``--remote-transfer-cmd``): store files and saved checkpoints are handed to it.
    """

    def __init__(
        self, store_dir: str | Path | None = None, remote_transfer_cmd: str | None = None
    ) -> None:
        check_adapter(
            self,
            "transformers",
            transformers.__version__,
            TRANSFORMERS_VERSIONS,
            remote_transfer_cmd,
        )
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self.remote_transfer_cmd = remote_transfer_cmd
        self.run: MonitorRun | None = None
        self._summary: dict[str, float] = {}  # the end-of-training values, W&B's summary

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Open the store with ``args.to_dict()`` as the run's options; record ``args`` and
        the model's config as JSON text, as TensorBoard's callback does."""
        if not state.is_world_process_zero:
            return
        run = self.run or self._open(args)
        run.writer.add_text("args", args.to_json_string())
        model = kwargs.get("model")
        config = getattr(model, "config", None)
        if config is not None and hasattr(config, "to_json_string"):
            run.writer.add_text("model_config", config.to_json_string())
            run.set_options(_wandb_config(args, model, config))

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Record ``logs`` under TensorBoard's tags at the global step, with the Trainer's
        fractional epoch."""
        if not state.is_world_process_zero or not logs:
            return
        run = self.run or self._open(args)  # evaluate() alone has no on_train_begin
        run.log(rewrite_logs(logs), state.global_step, epoch=logs.get("epoch", state.epoch))
        ends = {k: v for k, v in logs.items() if k in END_OF_TRAINING and _number(v)}
        if ends:
            self._summary.update(ends)
            run.writer.recorder.set_status(summary=dict(self._summary))

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Hand the files of the checkpoint just saved to the transfer hook."""
        if not state.is_world_process_zero or self.remote_transfer_cmd is None:
            return
        run = self.run or self._open(args)
        folder = _output_dir(args) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        run.send(files_under(folder))

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Close the store (finished); a later ``train()`` or ``evaluate()`` opens a new session.

        The Trainer tells its callbacks of no exception: a run it raises out of (Ctrl-C
        included) is closed at exit, as the writer's :func:`~run_core.endings.ended_state` of it."""
        if self.run is not None:
            run, self.run = self.run, None
            run.close("finished")
        self._summary = {}

    def _open(self, args: TrainingArguments) -> MonitorRun:
        output_dir = _output_dir(args)
        self.run = MonitorRun(
            self.store_dir or output_dir / "pickle",
            output_dir.parent,
            options=args.to_dict(),
            transfer_spec=self.remote_transfer_cmd,
            world_size=args.world_size,
            name=args.run_name or None,  # the run's shown name, as W&B's callback names it
        )
        return self.run


def replace_wandb() -> None:
    """Make ``import wandb`` give :mod:`remote_train_monitor.wandb` (call it before the
    ``Trainer`` is made): ``report_to="wandb"`` then runs Hugging Face's own
    ``WandbCallback`` over it, so the run is named from ``run_name``, the end-of-training
    values are summary-only and the config holds the model's config and
    ``model/num_parameters``, as with W&B; offline, into the snapshot store."""
    from integrations import wandb
    from integrations.wandb_config import ConfigError

    config_util = types.ModuleType("wandb.sdk.lib.config_util")  # the one W&B module HF imports
    config_util.ConfigError = ConfigError  # type: ignore[attr-defined]
    sys.modules.update({"wandb": wandb, "wandb.sdk.lib.config_util": config_util})


def _wandb_config(args: TrainingArguments, model: Any, config: Any) -> dict[str, Any]:
    """W&B's run config for a Trainer's run: the model's config under the ``args``, and the
    model's parameter count (HF's ``WandbCallback.setup``)."""
    options = {**plain(config.to_dict()), **plain(args.to_dict())}
    if hasattr(model, "num_parameters"):
        options["model/num_parameters"] = int(model.num_parameters())
    return options


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _output_dir(args: TrainingArguments) -> Path:
    return Path(args.output_dir or "trainer_output")  # the Trainer's own default
