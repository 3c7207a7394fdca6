"""W&B's "Log summary metrics" calls: every summary kind, one key defined twice, a rename.

The first argument names the wandb module to import: ``wandb`` or ``remote_train_monitor.wandb``.
"""

from __future__ import annotations

import importlib
import sys

wandb = importlib.import_module(sys.argv.pop(1))

run = wandb.init(project="p", name="n")
run.define_metric("loss", summary="min")
run.define_metric("loss", summary="max")  # W&B keeps both: {max, min}
for kind in ("min", "max", "mean", "last", "first", "copy", "none"):
    run.define_metric(f"kind_{kind}", summary=kind)
run.define_metric("several", summary="min,max,mean")
run.define_metric("none_later", summary="min")
run.define_metric("none_later", summary="none")
run.define_metric("none_first", summary="none")
run.define_metric("none_first", summary="min")
run.define_metric("replaced", summary="min")
run.define_metric("replaced", summary="max", overwrite=True)
run.define_metric("kept", summary="min")
run.define_metric("kept")  # no summary: the min stays
run.define_metric("with_copy", summary="copy,min")
run.define_metric("glob/*", summary="mean")
run.define_metric("glob/exact", summary="max")  # the exact name wins over the glob
run.define_metric("upper", summary="MIN")
KEYS = ["loss", "several", "none_later", "none_first", "replaced", "kept", "with_copy"]
KEYS += ["glob/x", "glob/exact", "upper", "plain"]
KEYS += [f"kind_{kind}" for kind in ("min", "max", "mean", "last", "first", "copy", "none")]
for value in (3, 1.0, 2.0, 5.0):
    run.log(dict.fromkeys(KEYS, value))
errors = []
for bad in ("best", "min,best"):
    try:
        run.define_metric("x", summary=bad)
    except wandb.Error as err:
        errors.append(str(err))
run.summary["errors"] = errors
run.name = "renamed"  # W&B lists the run under its new name
run.finish()
