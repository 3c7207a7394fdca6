"""Accelerate logging to the snapshot store, 2 CPU processes:

    ACCELERATE_USE_CPU=1 torchrun --standalone --nproc-per-node 2 examples/accelerate_train.py

(on GPUs: ``accelerate launch --multi_gpu --num_processes 2 examples/accelerate_train.py``).

Then watch it with ``python run_visualizer_local.py --pickle-dir checkpoints/accelerate-demo``.
The script is Accelerate's TensorBoard tracking with one line added, ``replace_tensorboard()``:
the store goes where TensorBoard's event files went, ``<project_dir>/<init_trackers name>``.
"""

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import remote_train_monitor.accelerate

if __name__ == "__main__":
    remote_train_monitor.accelerate.replace_tensorboard()  # the one line: "tensorboard" is ours
    config = {"lr": 0.05, "batch_size": 16, "epochs": 2}
    accelerator = Accelerator(log_with="tensorboard", project_dir="checkpoints")
    accelerator.init_trackers("accelerate-demo", config=config)

    x = torch.randn(256, 8, generator=torch.Generator().manual_seed(0))
    data = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=config["batch_size"])
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    model, optimizer, data = accelerator.prepare(model, optimizer, data)

    step = 0
    for _ in range(config["epochs"]):
        for inputs, targets in data:
            loss = nn.functional.mse_loss(model(inputs), targets)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            accelerator.log({"train_loss": loss.item()}, step=step)
            step += 1
    accelerator.end_training()
