"""The filter text and ``order`` in ``Api().runs()``, and the runs table's filter box keeping the
same runs for the same text: one parser, one evaluator (issue 48)."""

from __future__ import annotations

import pytest

from visualizer.api import Api
from visualizer.panes.run_rows import TableView, select
from visualizer.sources.catalog import Catalog
from visualizer.sources.runs import LocalRuns
from workloads.many_runs import run_spec, write_runs

RUNS = 40
TEXTS = [
    "lr>0.001 and seed<20",
    'optimizer=="adam" and not batch_size>=64',
    'state=="failed" or name~"0000[1-3]$"',
    "config.lr==0.01 or val/loss<0.5",
    "summary.train/loss>0.6 and (batch_size==16 or batch_size==128)",
    "run-0001",  # no expression: a name search
]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    write_runs(root, RUNS, points=20, workers=1)
    return root


@pytest.fixture(scope="module")
def page_summaries(sweep):
    """Every run's summary as the viewer's catalog reads it for the runs table."""
    catalog = Catalog(LocalRuns(sweep), 1.0, 60.0, few=0)
    try:
        catalog.scan()
        read = []
        while not catalog.complete:
            read += catalog.collect(wait=5.0)
    finally:
        catalog.close()
    return [entry.summary for entry in read]


@pytest.mark.parametrize("text", TEXTS)
def test_the_api_and_the_runs_table_keep_the_same_runs_for_the_same_text(
    sweep, page_summaries, text
):
    by_api = [run.name for run in Api().runs(str(sweep), filters=text)]
    view = TableView(filter=text, sort="run", descending=False)
    by_page = [summary.name for summary in select(page_summaries, view, None, 0.0)]
    assert by_api == by_page and 0 < len(by_api) < RUNS, text


def test_a_text_filter_keeps_the_runs_its_dict_form_keeps(sweep):
    specs = [run_spec(i, points=20) for i in range(RUNS)]
    kept = Api().runs(str(sweep), filters='lr>0.001 and optimizer=="sgd"')
    wanted = [s.name for s in specs if s.options["lr"] > 0.001 and s.options["optimizer"] == "sgd"]
    assert [r.name for r in kept] == wanted and wanted
    as_dict = {"config.lr": {"$gt": 0.001}, "config.optimizer": "sgd"}
    assert [r.name for r in Api().runs(str(sweep), filters=as_dict)] == wanted


def test_runs_come_in_the_order_asked_those_without_the_field_last(sweep):
    api = Api()
    by_lr = api.runs(str(sweep), order="+config.lr")
    lrs = [run.config["lr"] for run in by_lr]
    assert lrs == sorted(lrs) and len(by_lr) == RUNS
    losses = [run.summary["val/loss"] for run in api.runs(str(sweep), order="-summary.val/loss")]
    assert losses == sorted(losses, reverse=True)
    metric = [
        run.summary["val/loss"] for run in api.runs(str(sweep), order="summary_metrics.val/loss")
    ]
    assert metric == sorted(metric)
    started = [run.start for run in api.runs(str(sweep), order="created_at")]
    assert started == sorted(started)
    missing = api.runs(str(sweep), filters="seed<3", order="-config.nothing")
    assert [run.name for run in missing] == ["run-00000", "run-00001", "run-00002"]


@pytest.mark.parametrize(
    "filters, order, named",
    [
        ("lr>0.1 and", None, "expected a key at the end"),
        ("lr>0.1 & seed==3", None, "starts no key"),
        (None, "config", "'config': no such field"),
        (None, "-", "expected +FIELD or -FIELD"),
    ],
)
def test_a_filter_or_order_it_can_not_take_is_one_line_before_any_run_is_read(
    tmp_path, filters, order, named
):
    with pytest.raises(ValueError) as caught:
        Api().runs(str(tmp_path / "nothing here"), filters=filters, order=order)
    assert named in str(caught.value) and "\n" not in str(caught.value)
