"""The W&B-style module: ``wandb.log`` of 4 scalars on the training thread, beside W&B itself.

W&B runs offline (no account, no network), in the same process, alternating in
rounds with ours (both runs open throughout); medians over the rounds and their
ratio. W&B hands its history to a service process whose CPU is not counted here.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from bench.bench_integrations import TARGET_RATIO, _compare


def run(calls: int = 5_000, rounds: int = 5) -> list[dict]:
    """One row: per-call cost of ``run.log`` beside W&B's offline ``run.log``."""
    import wandb

    import integrations.wandb as ours_module

    logging.getLogger("wandb").setLevel(logging.ERROR)
    values = {"train/loss": 0.5, "train/acc": 0.9, "val/loss": 0.6, "lr": 0.01}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WANDB_SILENT"] = "true"
        ours = ours_module.init(project="bench", name="ours", dir=tmp)
        theirs = wandb.init(project="bench", name="wandb", dir=str(Path(tmp)), mode="offline")
        try:
            mine, ref = _compare(
                lambda step: ours.log(values), lambda step: theirs.log(values), calls, rounds
            )
        finally:
            ours.finish()
            theirs.finish()
    ratio = ref / mine
    return [
        {
            "benchmark": "wandb.log (4 scalars), training thread",
            "ours": f"{mine * 1e6:.1f} us",
            "reference": f"W&B offline {ref * 1e6:.0f} us",
            "ratio": f"{ratio:.0f}x cheaper",
            "target": f">= {TARGET_RATIO:.0f}x cheaper",
            "met": ratio >= TARGET_RATIO,
        }
    ]
