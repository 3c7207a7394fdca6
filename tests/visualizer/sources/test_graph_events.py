"""``add_graph``: the graph torch's writer traces is stored, and ``export --kind graph_events``
gives it back as an event file TensorBoard reads, node for node; an untraceable model
costs one warning and keeps its outline."""

from __future__ import annotations

import logging

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter as TBWriter

from remote_train_monitor import SummaryWriter
from run_core.exit_codes import ExitCode
from snapshot_store import read_store
from visualizer.__main__ import main


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4 * 6 * 6, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def _graph(folder) -> list[tuple[str, str, list[str]]]:
    events = EventAccumulator(str(folder))
    events.Reload()
    return [(node.name, node.op, list(node.input)) for node in events.Graph().node]


def test_the_exported_graph_is_torchs(tmp_path, capsys):
    model, images = Net(), torch.zeros(2, 1, 8, 8)
    with TBWriter(tmp_path / "tb") as tb:
        tb.add_graph(model, images)
    with SummaryWriter(tmp_path / "ours" / "run") as ours:
        ours.add_graph(model, images)
    argv = ["export", "--pickle-dir", str(tmp_path / "ours"), "--kind", "graph_events"]
    assert main([*argv, "--out", str(tmp_path / "export")]) == ExitCode.OK
    theirs = _graph(tmp_path / "tb")
    assert any(name.startswith("Net/Conv2d[conv]") for name, _op, _in in theirs)
    assert _graph(tmp_path / "export" / "run") == theirs
    assert "1 written" in capsys.readouterr().err


@pytest.mark.parametrize("given", [None, torch.zeros(2, 3)], ids=["no input", "wrong shape"])
def test_an_untraceable_model_is_one_warning_and_its_outline(tmp_path, caplog, capsys, given):
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path / "run") as writer:
        writer.add_graph(Net(), given)
    [warning] = caplog.records
    assert warning.getMessage().startswith("add_graph: Net not traced (")
    assert capsys.readouterr().out == ""
    [(kind, tag, _step, _wall, data)] = read_store(tmp_path / "run")[2].extras
    assert (kind, tag, data["graph_def"]) == ("graph", "graph", b"")
    assert data["text"].startswith("Net(") and "parameters" in data["text"]
