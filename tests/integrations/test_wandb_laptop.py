"""The laptop route: ``import remote_train_monitor.wandb`` without torch, the frameworks
or ``packaging`` (the visualizer's install) logs plain numbers and images.

A child Python runs with a ``sitecustomize`` on its path that makes those packages
unimportable, as on a laptop where they were never installed.
"""

from __future__ import annotations

import os
import subprocess
import sys

from run_core.tags import key_of
from snapshot_store import read_store
from tests.fixtures.runs.training import REPO

BLOCKED = ("torch", "packaging", "lightning", "transformers", "accelerate", "tqdm", "psutil")
BLOCKER = f"""
import sys
class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None
sys.meta_path.insert(0, _NotInstalled())
"""
SCRIPT = """
import sys
import numpy as np
import remote_train_monitor.wandb as wandb

run = wandb.init(project="laptop", name="n", config={"lr": 0.1})
for step in range(3):
    wandb.log({"loss": 1.0 / (step + 1), "frame": wandb.Image(np.zeros((4, 4, 3)))})
wandb.finish()
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))
assert not loaded, f"imported {loaded}"
"""


def test_the_wandb_module_logs_numbers_and_images_without_torch(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "WANDB_SILENT": "true"}
    for name in ("WANDB_DIR", "WANDB_PROJECT", "WANDB_NAME", "WANDB_MODE", "RANK", "WORLD_SIZE"):
        env.pop(name, None)
    blocked = subprocess.run(
        [sys.executable, "-c", "import torch"], cwd=tmp_path, env=env, capture_output=True
    )
    assert blocked.returncode != 0, "the blocker does not work"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *BLOCKED],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    history, _reader, update = read_store(tmp_path / "wandb" / "laptop" / "n" / "pickle")
    assert history.series(key_of("loss"))[0] == [0, 1, 2]
    assert len(update.images) == 3 and update.status["state"] == "finished"
