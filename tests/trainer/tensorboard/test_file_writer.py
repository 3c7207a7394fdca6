"""writer.file_writer: the summaries torch's builders return are stored as the add_* methods store them."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import torch
from tensorboard.compat.proto.event_pb2 import Event
from torch.utils.tensorboard import SummaryWriter as TBWriter
from torch.utils.tensorboard import summary

from run_core.tags import key_of
from snapshot_store import read_store
from snapshot_store.format.images import decode_png
from trainer import SummaryWriter

HPARAMS = {"lr": 0.01, "batch_size": 32, "optimizer": "adam", "shuffle": True}
METRICS = {"hparam/accuracy": 0.91, "hparam/loss": 0.25}


def _stored(path):
    history, reader, update = read_store(path)
    assert reader.warnings == []
    scalars = {key: history.series(key)[::3] for key in history.keys()}
    extras = [(kind, tag, step, data) for kind, tag, step, _wall, data in update.extras]
    images = [
        (name, step, decode_png(png).tolist()) for _g, name, step, _e, _w, png in update.images
    ]
    return scalars, extras, images


def test_the_hparams_workaround_makes_one_row_as_add_hparams_does(tmp_path):
    # The public workaround: the writer's own run gets the hparams, then its scalars.
    with SummaryWriter(tmp_path / "ours") as writer:
        exp, ssi, sei = summary.hparams(HPARAMS, METRICS)
        file_writer = writer._get_file_writer()
        assert file_writer is writer.file_writer is writer.all_writers[writer.log_dir]
        for part in (exp, ssi, sei):
            file_writer.add_summary(part)
        for key, value in METRICS.items():
            writer.add_scalar(key, value)
    scalars, extras, _ = _stored(tmp_path / "ours")
    [(kind, tag, step, data)] = extras
    assert (kind, tag, step) == ("hparams", ".", 0)
    assert data["hparams"] == {"lr": 0.01, "batch_size": 32.0, "optimizer": "adam", "shuffle": 1.0}
    # The experiment names the metrics, their values are the scalars of those tags.
    assert set(data["metrics"]) == set(METRICS) and all(map(math.isnan, data["metrics"].values()))
    assert scalars[("hparam", "accuracy")] == ([0], [0.91])


def test_a_session_not_ended_is_a_row_when_the_writer_flushes(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        exp, ssi, _sei = summary.hparams({"lr": 0.1}, {"acc": 1.0})
        writer.file_writer.add_summary(exp)
        writer.file_writer.add_summary(ssi, global_step=4)
        writer.flush()
        assert [r[:3] for r in _stored(tmp_path)[1]] == [("hparams", ".", 4)]
        writer.file_writer.add_summary(ssi)  # a second session of the run: its row again
    assert len(_stored(tmp_path)[1]) == 2


VALUES = torch.arange(100, dtype=torch.float32) / 10
IMAGE = np.linspace(0, 1, 3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
LABELS, PREDICTIONS = np.array([0, 1, 1, 0]), np.array([0.1, 0.6, 0.9, 0.4])
SOUND = np.sin(np.arange(400) / 9.0) * 0.5


def test_each_builders_summary_is_stored_as_its_add_method_stores_it(tmp_path):
    with SummaryWriter(tmp_path / "direct") as writer:
        writer.add_scalar("loss/train", 1.5, 3)
        writer.add_scalar("lr", 0.25, 3)
        writer.add_histogram("w", VALUES, 5)
        writer.add_histogram("w_auto", VALUES, 5, bins="auto")
        writer.add_image("sample", IMAGE, 6)
        writer.add_text("note", "hello *world*", 7)
        writer.add_pr_curve("pr", LABELS, PREDICTIONS, 8, num_thresholds=11)
        writer.add_audio("sound", SOUND, 9)
    with SummaryWriter(tmp_path / "summaries") as writer:
        # What TensorBoard's own add_* methods hand their file writer.
        for built, step in (
            (summary.scalar("loss/train", 1.5), 3),
            (summary.scalar("lr", 0.25, new_style=True), 3),
            (summary.histogram("w", VALUES, writer.default_bins), 5),
            (summary.histogram("w_auto", VALUES, "auto"), 5),
            (summary.image("sample", IMAGE, dataformats="CHW"), 6),
            (summary.text("note", "hello *world*"), 7),
            (summary.pr_curve("pr", LABELS, PREDICTIONS, 11), 8),
            (summary.audio("sound", SOUND), 9),
        ):
            writer.file_writer.add_summary(built, global_step=step)
    direct, via = _stored(tmp_path / "direct"), _stored(tmp_path / "summaries")
    assert via[0] == direct[0] and via[2] == direct[2]
    for (kind, tag, step, data), (kind2, tag2, step2, data2) in zip(via[1], direct[1], strict=True):
        assert (kind, tag, step) == (kind2, tag2, step2)
        if kind == "audio":  # a WAV of the same samples (torch's rounds them differently)
            assert decode_wav_length(data["wav"]) == decode_wav_length(data2["wav"])
        else:
            assert data.keys() == data2.keys()
            for field, value in data.items():
                expected = data2[field]
                if not isinstance(expected, str):
                    expected = pytest.approx(expected, rel=1e-6)
                assert value == expected, (tag, field)


def decode_wav_length(data: bytes) -> int:
    import io
    import wave

    with wave.open(io.BytesIO(data)) as wav:
        return wav.getnframes()


def test_add_event_takes_its_step_and_walltime_from_the_event(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        event = Event(step=12, wall_time=1234.5, summary=summary.scalar("acc", 0.5))
        writer.file_writer.add_event(event)
        writer.file_writer.add_event(
            Event(step=3, file_version="brain.Event:2")
        )  # nothing to store
        writer.file_writer.add_event(Event(summary=summary.text("t", "x")), step=2, walltime=99.0)
    history, _, update = read_store(tmp_path)
    steps, _epochs, walls, values = history.series(key_of("acc"))
    assert (steps, walls, values) == ([12], [1234.5], [0.5])
    assert [(tag, step, wall) for _k, tag, step, wall, _d in update.extras] == [("t", 2, 99.0)]


def test_the_attributes_code_reaches_for_are_tensorboards(tmp_path):
    tb = TBWriter(str(tmp_path / "tb"), purge_step=5, flush_secs=30, max_queue=7)
    ours = SummaryWriter(tmp_path / "ours", purge_step=5, flush_secs=30, max_queue=7)
    for name in ("purge_step", "flush_secs", "max_queue", "filename_suffix", "default_bins"):
        assert getattr(ours, name) == getattr(tb, name), name
    assert list(ours.all_writers) == [ours.get_logdir()]
    assert ours.file_writer.get_logdir() == ours.get_logdir()
    ours.file_writer.flush()
    ours.file_writer.close()
    tb.close()
    assert read_store(tmp_path / "ours")[2].status["state"] == "finished"


def test_another_rank_decodes_nothing(tmp_path):
    with SummaryWriter(tmp_path / "run", rank=1) as writer:
        for part in summary.hparams(HPARAMS, METRICS):
            writer.file_writer.add_summary(part)
    assert not (tmp_path / "run").exists()


def _hostile(kind):
    """A Summary value whose payload is garbage, built with tensorboard's own classes."""
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata

    from tests.fixtures.logged.images import png_claiming

    if kind == "hparams":
        plugin = SummaryMetadata.PluginData(plugin_name="hparams", content=b"\xff\xff\xff")
        return Summary.Value(
            tag="_hparams_/session_start_info", metadata=SummaryMetadata(plugin_data=plugin)
        )
    if kind == "audio":
        return Summary.Value(
            tag="not_wav", audio=Summary.Audio(encoded_audio_string=b"OggS" + bytes(60))
        )
    data = b"GIF89a..." if kind == "image" else png_claiming(10**5, 10**5)  # 10^10 pixels
    return Summary.Value(tag=kind, image=Summary.Image(encoded_image_string=data))


