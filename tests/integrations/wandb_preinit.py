"""What a script sees of ``wandb.config``, ``wandb.summary`` and the top-level calls before
``init``, after it and after ``finish``, written to ``observed.json`` in the current folder.

The first argument names the wandb module to import: ``wandb`` or
``remote_train_monitor.wandb``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pydoc
import rlcompleter
import sys
from collections.abc import Callable
from typing import Any

module_name = sys.argv.pop(1)
wandb = importlib.import_module(module_name)
config, summary = wandb.config, wandb.summary  # as `from wandb import config, summary` binds


def outcome(call: Callable[[], Any]) -> Any:
    """The exception ``call`` raises, as (class name, message), else what it returns."""
    try:
        return call()
    except Exception as error:  # what is raised is what is compared
        return [type(error).__name__, str(error)]


def raises(call: Callable[[], Any]) -> bool:
    try:
        call()
    except Exception:  # any exception is what is counted
        return True
    return False


def _set(target: Any, key: Any, value: Any) -> None:
    target[key] = value


def before_init() -> dict[str, Any]:
    """Listing, inspecting, completing and documenting work; using raises W&B's error."""
    return {
        "listed": sorted({"config", "summary", "run", "log"} & set(dir(wandb))),
        "getattr_raises": [name for name in dir(wandb) if raises(lambda n=name: getattr(wandb, n))],
        "members": outcome(lambda: "config" in dict(inspect.getmembers(wandb))),
        "completes": rlcompleter.Completer({"wandb": wandb}).complete("wandb.confi", 0),
        "pydoc": outcome(lambda: bool(pydoc.render_doc(config))),
        "run": wandb.run is None,
        "errors": {
            "config.x": outcome(lambda: config.x),
            "config['x']": outcome(lambda: wandb.config["x"]),
            "config.x = 1": outcome(lambda: setattr(wandb.config, "x", 1)),
            "summary['a'] = 1": outcome(lambda: _set(wandb.summary, "a", 1)),
            "'a' in config": outcome(lambda: "a" in wandb.config),
            "config.update": outcome(lambda: wandb.config.update({"a": 1})),
            "log": outcome(lambda: wandb.log({"a": 1.0})),
            "define_metric": outcome(lambda: wandb.define_metric("a", summary="min")),
            "alert": outcome(lambda: wandb.alert("t", "x")),
            "save": outcome(lambda: wandb.save("*.txt")),
            "watch": outcome(lambda: wandb.watch(None)),
        },
    }


observed: dict[str, Any] = {"before": before_init()}
run = wandb.init(project="p", name="n", config={"lr": 0.1})
observed["during"] = {
    "imported config.lr": outcome(lambda: config.lr),
    "config is run's": wandb.config is run.config and wandb.summary is run.summary,
    "wandb.config.lr": wandb.config.lr,
    "run": wandb.run is run,
}
wandb.finish()
observed["after"] = {"config.lr": outcome(lambda: wandb.config.lr), "run": wandb.run is None}
with open("observed.json", "w") as out:
    json.dump(observed, out, indent=1)
