"""The Lightning modules the adapter's tests train, and Lightning's own names they use.

Imported by the tests' ``lit`` fixture, not at their module's top: Lightning's import
takes seconds, and every xdist worker would pay it while collecting the whole suite.
"""

from __future__ import annotations

import lightning
import torch
from lightning import LightningModule, Trainer
from lightning.pytorch.loggers import TensorBoardLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from integrations.lightning import MonitorLogger

__all__ = ["AutoEncoder", "Failing", "MonitorLogger", "TensorBoardLogger", "Tiny", "Trainer"]
__all__ += ["fit", "lightning"]


class Tiny(LightningModule):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        loss = nn.functional.mse_loss(self.net(batch[0]), batch[1])
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class Failing(Tiny):
    def training_step(self, batch, batch_idx):
        if batch_idx == 2:
            raise RuntimeError("boom")
        return super().training_step(batch, batch_idx)


def fit(module: LightningModule, logger: MonitorLogger, epochs: int) -> None:
    """Fit ``module`` on 32 random samples, batch 8 (4 steps an epoch), logging every step."""
    data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
    trainer = Trainer(
        accelerator="cpu",
        max_epochs=epochs,
        log_every_n_steps=1,
        logger=logger,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, data)


class AutoEncoder(LightningModule):
    """The calls of Lightning's autoencoder and GAN templates: a loss per stage logged
    on_step (``val_loss_step``/``val_loss_epoch``), ``log_dict`` of two losses, ``loss`` and
    ``train_loss`` at one step, and an image through ``logger.experiment.add_image``."""

    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.encoder, self.decoder = nn.Linear(4, 2), nn.Linear(2, 4)

    def _common_step(self, batch, stage: str):
        x = batch[0]
        loss = nn.functional.mse_loss(self.decoder(self.encoder(x)), x)
        self.log(f"{stage}_loss", loss, on_step=True)
        return loss

    def training_step(self, batch, batch_idx):
        loss = self._common_step(batch, "train")
        self.log("loss", loss * 2)  # a second name at the same step: kept apart
        self.log_dict({"g_loss": loss * 3, "d_loss": loss * 4}, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self._common_step(batch, "val")

    def on_validation_epoch_end(self):
        grid = self.decoder.weight.detach().abs().reshape(1, 4, 2)
        for logger in self.loggers:
            logger.experiment.add_image("validation/generated_images", grid, self.current_epoch)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
