"""The calls a W&B script makes before it logs (W&B's tutorials' first lines), then a run.

The first argument names the wandb module to import: ``wandb`` or ``remote_train_monitor.wandb``.
What each call returned or raised is written to ``observed.json``.
"""

from __future__ import annotations

import importlib
import json
import sys

wandb = importlib.import_module(sys.argv.pop(1))


def outcome(call):
    """What ``call()`` returned (its type for an object), or the message it raised."""
    try:
        value = call()
    except Exception as err:  # the outcome is what is compared
        return ["raised", str(err)]
    return value if value is None or isinstance(value, bool) else type(value).__name__ != ""


observed = {
    "require": outcome(lambda: wandb.require("core")),
    "require unknown": outcome(lambda: wandb.require("no-such-feature")),
    "setup": outcome(lambda: wandb.setup()),
    "login": outcome(lambda: wandb.login(key="0" * 40)),
    "unwatch before init": outcome(lambda: wandb.unwatch()),
}
wandb.termlog("a line")
run = wandb.init(project="p", name="n", settings=wandb.Settings(console="off"))
wandb.mark_preempting()
run.pin_config_keys(["lr"])  # wandb.pin_config_keys: W&B 0.31 never binds it to the run
wandb.config.update({"lr": 0.1})
for step in range(3):
    wandb.log({"loss": 1.0 / (step + 1)})
wandb.unwatch()
wandb.join()
with open("observed.json", "w") as out:
    json.dump(observed, out)
