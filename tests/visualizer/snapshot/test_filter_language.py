"""The filter language's one corpus (tests/fixtures/runs/filter_corpus.py) answered alike by
Python's parser and evaluator (``Api().runs(filters=...)``, the viewer) and by the snapshot
file's script in headless Chromium, typed into its filter box."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.fixtures.runs.filter_corpus import ALL, CASES, S3, write_corpus_runs
from tests.fixtures.servers.pages import BROWSER_WAIT_S, console_errors
from visualizer.__main__ import main
from visualizer.api import Api
from visualizer.api.filters import compile_filters

FILTER_JS = """
const box = document.getElementById('filter');
box.value = arguments[0];
box.dispatchEvent(new Event('input'));
const problem = document.getElementById('filter-error');
return {
  error: problem.hidden ? null : problem.textContent,
  markup: problem.children.length,
  names: Array.from(document.querySelectorAll('#runs tbody tr'), tr => tr.cells[0].textContent),
};
"""


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory) -> Path:
    return write_corpus_runs(tmp_path_factory.mktemp("corpus"))


def _expected(case: list[str] | str) -> tuple[list[str] | None, str | None]:
    if isinstance(case, str):
        return None, case.removeprefix("error: ")
    return sorted(case), None


@pytest.mark.parametrize(("text", "case"), CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_python_reads_the_corpus(runs_dir, text, case):
    names, error = _expected(case)
    runs = Api().runs(str(runs_dir))
    if error is not None:
        with pytest.raises(ValueError, match=re.escape(error)):
            compile_filters(text)
        return
    keep = compile_filters(text)
    assert sorted(run.name for run in runs if keep(run.fields())) == names


def test_the_snapshot_page_reads_the_corpus_alike(chromium_driver, runs_dir, tmp_path):
    out = tmp_path / "corpus.html"
    assert main(["snapshot", "--pickle-dir", str(runs_dir), "--out", str(out)]) == 0
    chromium_driver.get(out.as_uri())
    WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
        lambda d: d.find_element(By.ID, "count").text
    )
    # Typed as a person types it.
    chromium_driver.find_element(By.ID, "filter").send_keys("lr>0.01 and seed==3")
    rows = chromium_driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    assert sorted(r.find_element(By.TAG_NAME, "td").text for r in rows) == sorted(S3)
    wrong: list[tuple[str, object, object]] = []
    for text, case in CASES:
        names, error = _expected(case)
        got = chromium_driver.execute_script(FILTER_JS, text)
        assert got["markup"] == 0 and "\n" not in (got["error"] or "")
        if error is not None and (got["error"] is None or error not in got["error"]):
            wrong.append((text[:60], got["error"], error))
        if error is not None and got["names"] != [n for n in ALL if text.lower() in n.lower()]:
            wrong.append((text[:60], got["names"], "the names holding the text"))
        if names is not None and (got["error"] is not None or sorted(got["names"]) != names):
            wrong.append((text[:60], got["error"] or sorted(got["names"]), names))
    assert wrong == []
    assert chromium_driver.execute_script("return window.__pwned") is None
    assert console_errors(chromium_driver) == []
