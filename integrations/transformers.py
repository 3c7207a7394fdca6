"""A Hugging Face ``TrainerCallback`` writing the snapshot store: ``callbacks=[MonitorCallback()]``.

The store is ``<output_dir>/pickle`` (the run's ``TrainingArguments`` are its
options); checkpoints the Trainer saves go to the transfer hook, with paths
relative to ``output_dir``'s parent as the trainer's are (``<run>/pickle/...``,
``<run>/checkpoint-500/...``). Only the world process zero writes.

Names from ``on_log`` map to groups as the Trainer's own TensorBoard callback
does: ``eval_*`` -> validation, ``test_*`` -> test, ``learning_rate`` -> lr and
everything else -> train under its own name (so the end-of-training
``train_loss`` average does not replace the last step's ``loss``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import transformers
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ._run import PREFIXES, MonitorRun, check_adapter, files_under

log = logging.getLogger(__name__)

SUPPORTED = ">=4.40,<6"
# "train_" stays in the name: the Trainer's final summary (train_loss, train_runtime).
HF_PREFIXES = {k: v for k, v in PREFIXES.items() if v != "train"}


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
            self, "transformers", transformers.__version__, SUPPORTED, remote_transfer_cmd
        )
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self.remote_transfer_cmd = remote_transfer_cmd
        self.run: MonitorRun | None = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Open the store with ``args.to_dict()`` as the run's options."""
        if state.is_world_process_zero and self.run is None:
            self._open(args)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Record ``logs`` at the global step, with the Trainer's fractional epoch."""
        if not state.is_world_process_zero or not logs:
            return
        run = self.run or self._open(args)  # evaluate() alone has no on_train_begin
        epoch = logs.get("epoch", state.epoch)
        if "epoch" in logs:
            logs = {k: v for k, v in logs.items() if k != "epoch"}
        run.log(logs, state.global_step, epoch=epoch)

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
        """Close the store (finished); a later ``train()`` or ``evaluate()`` opens a new session."""
        if self.run is not None:
            run, self.run = self.run, None
            run.close("finished")

    def _open(self, args: TrainingArguments) -> MonitorRun:
        output_dir = _output_dir(args)
        self.run = MonitorRun(
            self.store_dir or output_dir / "pickle",
            output_dir.parent,
            options=args.to_dict(),
            transfer_spec=self.remote_transfer_cmd,
            world_size=args.world_size,
            prefixes=HF_PREFIXES,
        )
        return self.run


def _output_dir(args: TrainingArguments) -> Path:
    return Path(args.output_dir or "trainer_output")  # the Trainer's own default
