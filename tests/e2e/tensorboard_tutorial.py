"""PyTorch's "Visualizing Models, Data, and Training with TensorBoard" tutorial, in its flow:
a grid of sample images, the model's graph, a projector embedding of images with their
class labels, the running training loss every N batches, a figure of predictions against
actuals, and a PR curve per class. Synthetic ten-class images stand in for
FashionMNIST (no download), and a few lines tile the grid as torchvision's ``make_grid``
does (torchvision is not a dependency); a small CNN on CPU, a few seconds.

Usage: ``python tensorboard_tutorial.py MODULE LOG_DIR``, where ``MODULE`` is
``torch.utils.tensorboard`` or ``remote_train_monitor``: the one line that changes.
"""

from __future__ import annotations

import importlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional

SummaryWriter = importlib.import_module(sys.argv[1]).SummaryWriter
CLASSES = ("T-shirt", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle Boot")  # fmt: skip
EVERY = 10  # the tutorial logs the running loss every 1000 mini-batches; ours are fewer


def images(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """28x28 grey images whose class is where a bright block sits, plus noise."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (count,), generator=gen)
    data = torch.rand(count, 1, 28, 28, generator=gen) * 0.4
    for i, label in enumerate(labels.tolist()):
        row, col = divmod(label, 5)
        data[i, 0, 4 + 10 * row : 12 + 10 * row, 2 + 5 * col : 6 + 5 * col] = 1.0
    return data * 2 - 1, labels  # normalised to [-1, 1], as the tutorial's transform


def make_grid(batch: torch.Tensor, pad: int = 2) -> torch.Tensor:
    """The images side by side on a 2-pixel black border, 3 channels (``make_grid``'s look)."""
    count, _, height, width = batch.shape
    grid = torch.zeros(3, height + 2 * pad, count * (width + pad) + pad)
    for i in range(count):
        left = pad + i * (width + pad)
        grid[:, pad : pad + height, left : left + width] = batch[i]
    return grid


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 60)
        self.fc2 = nn.Linear(60, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(functional.relu(self.conv1(x)))
        x = self.pool(functional.relu(self.conv2(x)))
        return self.fc2(functional.relu(self.fc1(x.flatten(1))))


def plot_classes_preds(net: Net, batch: torch.Tensor, labels: torch.Tensor) -> plt.Figure:
    """Four images, each titled with its prediction, confidence and label (green if right)."""
    probs = functional.softmax(net(batch), dim=1)
    preds = probs.argmax(1)
    fig = plt.figure(figsize=(12, 4))
    for i in range(4):
        ax = fig.add_subplot(1, 4, i + 1, xticks=[], yticks=[])
        ax.imshow((batch[i, 0] / 2 + 0.5).numpy(), cmap="Greys")
        right = preds[i] == labels[i]
        ax.set_title(
            f"{CLASSES[preds[i]]}, {probs[i, preds[i]] * 100:.1f}%\n(label: {CLASSES[labels[i]]})",
            color="green" if right else "red",
        )
    return fig


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    writer = SummaryWriter(sys.argv[2])
    train, test = images(400, 1), images(200, 2)
    net = Net()
    grid = make_grid(train[0][:4])
    writer.add_image("four_fashion_mnist_images", grid / 2 + 0.5)
    writer.add_graph(net, train[0][:4])
    sample, sample_labels = train[0][:100], train[1][:100]
    writer.add_embedding(
        sample.view(-1, 28 * 28),
        metadata=[CLASSES[label] for label in sample_labels],
        label_img=sample / 2 + 0.5,
    )
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    running_loss, batches = 0.0, len(train[0]) // 4
    for epoch in range(2):
        for i in range(batches):
            batch, labels = train[0][4 * i : 4 * i + 4], train[1][4 * i : 4 * i + 4]
            optimizer.zero_grad()
            loss = functional.cross_entropy(net(batch), labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % EVERY == EVERY - 1:
                writer.add_scalar("training loss", running_loss / EVERY, epoch * batches + i)
                with torch.no_grad():
                    figure = plot_classes_preds(net, batch, labels)
                writer.add_figure(
                    "predictions vs. actuals", figure, global_step=epoch * batches + i
                )
                running_loss = 0.0
    with torch.no_grad():
        probs = functional.softmax(net(test[0]), dim=1)
    for index, name in enumerate(CLASSES):
        writer.add_pr_curve(name, test[1] == index, probs[:, index], global_step=0)
    writer.close()


if __name__ == "__main__":
    main()