@pytest.mark.parametrize("kind", ["hparams", "image", "bomb", "audio"])
def test_a_value_that_does_not_decode_is_one_warning_per_tag_and_the_rest_is_kept(
    tmp_path, caplog, kind
):
    from tensorboard.compat.proto.summary_pb2 import Summary

    hostile = _hostile(kind)
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path) as writer:
        for step in (1, 2):  # twice: still one warning for the tag
            after = Summary.Value(tag="after", simple_value=0.5)
            writer.file_writer.add_summary(Summary(value=[hostile, after]), step)
    scalars, extras, images = _stored(tmp_path)
    assert scalars == {key_of("after"): ([1, 2], [0.5, 0.5])}
    assert extras == [] and images == []
    warned = [r.getMessage() for r in caplog.records if repr(hostile.tag) in r.getMessage()]
    assert len(warned) == 1, caplog.text


def test_a_step_outside_int64_raises_tensorboards_error_and_records_nothing(tmp_path):
    tb = TBWriter(str(tmp_path / "tb"))
    with pytest.raises(ValueError) as theirs:
        tb.file_writer.add_summary(summary.scalar("acc", 0.5), 2**63)
    tb.close()
    with SummaryWriter(tmp_path / "ours") as writer:
        with pytest.raises(ValueError) as ours:
            writer.file_writer.add_summary(summary.scalar("acc", 0.5), 2**63)
        assert str(ours.value) == str(theirs.value) == f"Value out of range: {2**63}"
        writer.file_writer.add_summary(summary.scalar("acc", 0.75), 3)
    assert _stored(tmp_path / "ours")[0] == {key_of("acc"): ([3], [0.75])}
