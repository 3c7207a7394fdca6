"""How a run ended, one vocabulary: every entry point ends its store in the same state.

Each entry point trains a tiny run with its real framework, in this process, and
the run ends normally, on Ctrl-C (KeyboardInterrupt) or on an exception raised at
its second step. Then the script "ends": what the interpreter does when a
program exits on an uncaught exception (it sets ``sys.last_value`` as it prints
it, then at exit calls the ``weakref.finalize`` callbacks of what is still
alive). That is the only way the Hugging Face Trainer's and Accelerate's store
learns of an exception: neither tells its callbacks or trackers of one, so the
writer left open is closed at exit (tests/trainer/tensorboard/test_summary_writer.py checks
that path with a real script). The store's state must then be the table's of
docs/store-format.md, whichever entry point wrote it.
"""

from __future__ import annotations

import signal
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

import trainer
from remote_train_monitor import SummaryWriter
from snapshot_store import read_store
from snapshot_store.alerting.alert import Alert
from visualizer.alerts.rules import AlertMemory, AlertWatch
from visualizer.model.rundata import RunData

STEPS = 3


class Ending:
    """One way a run ends: raised by the training at its second step, or nothing."""

    def __init__(self, error: type[BaseException] | None) -> None:
        self.error = error
        self.raised: BaseException | None = None

    def at_step(self, step: int) -> None:
        """Called by the training after each step."""
        if step == 2 and self.error is not None:
            raise self.error("ended by the test")

    @contextmanager
    def caught(self) -> Iterator[None]:
        """Let the ending (or the SystemExit Lightning turns Ctrl-C into) end the block."""
        try:
            yield
        except BaseException as err:
            if self.error is None or not isinstance(err, self.error | SystemExit):
                raise
            self.raised = err


# Each entry point: (root, ending) -> (the store, what the script still holds as it ends).
Run = Callable[[Path, Ending], tuple[Path, list[object]]]


class _Stepping(nn.Linear):
    """A linear model that tells the ending of each training step (the fit's one-batch check
    runs without gradients and is not a step)."""

    def __init__(self, ending: Ending) -> None:
        super().__init__(4, 1)
        self.ending, self.steps = ending, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and torch.is_grad_enabled():
            self.steps += 1
            if self.steps > 1:  # the step before this forward is done
                self.ending.at_step(self.steps)
        return super().forward(x)


def _data() -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(4 * STEPS, 4, generator=generator), torch.zeros(4 * STEPS, 1))


