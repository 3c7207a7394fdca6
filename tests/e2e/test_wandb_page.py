"""A W&B script, its import changed, on the page: its scalars, images, hparams row and alert."""

from __future__ import annotations

import sys
import uuid

from selenium.webdriver.support.ui import WebDriverWait

from tests.fixtures.runs.examples import run_example
from tests.fixtures.runs.training import REPO
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, console_errors, panes, plots
from visualizer.follower import Follower
from visualizer.visdom_client import VisdomClient

SCRIPT = REPO / "tests" / "integrations" / "wandb_mnist.py"


def test_a_wandb_script_shows_on_the_page(tmp_path, visdom_server, chromium_driver):
    run_name = f"wandb-{uuid.uuid4().hex[:8]}"  # an env of its own on the shared server
    run_example(
        [sys.executable, str(SCRIPT), "remote_train_monitor.wandb", "--epochs", "2"],
        tmp_path,
        WANDB_DIR=str(tmp_path),
        WANDB_PROJECT="mnist",
        WANDB_NAME=run_name,
        PYTHONPATH=str(REPO),
    )
    store = tmp_path / "wandb" / "mnist" / run_name / "pickle"
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}")
    wait = WebDriverWait(chromium_driver, BROWSER_WAIT_S)
    keys = {"Test Accuracy", "Test Loss", "batch_loss"}  # each drawn under the name logged
    wait.until(lambda d: keys <= {n for p in plots(d) for n in p["names"]})
    titles = wait.until(
        lambda d: (t := set(panes(d))) >= {"Examples", f"{run_name}: hparams"} and t
    )
    assert "batch_size" in chromium_driver.page_source  # the config, as the run's options
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert chromium_driver.save_screenshot(str(ARTIFACTS / "wandb_page.png")), titles
    assert console_errors(chromium_driver) == []


def test_a_wandb_alert_is_a_pane_of_text_not_markup(tmp_path, visdom_server, chromium_driver):
    import remote_train_monitor.wandb as wandb

    run_name = f"wandb-{uuid.uuid4().hex[:8]}"
    run = wandb.init(project="p", name=run_name, dir=str(tmp_path))
    run.log({"loss": float("nan")})
    run.alert(title="loss is NaN", text="<b>stop</b> it", level=wandb.AlertLevel.ERROR)
    run.finish()
    store = tmp_path / "wandb" / "p" / run_name / "pickle"
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}")
    wait = WebDriverWait(chromium_driver, BROWSER_WAIT_S)
    wait.until(lambda d: "alert: loss is NaN @ step 1" in panes(d))
    text = chromium_driver.execute_script(ALERT_JS)
    assert "ERROR <b>stop</b> it" in text  # the stored text, shown as text: never markup
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert chromium_driver.save_screenshot(str(ARTIFACTS / "wandb_alert.png"))


# The alert pane's text as the page shows it.
ALERT_JS = """
return Array.from(document.querySelectorAll('.react-grid-item'))
  .filter(p => p.innerText.includes('alert: loss is NaN')).map(p => p.innerText).join('\\n');
"""
