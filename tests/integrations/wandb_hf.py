"""Hugging Face's ``Trainer(report_to="wandb", run_name=...)`` on a tiny BERT built from a
config (nothing downloaded): HF's own ``WandbCallback`` logs the run.

The first argument names the wandb module: ``wandb`` (W&B itself), or
``remote_train_monitor.wandb``, put in W&B's place by ``replace_wandb()``.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if sys.argv.pop(1) != "wandb":
    from remote_train_monitor.transformers import replace_wandb

    replace_wandb()

from transformers import Trainer, TrainingArguments, set_seed

EXAMPLE = Path(__file__).parents[2] / "examples" / "transformers_trainer.py"
example = runpy.run_path(str(EXAMPLE))  # its tiny model and data
args = TrainingArguments(
    output_dir="out",
    run_name="hf-run",
    num_train_epochs=1,
    per_device_train_batch_size=16,
    logging_steps=2,
    eval_strategy="epoch",
    save_strategy="no",
    report_to="wandb",
    use_cpu=True,
    disable_tqdm=True,
)
set_seed(0)  # the same model under both
trainer = Trainer(
    model=example["tiny_bert"](),
    args=args,
    train_dataset=example["random_dataset"](64, 0),
    eval_dataset=example["random_dataset"](16, 1),
)
trainer.train()
