"""Lightning, 2 CPU processes (DDP), logging to the snapshot store: ``python examples/lightning_ddp.py``.

Then watch it with ``python run_visualizer_local.py --pickle-dir checkpoints/lightning_logs/version_0/pickle``.
"""

import torch
from lightning import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from remote_train_monitor.lightning import MonitorLogger


class Regressor(LightningModule):
    def __init__(self, lr: float = 0.05, hidden: int = 16):
        super().__init__()
        self.save_hyperparameters()  # what the logger saves as the run's options
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loader(n: int) -> DataLoader:
    x = torch.randn(n, 8, generator=torch.Generator().manual_seed(n))
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)


if __name__ == "__main__":
    trainer = Trainer(
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        max_epochs=2,
        log_every_n_steps=1,
        enable_progress_bar=False,
        logger=MonitorLogger("checkpoints"),  # the one argument
    )
    trainer.fit(Regressor(), loader(256), loader(64))
