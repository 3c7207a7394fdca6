"""The framework entry points of test_endings.py: a tiny run with real Lightning, the Hugging
Face Trainer and Accelerate, ending as the test's ``ending`` says.

Imported by those entry points when they run, not at the test module's top: the three
frameworks' imports take seconds, which every xdist worker would pay again collecting the
whole suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from lightning import LightningModule
from lightning import Trainer as LightningTrainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    TrainerCallback,
    TrainingArguments,
)
from transformers import Trainer as HFTrainer

from remote_train_monitor.accelerate import MonitorTracker
from remote_train_monitor.lightning import MonitorLogger
from remote_train_monitor.transformers import MonitorCallback

# The test's Ending: at_step(step) raises the ending at step 2, caught() ends the block on it.
Ending = Any


class _LightningModule(LightningModule):
    def __init__(self, ending: Ending) -> None:
        super().__init__()
        self.net, self.ending = nn.Linear(4, 1), ending

    def training_step(self, batch, batch_idx):
        self.ending.at_step(batch_idx + 1)
        loss = nn.functional.mse_loss(self.net(batch[0]), batch[1])
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def lightning(
    root: Path, ending: Ending, data: TensorDataset, steps: int
) -> tuple[Path, list[object]]:
    logger = MonitorLogger(root, name="lightning", version=0)
    fit = LightningTrainer(
        accelerator="cpu", max_steps=steps, log_every_n_steps=1, logger=logger,
        enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False,
    )  # fmt: skip
    with ending.caught():
        fit.fit(_LightningModule(ending), DataLoader(data, batch_size=4))
    return root / "lightning/version_0/pickle", []


class _HFEnding(TrainerCallback):
    def __init__(self, ending: Ending) -> None:
        self.ending = ending

    def on_step_end(self, args, state, control, **kwargs):
        self.ending.at_step(state.global_step)


def transformers(
    root: Path, ending: Ending, data: TensorDataset, steps: int
) -> tuple[Path, list[object]]:
    config = BertConfig(
        vocab_size=100, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
        intermediate_size=8, max_position_embeddings=16, num_labels=2,
    )  # fmt: skip
    ids = torch.randint(0, 100, (4 * steps, 8), generator=torch.Generator().manual_seed(0))
    rows = [{"input_ids": i, "labels": torch.tensor(0)} for i in ids]
    args = TrainingArguments(
        output_dir=str(root / "hf"), max_steps=steps, per_device_train_batch_size=4,
        logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, disable_tqdm=True,
    )  # fmt: skip
    callback = MonitorCallback()
    fit = HFTrainer(
        model=BertForSequenceClassification(config), args=args, train_dataset=rows,
        callbacks=[callback, _HFEnding(ending)],
    )  # fmt: skip
    with ending.caught():
        fit.train()
    return root / "hf/pickle", [] if callback.run is None else [callback.run.writer]


def accelerate(
    root: Path, ending: Ending, data: TensorDataset, steps: int
) -> tuple[Path, list[object]]:
    tracker = MonitorTracker("accelerate", root)
    accelerator = Accelerator(cpu=True, log_with=[tracker])
    accelerator.init_trackers("accelerate")
    model = nn.Linear(4, 1)
    model, optimizer = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
    x = data.tensors[0]
    with ending.caught():
        for step in range(1, steps + 1):
            loss = model(x).pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            accelerator.log({"train_loss": loss.item()}, step=step)
            ending.at_step(step)
        accelerator.end_training()
    return root / "accelerate", [] if tracker.run is None else [tracker.run.writer]