def _trainer(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    model = _Stepping(ending)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with ending.caught():
        trainer.fit(
            model, nn.MSELoss(), optimizer, datasets={"train": _data(), "valid": _data()},
            batch_size=4, num_epochs=1, print_freq=1, checkpoints_dir=root, name="fit",
            remote=True, device="cpu", progress=False,
        )  # fmt: skip
    return root / "fit/pickle", []


def _summary_writer_with(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    with ending.caught(), SummaryWriter(root / "with") as writer:
        for step in range(1, STEPS + 1):
            writer.add_scalar("loss", 1.0 / step, step)
            ending.at_step(step)
    return root / "with", [writer]


def _summary_writer_closed(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    """TensorBoard's usual script: ``close()`` at the end, nothing on an exception."""
    writer = SummaryWriter(root / "closed")
    with ending.caught():
        for step in range(1, STEPS + 1):
            writer.add_scalar("loss", 1.0 / step, step)
            ending.at_step(step)
        writer.close()
    return root / "closed", [writer]


def _lightning(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    from tests.integrations import framework_runs  # the frameworks' imports: see there

    return framework_runs.lightning(root, ending, _data(), STEPS)


def _transformers(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    from tests.integrations import framework_runs

    return framework_runs.transformers(root, ending, _data(), STEPS)


def _accelerate(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    from tests.integrations import framework_runs

    return framework_runs.accelerate(root, ending, _data(), STEPS)


def _wandb_finish(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    """W&B's usual script: ``finish()`` at the end; a run left open is closed at exit."""
    import remote_train_monitor.wandb as wandb

    with ending.caught():
        run = wandb.init(project="p", name="finish", dir=root)
        for step in range(1, STEPS + 1):
            wandb.log({"loss": 1.0 / step})
            ending.at_step(step)
        wandb.finish()
    return root / "wandb/p/finish/pickle", [run]


def _wandb_with(root: Path, ending: Ending) -> tuple[Path, list[object]]:
    import remote_train_monitor.wandb as wandb

    with ending.caught(), wandb.init(project="p", name="with", dir=root) as run:
        for step in range(1, STEPS + 1):
            run.log({"loss": 1.0 / step})
            ending.at_step(step)
    return root / "wandb/p/with/pickle", [run]


ENTRY_POINTS: dict[str, Run] = {
    "trainer.fit": _trainer,
    "SummaryWriter, with": _summary_writer_with,
    "SummaryWriter, close()": _summary_writer_closed,
    "Lightning": _lightning,
    "HF Trainer": _transformers,
    "Accelerate": _accelerate,
    "W&B-style, finish()": _wandb_finish,
    "W&B-style, with": _wandb_with,
}
ENDINGS = {
    "normal end": (None, "finished"),
    "Ctrl-C": (KeyboardInterrupt, "stopped"),
    "exception": (RuntimeError, "failed"),
}


def _script_ends(error: BaseException | None, alive: list[object]) -> None:
    """What the interpreter does as the script ends on ``error``: it sets ``sys.last_value``
    as it prints the uncaught exception, then at exit runs the finalizers of what is alive."""
    with mock.patch.object(sys, "last_value", error, create=True):
        for owner in alive:
            for ref in weakref.getweakrefs(owner):
                if isinstance(ref.__callback__, weakref.finalize):
                    ref.__callback__()


@pytest.fixture
def signals_kept() -> Iterator[None]:
    """Lightning ignores SIGINT from a Ctrl-C on (its graceful shutdown): give it back."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGINT, before[0])
    signal.signal(signal.SIGTERM, before[1])


@pytest.mark.integration
@pytest.mark.parametrize("how", ENDINGS)
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_ends_its_store_in_the_same_state(
    entry, how, tmp_path, wandb, signals_kept
):
    """One ending, one state, whatever wrote the run; the viewer's alert names it (``stopped``,
    not ``failed``, for a Ctrl-C). ``wandb``: its fixture's working directory and environment."""
    error, state = ENDINGS[how]
    ending = Ending(error)
    sent: list[Alert] = []
    alerts = AlertWatch(AlertMemory(tmp_path / "sent.json", "test"), sent.append)
    store, alive = ENTRY_POINTS[entry](tmp_path, ending)
    assert (ending.raised is None) == (error is None)
    _script_ends(ending.raised, alive)
    history, _, update = read_store(store)
    assert update.status is not None and update.status["state"] == state
    assert any(len(series[0]) for series in map(history.series, history.keys()))
    run = RunData(entry)
    run.apply(update)
    alerts.check([(run, "http://viewer/run")], time.time())
    assert [alert.event for alert in sent] == [state]


class _Sigterm(Ending):
    """A scheduler's SIGTERM at the second step, to a process whose entry point handles it."""

    def __init__(self) -> None:
        super().__init__(SystemExit)  # trainer's Terminated, Lightning's SIGTERMException

    def at_step(self, step: int) -> None:
        if step == 2:
            signal.raise_signal(signal.SIGTERM)


@pytest.mark.integration
@pytest.mark.parametrize("entry", ["trainer.fit", "Lightning"])
def test_sigterm_to_an_entry_point_that_handles_it_ends_stopped(
    entry, tmp_path, monkeypatch, signals_kept
):
    """Both install a SIGTERM handler while they train (Lightning's raises its own
    SIGTERMException, a SystemExit with no code, and says ``failed`` to its loggers)."""
    monkeypatch.chdir(tmp_path)
    ending = _Sigterm()
    store, _ = ENTRY_POINTS[entry](tmp_path, ending)
    assert isinstance(ending.raised, SystemExit)
    assert read_store(store)[2].status["state"] == "stopped"


@pytest.mark.parametrize(("code", "state"), [(0, "finished"), (143, "stopped"), (1, "failed")])
def test_sys_exit_in_a_summary_writers_block_ends_as_its_exit_status(tmp_path, code, state):
    with pytest.raises(SystemExit), SummaryWriter(tmp_path) as writer:
        writer.add_scalar("loss", 1.0, 0)
        sys.exit(code)
    assert read_store(tmp_path)[2].status["state"] == state


@pytest.mark.parametrize(
    ("code", "state"),
    [(None, "finished"), (0, "finished"), (130, "stopped"), (143, "stopped"), (1, "failed")],
)
def test_wandb_finish_closes_the_store_as_its_exit_code_says(wandb, tmp_path, code, state):
    wandb.init(project="p", name="n")
    wandb.log({"loss": 1.0})
    wandb.finish(exit_code=code)
    assert read_store(tmp_path / "wandb/p/n/pickle")[2].status["state"] == state
