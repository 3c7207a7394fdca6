"""Hugging Face Trainer logging to the snapshot store: ``python examples/transformers_trainer.py``.

A tiny BERT built from a config (nothing downloaded) on random tokens. Then watch it with
``python run_visualizer_local.py --pickle-dir checkpoints/tiny-bert/pickle``.
"""

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

from remote_train_monitor.transformers import MonitorCallback


def random_dataset(n: int, seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 100, (n, 16), generator=g)
    labels = (ids[:, 0] > 50).long()  # learnable: the class is in the first token
    return [{"input_ids": i, "labels": y} for i, y in zip(ids, labels, strict=True)]


def tiny_bert() -> BertForSequenceClassification:
    """A 2-layer BERT classifier built from a config: nothing is downloaded."""
    config = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=2,
    )
    return BertForSequenceClassification(config)


if __name__ == "__main__":
    args = TrainingArguments(
        output_dir="checkpoints/tiny-bert",
        num_train_epochs=2,
        per_device_train_batch_size=16,
        logging_steps=2,
        eval_strategy="epoch",
        save_strategy="epoch",
        report_to="none",  # kept as it was: the callback below is the one line added
        use_cpu=True,
    )
    trainer = Trainer(
        model=tiny_bert(),
        args=args,
        train_dataset=random_dataset(128, 0),
        eval_dataset=random_dataset(32, 1),
        callbacks=[MonitorCallback()],  # the one argument
    )
    trainer.train()
