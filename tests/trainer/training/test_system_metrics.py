"""trainer.training.system_metrics: the ``system`` group of a run, sampled on rank 0 off the training thread."""

from __future__ import annotations

import threading
import time

import psutil
import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

from snapshot_store import Recorder, read_store
from tests.fixtures.runs.training import read_run
from trainer import fit
from trainer.command.data import load_datasets
from trainer.command.models import SmallCNN
from trainer.training.config import OptionError, RunConfig
from trainer.training.system_metrics import StepTimer, SystemMetrics

HOST_METRICS = {"cpu_percent", "rss_gib", "loader_wait_share"}


class SlowDataset(Dataset):
    """Every item takes a while to load: the loop waits on its data loader."""

    def __init__(self, items: Dataset, seconds: float) -> None:
        self.items, self.seconds = items, seconds

    def __len__(self) -> int:
        return len(self.items)  # type: ignore[arg-type]

    def __getitem__(self, index: int):
        time.sleep(self.seconds)
        return self.items[index]


def _fit(tiny_dataset, checkpoints, interval: float, datasets=None):
    model = SmallCNN(num_classes=3)
    return fit(
        model,
        nn.CrossEntropyLoss(),
        torch.optim.SGD(model.parameters(), lr=0.05),
        datasets or load_datasets(tiny_dataset),
        checkpoints_dir=checkpoints,
        name="run",
        remote=True,
        batch_size=8,
        num_epochs=1,
        device="cpu",
        progress=False,
        system_metrics_interval=interval,
    )


def test_a_run_records_host_metrics_in_the_system_group(tiny_dataset, tmp_path):
    datasets = load_datasets(tiny_dataset)
    datasets["train"] = SlowDataset(datasets["train"], seconds=0.01)
    result = _fit(tiny_dataset, tmp_path, interval=0.05, datasets=datasets)
    history, _, _ = read_run(result.run_dir)
    system = {name for group, name in history.keys() if group == "system"}
    assert system >= HOST_METRICS
    assert not any(name.startswith("gpu") for name in system)  # a CPU run
    steps, _, _, shares = history.series(("system", "loader_wait_share"))
    assert all(0.0 <= share <= 1.0 for share in shares)
    assert all(0 <= step <= result.global_step for step in steps)
    assert all(rss > 0 for rss in history.series(("system", "rss_gib"))[3])


def test_the_first_cpu_sample_is_a_measure_not_the_reference_point(tmp_path, monkeypatch):
    # psutil keeps its reference point per thread, and a thread's first call returns 0.0
    # (psutil's documented behaviour, played here): recorded, it was a fake first sample.
    seen: set[int] = set()

    def cpu_percent(interval=None):
        first = threading.get_ident() not in seen
        seen.add(threading.get_ident())
        return 0.0 if first else 50.0

    monkeypatch.setattr(psutil, "cpu_percent", cpu_percent)
    timer = StepTimer()
    with Recorder(tmp_path / "pickle") as rec:
        metrics = SystemMetrics(rec, 0.05, timer, torch.device("cpu")).start()
        for step in range(30):  # a sample per step at most: a step logged again replaces it
            timer.step = step
            time.sleep(0.01)
        metrics.stop()
    history, _, _ = read_store(tmp_path / "pickle")
    cpu = history.series(("system", "cpu_percent"))[3]
    assert cpu and set(cpu) == {50.0}, cpu


def test_interval_zero_records_no_system_group(tiny_dataset, tmp_path):
    result = _fit(tiny_dataset, tmp_path, interval=0)
    history, _, _ = read_run(result.run_dir)
    assert not [key for key in history.keys() if key[0] == "system"]


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "10"])
def test_a_bad_interval_is_refused_naming_the_option(bad):
    with pytest.raises(OptionError, match="system_metrics_interval"):
        RunConfig(system_metrics_interval=bad)


def test_loader_wait_share_is_the_waiting_part_of_step_time(tmp_path):
    timer = StepTimer()
    with Recorder(tmp_path, rank=0) as rec:
        sampler = SystemMetrics(rec, 3600, timer, torch.device("cpu"))
        timer.start(step=10)
        for _ in range(3):
            time.sleep(0.02)  # waiting for a batch
            timer.arrived()
            timer.done()  # a step with no work at all
        values = sampler.sample()
        assert timer.step == 13
        assert 0.5 < values["loader_wait_share"] <= 1.0  # the work took (almost) nothing
        assert "loader_wait_share" not in sampler.sample()  # no step since the last sample
        sampler.stop()  # never started: stop is still safe
    assert read_store(tmp_path)[0].keys() == []  # sample() alone records nothing


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_memory_is_sampled_on_cuda(tmp_path):
    with Recorder(tmp_path, rank=0) as rec:
        kept = torch.ones(1 << 20, device="cuda")
        values = SystemMetrics(rec, 3600, StepTimer(), torch.device("cuda")).sample()
    assert values["gpu_allocated_gib"] >= kept.numel() * 4 / (1 << 30)
    assert values["gpu_reserved_gib"] >= values["gpu_allocated_gib"]
    assert values["gpu_peak_gib"] >= values["gpu_allocated_gib"]
