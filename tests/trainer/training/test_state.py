"""trainer.training.state: early-stopping bookkeeping and the checkpoint round trip."""

from __future__ import annotations

import torch

from trainer.training.state import RunState


def test_observe_tracks_the_best_score_with_min_delta():
    state = RunState()
    assert state.observe(0, 1.0, "min", 0.1)
    assert not state.observe(1, 0.95, "min", 0.1)  # better, but by less than min_delta
    assert state.observe(2, 0.8, "min", 0.1)
    assert (state.best_value, state.best_epoch, state.bad_epochs) == (0.8, 3, 0)
    assert not state.observe(3, 0.9, "max", 0.5)
    assert state.bad_epochs == 1


def test_should_stop_after_patience_epochs_without_improvement():
    state = RunState(bad_epochs=2)
    assert state.should_stop(2) and not state.should_stop(3)
    assert not state.should_stop(0) and not state.should_stop(None)


def test_checkpoint_round_trip_through_a_weights_only_load(tmp_path):
    state = RunState(epoch=2, step=17, batch_in_epoch=3, best_value=0.5, best_epoch=2, bad_epochs=1)
    state.record("train", {"loss": 1.5}, 1.25)
    torch.save(state.to_checkpoint(), tmp_path / "s.pth")
    loaded = torch.load(tmp_path / "s.pth", weights_only=True)
    assert RunState.from_checkpoint(loaded, mid_epoch=True) == state
    restarted = RunState.from_checkpoint(loaded, mid_epoch=False)
    assert restarted.batch_in_epoch == 0 and restarted.step == 17
